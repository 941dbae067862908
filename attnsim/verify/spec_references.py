"""Textbook NumPy formulas for every specification, sharing no code with :mod:`attnsim.symbolic.specs`.

The all-sizes proofs show a program equal to its specification; they cannot show the
specification right.  Each function here computes the same quantity the way a textbook (or NumPy's
documentation) writes it, whole arrays at once: ``A.T``, ``A @ B``, ``exp(x) / sum exp(x)``,
``maximum(x, 0)``, the attention layer of Vaswani et al. in torch's parameter layout.  The
obligations of :mod:`attnsim.verify.spec_check` compare the two at many sizes.

Operands come in the layout the specifications read (``ops[name]`` is (stack, rows, cols), or
(rows, cols) for one matrix); every function returns an array of the spec's output shape
(stack, rows, cols).  Nothing here imports from the package: independence is by construction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

Operands = Mapping[str, np.ndarray]
Sizes = Mapping[str, int]


def _three(a: np.ndarray) -> np.ndarray:
    """A matrix as a stack of one; a stack as is."""
    a = np.asarray(a, dtype=np.float64)
    return a[None] if a.ndim == 2 else a


def _scalar(a: np.ndarray) -> float:
    return float(np.asarray(a, dtype=np.float64).reshape(-1)[0])


def _softmax_rows(s: np.ndarray) -> np.ndarray:
    """exp(s) / sum exp(s) along the last axis, shifted by the row max (the usual stable form)."""
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def transpose(ops: Operands, sz: Sizes) -> np.ndarray:
    return np.swapaxes(_three(ops["A"]), 1, 2)


def matmul(ops: Operands, sz: Sizes) -> np.ndarray:
    return _three(ops["A"]) @ _three(ops["B"])


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


def softmax(ops: Operands, sz: Sizes) -> np.ndarray:
    return _softmax_rows(_three(ops["A"]))


def masked_softmax(ops: Operands, sz: Sizes) -> np.ndarray:
    """Softmax over the first n columns, 0 after them."""
    a = _three(ops["A"])
    n = int(_scalar(ops["n"]))
    out = np.zeros_like(a)
    out[:, :, :n] = _softmax_rows(a[:, :, :n])
    return out


def relu(ops: Operands, sz: Sizes) -> np.ndarray:
    return np.maximum(_three(ops["A"]), 0.0)


def maxmin(ops: Operands, sz: Sizes) -> np.ndarray:
    """GroupSort with groups of two: each pair (2t, 2t + 1) sorted descending."""
    a = _three(ops["A"])
    out = np.empty_like(a)
    out[..., 0::2] = np.maximum(a[..., 0::2], a[..., 1::2])
    out[..., 1::2] = np.minimum(a[..., 0::2], a[..., 1::2])
    return out


def _one(x: Any) -> np.ndarray:
    """A scalar as the (1, 1, 1) output of a spec with one entry."""
    return np.full((1, 1, 1), float(x))


def trace(ops: Operands, sz: Sizes) -> np.ndarray:
    return _one(np.trace(np.asarray(ops["A"], dtype=np.float64)))


def frobenius(ops: Operands, sz: Sizes) -> np.ndarray:
    a = np.asarray(ops["A"], dtype=np.float64)
    return _one(np.vdot(a, 2 * a + 1))


def first_step(ops: Operands, sz: Sizes) -> np.ndarray:
    a = np.asarray(ops["A"], dtype=np.float64)
    return (a - np.trace(a) * np.eye(len(a)))[None]


def general_step(ops: Operands, sz: Sizes) -> np.ndarray:
    a, m = (np.asarray(ops[k], dtype=np.float64) for k in ("A", "M"))
    return (a @ m + _scalar(ops["c"]) * np.eye(len(a)))[None]


def coefficient_step(ops: Operands, sz: Sizes) -> np.ndarray:
    a, m = (np.asarray(ops[k], dtype=np.float64) for k in ("A", "M"))
    return _one(np.trace(a @ m))


def iteration(ops: Operands, sz: Sizes) -> np.ndarray:
    """Faddeev-LeVerrier: M_{k+1} = A M_k + c_{n-k} I, c_{n-k-1} = -tr(A M_{k+1}) / (k + 1)."""
    a, m = (np.asarray(ops[k], dtype=np.float64) for k in ("A", "M"))
    m_next = a @ m + _scalar(ops["c"]) * np.eye(len(a))
    return _one(-np.trace(a @ m_next) / (sz["k"] + 1))


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
    p = _softmax_rows(q @ (e @ k).T / math.sqrt(q.shape[1]))
    return (p @ (f @ v))[None]


def parity(ops: Operands, sz: Sizes) -> np.ndarray:
    x = np.asarray(ops["x"], dtype=np.int64).reshape(-1)
    return np.full((1, 1, len(x)), float(x.sum() % 2))


def _layer_norm(v: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    """torch.nn.LayerNorm over the last axis: biased variance, eps inside the root."""
    mu = v.mean(axis=-1, keepdims=True)
    var = ((v - mu) ** 2).mean(axis=-1, keepdims=True)
    return (v - mu) / np.sqrt(var + eps) * w + b


def encoder_layer(ops: Operands, sz: Sizes) -> np.ndarray:
    """torch.nn.TransformerEncoderLayer (eval) from its state dict's tensors, whole matrices at once:
    multi-head attention with an additive and a blocking mask, residuals, LayerNorm none / pre /
    post, a ReLU, GELU or tanh-GELU feed-forward block (or none)."""
    g = lambda name: np.asarray(ops[name], dtype=np.float64)
    vec = lambda name: g(name).reshape(-1)
    flag = lambda name: _scalar(ops[name]) == 1
    n, hh, k = sz["n"], sz["hh"], sz["k"]
    eps, scale = _scalar(ops["eps"]), _scalar(ops["scale"])
    x = g("X")
    ln1 = lambda v: _layer_norm(v, vec("norm1_weight"), vec("norm1_bias"), eps)
    ln2 = lambda v: _layer_norm(v, vec("norm2_weight"), vec("norm2_bias"), eps)

    z = ln1(x) if flag("pre") else x
    qkv = z @ g("in_proj_weight").T + vec("in_proj_bias")  # (n, 3 hh k): q | k | v, head-major
    q, kk, v = (qkv[:, p * hh * k : (p + 1) * hh * k].reshape(n, hh, k).transpose(1, 0, 2) for p in range(3))
    blocked = g("blocked").astype(bool)
    scores = scale * q @ kk.transpose(0, 2, 1) + g("additive")
    scores = np.where(blocked, -np.inf, scores)
    weights = np.where(blocked, 0.0, _softmax_rows(scores))
    heads = (weights @ v).transpose(1, 0, 2).reshape(n, hh * k)  # concat_h(A_h V_h)
    attn = heads @ g("out_proj_weight").T + vec("out_proj_bias")
    y1 = attn + (x if flag("residual") else 0.0)
    y1 = ln1(y1) if flag("post") else y1
    if not flag("ffn"):
        return y1[None]
    u = (ln2(y1) if flag("pre") else y1) @ g("linear1_weight").T + vec("linear1_bias")
    erf = np.vectorize(math.erf, otypes=[np.float64])
    if flag("gelu"):
        act = u * (1 + erf(u / math.sqrt(2))) / 2
    elif flag("gelu_tanh"):  # torch's GELU(approximate="tanh")
        act = 0.5 * u * (1 + np.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u**3)))
    else:
        act = np.maximum(u, 0.0)
    y2 = act @ g("linear2_weight").T + vec("linear2_bias") + (y1 if flag("residual") else 0.0)
    return (ln2(y2) if flag("post") else y2)[None]


__all__ = [
    "broadcast_row",
    "coefficient_step",
    "consumer_matmul",
    "encoder_layer",
    "first_step",
    "frobenius",
    "general_step",
    "iteration",
    "linear_attention",
    "linformer",
    "masked_softmax",
    "matmul",
    "maxmin",
    "parity",
    "permute3",
    "relu",
    "softmax",
    "trace",
    "transpose",
    "two_axis_sum",
]
