"""Linear attention and Linformer: the textbook NumPy formula its spec is checked against.

Katharopoulos et al.'s quadratic form and Wang et al.'s softmax(Q (E K)^T / sqrt(d)) (F V), whole
arrays at once, the way a textbook (or NumPy's documentation) writes it, sharing no code with
``spec.py`` or the program: it imports NumPy and the shared helpers of
:mod:`attnsim.constructions.textbook` only (``tests/test_layering.py`` checks it).  Operands come as
the spec reads them (``ops[name]``: (stack, rows, cols), or (rows, cols) for one matrix); the result
has the spec's output shape (stack, rows, cols).
"""

from __future__ import annotations

import math

import numpy as np

from attnsim.constructions.textbook import Operands, Sizes, softmax_rows


def _elu1(x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))


def linear_attention(ops: Operands, sz: Sizes) -> np.ndarray:
    """Katharopoulos et al. 2020, the quadratic form: phi(Q) phi(K)^T V, rows normalized."""
    q, k, v = (np.asarray(ops[n], dtype=np.float64) for n in ("Q", "K", "V"))
    s = _elu1(q) @ _elu1(k).T
    return (s @ v / s.sum(axis=1, keepdims=True))[None]


def linformer(ops: Operands, sz: Sizes) -> np.ndarray:
    """Wang et al. 2020: softmax(Q (E K)^T / sqrt(d)) (F V)."""
    q, k, v, e, f = (np.asarray(ops[n], dtype=np.float64) for n in ("Q", "K", "V", "E", "F"))
    p = softmax_rows(q @ (e @ k).T / math.sqrt(q.shape[1]))
    return (p @ (f @ v))[None]


__all__ = ["linear_attention", "linformer"]
