"""k-PARITY: the textbook NumPy formula its spec is checked against, and the task itself.

The sum of the bits mod 2, at every position (``parity_spec``: over a subset too, what the
exhaustive checks compare with), whole arrays at once, the way a textbook (or NumPy's documentation)
writes it, sharing no code with ``spec.py`` or the program: it imports NumPy and the shared helpers
of :mod:`attnsim.constructions.textbook` only (``tests/test_layering.py`` checks it). Operands come
as the spec reads them (``ops[name]``: (stack, rows, cols), or (rows, cols) for one matrix); the
result has the spec's output shape (stack, rows, cols).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from attnsim.constructions.textbook import Operands, Sizes


def parity(ops: Operands, sz: Sizes) -> np.ndarray:
    x = np.asarray(ops["x"], dtype=np.int64).reshape(-1)
    return np.full((1, 1, len(x)), float(x.sum() % 2))


def parity_spec(x: Any, subset: Iterable[int] | None = None) -> int:
    """The task itself: (sum of x_s, s in subset) mod 2 (all positions when subset is None)."""
    v = [int(t) for t in np.asarray(x, dtype=object).reshape(-1)]
    idx = range(len(v)) if subset is None else subset
    return sum(v[s] for s in idx) % 2


__all__ = ["parity", "parity_spec"]
