"""Activation MaxMin: the textbook NumPy formula its spec is checked against.

GroupSort with groups of two, whole arrays at once, the way a textbook (or NumPy's documentation)
writes it, sharing no code with ``spec.py`` or the program: it imports NumPy and the shared helpers
of :mod:`attnsim.constructions.textbook` only (``tests/test_layering.py`` checks it).  Operands come
as the spec reads them (``ops[name]``: (stack, rows, cols), or (rows, cols) for one matrix); the
result has the spec's output shape (stack, rows, cols).
"""

from __future__ import annotations

import numpy as np

from attnsim.constructions.textbook import Operands, Sizes, three


def maxmin(ops: Operands, sz: Sizes) -> np.ndarray:
    """GroupSort with groups of two: each pair (2t, 2t + 1) sorted descending."""
    a = three(ops["A"])
    out = np.empty_like(a)
    out[..., 0::2] = np.maximum(a[..., 0::2], a[..., 1::2])
    out[..., 1::2] = np.minimum(a[..., 0::2], a[..., 1::2])
    return out


__all__ = ["maxmin"]
