"""The arithmetic the reference layer T is made of, on float64 or SymPy arrays alike: softmax
over rows, torch's LayerNorm, the elementwise functions of the activations (exp, sqrt, erf,
tanh, ReLU); and the conversion and checks of T's inputs (no complex entry, NaN or inf; the
shapes, batch first).

Apart from T itself (:mod:`attnsim.universal.layer`) because these are the building blocks,
one definition for both number systems, that T's attention, FFN and norms are written with; the
layer reads as the textbook formulas on top of them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from attnsim.rasp.guards import complex_entry, sympy_instance
from attnsim.universal.errors import SimulatorError


def is_sympy_matrix(x: Any) -> bool:
    """True for a SymPy matrix (recognized without importing SymPy: a numeric run never loads it)."""
    return sympy_instance(x, "MatrixBase")


def _is_object(*arrs: Any) -> bool:
    return any(isinstance(a, np.ndarray) and a.dtype == object for a in arrs)


def _as(x: Any, what: str, shape: tuple[int, ...] | None = None, allow_symbolic: bool = True) -> np.ndarray:
    if is_sympy_matrix(x):
        x = np.array(x.tolist(), dtype=object)
    a = np.asarray(x)
    bad_complex = complex_entry(a)
    if bad_complex:
        raise SimulatorError(f"{what}: {bad_complex}")
    if a.dtype == object or a.dtype.kind not in "biuf":
        if not allow_symbolic:
            raise SimulatorError(f"{what} must be numeric")
        a = np.asarray(a, dtype=object)
        for v in a.reshape(-1):
            if isinstance(v, (float, np.floating)) and not np.isfinite(v):
                raise SimulatorError(f"{what} contains NaN or inf")
    else:
        a = a.astype(np.float64)
        if not np.all(np.isfinite(a)):
            raise SimulatorError(f"{what} contains NaN or inf")
    if shape is not None and a.shape != shape:
        raise SimulatorError(f"{what} must have shape {shape}, got {a.shape}")
    return a


def _fn(name: str, x: np.ndarray) -> np.ndarray:
    """exp / sqrt / erf / tanh elementwise, float64 or SymPy."""
    if x.dtype == object:
        import sympy as sp

        f = {"exp": sp.exp, "sqrt": sp.sqrt, "erf": sp.erf, "tanh": sp.tanh}[name]
        return np.vectorize(f, otypes=[object])(x)
    if name == "erf":
        return np.vectorize(math.erf, otypes=[np.float64])(x)
    return getattr(np, name)(x)


def inverse_sqrt(k: int, *, exact: bool) -> Any:
    """1 / sqrt(k): SymPy's exact root when ``exact`` (symbolic weights), else float64's."""
    if not exact:
        return 1.0 / math.sqrt(k)
    import sympy as sp

    return 1 / sp.sqrt(k)


def _relu(x: np.ndarray) -> np.ndarray:
    if x.dtype == object:
        import sympy as sp

        # evaluate=False: deciding the sign of a large symbolic argument is slow and rarely possible
        return np.vectorize(lambda v: sp.Max(0, v, evaluate=False), otypes=[object])(x)
    return np.maximum(x, 0.0)


def softmax_rows(s: np.ndarray) -> np.ndarray:
    """Row-wise softmax (max-subtracted in float64; plain exp / sum symbolically)."""
    if s.dtype != object:
        s = s - s.max(axis=-1, keepdims=True)
    e = _fn("exp", s)
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: Any) -> np.ndarray:
    """torch.nn.LayerNorm over the last axis: biased variance, eps inside the root."""
    d = x.shape[-1]
    mu = x.sum(axis=-1, keepdims=True) / d
    c = x - mu
    var = (c * c).sum(axis=-1, keepdims=True) / d
    return c / _fn("sqrt", var + eps) * w + b


def check_batch(x: np.ndarray, d_model: int, batch_first: bool = True) -> np.ndarray:
    """X of shape (n, d_model) or a batch, n >= 1, B >= 1; else a one-line error.  A batch is
    (B, n, d_model) when ``batch_first``, else (n, B, d_model) (torch's ``batch_first=False``)."""
    if x.ndim not in (2, 3) or x.shape[-1] != d_model or min(x.shape) < 1:
        batch = f"(B, n, {d_model}) (batch first)" if batch_first else f"(n, B, {d_model}) (batch_first=False)"
        raise SimulatorError(f"X must have shape (n, {d_model}) or {batch} with n, B >= 1, got {x.shape}")
    return x
