"""Lemma 3 (softmax): the textbook NumPy formula its spec is checked against.

exp(x) / sum exp(x) along each row (max-shifted, the usual stable form), and its masked form, whole
arrays at once, the way a textbook (or NumPy's documentation) writes it, sharing no code with
``spec.py`` or the program: it imports NumPy and the shared helpers of
:mod:`attnsim.constructions.textbook` only (``tests/test_layering.py`` checks it).  Operands come as
the spec reads them (``ops[name]``: (stack, rows, cols), or (rows, cols) for one matrix); the result
has the spec's output shape (stack, rows, cols).
"""

from __future__ import annotations

import numpy as np

from attnsim.constructions.textbook import Operands, Sizes, scalar, softmax_rows, three


def softmax(ops: Operands, sz: Sizes) -> np.ndarray:
    return softmax_rows(three(ops["A"]))


def masked_softmax(ops: Operands, sz: Sizes) -> np.ndarray:
    """Softmax over the first n columns, 0 after them."""
    a = three(ops["A"])
    n = int(scalar(ops["n"]))
    out = np.zeros_like(a)
    out[:, :, :n] = softmax_rows(a[:, :, :n])
    return out


__all__ = ["masked_softmax", "softmax"]
