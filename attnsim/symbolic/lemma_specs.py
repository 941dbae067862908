"""The lemmas' specifications: transpose, matmul, softmax (plain and masked), ReLU, MaxMin, the
Faddeev-LeVerrier steps (trace, Frobenius, the first, general and coefficient steps, one
iteration), and the generalized forms U is built from (permute3, broadcast-row, consumer-matmul,
two-axis-sum).

Each states what entry (h, i, j) of a construction of :mod:`attnsim.lemmas` is, the way a textbook
does (out[h, i, j] = A[h, j, i]; sum_{l < k} A[h, i, l] B[h, l, j]; ...), in
:mod:`attnsim.symbolic.spec_language`, without reading the construction's program, layout or
reference.  :mod:`attnsim.symbolic.specs` names every specification.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attnsim.symbolic.spec_language import Spec


def _stack(sz: Mapping[str, Any]) -> Any:
    return sz.get("heads", 1)


TRANSPOSE = Spec(
    "transpose",
    ("A",),
    ("rows", "cols", "heads"),
    lambda sz: (_stack(sz), sz["cols"], sz["rows"]),
    lambda alg, ops, h, i, j, sz: ops["A"][h, j, i],
    "out[h, i, j] = A[h, j, i]",
)

MATMUL = Spec(
    "matmul",
    ("A", "B"),
    ("rows", "inner", "cols", "heads"),
    lambda sz: (_stack(sz), sz["rows"], sz["cols"]),
    lambda alg, ops, h, i, j, sz: alg.sum(lambda m: ops["A"][h, i, m] * ops["B"][h, m, j], sz["inner"]),
    "out[h, i, j] = sum_{l < inner} A[h, i, l] B[h, l, j]",
)

PERMUTE3 = Spec(
    "permute3",
    ("A",),
    ("d0", "d1", "d2"),
    lambda sz: (sz["d1"], sz["d2"], sz["d0"]),
    lambda alg, ops, a, b, c, sz: ops["A"][c, a, b],
    "out[a, b, c] = A[c, a, b] for A of shape (d0, d1, d2)",
)

BROADCAST_ROW = Spec(
    "broadcast-row",
    ("A",),
    ("depth", "rows", "cols"),
    lambda sz: (1, sz["rows"], sz["cols"]),
    lambda alg, ops, h, i, j, sz: ops["A"][0, 0, j],
    "out[i, j] = A[0, j] for A of shape (depth, cols), i < rows",
)

CONSUMER_MATMUL = Spec(
    "consumer-matmul",
    ("A", "B"),
    ("rows", "inner", "cols", "extra"),
    lambda sz: (sz["rows"], sz["cols"], sz["extra"]),
    lambda alg, ops, i, j, m, sz: alg.sum(lambda s: ops["A"][0, i, s] * ops["B"][0, s, j], sz["inner"]),
    "out[i, j, m] = sum_{l < inner} A[i, l] B[l, j] for every m < extra",
)

TWO_AXIS_SUM = Spec(
    "two-axis-sum",
    ("A",),
    ("depth", "rows", "width", "cols"),
    lambda sz: (1, sz["rows"], sz["cols"]),
    lambda alg, ops, h, i, j, sz: alg.sum(lambda e: alg.sum(lambda w: ops["A"][e, i, w], sz["width"]), sz["depth"]),
    "out[i, j] = sum_{e < depth} sum_{w < width} A[e, i, w] for every j < cols",
)

SOFTMAX = Spec(
    "softmax",
    ("A",),
    ("rows", "cols", "heads"),
    lambda sz: (_stack(sz), sz["rows"], sz["cols"]),
    lambda alg, ops, h, i, j, sz: (
        alg.exp(ops["A"][h, i, j]) / alg.sum(lambda m: alg.exp(ops["A"][h, i, m]), sz["cols"])
    ),
    "out[h, i, j] = exp(A[h, i, j]) / sum_{l < cols} exp(A[h, i, l])",
)

RELU = Spec(
    "relu",
    ("A",),
    ("rows", "n"),
    lambda sz: (1, sz["rows"], sz["n"]),
    lambda alg, ops, h, i, j, sz: alg.max(ops["A"][h, i, j], 0),
    "out[i, j] = max(A[i, j], 0)",
)

MAXMIN = Spec(
    "maxmin",
    ("A",),
    ("rows", "n"),
    lambda sz: (1, sz["rows"], sz["n"]),
    lambda alg, ops, h, i, j, sz: alg.if_even(
        j,
        lambda: alg.max(ops["A"][h, i, j], ops["A"][h, i, j + 1]),
        lambda: alg.min(ops["A"][h, i, j - 1], ops["A"][h, i, j]),
    ),
    "out[i, 2t] = max(A[i, 2t], A[i, 2t+1]), out[i, 2t+1] = min(A[i, 2t], A[i, 2t+1])",
)

MASKED_SOFTMAX = Spec(
    "softmax-masked",
    ("A", "n"),
    ("rows", "cols", "heads"),
    lambda sz: (_stack(sz), sz["rows"], sz["cols"]),
    lambda alg, ops, h, i, j, sz: alg.if_less(
        j,
        ops["n"][0, 0, 0],
        lambda: alg.exp(ops["A"][h, i, j]) / alg.sum(lambda m: alg.exp(ops["A"][h, i, m]), ops["n"][0, 0, 0]),
        lambda: 0,
    ),
    "out[h, i, j] = exp(A[h, i, j]) / sum_{l < n} exp(A[h, i, l]) for j < n, else 0 (n an operand, 1 <= n <= cols)",
)


def _trace(alg: Any, a: Any, n: Any) -> Any:
    return alg.sum(lambda m: a[0, m, m], n)


TRACE = Spec(
    "trace",
    ("A",),
    ("n",),
    lambda sz: (1, 1, 1),
    lambda alg, ops, h, i, j, sz: _trace(alg, ops["A"], sz["n"]),
    "out = tr A = sum_{l < n} A[l, l]",
)

FROBENIUS = Spec(
    "frobenius",
    ("A",),
    ("rows", "cols"),
    lambda sz: (1, 1, 1),
    lambda alg, ops, h, i, j, sz: alg.sum(
        lambda r: alg.sum(lambda c: ops["A"][0, r, c] * (2 * ops["A"][0, r, c] + 1), sz["cols"]), sz["rows"]
    ),
    "out = <A, 2A + 1> = sum_{r < rows} sum_{c < cols} A[r, c] (2 A[r, c] + 1)",
)

FIRST_STEP = Spec(
    "first-step",
    ("A",),
    ("n",),
    lambda sz: (1, sz["n"], sz["n"]),
    lambda alg, ops, h, i, j, sz: ops["A"][0, i, j] - _trace(alg, ops["A"], sz["n"]) * alg.delta(i, j),
    "M_2 = A - tr(A) I",
)

GENERAL_STEP = Spec(
    "general-step",
    ("A", "M", "c"),
    ("n",),
    lambda sz: (1, sz["n"], sz["n"]),
    lambda alg, ops, h, i, j, sz: (
        alg.sum(lambda m: ops["A"][0, i, m] * ops["M"][0, m, j], sz["n"]) + ops["c"][0, 0, 0] * alg.delta(i, j)
    ),
    "M' = A M + c I (c an operand)",
)

COEFFICIENT_STEP = Spec(
    "coefficient-step",
    ("A", "M"),
    ("n",),
    lambda sz: (1, 1, 1),
    lambda alg, ops, h, i, j, sz: alg.sum(
        lambda r: alg.sum(lambda c: ops["A"][0, r, c] * ops["M"][0, c, r], sz["n"]), sz["n"]
    ),
    "out = tr(A M) = sum_r sum_c A[r, c] M[c, r]",
)


def _next_m(alg: Any, ops: Mapping[str, Any], i: Any, j: Any, n: Any) -> Any:
    """(A M + c I)[i, j]."""
    return alg.sum(lambda m: ops["A"][0, i, m] * ops["M"][0, m, j], n) + ops["c"][0, 0, 0] * alg.delta(i, j)


ITERATION = Spec(
    "iteration",
    ("A", "M", "c"),
    ("n", "k"),
    lambda sz: (1, 1, 1),
    lambda alg, ops, h, i, j, sz: (
        -alg.sum(lambda r: alg.sum(lambda q: ops["A"][0, r, q] * _next_m(alg, ops, q, r, sz["n"]), sz["n"]), sz["n"])
        / (sz["k"] + 1)
    ),
    "c' = -tr(A (A M + c I)) / (k + 1): step k of Faddeev-LeVerrier, from (M_k, c_{n-k}) to c_{n-k-1}",
)


__all__ = [
    "BROADCAST_ROW",
    "COEFFICIENT_STEP",
    "CONSUMER_MATMUL",
    "FIRST_STEP",
    "FROBENIUS",
    "GENERAL_STEP",
    "ITERATION",
    "MASKED_SOFTMAX",
    "MATMUL",
    "MAXMIN",
    "PERMUTE3",
    "RELU",
    "SOFTMAX",
    "TRACE",
    "TRANSPOSE",
    "TWO_AXIS_SUM",
]
