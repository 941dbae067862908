"""Activation ReLU: its independent specification.

out[i, j] = max(A[i, j], 0), the way a textbook does, in :mod:`attnsim.symbolic.spec_language`.  It
reads nothing of the construction's program, layout or reference (``tests/test_layering.py`` checks
that this module imports the spec language only); the program's all-sizes proof compares the program
with it, and :mod:`attnsim.verify.spec_check` compares it with the textbook NumPy formula of
``reference.py``.
"""

from __future__ import annotations

from attnsim.symbolic.spec_language import Spec

RELU = Spec(
    "relu",
    ("A",),
    ("rows", "n"),
    lambda sz: (1, sz["rows"], sz["n"]),
    lambda alg, ops, h, i, j, sz: alg.max(ops["A"][h, i, j], 0),
    "out[i, j] = max(A[i, j], 0)",
)


__all__ = ["RELU"]
