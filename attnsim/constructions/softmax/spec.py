"""Lemma 3 (softmax): its independent specification.

The row softmax exp(A[h, i, j]) / sum_l exp(A[h, i, l]), plain and masked to the first n columns,
the way a textbook does, in :mod:`attnsim.symbolic.spec_language`.  It reads nothing of the
construction's program, layout or reference (``tests/test_layering.py`` checks that this module
imports the spec language only); the program's all-sizes proof compares the program with it, and
:mod:`attnsim.verify.spec_check` compares it with the textbook NumPy formula of ``reference.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attnsim.symbolic.spec_language import Spec


def _stack(sz: Mapping[str, Any]) -> Any:
    return sz.get("heads", 1)


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


__all__ = ["MASKED_SOFTMAX", "SOFTMAX"]
