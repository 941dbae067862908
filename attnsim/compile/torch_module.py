"""``CompiledTransformer.to_torch()``: the same float64 forward as a ``torch.nn.Module`` (optional extra)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from attnsim.compile.errors import CompileError

if TYPE_CHECKING:  # the model calls build(); the type only, so no import circle
    from attnsim.compile.model import CompiledTransformer


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise CompileError("to_torch() needs PyTorch, an optional extra: pip install torch") from None
    return torch


_FNS: dict[str, Any] = {
    "mul": lambda t, x, y: x * y,
    "square": lambda t, x: x * x,
    "reciprocal": lambda t, x: 1.0 / x,
    "div": lambda t, x, y: x / y,
    "exp": lambda t, x: t.exp(x),
    "sqrt": lambda t, x: t.sqrt(t.where(x < 0, t.full_like(x, math.nan), x)),
    "gelu": lambda t, x: 0.5 * x * (1.0 + t.erf(x / math.sqrt(2.0))),
    "gelu_tanh": lambda t, x: 0.5 * x * (1.0 + t.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x))),
    "lt": lambda t, x, y: (x < y).to(x.dtype),
    "gate": lambda t, c, x: t.where(c != 0, x, t.zeros_like(x)),
    "where": lambda t, c, x, y: t.where(c != 0, x, y),
    "relu": lambda t, x: t.clamp(x, min=0),
    "abs": lambda t, x: t.abs(x),
    "max": lambda t, x, y: t.maximum(x, y),
    "min": lambda t, x, y: t.minimum(x, y),
}


def _mm(t: Any, x: Any, w: Any) -> Any:
    """x @ w where a non-finite entry reaches only columns with a non-zero weight on it (as in NumPy)."""
    fin = t.isfinite(x)
    if bool(fin.all()):
        return x @ w
    out = t.where(fin, x, t.zeros_like(x)) @ w
    bad = ((~fin).to(x.dtype) @ (w != 0).to(x.dtype)) > 0
    return t.where(bad, t.full_like(out, math.nan), out)


def _wmean(t: Any, w: Any, v: Any) -> Any:
    """w @ v where keys of weight 0 contribute nothing even if their value is not finite."""
    fin = t.isfinite(v)
    if bool(fin.all()):
        return w @ v
    out = w @ t.where(fin, v, t.zeros_like(v))
    bad = ((w > 0).to(v.dtype) @ (~fin).to(v.dtype)) > 0
    return t.where(bad, t.full_like(out, math.nan), out)


def _attention(
    t: Any, res: Any, heads: Any, head_meta: list[tuple[int, int, float]], li: int, beta: float | None
) -> Any:
    """What layer ``li``'s heads add to the residual ``res`` (hard attention, or softmax at ``beta``)."""
    add = t.zeros_like(res)
    for hl, base, gap in head_meta:
        if hl != li:
            continue
        wq, wk, wv, wo = (heads[base + i] for i in range(4))
        s = _mm(t, res, wq) @ _mm(t, res, wk).transpose(1, 2)
        s = t.where(t.isnan(s), t.full_like(s, -math.inf), s)
        if beta is None:
            w = (s >= s.amax(dim=2, keepdim=True) - gap / 2).to(t.float64)
            w = w / w.sum(dim=2, keepdim=True)
        else:
            w = t.softmax(beta * s, dim=2)
        add = add + _mm(t, _wmean(t, w, _mm(t, res, wv)), wo)
    return add


def _mlp_stage(
    t: Any, res: Any, stages: Any, stage_meta: list[tuple[int, int, str, Any]], li: int, si: int, one_dim: int
) -> Any:
    """What stage ``si`` of layer ``li``'s MLP adds to the residual ``res``: its ReLU block and function nodes."""
    add = t.zeros_like(res)
    for sl, s_i, kind, meta in stage_meta:
        if sl != li or s_i != si:
            continue
        if kind == "relu":
            w1, w2 = stages[meta], stages[meta + 1]
            add = add + _mm(t, t.clamp(_mm(t, res, w1), min=0), w2)
        else:
            idx, prim, params, out = meta
            args = _mm(t, res, stages[idx])
            val = _FNS[prim](t, *(args[..., i] for i in range(args.shape[-1])), *params)
            one = res[..., one_dim]
            add[..., out] = add[..., out] + t.where(one != 0, val, t.zeros_like(val))
    return add


def build(ct: CompiledTransformer) -> Any:  # noqa: C901
    """A torch.nn.Module: ``module(tokens)`` for a (L,) or (B, L) float64 tensor gives the outputs."""
    torch = _torch()
    nn = torch.nn

    def p(a: np.ndarray) -> Any:
        return nn.Parameter(torch.tensor(a.astype(np.float64)), requires_grad=False)

    for lyr in ct.layers:
        for st in lyr.mlp:
            for fn in st.fns:
                if fn.prim not in _FNS:
                    raise CompileError(f"to_torch: no torch version of the function node {fn.prim!r}")

    module_base: Any = nn.Module

    class Compiled(module_base):
        """The compiled program; weights as float64 parameters (frozen)."""

        def __init__(self) -> None:
            super().__init__()
            self.pos_embed = p(ct.pos_embed)
            self.tok_embed = p(ct.tok_embed)
            self.readout = p(ct.readout)
            self.heads = nn.ParameterList()
            self.head_meta: list[tuple[int, int, float]] = []
            self.stages = nn.ParameterList()
            self.stage_meta: list[tuple[int, int, str, Any]] = []
            self.one = ct.dims.index("one")
            for li, lyr in enumerate(ct.layers):
                for h in lyr.heads:
                    self.head_meta.append((li, len(self.heads), min(float(h.gap), 1.0)))
                    self.heads.extend([p(h.W_Q), p(h.W_K), p(h.W_V), p(h.W_O)])
                for si, st in enumerate(lyr.mlp):
                    if st.relu is not None:
                        self.stage_meta.append((li, si, "relu", len(self.stages)))
                        self.stages.extend([p(st.relu.W1), p(st.relu.W2)])
                    for fn in st.fns:
                        meta = (len(self.stages), fn.prim, tuple(map(float, fn.params)), fn.out)
                        self.stage_meta.append((li, si, "fn", meta))
                        self.stages.append(p(fn.W_in))
            self.n_layers = len(ct.layers)

        def forward(self, tokens: Any, beta: float | None = None) -> Any:
            t = torch
            x = t.as_tensor(tokens, dtype=t.float64)
            single = x.dim() == 1
            if single:
                x = x[None, :]
            B, L = x.shape
            if L < 1 or L > ct.max_len:
                raise CompileError(f"sequence length {L} outside 1..max_len={ct.max_len}")
            res = self.pos_embed[: L + 1].expand(B, L + 1, -1).clone()
            res[:, 1:, :] = res[:, 1:, :] + x[:, :, None] * self.tok_embed
            for li in range(self.n_layers):
                if li > 0:
                    res = res + _attention(t, res, self.heads, self.head_meta, li, beta)
                for si in sorted({s_i for sl, s_i, _, _ in self.stage_meta if sl == li}):
                    res = res + _mlp_stage(t, res, self.stages, self.stage_meta, li, si, self.one)
            y = _mm(t, res[:, 1:, :], self.readout[:, None])[..., 0]
            return y[0] if single else y

    return Compiled()
