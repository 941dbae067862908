"""A line-for-line Python transcription of ``coq/EncoderLayer.v``, run against torch.

``EncoderLayer.v`` states torch's ``nn.TransformerEncoderLayer`` with MathComp (the specification
of Theorem 6 in the kernel).  Coq cannot evaluate it as written (MathComp's ``\\sum`` and
``\\matrix_`` are locked, and MathComp has no computable ``expR`` or ``Num.sqrt``), so this module
transcribes it: one function per Coq ``Definition``, of the same name, with the same sums over the
same ranges (``\\sum_(j < D | j < d)`` is ``sum(... for j in range(D) if j < d)``) and the same
``block`` zero padding, at a capacity ``(N, D, H, K, F)`` above the layer's true sizes.
:data:`TRANSCRIBED` lists the transcribed definitions; a test checks it is every ``Definition``
of the Coq file.  :func:`params_from_torch` reads a torch module into the Coq record ``params``
(row convention, weights transposed) with the capacity's padding filled with noise, which the
layer must never read; :func:`mask_from_torch` merges torch's three masks into the record ``mask``.

The torch comparison (tests/proofs/test_coq_encoder_layer.py: agreement with torch's slow path in
float64 on the torch sweep's configurations) is evidence about this Python transcription only, not
about the Coq statement.  What ties the two is a hand review: :data:`ENCODER_LAYER_SHA256` pins
the ``EncoderLayer.v`` this file was reviewed against line by line (the kernel gate's source check
refuses any other), so editing either file forces a review of the two side by side.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

Fn = Callable[[float], float]
Mat = np.ndarray

NORMS = ("NoNorm", "PostNorm", "PreNorm")

#: SHA-256 of the ``coq/EncoderLayer.v`` this transcription was reviewed against, line by line.
#: Change it only together with a review of both files side by side.
ENCODER_LAYER_SHA256 = "799c1790d300084e589d915a316ec2149552ad3b164d97e2ed8f6231a74f43a2"


@dataclass(frozen=True)
class Params:
    """``Record params`` of EncoderLayer.v: true sizes, weights at capacity, options."""

    d_model: int
    nhead: int
    d_head: int
    dim_ff: int
    Wq: Mat  # (H, D, K)
    Wk: Mat
    Wv: Mat
    bq: Mat  # (H, 1, K)
    bk: Mat
    bv: Mat
    Wo: Mat  # (H, K, D)
    bo: Mat  # (1, D)
    W1: Mat  # (D, F)
    b1: Mat  # (1, F)
    W2: Mat  # (F, D)
    b2: Mat  # (1, D)
    norm1_w: Mat  # (1, D)
    norm1_b: Mat
    norm2_w: Mat
    norm2_b: Mat
    eps: float
    scale: float
    activation: Fn
    residual: bool
    norm: str  # one of NORMS
    has_ffn: bool


@dataclass(frozen=True)
class Mask:
    """``Record mask`` of EncoderLayer.v: ``blocked[i, key]`` hides key key from query i; ``additive``."""

    blocked: np.ndarray  # (N, N) bool
    additive: Mat  # (N, N)


@dataclass(frozen=True)
class Layer:
    """The section variables of EncoderLayer.v: expf, sqrtf, the capacity, P, M and n."""

    expf: Fn
    sqrtf: Fn
    N: int
    D: int
    H: int
    K: int
    F: int
    P: Params
    M: Mask
    n: int

    # Definition block r c (m1 m2 : nat) (A : 'M[R]_(m1, m2))
    @staticmethod
    def block(r: int, c: int, A: Mat) -> Mat:
        m1, m2 = A.shape
        return np.array([[A[i, j] if i < r and j < c else 0.0 for j in range(m2)] for i in range(m1)])

    def row_mean(self, X: Mat, i: int) -> float:
        d = self.P.d_model
        return sum(X[i, j] for j in range(self.D) if j < d) / d

    def row_var(self, X: Mat, i: int) -> float:
        d = self.P.d_model
        return sum((X[i, j] - self.row_mean(X, i)) ** 2 for j in range(self.D) if j < d) / d

    def layer_norm(self, w: Mat, b: Mat, X: Mat) -> Mat:
        P = self.P
        return self.block(self.n, P.d_model, np.array([
            [(X[i, j] - self.row_mean(X, i)) / self.sqrtf(self.row_var(X, i) + P.eps) * w[0, j] + b[0, j]
             for j in range(self.D)] for i in range(self.N)]))  # fmt: skip

    def proj(self, W: Mat, b: Mat, Z: Mat, t: int) -> Mat:
        P = self.P
        return self.block(self.n, P.d_head, np.array([
            [sum(Z[i, j] * W[t][j, c] for j in range(self.D) if j < P.d_model) + b[t][0, c]
             for c in range(self.K)] for i in range(self.N)]))  # fmt: skip

    def scores(self, Z: Mat, t: int) -> Mat:
        P = self.P
        q, k = self.proj(P.Wq, P.bq, Z, t), self.proj(P.Wk, P.bk, Z, t)
        return self.block(self.n, self.n, np.array([
            [P.scale * sum(q[i, c] * k[key, c] for c in range(self.K) if c < P.d_head) + self.M.additive[i, key]
             for key in range(self.N)] for i in range(self.N)]))  # fmt: skip

    def allowed(self, i: int, key: int) -> bool:
        return key < self.n and not self.M.blocked[i, key]

    def softmax_rows(self, S: Mat) -> Mat:
        return np.array([
            [self.expf(S[i, key]) / sum(self.expf(S[i, m]) for m in range(self.N) if self.allowed(i, m))
             if i < self.n and self.allowed(i, key) else 0.0
             for key in range(self.N)] for i in range(self.N)])  # fmt: skip

    def head(self, Z: Mat, t: int) -> Mat:
        P = self.P
        a, v = self.softmax_rows(self.scores(Z, t)), self.proj(P.Wv, P.bv, Z, t)
        return self.block(self.n, P.d_head, np.array([
            [sum(a[i, key] * v[key, c] for key in range(self.N) if key < self.n)
             for c in range(self.K)] for i in range(self.N)]))  # fmt: skip

    def self_attn(self, Z: Mat) -> Mat:
        P = self.P
        heads = {t: self.head(Z, t) for t in range(self.H) if t < P.nhead}  # the heads the sum reads
        return self.block(self.n, P.d_model, np.array([
            [sum(sum(heads[t][i, c] * P.Wo[t][c, j] for c in range(self.K) if c < P.d_head)
                 for t in range(self.H) if t < P.nhead) + P.bo[0, j]
             for j in range(self.D)] for i in range(self.N)]))  # fmt: skip

    def ff_block(self, Z: Mat) -> Mat:
        P = self.P
        return self.block(self.n, P.d_model, np.array([
            [sum(P.activation(sum(Z[i, jj] * P.W1[jj, e] for jj in range(self.D) if jj < P.d_model) + P.b1[0, e])
                 * P.W2[e, j] for e in range(self.F) if e < P.dim_ff) + P.b2[0, j]
             for j in range(self.D)] for i in range(self.N)]))  # fmt: skip

    def add_residual(self, X: Mat, Y: Mat) -> Mat:
        return X + Y if self.P.residual else Y

    def norm1(self, X: Mat) -> Mat:
        return self.layer_norm(self.P.norm1_w, self.P.norm1_b, X)

    def norm2(self, X: Mat) -> Mat:
        return self.layer_norm(self.P.norm2_w, self.P.norm2_b, X)

    def encoder_layer(self, src: Mat) -> Mat:
        P = self.P
        x = self.block(self.n, P.d_model, src)
        if P.norm == "PreNorm":
            x1 = self.add_residual(x, self.self_attn(self.norm1(x)))
            return self.add_residual(x1, self.ff_block(self.norm2(x1))) if P.has_ffn else x1
        if P.norm == "PostNorm":
            x1 = self.norm1(self.add_residual(x, self.self_attn(x)))
            return self.norm2(self.add_residual(x1, self.ff_block(x1))) if P.has_ffn else x1
        x1 = self.add_residual(x, self.self_attn(x))
        return self.add_residual(x1, self.ff_block(x1)) if P.has_ffn else x1


# Section Torch
def relu(x: float) -> float:
    return max(x, 0.0)


def torch_scale(d_head: int) -> float:
    return 1.0 / math.sqrt(d_head)


def gelu(x: float) -> float:
    """torch's GELU (erf form): an activation EncoderLayer.v leaves a parameter."""
    return x * (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def gelu_tanh(x: float) -> float:
    """torch's GELU(approximate="tanh"): an activation EncoderLayer.v leaves a parameter."""
    return 0.5 * x * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


#: The Coq definitions transcribed above (Layer methods and the Torch section's functions).
TRANSCRIBED = (
    "causal", "key_padding", "block", "row_mean", "row_var", "layer_norm", "proj", "scores", "allowed",
    "softmax_rows", "head", "self_attn", "ff_block", "add_residual", "norm1", "norm2", "encoder_layer",
    "relu", "torch_scale", "torch_encoder_layer", "is_torch_layer",
)  # fmt: skip


def torch_encoder_layer(N: int, D: int, H: int, K: int, F: int, P: Params, M: Mask, n: int, src: Mat) -> Mat:
    """``torch_encoder_layer``: the layer with exp and the square root of the reals."""
    return Layer(math.exp, math.sqrt, N, D, H, K, F, P, M, n).encoder_layer(src)


def is_torch_layer(P: Params) -> bool:
    return P.residual and P.has_ffn and P.norm != "NoNorm" and P.scale == torch_scale(P.d_head) \
        and P.d_model == P.nhead * P.d_head  # fmt: skip


# -- torch's module and masks read into the records ---------------------------------------------
def causal(i: int, key: int) -> bool:
    return i < key


def key_padding(pad: np.ndarray, i: int, key: int) -> bool:
    return bool(pad[key])


def _activation(module: Any) -> Fn:
    import torch

    act = module.activation
    if act is torch.nn.functional.relu or isinstance(act, torch.nn.ReLU):
        return relu
    if act is torch.nn.functional.gelu or (isinstance(act, torch.nn.GELU) and act.approximate == "none"):
        return gelu
    if isinstance(act, torch.nn.GELU) and act.approximate == "tanh":
        return gelu_tanh
    raise ValueError(f"activation {act!r} is not transcribed")


def params_from_torch(module: Any, capacity: tuple[int, int, int, int, int], seed: int = 0) -> Params:
    """torch's ``TransformerEncoderLayer`` as the record ``params`` at ``capacity`` (N, D, H, K, F):
    the true blocks hold the module's weights (row convention), the padding holds noise."""
    import torch

    _, D, H, K, F = capacity
    rng = np.random.default_rng(seed)
    attn = module.self_attn
    d, h = attn.embed_dim, attn.num_heads
    k, f = d // h, module.linear1.out_features
    if d > D or h > H or k > K or f > F:
        raise ValueError(f"the module (d={d}, h={h}, k={k}, f={f}) does not fit the capacity {capacity}")
    t = lambda x: x.detach().to(dtype=torch.float64).numpy()

    def noise(*shape: int) -> Mat:
        return np.asarray(rng.normal(size=shape) * 7.0)

    def put(shape: tuple[int, ...], value: Mat | None, where: tuple[slice, ...], default: float = 0.0) -> Mat:
        out = noise(*shape)
        out[where] = default if value is None else value
        return out

    w_in = t(attn.in_proj_weight)
    b_in = t(attn.in_proj_bias) if attn.in_proj_bias is not None else np.zeros(3 * d)

    def heads(part: int) -> tuple[Mat, Mat]:
        W, b = noise(H, D, K), noise(H, 1, K)
        for s in range(h):
            W[s, :d, :k] = w_in[part * d + s * k: part * d + (s + 1) * k, :].T
            b[s, 0, :k] = b_in[part * d + s * k: part * d + (s + 1) * k]
        return W, b

    (Wq, bq), (Wk, bk), (Wv, bv) = heads(0), heads(1), heads(2)
    wo = t(attn.out_proj.weight).T  # (h k, d)
    Wo = noise(H, K, D)
    for s in range(h):
        Wo[s, :k, :d] = wo[s * k: (s + 1) * k, :]
    bias = lambda lin: None if lin.bias is None else t(lin.bias)
    def row(v: Mat | None, width: int, true: int, default: float = 0.0) -> Mat:
        return put((1, width), v, (slice(0, 1), slice(0, true)), default)

    ln = lambda m, which: None if getattr(m, which) is None else t(getattr(m, which))
    return Params(
        d, h, k, f, Wq, Wk, Wv, bq, bk, bv, Wo, row(bias(attn.out_proj), D, d),
        put((D, F), t(module.linear1.weight).T, (slice(0, d), slice(0, f))), row(bias(module.linear1), F, f),
        put((F, D), t(module.linear2.weight).T, (slice(0, f), slice(0, d))), row(bias(module.linear2), D, d),
        row(ln(module.norm1, "weight"), D, d, 1.0), row(ln(module.norm1, "bias"), D, d),
        row(ln(module.norm2, "weight"), D, d, 1.0), row(ln(module.norm2, "bias"), D, d),
        float(module.norm1.eps), torch_scale(k), _activation(module), True,
        "PreNorm" if module.norm_first else "PostNorm", True,
    )  # fmt: skip


def mask_from_torch(N: int, n: int, src_mask: Any = None, is_causal: bool = False, pad: Any = None,
                    seed: int = 1) -> Mask:  # fmt: skip
    """torch's ``src_mask`` (n, n; bool: True hides, float: added), ``is_causal`` and one sequence's
    ``src_key_padding_mask`` (n,; bool: True hides, float: 0 or -inf) merged into the record
    ``mask`` at N tokens (noise beyond n).  A -inf entry of a float mask hides its key (``blocked``,
    additive 0 there: torch's exp(-inf) is 0, the record's softmax leaves the key out); any other
    non-finite float entry, or a float key-padding entry other than 0 and -inf, raises ValueError."""
    rng = np.random.default_rng(seed)
    blocked = rng.random((N, N)) < 0.5
    additive = rng.normal(size=(N, N)) * 7.0
    blocked[:n, :n] = False
    additive[:n, :n] = 0.0
    if src_mask is not None:
        m = np.asarray(src_mask)
        if m.dtype == bool:
            blocked[:n, :n] |= m
        else:
            m = m.astype(np.float64)
            hidden = np.isneginf(m)
            if not np.all(np.isfinite(m) | hidden):
                raise ValueError("src_mask: a float mask entry is NaN or +inf (only finite values and -inf are read)")
            blocked[:n, :n] |= hidden
            additive[:n, :n] = np.where(hidden, 0.0, m)
    pad_hidden = None if pad is None else np.asarray(pad)
    if pad_hidden is not None and pad_hidden.dtype != bool:
        p = pad_hidden.astype(np.float64)
        if not np.all((p == 0.0) | np.isneginf(p)):
            raise ValueError("src_key_padding_mask: a float entry is neither 0 nor -inf (not transcribed)")
        pad_hidden = np.isneginf(p)
    for i in range(n):
        for key in range(n):
            if is_causal and causal(i, key):
                blocked[i, key] = True
            if pad_hidden is not None and key_padding(pad_hidden, i, key):
                blocked[i, key] = True
    return Mask(blocked, additive)


def embed(src: Mat, N: int, D: int, seed: int = 2) -> Mat:
    """The input (n, d) at capacity (N, D), the padding noise."""
    out = np.random.default_rng(seed).normal(size=(N, D)) * 7.0
    out[: src.shape[0], : src.shape[1]] = src
    return out


def with_params(layer: Layer, **kw: Any) -> Layer:
    """The layer with some fields of P replaced."""
    return replace(layer, P=replace(layer.P, **kw))


__all__ = [
    "ENCODER_LAYER_SHA256",
    "TRANSCRIBED",
    "Layer",
    "Mask",
    "Params",
    "embed",
    "gelu",
    "gelu_tanh",
    "is_torch_layer",
    "mask_from_torch",
    "params_from_torch",
    "relu",
    "torch_encoder_layer",
    "torch_scale",
    "with_params",
]
