"""Lemma (matmul): its independent specification.

out[h, i, j] = sum_{l < inner} A[h, i, l] B[h, l, j]: entry (h, i, j) of the product, the way a
textbook does, in :mod:`attnsim.symbolic.spec_language`.  It reads nothing of the construction's
program, layout or reference (``tests/test_layering.py`` checks that this module imports the spec
language only); the program's all-sizes proof compares the program with it, and
:mod:`attnsim.verify.spec_check` compares it with the textbook NumPy formula of ``reference.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attnsim.symbolic.spec_language import Spec


def _stack(sz: Mapping[str, Any]) -> Any:
    return sz.get("heads", 1)


MATMUL = Spec(
    "matmul",
    ("A", "B"),
    ("rows", "inner", "cols", "heads"),
    lambda sz: (_stack(sz), sz["rows"], sz["cols"]),
    lambda alg, ops, h, i, j, sz: alg.sum(lambda m: ops["A"][h, i, m] * ops["B"][h, m, j], sz["inner"]),
    "out[h, i, j] = sum_{l < inner} A[h, i, l] B[h, l, j]",
)


__all__ = ["MATMUL"]
