"""Lemma (transpose): the textbook NumPy formula its spec is checked against.

A.T per head, whole arrays at once, the way a textbook (or NumPy's documentation) writes it, sharing
no code with ``spec.py`` or the program: it imports NumPy and the shared helpers of
:mod:`attnsim.constructions.textbook` only (``tests/test_layering.py`` checks it).  Operands come as
the spec reads them (``ops[name]``: (stack, rows, cols), or (rows, cols) for one matrix); the result
has the spec's output shape (stack, rows, cols).
"""

from __future__ import annotations

import numpy as np

from attnsim.constructions.textbook import Operands, Sizes, three


def transpose(ops: Operands, sz: Sizes) -> np.ndarray:
    return np.swapaxes(three(ops["A"]), 1, 2)


__all__ = ["transpose"]
