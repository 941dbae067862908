"""The generalized forms U is built from: its independent specification.

A 3-axis permutation, a broadcast row, a product read at its consumer's positions and a sum over two
axes, entry by entry (the gathered transpose is Lemma (transpose)'s spec), the way a textbook does,
in :mod:`attnsim.symbolic.spec_language`.  It reads nothing of the construction's program, layout or
reference (``tests/test_layering.py`` checks that this module imports the spec language only); the
program's all-sizes proof compares the program with it, and :mod:`attnsim.verify.spec_check`
compares it with the textbook NumPy formula of ``reference.py``.
"""

from __future__ import annotations

from attnsim.symbolic.spec_language import Spec

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


__all__ = ["BROADCAST_ROW", "CONSUMER_MATMUL", "PERMUTE3", "TWO_AXIS_SUM"]
