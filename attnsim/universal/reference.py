"""Theorem 6: one encoder layer: the textbook NumPy formula its spec is checked against.

torch.nn.TransformerEncoderLayer (eval) from its state dict's tensors: multi-head attention with
masks, residuals, LayerNorm none / pre / post, a ReLU, GELU or tanh-GELU feed-forward block, whole
arrays at once, the way a textbook (or NumPy's documentation) writes it, sharing no code with
``spec.py`` or the program: it imports NumPy and the shared helpers of
:mod:`attnsim.constructions.textbook` only (``tests/test_layering.py`` checks it).  Operands come as
the spec reads them (``ops[name]``: (stack, rows, cols), or (rows, cols) for one matrix); the result
has the spec's output shape (stack, rows, cols).
"""

from __future__ import annotations

import math

import numpy as np

from attnsim.constructions.textbook import Operands, Sizes, scalar, softmax_rows


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
    flag = lambda name: scalar(ops[name]) == 1
    n, hh, k = sz["n"], sz["hh"], sz["k"]
    eps, scale = scalar(ops["eps"]), scalar(ops["scale"])
    x = g("X")
    ln1 = lambda v: _layer_norm(v, vec("norm1_weight"), vec("norm1_bias"), eps)
    ln2 = lambda v: _layer_norm(v, vec("norm2_weight"), vec("norm2_bias"), eps)

    z = ln1(x) if flag("pre") else x
    qkv = z @ g("in_proj_weight").T + vec("in_proj_bias")  # (n, 3 hh k): q | k | v, head-major
    q, kk, v = (qkv[:, p * hh * k : (p + 1) * hh * k].reshape(n, hh, k).transpose(1, 0, 2) for p in range(3))
    blocked = g("blocked").astype(bool)
    scores = scale * q @ kk.transpose(0, 2, 1) + g("additive")
    scores = np.where(blocked, -np.inf, scores)
    weights = np.where(blocked, 0.0, softmax_rows(scores))
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


__all__ = ["encoder_layer"]
