"""The generalized forms U is built from: the textbook NumPy formula its spec is checked against.

np.transpose, np.tile, A @ B repeated, a sum over two axes, whole arrays at once, the way a textbook
(or NumPy's documentation) writes it, sharing no code with ``spec.py`` or the program: it imports
NumPy and the shared helpers of :mod:`attnsim.constructions.textbook` only
(``tests/test_layering.py`` checks it).  Operands come as the spec reads them (``ops[name]``:
(stack, rows, cols), or (rows, cols) for one matrix); the result has the spec's output shape (stack,
rows, cols).
"""

from __future__ import annotations

import numpy as np

from attnsim.constructions.textbook import Operands, Sizes


def permute3(ops: Operands, sz: Sizes) -> np.ndarray:
    return np.transpose(np.asarray(ops["A"], dtype=np.float64), (1, 2, 0))


def broadcast_row(ops: Operands, sz: Sizes) -> np.ndarray:
    a = np.asarray(ops["A"], dtype=np.float64)
    return np.tile(a[0], (sz["rows"], 1))[None]


def consumer_matmul(ops: Operands, sz: Sizes) -> np.ndarray:
    ab = np.asarray(ops["A"], dtype=np.float64) @ np.asarray(ops["B"], dtype=np.float64)
    return np.repeat(ab[:, :, None], sz["extra"], axis=2)


def two_axis_sum(ops: Operands, sz: Sizes) -> np.ndarray:
    s = np.asarray(ops["A"], dtype=np.float64).sum(axis=(0, 2))
    return np.repeat(s[:, None], sz["cols"], axis=1)[None]


__all__ = ["broadcast_row", "consumer_matmul", "permute3", "two_axis_sum"]
