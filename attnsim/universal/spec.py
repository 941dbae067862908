"""Theorem 6's specification: one whole encoder layer T(X), entry by entry, and its named
intermediate quantities.

:data:`ENCODER_LAYER` states one whole encoder layer T(X) (attention with masks, residual,
LayerNorm none / pre / post, ReLU, GELU or tanh-GELU FFN) in torch's parameter layout
(:data:`ENCODER_LAYER_NAMES`).  :func:`encoder_layer_parts` writes the same statement as its
intermediate quantities (:data:`PART_NAMES`), in which U's layer proof states each stage's claim
(:func:`given_parts`: the later quantities over opaque earlier ones).  Written in
:mod:`attnsim.symbolic.spec_language`, without reading U, the simulated layer T or the textbook
formula of ``reference.py`` (``tests/test_layering.py`` checks that this module imports the spec
language only).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from attnsim.symbolic.spec_language import Spec, SpecError
from attnsim.symbolic.spec_symbolic import SymbolicAlg

#: torch's ``TransformerEncoderLayer`` state-dict names -> ENCODER_LAYER's operand names ('.' -> '_',
#: the ``self_attn.`` prefix dropped).
ENCODER_LAYER_NAMES = {
    "self_attn.in_proj_weight": "in_proj_weight",
    "self_attn.in_proj_bias": "in_proj_bias",
    "self_attn.out_proj.weight": "out_proj_weight",
    "self_attn.out_proj.bias": "out_proj_bias",
    "linear1.weight": "linear1_weight",
    "linear1.bias": "linear1_bias",
    "linear2.weight": "linear2_weight",
    "linear2.bias": "linear2_bias",
    "norm1.weight": "norm1_weight",
    "norm1.bias": "norm1_bias",
    "norm2.weight": "norm2_weight",
    "norm2.bias": "norm2_bias",
}


def _encoder_layer(alg: Any, ops: Mapping[str, Any], _h: Any, i: Any, e: Any, sz: Mapping[str, Any]) -> Any:
    """out[i, e] of one encoder layer (the statement of ENCODER_LAYER)."""
    return encoder_layer_parts(alg, ops, sz)["out"](i, e)


def encoder_layer_parts(
    alg: Any,
    ops: Mapping[str, Any],
    sz: Mapping[str, Any],
    given: Mapping[str, Callable[..., Any]] | None = None,
) -> dict[str, Callable[..., Any]]:
    """The statement of ENCODER_LAYER as its named intermediate quantities (stage proofs state
    their claims in them): z1(r, t), proj(part, r, h, c), logit(h, r, l), weight(h, r, j),
    head(hd, r, t), attn(r, t), y1_in(r, t), y1(r, t), z2(r, t), u1(r, g), act(r, g), y2_in(r, t), out(i, e).

    ``given`` (name -> function of the same coordinates) replaces those intermediates: every later
    one is then written over the given function instead of the definition (e.g. ``out`` over an
    opaque y1 and act, which a stage proof reads from earlier stages: :func:`given_parts`; attn
    over each head's opaque term head(hd, r, t), the attention stage's cut).  With the definitions
    given, it is the same statement (the definitions are substituted back).

    Every intermediate is a function of its coordinates, memoized per entry (the same value is
    read by many sums; memoizing changes no value, only the concrete evaluation's cost)."""
    given = dict(given or {})
    unknown = set(given) - set(PART_NAMES)
    if unknown:
        raise SpecError(f"given intermediates {sorted(unknown)} are not parts of ENCODER_LAYER: {PART_NAMES}")

    terms = _SpecTerms(alg, ops, sz, given)
    attention = _attention_parts(terms)
    parts = (*attention, *_block_parts(terms, attention[-1]))
    return dict(zip(PART_NAMES, parts, strict=True))


@dataclass
class _SpecTerms:
    """What every intermediate of :func:`encoder_layer_parts` reads: the algebra, the operands, the
    true sizes, the given intermediates and one memo per entry."""

    alg: Any
    ops: Mapping[str, Any]
    sz: Mapping[str, Any]
    given: Mapping[str, Callable[..., Any]]
    memo: dict[tuple[Any, ...], Any] = field(default_factory=dict)

    def pick(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """The given intermediate ``name``, else its definition ``fn``."""
        return self.given.get(name, fn)

    def cached(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` memoized per entry."""
        memo = self.memo

        def get(*args: Any) -> Any:
            key = (fn, *args)
            if key not in memo:
                memo[key] = fn(*args)
            return memo[key]

        return get

    def vec(self, name: str, r: Any) -> Any:
        """Entry r of a vector operand (one row, (1, len))."""
        return self.ops[name][0, 0, r]

    def opt(self, name: str) -> Any:
        """A scalar / 0/1 option operand ((1, 1))."""
        return self.ops[name][0, 0, 0]

    def x(self, r: Any, t: Any) -> Any:
        """The input X[r, t]."""
        return self.ops["X"][0, r, t]

    def layer_norm(self, val: Callable[[Any, Any], Any], w: str, b: str) -> Callable[[Any, Any], Any]:
        """torch.nn.LayerNorm over the d features of row r: biased variance, eps inside the root."""
        alg, d, cached, opt, vec = self.alg, self.sz["d"], self.cached, self.opt, self.vec
        mean = cached(lambda r: alg.sum(lambda u: val(r, u), d) / d)
        var = cached(lambda r: alg.sum(lambda u: alg.power(val(r, u) - mean(r), 2), d) / d)
        return lambda r, t: (val(r, t) - mean(r)) * alg.rsqrt(var(r) + opt("eps")) * vec(w, t) + vec(b, t)


def _attention_parts(s: _SpecTerms) -> tuple[Callable[..., Any], ...]:
    """The attention block's intermediates: z1, proj, logit, weight, head, attn."""
    alg, ops, pick, cached, vec, opt, x, layer_norm = s.alg, s.ops, s.pick, s.cached, s.vec, s.opt, s.x, s.layer_norm
    n, d, hh, k = s.sz["n"], s.sz["d"], s.sz["hh"], s.sz["k"]
    hk = hh * k
    ln1_x = layer_norm(x, "norm1_weight", "norm1_bias")

    @cached
    def z1(r: Any, t: Any) -> Any:  # the attention's input: norm1(X) when pre, else X
        return alg.if_true(opt("pre"), lambda: ln1_x(r, t), lambda: x(r, t))

    z1 = pick("z1", z1)

    @cached
    def proj(part: int, r: Any, hd: Any, c: Any) -> Any:  # part 0, 1, 2: q, k, v of head hd, coordinate c
        row = part * hk + hd * k + c
        return alg.sum(lambda t: z1(r, t) * ops["in_proj_weight"][0, row, t], d) + vec("in_proj_bias", row)

    proj = pick("proj", proj)

    @cached
    def logit(hd: Any, r: Any, l: Any) -> Any:  # noqa: E741
        qk = alg.sum(lambda c: proj(0, r, hd, c) * proj(1, l, hd, c), k)
        return opt("scale") * qk + ops["additive"][0, r, l]

    logit = pick("logit", logit)

    @cached
    def weight(hd: Any, r: Any, j: Any) -> Any:  # softmax over the unblocked keys, as 1 / sum exp(s_l - s_j)
        def denominator() -> Any:
            return alg.sum(
                lambda l: alg.if_true(  # noqa: E741
                    ops["blocked"][0, r, l], lambda: 0, lambda: alg.exp(logit(hd, r, l) - logit(hd, r, j))
                ),
                n,
            )

        return alg.if_true(ops["blocked"][0, r, j], lambda: 0, lambda: 1 / denominator())

    weight = pick("weight", weight)

    @cached
    def head(hd: Any, r: Any, t: Any) -> Any:  # head hd's term of attn(r, t): its A_h V_h through W_O
        one = lambda c: alg.sum(lambda j: weight(hd, r, j) * proj(2, j, hd, c), n)
        return alg.sum(lambda c: ops["out_proj_weight"][0, t, hd * k + c] * one(c), k)

    head = pick("head", head)

    @cached
    def attn(r: Any, t: Any) -> Any:  # concat_h(A_h V_h) out_proj.weight^T + out_proj.bias
        return alg.sum(lambda hd: head(hd, r, t), hh) + vec("out_proj_bias", t)

    attn = pick("attn", attn)

    return z1, proj, logit, weight, head, attn


def _block_parts(s: _SpecTerms, attn: Callable[..., Any]) -> tuple[Callable[..., Any], ...]:
    """The residual, LayerNorms and FFN after attention: y1_in, y1, z2, u1, act, y2_in, out."""
    alg, ops, pick, cached, vec, opt, x, layer_norm = s.alg, s.ops, s.pick, s.cached, s.vec, s.opt, s.x, s.layer_norm
    d, f = s.sz["d"], s.sz["f"]

    @cached
    def y1_in(r: Any, t: Any) -> Any:
        return attn(r, t) + alg.if_true(opt("residual"), lambda: x(r, t), lambda: 0)

    y1_in = pick("y1_in", y1_in)

    ln1_y = layer_norm(y1_in, "norm1_weight", "norm1_bias")

    @cached
    def y1(r: Any, t: Any) -> Any:  # after the attention block: norm1(...) when post
        return alg.if_true(opt("post"), lambda: ln1_y(r, t), lambda: y1_in(r, t))

    y1 = pick("y1", y1)

    ln2_y = layer_norm(y1, "norm2_weight", "norm2_bias")

    @cached
    def z2(r: Any, t: Any) -> Any:  # the FFN's input: norm2(y1) when pre
        return alg.if_true(opt("pre"), lambda: ln2_y(r, t), lambda: y1(r, t))

    z2 = pick("z2", z2)

    @cached
    def u1(r: Any, g: Any) -> Any:  # FFN 1's pre-activation: linear1(z2)
        return alg.sum(lambda t: z2(r, t) * ops["linear1_weight"][0, g, t], d) + vec("linear1_bias", g)

    u1 = pick("u1", u1)

    @cached
    def act(r: Any, g: Any) -> Any:
        u = u1(r, g)
        erf_gelu = lambda: u * (1 + alg.erf(u / alg.sqrt(2))) / 2
        # torch's GELU(approximate="tanh"): sqrt(2 / pi) and 0.044715 (a decimal, read exactly)
        inner = lambda: alg.sqrt(2 / alg.pi()) * (u + alg.rational(44715, 10**6) * alg.power(u, 3))
        tanh_gelu = lambda: u * (1 + alg.tanh(inner())) / 2
        return alg.if_true(opt("gelu"), erf_gelu, lambda: alg.if_true(opt("gelu_tanh"), tanh_gelu, lambda: alg.relu(u)))

    act = pick("act", act)

    @cached
    def y2_in(r: Any, t: Any) -> Any:
        ffn = alg.sum(lambda g: act(r, g) * ops["linear2_weight"][0, t, g], f) + vec("linear2_bias", t)
        return ffn + alg.if_true(opt("residual"), lambda: y1(r, t), lambda: 0)

    y2_in = pick("y2_in", y2_in)

    ln2_out = layer_norm(y2_in, "norm2_weight", "norm2_bias")

    def out(i: Any, e: Any) -> Any:  # never given: it is the statement
        return alg.if_true(
            opt("ffn"),
            lambda: alg.if_true(opt("post"), lambda: ln2_out(i, e), lambda: y2_in(i, e)),
            lambda: y1(i, e),
        )

    return y1_in, y1, z2, u1, act, y2_in, out


#: the intermediate quantities of :func:`encoder_layer_parts`, in order
PART_NAMES = ("z1", "proj", "logit", "weight", "head", "attn", "y1_in", "y1", "z2", "u1", "act", "y2_in", "out")


def given_parts(
    ops: Mapping[str, Any], sz: Mapping[str, Any], given: Mapping[str, Callable[..., Any]]
) -> dict[str, Callable[..., Any]]:
    """ENCODER_LAYER's intermediates on SymPy operands with those of ``given`` replaced (e.g. by
    opaque functions a stage proof reads from earlier stages): ``given_parts(ops, sz, {"y1": Y1,
    "act": A})["out"]`` is the layer's output written over Y1 and A (small: the layer before y1 is
    never built)."""
    return encoder_layer_parts(SymbolicAlg(), ops, sz, given)


ENCODER_LAYER = Spec(
    "encoder-layer",
    (
        "X",
        "in_proj_weight",
        "in_proj_bias",
        "out_proj_weight",
        "out_proj_bias",
        "linear1_weight",
        "linear1_bias",
        "linear2_weight",
        "linear2_bias",
        "norm1_weight",
        "norm1_bias",
        "norm2_weight",
        "norm2_bias",
        "additive",
        "blocked",
        "residual",
        "pre",
        "post",
        "gelu",
        "gelu_tanh",
        "ffn",
        "scale",
        "eps",
    ),
    ("n", "d", "hh", "k", "f"),
    lambda sz: (1, sz["n"], sz["d"]),
    _encoder_layer,
    "out[i, e] of one encoder layer T(X) (torch's TransformerEncoderLayer, eval), n tokens, d = d_model, "
    "hh heads of size k, d_ff = f; operands in torch's layout (ENCODER_LAYER_NAMES: state-dict name with "
    "'.' -> '_'): in_proj_weight (3 hh k x d; rows part*hh*k + h*k + c, part 0/1/2 = q/k/v, head h, "
    "coordinate c < k), in_proj_bias (3 hh k), out_proj_weight (d x hh k: torch has hh k = d, not assumed "
    "here), out_proj_bias, linear1_weight (f x d), linear1_bias, linear2_weight (d x f), linear2_bias, "
    "norm1/2_weight/bias (d), X (n x d), additive (n x n, finite), blocked (n x n, 0/1); 0/1 options "
    "residual, pre (norm_first), post (at most one of pre and post), gelu, gelu_tanh (else ReLU), ffn; scalars "
    "scale, eps; vectors are 1 x len, scalars 1 x 1.  "
    "z1 = pre ? LN1(X) : X;  q/k/v_h[r, c] = sum_{t<d} z1[r, t] in_proj_weight[part*hh*k + h k + c, t] "
    "+ in_proj_bias[...];  s_h[i, l] = scale sum_{c<k} q_h[i, c] k_h[l, c] + additive[i, l];  "
    "A_h[i, j] = 0 if blocked[i, j] else 1 / sum_{l<n, not blocked[i, l]} exp(s_h[i, l] - s_h[i, j]) "
    "(= exp(s_h[i, j]) / sum_{l unblocked} exp(s_h[i, l]));  "
    "attn[i, e] = sum_{h<hh} sum_{c<k} out_proj_weight[e, h k + c] sum_{j<n} A_h[i, j] v_h[j, c] "
    "+ out_proj_bias[e];  y1 = post ? LN1(X' + attn) : X' + attn, X' = residual ? X : 0;  "
    "z2 = pre ? LN2(y1) : y1;  a[i, g] = act(sum_{t<d} z2[i, t] linear1_weight[g, t] + linear1_bias[g]), "
    "act = gelu ? u (1 + erf(u / sqrt 2)) / 2 : gelu_tanh ? u (1 + tanh(sqrt(2 / pi) (u + 0.044715 u^3))) / 2 "
    ": max(u, 0);  y2 = sum_{g<f} a[i, g] linear2_weight[e, g] "
    "+ linear2_bias[e] + (residual ? y1 : 0);  out = ffn ? (post ? LN2(y2) : y2) : y1;  "
    "LN(v)[r, e] = (v[r, e] - mu_r) / sqrt(var_r + eps) w[e] + b[e], mu_r = sum_{u<d} v[r, u] / d, "
    "var_r = sum_{u<d} (v[r, u] - mu_r)^2 / d (biased)",
)


__all__ = ["ENCODER_LAYER", "ENCODER_LAYER_NAMES", "PART_NAMES", "encoder_layer_parts", "given_parts"]
