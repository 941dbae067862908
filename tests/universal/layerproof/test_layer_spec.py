"""ENCODER_LAYER: one encoder layer in T's matrices, in torch's layout; its own evaluation against
the reference T (every option, with and without masks, hh k != d too) and against torch's fixtures."""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import math
from typing import Any

import numpy as np
import pytest
import sympy as sp

from attnsim import TransformerLayer
from attnsim.symbolic.spec_language import Spec, SpecError
from attnsim.symbolic.spec_symbolic import SymbolicAlg
from attnsim.universal import spec as encoder_layer_spec
from attnsim.universal.fixtures import FIXTURES, load
from attnsim.universal.masks import AttentionMask, attention_mask
from attnsim.universal.spec import ENCODER_LAYER, ENCODER_LAYER_NAMES, encoder_layer_parts

row = lambda v: np.asarray(v, dtype=np.float64).reshape(1, -1)
one = lambda v: np.array([[float(v)]])


def _options(n: int, mask: AttentionMask | None, **flags: Any) -> dict[str, np.ndarray]:
    out = {k: one(v) for k, v in flags.items()}
    out["additive"] = np.zeros((n, n)) if mask is None else mask.additive
    out["blocked"] = np.zeros((n, n)) if mask is None else mask.blocked.astype(np.float64)
    return out


def operands_of(T: TransformerLayer, x: np.ndarray, mask: AttentionMask | None = None) -> tuple[dict, dict]:
    """T's parameters written in torch's layout (rows h k + c of each third of in_proj_weight...)."""
    hh, d, k = T.w_q.shape
    f = T.d_ff
    rows = lambda w: np.concatenate([w[h].T for h in range(hh)])  # (hh, d, k) -> (hh k, d)
    ops = {
        "X": x,
        "in_proj_weight": np.concatenate([rows(T.w_q), rows(T.w_k), rows(T.w_v)]),
        "in_proj_bias": row(np.concatenate([T.b_q.ravel(), T.b_k.ravel(), T.b_v.ravel()])),
        "out_proj_weight": T.w_o.T,
        "out_proj_bias": row(T.b_o),
        "linear1_weight": T.w1.T if f else np.zeros((1, d)),
        "linear1_bias": row(T.b1) if f else np.zeros((1, 1)),
        "linear2_weight": T.w2.T if f else np.zeros((d, 1)),
        "linear2_bias": row(T.b2) if f else np.zeros((1, d)),
        "norm1_weight": row(T.ln1_weight),
        "norm1_bias": row(T.ln1_bias),
        "norm2_weight": row(T.ln2_weight),
        "norm2_bias": row(T.ln2_bias),
        **_options(
            x.shape[0],
            mask,
            residual=T.residual,
            pre=T.norm == "pre",
            post=T.norm == "post",
            gelu=T.activation == "gelu",
            gelu_tanh=T.activation == "gelu_tanh",
            ffn=f is not None,
            scale=T.scale,
            eps=T.eps,
        ),
    }
    return ops, {"n": x.shape[0], "d": d, "hh": hh, "k": k, "f": f or 1}


def evaluate(spec: Spec, ops: dict, sizes: dict) -> np.ndarray:
    return spec.at(**sizes).evaluate(ops, int)[0]


def _masks(n: int, rng: np.random.Generator) -> AttentionMask:
    m = rng.normal(size=(n, n))
    m[0, n - 1] = -1e9
    pad = np.zeros(n, bool)
    pad[n - 1] = True
    return attention_mask(n, src_mask=m, is_causal=bool(rng.integers(2)), src_key_padding_mask=pad)


ACTS = ["relu", "gelu", "gelu_tanh"]
COMBOS = list(itertools.product([False, True], ["none", "pre", "post"], ACTS, [None, 2], [True, False]))


@pytest.mark.parametrize(("residual", "norm", "act", "d_ff", "biases"), COMBOS)
def test_spec_equals_reference_for_every_option(
    residual: bool, norm: str, act: str, d_ff: int | None, biases: bool
) -> None:
    """Every option combination, hh k = 4 != d = 3 and hh k = d = 4, with and without masks."""
    seed = COMBOS.index((residual, norm, act, d_ff, biases))
    rng = np.random.default_rng(seed)
    for d, hh, k in ((3, 2, 2), (4, 2, 2), (2, 1, 3)):
        T = TransformerLayer.random(
            d, hh, k, d_ff=d_ff, seed=seed, residual=residual, norm=norm, activation=act, biases=biases, eps=0.2
        )
        x = rng.normal(size=(3, d))
        for mask in (None, _masks(3, rng)):
            want = T(x) if mask is None else _reference(T, x, mask)
            got = evaluate(ENCODER_LAYER, *operands_of(T, x, mask))
            # measured <= 2.7e-15 over all 72 combinations
            assert np.max(np.abs(got - want)) <= 1e-13, (d, hh, k, mask is not None)


def _reference(T: TransformerLayer, x: np.ndarray, mask: AttentionMask) -> np.ndarray:
    """T(X) with the mask's additive part as a float src_mask with -inf where blocked (torch's form)."""
    return T(x, src_mask=np.where(mask.blocked, -np.inf, mask.additive))


def test_spec_is_stable_for_wide_logits() -> None:
    """The spec's softmax (1 / sum exp(s_l - s_j)) is finite at a logit spread of ~2000, as torch."""
    f = load("wide_post_relu")
    (T,) = f["layers"]
    got = evaluate(ENCODER_LAYER, *operands_of(T, f["x"]))
    assert np.max(np.abs(got - f["y"])) <= 1e-12  # measured 4.4e-16


def _torch_operands(sd: dict, meta: dict, x: np.ndarray, mask: AttentionMask | None) -> tuple[dict, dict]:
    """Operands straight from torch's state dict (names mapped by ENCODER_LAYER_NAMES)."""
    sd = {("self_attn." + k if not k.startswith(("self_attn.", "linear", "norm")) else k): v for k, v in sd.items()}
    ops = {ENCODER_LAYER_NAMES[k]: (row(v) if v.ndim == 1 else v) for k, v in sd.items()}
    n, d = x.shape
    hh = int(meta["n_heads"])
    encoder = meta["kind"] != "mha"
    if not encoder:
        ops |= {
            "linear1_weight": np.zeros((1, d)),
            "linear1_bias": np.zeros((1, 1)),
            "linear2_weight": np.zeros((d, 1)),
            "linear2_bias": np.zeros((1, d)),
        }
        ops |= {
            f"norm{i}_{w}": row(np.ones(d) if w == "weight" else np.zeros(d))
            for i in (1, 2)
            for w in ("weight", "bias")
        }
    norm_first = encoder and bool(meta["norm_first"])
    ops |= _options(
        n,
        mask,
        residual=encoder,
        pre=norm_first,
        post=encoder and not norm_first,
        gelu=encoder and meta["activation"] == "gelu",
        gelu_tanh=False,  # no fixture has torch's tanh-GELU (test_spec_states_torchs_tanh_gelu)
        ffn=encoder,
        scale=1 / math.sqrt(d // hh),
        eps=float(meta.get("eps", 1e-5)),
    )
    ops["X"] = x
    f = ops["linear1_weight"].shape[0]
    return ops, {"n": n, "d": d, "hh": hh, "k": d // hh, "f": f}


@pytest.mark.parametrize("name", FIXTURES)
def test_spec_equals_torch_fixtures(name: str) -> None:
    """Torch's own parameters in torch's own layout: the spec evaluates to torch's output."""
    f = load(name)
    xs = f["x"] if f["x"].ndim == 3 else f["x"][None]
    ys = f["y"] if f["y"].ndim == 3 else f["y"][None]
    masks = dict(f["masks"])
    pads = masks.pop("src_key_padding_mask", [None] * len(xs))
    for x, y, pad in zip(xs, ys, pads, strict=True):
        mask = attention_mask(x.shape[0], src_key_padding_mask=pad, **masks) if (masks or pad is not None) else None
        h = x
        for sd in f["state_dicts"]:
            h = evaluate(ENCODER_LAYER, *_torch_operands(sd, f["meta"], h, mask))
        assert np.max(np.abs(h - y)) <= 1e-12, name  # measured <= 8.9e-16 over the 14 fixtures


def _mutant(old: str, new: str) -> Spec:
    """A copy of ENCODER_LAYER whose entry has ``old`` replaced by ``new`` (exactly once) in the
    source of the module that defines it (``encoder_layer_parts`` and the part functions it calls)."""
    src = inspect.getsource(encoder_layer_spec)
    assert src.count(old) == 1, old
    ns: dict[str, Any] = {"__name__": encoder_layer_spec.__name__}
    exec(compile(src.replace(old, new), "<mutant>", "exec"), ns)
    parts = ns["encoder_layer_parts"]
    return dataclasses.replace(ENCODER_LAYER, entry=lambda alg, ops, _h, i, e, sz: parts(alg, ops, sz)["out"](i, e))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("2), d) / d)", "2), d) / (d - 1))"),  # unbiased variance
        ('alg.rsqrt(var(r) + opt("eps"))', '(alg.rsqrt(var(r)) + opt("eps"))'),  # eps outside the root
        ('ops["blocked"][0, r, l], lambda: 0,', "0, lambda: 0,"),  # blocked keys counted in the denominator
        ("part * hk + hd * k + c", "part * hk + hd + c * hh"),  # heads interleaved, not row blocks
        ('ops["out_proj_weight"][0, t, hd * k + c]', 'ops["out_proj_weight"][0, hd * k + c, t]'),  # W_o^T
    ],
)
def test_a_wrong_spec_fails(old: str, new: str) -> None:
    """The comparison has teeth: each perturbed copy of the spec disagrees with the reference."""
    mutant = _mutant(old, new)
    T = TransformerLayer.random(4, 2, 2, d_ff=3, seed=5, residual=True, norm="pre", activation="gelu", eps=0.3)
    x = np.random.default_rng(6).normal(size=(3, 4))
    mask = attention_mask(3, is_causal=True)
    ops, sizes = operands_of(T, x, mask)
    assert np.max(np.abs(evaluate(ENCODER_LAYER, ops, sizes) - _reference(T, x, mask))) <= 1e-12
    assert np.max(np.abs(evaluate(mutant, ops, sizes) - _reference(T, x, mask))) > 1e-6


def test_spec_states_torchs_tanh_gelu() -> None:
    """gelu_tanh = 1: the spec evaluates to torch's own TransformerEncoderLayer with
    GELU(approximate="tanh") (not through the reference T), and not to its erf-GELU."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    act = torch.nn.GELU(approximate="tanh")
    layer = torch.nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation=act, dtype=torch.float64).eval()
    x = np.random.default_rng(1).normal(size=(3, 4))
    with torch.no_grad():
        torch.backends.mha.set_fastpath_enabled(False)  # the slow path: the fast path computes erf-GELU
        try:
            want = layer(torch.from_numpy(x)).numpy()
        finally:
            torch.backends.mha.set_fastpath_enabled(True)
    sd = {k: v.numpy() for k, v in layer.state_dict().items()}
    meta = {"kind": "layer", "n_heads": 2, "norm_first": False, "activation": "gelu", "eps": 1e-5}
    ops, sizes = _torch_operands(sd, meta, x, None)
    ops |= {"gelu": one(0), "gelu_tanh": one(1)}
    assert np.max(np.abs(evaluate(ENCODER_LAYER, ops, sizes) - want)) <= 1e-13  # measured 2.2e-16
    ops |= {"gelu": one(1), "gelu_tanh": one(0)}
    assert np.max(np.abs(evaluate(ENCODER_LAYER, ops, sizes) - want)) > 1e-6  # erf-GELU: measured 6.7e-5 off


def test_option_operands_must_be_0_or_1() -> None:
    T = TransformerLayer.random(2, 1, 2, seed=0)
    ops, sizes = operands_of(T, np.zeros((2, 2)))
    ops["residual"] = one(0.5)
    with pytest.raises(SpecError, match=r"^a 0/1 option operand is 0\.5, not 0 or 1$"):
        evaluate(ENCODER_LAYER, ops, sizes)


def test_symbolic_at_symbolic_sizes() -> None:
    """The statement builds at symbolic n, d, hh, k, f as the stage chain states it: the output over
    opaque y1 and act (LayerNorm 2's root, Ite for the options), act itself (erf, tanh, the ReLU's
    Abs) and attn (Sums over the n keys with exp, the masks); Ite, never Piecewise.

    Built in these parts, as every stage proof builds it: the whole tree in one expression took
    1,839 s in one pytest run (load ~5).  Multiplying by LayerNorm 2's 1 / sqrt(var + eps) makes
    SymPy evaluate that power, which asks whether var is infinite, which rebuilds every nested Sum
    (``ExprWithLimits.free_symbols``) at every level; the parts take about 30 s."""
    n, d, hh, k, f = (sp.Symbol(s, integer=True, positive=True) for s in ("n", "d", "hh", "k", "f"))
    i, e = (sp.Symbol(s, integer=True, nonnegative=True) for s in ("i", "e"))
    ops = {name: sp.IndexedBase(name) for name in ENCODER_LAYER.operands}
    sz = {"n": n, "d": d, "hh": hh, "k": k, "f": f}
    y1, act = sp.Function("Y1"), sp.Function("A")
    out = encoder_layer_parts(SymbolicAlg(), ops, sz, {"y1": y1, "act": act})["out"](i, e)
    parts = encoder_layer_parts(SymbolicAlg(), ops, sz)
    exprs = (out, parts["act"](i, e), parts["attn"](i, e))
    assert {y1, act} <= {a.func for a in out.atoms(sp.Function)}  # the output reads y1 and act
    assert any(isinstance(a, sp.Pow) and a.exp == -sp.S.Half for a in sp.preorder_traversal(out))  # the root
    nodes = [a for x in exprs for a in sp.preorder_traversal(x)]
    key_sums = [s for s in nodes if isinstance(s, sp.Sum) and s.limits[0][1:] == (0, n - 1)]
    assert key_sums and any(isinstance(a, sp.exp) for s in key_sums for a in sp.preorder_traversal(s.function))
    kinds = {type(a).__name__ for a in nodes}
    assert {"Ite", "erf", "tanh", "Abs"} <= kinds and "Piecewise" not in kinds
    bases = set().union(*(x.atoms(sp.IndexedBase) for x in exprs))
    assert {sp.IndexedBase(nm) for nm in ("X", "in_proj_weight", "blocked", "additive", "norm2_weight")} <= bases


def test_a_power_of_a_sum_is_the_tree_sympy_builds() -> None:
    """SymbolicAlg.power (LayerNorm's squared deviations, tanh-GELU's u^3) builds the power of a sum
    without asking SymPy's assumptions, and it is the tree ``**`` builds."""
    x, y = sp.symbols("x y", real=True)
    j = sp.Symbol("j", integer=True)
    a = SymbolicAlg()
    for base in (x - y, x + 2 * y + 1, sp.Sum(sp.IndexedBase("W")[j] * x, (j, 0, 3)) - y, -x - 1, 3 * x, x):
        for k in (2, 3):
            assert a.power(base, k) == base**k and sp.srepr(a.power(base, k)) == sp.srepr(base**k), (base, k)
