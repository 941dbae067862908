"""Activation MaxMin: its independent specification.

out[i, 2t] = max and out[i, 2t+1] = min of the pair (A[i, 2t], A[i, 2t+1]), the way a textbook does,
in :mod:`attnsim.symbolic.spec_language`.  It reads nothing of the construction's program, layout or
reference (``tests/test_layering.py`` checks that this module imports the spec language only); the
program's all-sizes proof compares the program with it, and :mod:`attnsim.verify.spec_check`
compares it with the textbook NumPy formula of ``reference.py``.
"""

from __future__ import annotations

from attnsim.symbolic.spec_language import Spec

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


__all__ = ["MAXMIN"]
