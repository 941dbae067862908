"""det(n) and inverse(n) by Faddeev-LeVerrier: its specification, step by step.

Each step of the iteration (trace, Frobenius product, first, general and coefficient steps, one
whole iteration) entry by entry, the way a textbook does, in :mod:`attnsim.symbolic.spec_language`.
It reads nothing of the construction's program, layout or reference (``tests/test_layering.py``
checks that this module imports the spec language only); the program's all-sizes proof compares the
program with it, and :mod:`attnsim.verify.spec_check` compares it with the textbook NumPy formula of
``reference.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attnsim.symbolic.spec_language import Spec


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


__all__ = ["COEFFICIENT_STEP", "FIRST_STEP", "FROBENIUS", "GENERAL_STEP", "ITERATION", "TRACE"]
