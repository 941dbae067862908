"""What the textbook NumPy references of the constructions share: operand shapes, a scalar, a
row softmax.

NumPy only: each folder's ``reference.py`` imports this module and nothing else of ours, so a
reference shares no code with any specification or program.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

Operands = Mapping[str, np.ndarray]
Sizes = Mapping[str, int]


def three(a: np.ndarray) -> np.ndarray:
    """A matrix as a stack of one; a stack as is."""
    a = np.asarray(a, dtype=np.float64)
    return a[None] if a.ndim == 2 else a


def scalar(a: np.ndarray) -> float:
    """The one entry of a 1 x 1 operand."""
    return float(np.asarray(a, dtype=np.float64).reshape(-1)[0])


def one(x: Any) -> np.ndarray:
    """A scalar as the (1, 1, 1) output of a spec with one entry."""
    return np.full((1, 1, 1), float(x))


def softmax_rows(s: np.ndarray) -> np.ndarray:
    """exp(s) / sum exp(s) along the last axis, shifted by the row max (the usual stable form)."""
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


__all__ = ["Operands", "Sizes", "one", "scalar", "softmax_rows", "three"]
