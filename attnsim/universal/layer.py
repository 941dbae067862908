"""The simulated transformer layer T (Theorem 6, Corollary 6.1, Theorem 9, Corollary 9.1).

A plain NumPy / SymPy reference, row-vector convention ``y = x @ W``:

* multi-head attention: for head h, Q_h = Z W_q[h] + b_q[h] (same for K, V),
  A_h = softmax(scale * Q_h K_h^T) row-wise, attn = concat_h(A_h V_h) W_o + b_o;
* optional residual connections, optional FFN ``act(Z W1 + b1) W2 + b2`` (ReLU, GELU in erf form,
  or ``"gelu_tanh"``: torch's ``GELU(approximate="tanh")``, U's ``gelu_tanh`` gate);
* LayerNorm placement ``"none"``, ``"post"`` (torch's default) or ``"pre"`` (``norm_first=True``),
  with torch's semantics (biased variance, ``eps`` inside the square root).

``from_state_dict`` / ``from_torch`` read torch's parameter names (torch computes ``x W^T``).

Here: the layer, its checks, the reference itself and its constructors.  The softmax, LayerNorm
and activation functions it is written with, and its input checks, are
:mod:`attnsim.universal.layer_arithmetic`; what ``from_torch`` reads and refuses
:mod:`attnsim.universal.torch_reading`; a whole ``nn.TransformerEncoder``
:mod:`attnsim.universal.torch_encoder`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from attnsim.universal.errors import SimulatorError
from attnsim.universal.layer_arithmetic import (
    _as,
    _fn,
    _is_object,
    _relu,
    check_batch,
    inverse_sqrt,
    layer_norm,
    softmax_rows,
)
from attnsim.universal.masks import AttentionMask, attention_mask, split_key_padding
from attnsim.universal.torch_reading import (
    _activation_of,
    _check_attention,
    _float64_state,
    _training_dropout,
    check_stock,
    import_torch,
)

NORMS = ("none", "post", "pre")
ACTIVATIONS = ("relu", "gelu", "gelu_tanh")


@dataclass(eq=False)
class TransformerLayer:
    """One encoder layer T; every option of torch's ``TransformerEncoderLayer`` / ``MultiheadAttention``.

    ``batch_first`` is the order of a batch's axes, as torch's flag of that name: (B, n, d_model)
    when True (the default), (n, B, d_model) when False; ``from_torch`` copies the module's."""

    w_q: Any
    w_k: Any
    w_v: Any
    w_o: Any
    b_q: Any = None
    b_k: Any = None
    b_v: Any = None
    b_o: Any = None
    w1: Any = None
    b1: Any = None
    w2: Any = None
    b2: Any = None
    scale: Any = None
    residual: bool = False
    norm: str = "none"
    ln1_weight: Any = None
    ln1_bias: Any = None
    ln2_weight: Any = None
    ln2_bias: Any = None
    eps: Any = 1e-5
    activation: str = "relu"
    meta: dict[str, Any] = field(default_factory=dict)
    batch_first: bool = True

    def __post_init__(self) -> None:  # noqa: C901, PLR0912
        self.w_q = _as(self.w_q, "w_q")
        if self.w_q.ndim != 3:
            raise SimulatorError(f"w_q must have shape (n_heads, d_model, d_head), got {self.w_q.shape}")
        h, d, k = self.w_q.shape
        if min(h, d, k) < 1:
            raise SimulatorError(f"w_q has an empty dimension: {self.w_q.shape}")
        self.w_k = _as(self.w_k, "w_k", (h, d, k))
        self.w_v = _as(self.w_v, "w_v", (h, d, k))
        self.w_o = _as(self.w_o, "w_o", (h * k, d))
        zeros = (lambda *s: np.zeros(s, dtype=object)) if _is_object(self.w_q) else (lambda *s: np.zeros(s))
        self.b_q = zeros(h, k) if self.b_q is None else _as(self.b_q, "b_q", (h, k))
        self.b_k = zeros(h, k) if self.b_k is None else _as(self.b_k, "b_k", (h, k))
        self.b_v = zeros(h, k) if self.b_v is None else _as(self.b_v, "b_v", (h, k))
        self.b_o = zeros(d) if self.b_o is None else _as(self.b_o, "b_o", (d,))
        if (self.w1 is None) != (self.w2 is None):
            raise SimulatorError("the FFN needs both w1 (d_model, d_ff) and w2 (d_ff, d_model), or neither")
        if self.w1 is not None:
            self.w1 = _as(self.w1, "w1")
            if self.w1.ndim != 2 or self.w1.shape[0] != d or self.w1.shape[1] < 1:
                raise SimulatorError(f"w1 must have shape ({d}, d_ff), got {self.w1.shape}")
            f = self.w1.shape[1]
            self.w2 = _as(self.w2, "w2", (f, d))
            self.b1 = zeros(f) if self.b1 is None else _as(self.b1, "b1", (f,))
            self.b2 = zeros(d) if self.b2 is None else _as(self.b2, "b2", (d,))
        elif self.b1 is not None or self.b2 is not None:
            raise SimulatorError("b1/b2 given without an FFN (w1, w2)")
        if self.norm not in NORMS:
            raise SimulatorError(f"norm must be one of {NORMS}, got {self.norm!r}")
        if self.activation not in ACTIVATIONS:
            raise SimulatorError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        one = np.ones(d, dtype=object) if _is_object(self.w_q) else np.ones(d)
        self.ln1_weight = one.copy() if self.ln1_weight is None else _as(self.ln1_weight, "ln1_weight", (d,))
        self.ln1_bias = zeros(d) if self.ln1_bias is None else _as(self.ln1_bias, "ln1_bias", (d,))
        self.ln2_weight = one.copy() if self.ln2_weight is None else _as(self.ln2_weight, "ln2_weight", (d,))
        self.ln2_bias = zeros(d) if self.ln2_bias is None else _as(self.ln2_bias, "ln2_bias", (d,))
        if self.scale is None:
            self.scale = inverse_sqrt(k, exact=_is_object(self.w_q))
        for nm in ("scale", "eps"):
            v = getattr(self, nm)
            if isinstance(v, (int, float, np.floating)):
                if not np.isfinite(v):
                    raise SimulatorError(f"{nm} is NaN or inf")
                setattr(self, nm, float(v))
        if isinstance(self.eps, float) and self.eps <= 0:
            raise SimulatorError(f"eps must be > 0, got {self.eps}")
        self.residual = bool(self.residual)
        if not isinstance(self.batch_first, (bool, np.bool_)):
            raise SimulatorError(f"batch_first must be True or False, got {self.batch_first!r}")
        self.batch_first = bool(self.batch_first)

    # -- sizes --------------------------------------------------------------------------------
    @property
    def n_heads(self) -> int:
        return int(self.w_q.shape[0])

    @property
    def d_model(self) -> int:
        return int(self.w_q.shape[1])

    @property
    def d_head(self) -> int:
        return int(self.w_q.shape[2])

    @property
    def d_ff(self) -> int | None:
        return None if self.w1 is None else int(self.w1.shape[1])

    @property
    def symbolic_params(self) -> bool:
        return _is_object(self.w_q, self.w_k, self.w_v, self.w_o)

    # -- the reference ----------------------------------------------------------------------
    def attention(self, z: np.ndarray, mask: AttentionMask | None = None) -> np.ndarray:
        """Multi-head attention of the rows of z (no residual, no norm); with ``mask`` (one
        :class:`~attnsim.universal.masks.AttentionMask` for every head, as torch's 2-D masks) each
        row's softmax runs over its unblocked keys with the additive part added to the logits."""
        if mask is not None and mask.n != z.shape[0]:
            raise SimulatorError(f"mask is for {mask.n} tokens, the input has {z.shape[0]}")
        heads = []
        for h in range(self.n_heads):
            q = z @ self.w_q[h] + self.b_q[h]
            k = z @ self.w_k[h] + self.b_k[h]
            v = z @ self.w_v[h] + self.b_v[h]
            s = (q @ k.T) * self.scale
            a = softmax_rows(s) if mask is None else mask.apply(s)
            heads.append(a @ v)
        return np.concatenate(heads, axis=1) @ self.w_o + self.b_o

    def ffn(self, z: np.ndarray) -> np.ndarray:
        """act(z W1 + b1) W2 + b2."""
        u = z @ self.w1 + self.b1
        # torch's constants: sqrt(2 / pi) and 0.044715 (GELU(approximate="tanh")), sqrt(2) (erf's)
        c: Any = math.sqrt(2.0 / math.pi)
        kappa: Any = 0.044715
        root2: Any = math.sqrt(2.0)
        if u.dtype == object:  # symbolic: the same constants, exact in SymPy
            import sympy as sp

            c, kappa, root2 = sp.sqrt(2 / sp.pi), sp.Rational(44715, 10**6), sp.sqrt(2)
        if self.activation == "relu":
            a = _relu(u)
        elif self.activation == "gelu_tanh":
            a = u * (1 + _fn("tanh", c * (u + kappa * u**3))) / 2
        else:
            a = u * (1 + _fn("erf", u / root2)) / 2
        return a @ self.w2 + self.b2

    def __call__(
        self, x: Any, *, src_mask: Any = None, is_causal: bool = False, src_key_padding_mask: Any = None
    ) -> np.ndarray:
        """T(X) for X of shape (n, d_model), or a batch: each element is run on its own and the
        results are stacked in the batch's order, (B, n, d_model) when ``batch_first`` (the
        default), else (n, B, d_model) as torch's ``batch_first=False`` module reads and returns it.

        The masks are torch's (``TransformerEncoderLayer.forward``; :mod:`attnsim.universal.masks`):
        ``src_mask`` (n, n) bool or float, shared by the batch; ``is_causal``; ``src_key_padding_mask``
        (n,) for one sequence, (B, n) for a batch.  Masks are numeric only; X and the parameters may
        be SymPy objects (then the masked softmax is the plain exp / sum over the unblocked keys)."""

        x = check_batch(_as(x, "X"), self.d_model, self.batch_first)
        if x.ndim == 3:
            xs = x if self.batch_first else np.swapaxes(x, 0, 1)  # (B, n, d)
            pads = split_key_padding(src_key_padding_mask, xs.shape[0], xs.shape[1])
            outs = []
            for b, (xb, pad) in enumerate(zip(xs, pads, strict=True)):
                try:
                    outs.append(self(xb, src_mask=src_mask, is_causal=is_causal, src_key_padding_mask=pad))
                except SimulatorError as exc:
                    if "has every key masked" not in str(exc):
                        raise
                    raise SimulatorError(f"batch element {b}: {exc}") from None
            out = np.stack(outs)
            return out if self.batch_first else np.swapaxes(out, 0, 1)
        n = x.shape[-2]
        mask = None
        if src_mask is not None or is_causal or src_key_padding_mask is not None:
            mask = attention_mask(n, src_mask=src_mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask)
        if x.dtype == object or self.symbolic_params:
            x = np.asarray(x, dtype=object)
        ln1 = lambda v: layer_norm(v, self.ln1_weight, self.ln1_bias, self.eps)
        ln2 = lambda v: layer_norm(v, self.ln2_weight, self.ln2_bias, self.eps)
        z = ln1(x) if self.norm == "pre" else x
        y = self.attention(z, mask) + (x if self.residual else 0)
        if self.norm == "post":
            y = ln1(y)
        if self.w1 is None:
            return y
        z = ln2(y) if self.norm == "pre" else y
        y2 = self.ffn(z) + (y if self.residual else 0)
        return ln2(y2) if self.norm == "post" else y2

    # -- constructors -------------------------------------------------------------------------
    @staticmethod
    def random(
        d_model: int,
        n_heads: int,
        d_head: int,
        d_ff: int | None = None,
        seed: int = 0,
        *,
        residual: bool = False,
        norm: str = "none",
        activation: str = "relu",
        biases: bool = True,
        eps: float = 1e-5,
    ) -> TransformerLayer:
        """Random float64 weights (normal, std 1/sqrt(fan-in)), LayerNorm weights near 1."""
        for nm, v in (("d_model", d_model), ("n_heads", n_heads), ("d_head", d_head)):
            if not isinstance(v, int) or v < 1:
                raise SimulatorError(f"{nm} must be a positive int, got {v!r}")
        if d_ff is not None and (not isinstance(d_ff, int) or d_ff < 1):
            raise SimulatorError(f"d_ff must be a positive int or None, got {d_ff!r}")
        rng = np.random.default_rng(seed)
        d, h, k = d_model, n_heads, d_head
        g = lambda *s, fan: rng.normal(size=s) / math.sqrt(fan)
        b = (lambda *s: rng.normal(size=s) * 0.1) if biases else (lambda *s: None)
        kw: dict[str, Any] = {}
        if d_ff is not None:
            kw = {"w1": g(d, d_ff, fan=d), "b1": b(d_ff), "w2": g(d_ff, d, fan=d_ff), "b2": b(d)}
        return TransformerLayer(
            w_q=g(h, d, k, fan=d),
            w_k=g(h, d, k, fan=d),
            w_v=g(h, d, k, fan=d),
            w_o=g(h * k, d, fan=h * k),
            b_q=b(h, k),
            b_k=b(h, k),
            b_v=b(h, k),
            b_o=b(d),
            residual=residual,
            norm=norm,
            activation=activation,
            ln1_weight=1 + rng.normal(size=d) * 0.1,
            ln1_bias=rng.normal(size=d) * 0.1,
            ln2_weight=1 + rng.normal(size=d) * 0.1,
            ln2_bias=rng.normal(size=d) * 0.1,
            eps=eps,
            **kw,
        )

    @staticmethod
    def symbolic(
        d_model: int,
        n_heads: int,
        d_head: int,
        d_ff: int | None = None,
        *,
        biases: bool = True,
        residual: bool = False,
        norm: str = "none",
        activation: str = "relu",
        prefix: str = "",
    ) -> TransformerLayer:
        """A fresh real SymPy symbol for every weight (scale stays 1/sqrt(d_head); eps is a symbol)."""
        import sympy as sp

        def sym(name: str, *shape: int) -> np.ndarray:
            flat = [sp.Symbol(f"{prefix}{name}_{'_'.join(map(str, ix))}", real=True) for ix in np.ndindex(*shape)]
            a = np.empty(len(flat), dtype=object)
            a[:] = flat
            return a.reshape(shape)

        d, h, k = d_model, n_heads, d_head
        kw: dict[str, Any] = {}
        if d_ff is not None:
            kw = {"w1": sym("w1", d, d_ff), "w2": sym("w2", d_ff, d)}
            if biases:
                kw |= {"b1": sym("b1", d_ff), "b2": sym("b2", d)}
        if biases:
            kw |= {"b_q": sym("bq", h, k), "b_k": sym("bk", h, k), "b_v": sym("bv", h, k), "b_o": sym("bo", d)}
        if norm != "none":
            kw |= {"ln1_weight": sym("g1", d), "ln1_bias": sym("be1", d)}
            kw |= {"ln2_weight": sym("g2", d), "ln2_bias": sym("be2", d)}
            kw["eps"] = sp.Symbol(f"{prefix}eps", positive=True)
        return TransformerLayer(
            w_q=sym("wq", h, d, k),
            w_k=sym("wk", h, d, k),
            w_v=sym("wv", h, d, k),
            w_o=sym("wo", h * k, d),
            residual=residual,
            norm=norm,
            activation=activation,
            **kw,
        )

    @staticmethod
    def from_state_dict(
        sd: Mapping[str, Any],
        n_heads: int,
        *,
        norm_first: bool = False,
        activation: str = "relu",
        eps: float = 1e-5,
        scale: float | None = None,
    ) -> TransformerLayer:
        """From torch parameter names: ``nn.MultiheadAttention`` (in_proj_weight, out_proj.*) or
        ``nn.TransformerEncoderLayer`` (self_attn.*, linear1/2.*, norm1/2.*).  torch computes x W^T."""
        sd = {
            k: np.asarray(v.detach().cpu().numpy() if hasattr(v, "detach") else v, dtype=np.float64)
            for k, v in sd.items()
        }
        pre = "self_attn." if "self_attn.in_proj_weight" in sd else ""
        if f"{pre}in_proj_weight" not in sd:
            odd = [k for k in sd if k.endswith(("q_proj_weight", "bias_k", "bias_v"))]
            if odd:
                raise SimulatorError(f"unsupported attention parameters {odd} (separate kdim/vdim or bias_k/bias_v)")
            raise SimulatorError("state dict has no 'in_proj_weight' nor 'self_attn.in_proj_weight'")
        w_in = sd[f"{pre}in_proj_weight"]
        d = w_in.shape[1]
        if w_in.shape != (3 * d, d):
            raise SimulatorError(f"in_proj_weight must have shape (3d, d), got {w_in.shape}")
        if not isinstance(n_heads, int) or n_heads < 1 or d % n_heads:
            raise SimulatorError(f"n_heads={n_heads!r} must be a positive divisor of d_model={d}")
        k = d // n_heads
        b_in = sd.get(f"{pre}in_proj_bias", np.zeros(3 * d))

        def heads(w: np.ndarray) -> np.ndarray:  # torch rows h*k..(h+1)*k of W (out, in) -> (h, in, k)
            return np.stack([w[h * k : (h + 1) * k, :].T for h in range(n_heads)])

        kw: dict[str, Any] = {
            "w_q": heads(w_in[:d]),
            "w_k": heads(w_in[d : 2 * d]),
            "w_v": heads(w_in[2 * d :]),
            "b_q": b_in[:d].reshape(n_heads, k),
            "b_k": b_in[d : 2 * d].reshape(n_heads, k),
            "b_v": b_in[2 * d :].reshape(n_heads, k),
            "w_o": sd[f"{pre}out_proj.weight"].T,
            "b_o": sd.get(f"{pre}out_proj.bias", np.zeros(d)),
            "scale": scale,
        }
        if pre:
            try:
                kw |= {
                    "w1": sd["linear1.weight"].T,
                    "b1": sd.get("linear1.bias"),
                    "w2": sd["linear2.weight"].T,
                    "b2": sd.get("linear2.bias"),
                    "ln1_weight": sd["norm1.weight"],
                    "ln1_bias": sd.get("norm1.bias"),
                    "ln2_weight": sd["norm2.weight"],
                    "ln2_bias": sd.get("norm2.bias"),
                }
            except KeyError as exc:
                raise SimulatorError(f"encoder-layer state dict lacks {exc.args[0]!r}") from None
            kw |= {"residual": True, "norm": "pre" if norm_first else "post", "activation": activation, "eps": eps}
        return TransformerLayer(**kw)

    @staticmethod
    def from_torch(module: Any) -> TransformerLayer:  # noqa: C901
        """From a ``torch.nn.MultiheadAttention`` or ``torch.nn.TransformerEncoderLayer`` (any float
        dtype: the weights are read exactly into float64); an option T does not simulate is refused
        in one line naming it (a whole ``nn.TransformerEncoder``:
        :class:`~attnsim.universal.torch_encoder.TorchEncoder`).  T keeps the module's
        ``batch_first``, so ``T(X)`` and ``U.run(T, X)`` read a batch X in the order the module does."""
        torch = import_torch()
        nn = torch.nn
        if isinstance(module, nn.TransformerEncoder):
            raise SimulatorError(
                "from_torch takes one layer; for a whole nn.TransformerEncoder use TorchEncoder.from_torch "
                "(or U.run_stack(encoder, X)), which also reads its final norm"
            )
        if not isinstance(module, (nn.MultiheadAttention, nn.TransformerEncoderLayer)):
            raise SimulatorError(
                f"from_torch takes nn.MultiheadAttention or nn.TransformerEncoderLayer, got {type(module).__name__}"
            )
        check_stock(module, torch)
        drop = _training_dropout(module, nn)
        if drop:
            raise SimulatorError(
                f"from_torch: {type(module).__name__} is in training mode with dropout {drop}, which T "
                "(eval semantics) does not simulate: call .eval() or set dropout=0"
            )
        if isinstance(module, nn.MultiheadAttention):
            _check_attention(module, "")
            T = TransformerLayer.from_state_dict(_float64_state(module), n_heads=module.num_heads)
            return replace(T, batch_first=bool(module.batch_first))
        _check_attention(module.self_attn, "self_attn: ")
        for nm in ("linear1", "linear2"):
            if not isinstance(getattr(module, nm, None), nn.Linear):
                raise SimulatorError(f"from_torch: {nm} is {type(getattr(module, nm, None)).__name__}, not nn.Linear")
        sd = _float64_state(module)
        d = int(module.self_attn.embed_dim)
        for nm in ("norm1", "norm2"):
            ln = getattr(module, nm, None)
            if not isinstance(ln, nn.LayerNorm):
                raise SimulatorError(
                    f"from_torch: {nm} is {type(ln).__name__}, not nn.LayerNorm; T has LayerNorm at both places"
                )
            if tuple(ln.normalized_shape) != (d,):
                raise SimulatorError(f"from_torch: {nm} normalizes shape {tuple(ln.normalized_shape)}, not ({d},)")
            if not ln.elementwise_affine:  # LayerNorm(elementwise_affine=False): weight 1, bias 0
                sd[f"{nm}.weight"] = np.ones(d)
        if module.norm1.eps != module.norm2.eps:
            eps1, eps2 = module.norm1.eps, module.norm2.eps
            raise SimulatorError(f"from_torch: norm1.eps = {eps1} and norm2.eps = {eps2} differ")
        T = TransformerLayer.from_state_dict(
            sd,
            n_heads=module.self_attn.num_heads,
            norm_first=bool(module.norm_first),
            activation=_activation_of(module, torch),
            eps=float(module.norm1.eps),
        )
        return replace(T, batch_first=bool(module.self_attn.batch_first))  # the layer keeps the flag there

    def with_options(self, **kw: Any) -> TransformerLayer:
        """A copy with some fields replaced (e.g. ``norm="pre"``)."""
        return replace(self, **kw)
