"""k-PARITY: its independent specification.

out[j] = (sum_l x[l]) mod 2 at every position j, the way a textbook does, in
:mod:`attnsim.symbolic.spec_language`.  It reads nothing of the construction's program, layout or
reference (``tests/test_layering.py`` checks that this module imports the spec language only); the
program's all-sizes proof compares the program with it, and :mod:`attnsim.verify.spec_check`
compares it with the textbook NumPy formula of ``reference.py``.
"""

from __future__ import annotations

from attnsim.symbolic.spec_language import Spec

PARITY = Spec(
    "parity",
    ("x",),
    ("length",),
    lambda sz: (1, 1, sz["length"]),
    lambda alg, ops, h, i, j, sz: alg.mod(alg.sum(lambda m: ops["x"][0, 0, m], sz["length"]), 2),
    "out[j] = (sum_{l < length} x[l]) mod 2 at every position j (x binary)",
)


__all__ = ["PARITY"]
