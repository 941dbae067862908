"""det(n) and inverse(n) by Faddeev-LeVerrier: the textbook NumPy formula of its steps.

np.trace, np.vdot, A @ M + c I: each step of the iteration, whole arrays at once, the way a textbook
(or NumPy's documentation) writes it, sharing no code with ``spec.py`` or the program: it imports
NumPy and the shared helpers of :mod:`attnsim.constructions.textbook` only
(``tests/test_layering.py`` checks it).  Operands come as the spec reads them (``ops[name]``:
(stack, rows, cols), or (rows, cols) for one matrix); the result has the spec's output shape (stack,
rows, cols).
"""

from __future__ import annotations

import numpy as np

from attnsim.constructions.textbook import Operands, Sizes, one, scalar


def trace(ops: Operands, sz: Sizes) -> np.ndarray:
    return one(np.trace(np.asarray(ops["A"], dtype=np.float64)))


def frobenius(ops: Operands, sz: Sizes) -> np.ndarray:
    a = np.asarray(ops["A"], dtype=np.float64)
    return one(np.vdot(a, 2 * a + 1))


def first_step(ops: Operands, sz: Sizes) -> np.ndarray:
    a = np.asarray(ops["A"], dtype=np.float64)
    return (a - np.trace(a) * np.eye(len(a)))[None]


def general_step(ops: Operands, sz: Sizes) -> np.ndarray:
    a, m = (np.asarray(ops[k], dtype=np.float64) for k in ("A", "M"))
    return (a @ m + scalar(ops["c"]) * np.eye(len(a)))[None]


def coefficient_step(ops: Operands, sz: Sizes) -> np.ndarray:
    a, m = (np.asarray(ops[k], dtype=np.float64) for k in ("A", "M"))
    return one(np.trace(a @ m))


def iteration(ops: Operands, sz: Sizes) -> np.ndarray:
    """Faddeev-LeVerrier: M_{k+1} = A M_k + c_{n-k} I, c_{n-k-1} = -tr(A M_{k+1}) / (k + 1)."""
    a, m = (np.asarray(ops[k], dtype=np.float64) for k in ("A", "M"))
    m_next = a @ m + scalar(ops["c"]) * np.eye(len(a))
    return one(-np.trace(a @ m_next) / (sz["k"] + 1))


__all__ = ["coefficient_step", "first_step", "frobenius", "general_step", "iteration", "trace"]
