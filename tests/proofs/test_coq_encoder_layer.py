"""coq/EncoderLayer.v is the layer torch runs: Coq accepts it, its line-for-line Python
transcription (attnsim.proofs.coq_encoder_layer) covers every Definition, and the transcription,
at a capacity above the layer's sizes with noise in every padding, equals torch's
nn.TransformerEncoderLayer (slow path, float64) on the torch sweep's configurations (evidence about
the transcription only).  Tying the transcription to the Coq text: the pinned digest, a Coq lemma
unfolding scores, and coq/EncoderLayerCompute.v's computable scores / softmax, proved equal to
EncoderLayer.v's, vm_computed over rat against the transcription's exact values."""

from __future__ import annotations

import hashlib
import re
import shutil
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from attnsim.constructions.kernel import COQ_BUDGET, FORBIDDEN, coq_sources
from attnsim.proofs import coq_build as B
from attnsim.proofs import coq_encoder_layer as T

try:
    import torch
except ImportError:  # collected and skipped, not hidden
    torch = None  # type: ignore[assignment]

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed (pip install '.[test]')")
needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed")

D, H, F, n = 8, 2, 12, 4  # the torch sweep's layer (tests/universal/test_torch_compare.py)
CAP = (6, 10, 3, 5, 14)  # N, D, H, K, F: every size above the layer's, padding filled with noise
OPTIONS = ("post-relu", "pre-gelu", "no-bias-eps", "no-affine", "tanh-gelu")
MASKS = ("none", "bool", "additive", "padding", "causal")


def _source() -> str:
    return (coq_sources() / "EncoderLayer.v").read_text()


def test_every_coq_definition_is_transcribed() -> None:
    defs = re.findall(r"^Definition (\w+)", _source(), re.M)
    assert sorted(defs) == sorted(T.TRANSCRIBED)
    assert not FORBIDDEN.search(_source())


@needs_coq
def test_coq_accepts_the_encoder_layer() -> None:
    tools = B.CoqTools.find()
    assert tools is not None
    built = B.build([B.CoqFile("EncoderLayer", _source())], tools, COQ_BUDGET)
    assert built.failed is None, built.failed.output[-500:]


def test_the_pinned_digest_is_the_shipped_encoder_layer() -> None:
    """The transcription names the EncoderLayer.v it was reviewed against (kernel_stages refuses any other)."""
    assert hashlib.sha256((coq_sources() / "EncoderLayer.v").read_bytes()).hexdigest() == T.ENCODER_LAYER_SHA256


# scores, unfolded: the float mask is added after the scaling (torch's order; the transcription's
# ``P.scale * sum(...) + additive``).  Proved by unfolding only, so it fails for any other parse.
SCORES_SHAPE = """From mathcomp Require Import all_ssreflect all_algebra.
From Attnsim Require Import EncoderLayer.
Import GRing.Theory Num.Theory.
Local Open Scope ring_scope.

Lemma scores_add_the_mask_after_scaling (R : realFieldType) (N D H K F : nat)
    (P : params R D H K F) (M : mask R N) (n : nat) (Z : 'M[R]_(N, D)) (t : 'I_H) (i key : 'I_N) :
  scores P M n Z t i key =
  if (i < n)%N && (key < n)%N then
    scale P * (\\sum_(c < K | (c < d_head P)%N) proj P n (@Wq _ _ _ _ _ P) (@bq _ _ _ _ _ P) Z t i c
                                          * proj P n (@Wk _ _ _ _ _ P) (@bk _ _ _ _ _ P) Z t key c)
    + additive M i key
  else 0.
Proof. by rewrite /scores /block !mxE. Qed.
"""


def _scores_shape(source: str) -> B.Build:
    tools = B.CoqTools.find()
    assert tools is not None
    files = [B.CoqFile("EncoderLayer", source), B.CoqFile("ScoresShape", SCORES_SHAPE, ("EncoderLayer",))]
    return B.build(files, tools, COQ_BUDGET)


@needs_coq
def test_the_coq_scores_add_the_float_mask_after_scaling() -> None:
    built = _scores_shape(_source())
    assert built.failed is None, built.failed.output[-500:]


@needs_coq
def test_scores_with_the_mask_inside_the_scaling_is_refused() -> None:
    """``scale P * \\sum_(c) ... + additive M i key`` without parentheses: MathComp's \\sum notation
    makes it ``scale P * (\\sum_(c) ... + additive M i key)``, and the unfolding lemma fails."""
    good = "(scale P * (\\sum_(c < K | (c < k)%N) proj (Wq P) (bq P) Z t i c * proj (Wk P) (bk P) Z t key c)"
    bad = "(scale P * \\sum_(c < K | (c < k)%N) proj (Wq P) (bq P) Z t i c * proj (Wk P) (bk P) Z t key c"
    assert _source().count(good) == 1
    built = _scores_shape(_source().replace(good, bad))
    assert built.failed is not None and built.failed.name == "ScoresShape", built
    assert built.failed.status == "rejected", built.failed.output[-300:]


def _module(option: str) -> Any:
    torch.manual_seed(0)
    kw: dict[str, Any] = {"dropout": 0.0, "batch_first": True, "dtype": torch.float64}
    extra: dict[str, Any] = {
        "post-relu": {},
        "pre-gelu": {"norm_first": True, "activation": "gelu"},
        "no-bias-eps": {"bias": False, "layer_norm_eps": 1e-6},
        "no-affine": {},
        "tanh-gelu": {"activation": torch.nn.GELU(approximate="tanh")},
    }[option]
    m = torch.nn.TransformerEncoderLayer(D, H, F, **(kw | extra))
    if option == "no-affine":
        m.norm1 = torch.nn.LayerNorm(D, elementwise_affine=False, dtype=torch.float64)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.2)
    return m.eval()


def _masks(kind: str) -> dict[str, Any]:
    rng = np.random.default_rng(2)
    if kind == "bool":
        m = rng.random((n, n)) < 0.3
        np.fill_diagonal(m, False)
        return {"src_mask": m}
    if kind == "additive":
        return {"src_mask": rng.normal(size=(n, n))}
    if kind == "padding":
        return {"pad": np.array([False, False, True, True])}
    if kind == "causal":
        return {"is_causal": True}
    return {}


def _torch(module: Any, x: np.ndarray, masks: dict[str, Any]) -> np.ndarray:
    kw: dict[str, Any] = {}
    if "src_mask" in masks:
        kw["src_mask"] = torch.from_numpy(masks["src_mask"])
    if "pad" in masks:
        kw["src_key_padding_mask"] = torch.from_numpy(masks["pad"][None, :])
    if masks.get("is_causal"):
        kw["src_mask"] = torch.nn.Transformer.generate_square_subsequent_mask(n, dtype=torch.float64)
        kw["is_causal"] = True
    torch.backends.mha.set_fastpath_enabled(False)  # the documented slow path
    try:
        return module(torch.from_numpy(x[None]), **kw)[0].detach().numpy()
    finally:
        torch.backends.mha.set_fastpath_enabled(True)


def _transcription(module: Any, x: np.ndarray, masks: dict[str, Any], **override: Any) -> np.ndarray:
    N, Dc, Hc, Kc, Fc = CAP
    P = T.params_from_torch(module, CAP)
    M = T.mask_from_torch(N, n, masks.get("src_mask"), masks.get("is_causal", False), masks.get("pad"))
    layer = T.with_params(T.Layer(np.exp, np.sqrt, N, Dc, Hc, Kc, Fc, P, M, n), **override)
    y = layer.encoder_layer(T.embed(x, N, Dc))
    assert not np.any(y[n:, :]) and not np.any(y[:, D:])  # zero padding
    return y[:n, :D]


@needs_torch
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("option", OPTIONS)
@pytest.mark.parametrize("mask", MASKS)
def test_the_transcription_equals_torch(option: str, mask: str) -> None:
    x = np.random.default_rng(3).normal(size=(n, D))
    module, masks = _module(option), _masks(mask)
    P = T.params_from_torch(module, CAP)
    assert T.is_torch_layer(P)
    diff = np.max(np.abs(_transcription(module, x, masks) - _torch(module, x, masks)))
    assert diff <= 1e-12, diff  # measured <= 1.1e-15 over the 25 cases


@needs_torch
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    ("option", "override"),
    [
        ("post-relu", {"eps": 1e-1}),  # a wrong LayerNorm eps
        ("pre-gelu", {"activation": T.gelu_tanh}),  # the other GELU form
        ("post-relu", {"scale": 1.0}),  # scores not scaled by 1 / sqrt(d_head)
        ("pre-gelu", {"norm": "PostNorm"}),  # the norm in the wrong place
    ],
)
def test_a_changed_layer_disagrees_with_torch(option: str, override: dict[str, Any]) -> None:
    """The comparison can fail: the same transcription with one field of the record changed."""
    x = np.random.default_rng(3).normal(size=(n, D))
    module = _module(option)
    diff = np.max(np.abs(_transcription(module, x, {}, **override) - _torch(module, x, {})))
    assert diff > 1e-4, diff


def _scores_mask_inside(self: T.Layer, Z: np.ndarray, t: int) -> np.ndarray:
    """scores with the float mask added inside the scaling: scale * (q . k + additive)."""
    P = self.P
    q, k = self.proj(P.Wq, P.bq, Z, t), self.proj(P.Wk, P.bk, Z, t)
    return self.block(self.n, self.n, np.array([
        [P.scale * (sum(q[i, c] * k[key, c] for c in range(self.K) if c < P.d_head) + self.M.additive[i, key])
         for key in range(self.N)] for i in range(self.N)]))  # fmt: skip


@needs_torch
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_float_mask_wired_inside_the_scaling_disagrees_with_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The transcription's scores with the float mask scaled too: torch's comparison catches it."""
    x = np.random.default_rng(3).normal(size=(n, D))
    module, masks = _module("post-relu"), _masks("additive")
    assert np.max(np.abs(_transcription(module, x, masks) - _torch(module, x, masks))) <= 1e-12
    monkeypatch.setattr(T.Layer, "scores", _scores_mask_inside)
    diff = np.max(np.abs(_transcription(module, x, masks) - _torch(module, x, masks)))
    assert diff > 1e-4, diff


@needs_torch
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_minus_inf_in_float_masks_hides_the_key_as_torch_does() -> None:
    """A float src_mask with -inf entries and a float key-padding mask of 0 / -inf: the -inf entries
    go to ``blocked`` (additive 0 there), and the transcription equals torch."""
    x = np.random.default_rng(3).normal(size=(n, D))
    module = _module("pre-gelu")
    m = np.random.default_rng(4).normal(size=(n, n))
    m[0, 2] = m[3, 1] = -np.inf
    M = T.mask_from_torch(CAP[0], n, m)
    assert M.blocked[0, 2] and M.blocked[3, 1] and M.additive[0, 2] == 0.0 and np.all(np.isfinite(M.additive))
    assert np.max(np.abs(_transcription(module, x, {"src_mask": m}) - _torch(module, x, {"src_mask": m}))) <= 1e-12
    pad = np.array([0.0, 0.0, -np.inf, -np.inf])
    got = _transcription(module, x, {"pad": pad})
    as_bool = T.mask_from_torch(CAP[0], n, pad=pad != 0)
    assert np.array_equal(T.mask_from_torch(CAP[0], n, pad=pad).blocked, as_bool.blocked)
    assert np.max(np.abs(got - _torch(module, x, {"pad": pad != 0}))) <= 1e-12


@pytest.mark.parametrize(
    ("kw", "what"),
    [
        ({"src_mask": np.array([[0.0, np.nan], [0.0, 0.0]])}, "src_mask: a float mask entry is NaN or \\+inf"),
        ({"src_mask": np.array([[0.0, np.inf], [0.0, 0.0]])}, "src_mask: a float mask entry is NaN or \\+inf"),
        ({"pad": np.array([0.0, 0.5])}, "src_key_padding_mask: a float entry is neither 0 nor -inf"),
    ],
)
def test_other_non_finite_or_additive_padding_entries_are_refused(kw: dict[str, Any], what: str) -> None:
    with pytest.raises(ValueError, match=what) as err:
        T.mask_from_torch(3, 2, **kw)
    assert "\\n" not in str(err.value)


# -- the computable copy (coq/EncoderLayerCompute.v) run by vm_compute against the transcription --
EXACT = (3, 3, 2, 3, 1, 2, 2, 2)  # N, D, H, K, F and the true n, d, k: padding rows, columns, heads


def _exact_data() -> tuple[dict[str, Any], T.Layer]:
    """Small rationals in every entry (padding too) and the transcription's Layer over them."""
    N, Dc, Hc, Kc, Fc, n_, d_, k_ = EXACT
    rng = np.random.default_rng(5)
    # small integers: Coq's rat is unary underneath, so vm_compute stays cheap; the softmax still
    # divides (exp stand-in v^2 + 1 over its row sum), the scale is 2 (not 1) so a mask scaled with
    # the scores differs
    fr = lambda *shape, lo=-1, hi=1: np.array(
        [Fraction(int(a)) for a in rng.integers(lo, hi + 1, size=int(np.prod(shape)))], dtype=object
    ).reshape(shape)
    data = {"wq": fr(Hc, Dc, Kc), "wk": fr(Hc, Dc, Kc), "bq": fr(Hc, 1, Kc), "bk": fr(Hc, 1, Kc),
            "add": fr(N, N, lo=-2, hi=2), "z": fr(N, Dc), "sc": Fraction(2)}  # fmt: skip
    blocked = np.array([[False, True, False], [False, False, True], [True, False, False]])
    zeros = lambda *shape: np.zeros(shape, dtype=object)
    P = T.Params(
        d_, 1, k_, 0, data["wq"], data["wk"], zeros(Hc, Dc, Kc), data["bq"], data["bk"], zeros(Hc, 1, Kc),
        zeros(Hc, Kc, Dc), zeros(1, Dc), zeros(Dc, Fc), zeros(1, Fc), zeros(Fc, Dc), zeros(1, Dc),
        zeros(1, Dc), zeros(1, Dc), zeros(1, Dc), zeros(1, Dc), Fraction(0), data["sc"], T.relu, True, "PreNorm", True,
    )  # fmt: skip
    data["blocked"] = blocked
    expf = lambda v: v * v + 1  # the evaluator's exp stand-in (coq_evaluator.STANDINS)
    return data, T.Layer(expf, expf, N, Dc, Hc, Kc, Fc, P, T.Mask(blocked, data["add"]), n_)


def _coq_q(x: Any) -> str:
    f = Fraction(x)
    num = f"(Posz {f.numerator})" if f.numerator >= 0 else f"(- Posz {-f.numerator})"
    return f"({num}%:~R / (Posz {f.denominator})%:~R)"


def _coq_list(a: Any) -> str:
    if isinstance(a, np.ndarray) and a.ndim:
        return "[:: " + "; ".join(_coq_list(x) for x in a) + "]"
    return _coq_q(a)


def _coq_pair(x: Any) -> str:
    f = Fraction(x)
    num = f"Posz {f.numerator}" if f.numerator >= 0 else f"Negz {-f.numerator - 1}"
    return f"({num}, Posz {f.denominator})"


def _compute_check(data: dict[str, Any], layer: T.Layer) -> str:
    """A Coq file: vm_compute of scores_c and softmax_c at every entry == the transcription's values."""
    N, Dc, Hc, Kc, _, n_, d_, k_ = EXACT
    nth3 = lambda name: f"fun t j c => nth 0 (nth [::] (nth [::] {name}_ t) j) c"
    nth2 = lambda name: f"fun i j => nth 0 (nth [::] {name}_ i) j"
    blk = "; ".join(f"({i}%N, {j}%N)" for i in range(N) for j in range(N) if data["blocked"][i, j])
    out = ["From mathcomp Require Import all_ssreflect all_algebra.",
           "From Attnsim Require Import EncoderLayerCompute.", "Local Open Scope ring_scope.",
           "Definition R := rat_realFieldType."]  # fmt: skip
    for name, depth in (("wq", 3), ("wk", 3), ("add", 2), ("z", 2)):
        out.append(f"Definition {name}_ : {'seq (' * depth}R{')' * depth} := {_coq_list(data[name])}.")
    for name in ("bq", "bk"):
        out.append(f"Definition {name}_ : seq (seq R) := {_coq_list(data[name][:, 0, :])}.")
    out += [
        f"Definition S (t : nat) := scores_c (R:=R) {Dc} {Kc} {d_} {k_} {n_} {_coq_q(data['sc'])} "
        f"({nth3('wq')}) ({nth3('wk')}) ({nth2('bq')}) ({nth2('bk')}) ({nth2('add')}) ({nth2('z')}) t.",
        f"Definition blk (i j : nat) : bool := (i, j) \\in ([:: {blk}] : seq (nat * nat)%type).",
        f"Definition A (t : nat) := softmax_c (R:=R) (fun v => v * v + 1) {N} {n_} blk (S t).",
    ]
    got, want = [], []
    for t in range(Hc):
        S = layer.scores(data["z"], t)
        Ssm = layer.softmax_rows(S)
        for i in range(N):
            for j in range(N):
                got += [f"S {t} {i} {j}", f"A {t} {i} {j}"]
                want += [_coq_pair(S[i, j]), _coq_pair(Ssm[i, j])]
    out.append(f"Lemma agree : [seq valq x | x <- [:: {'; '.join(got)}]] == [:: {'; '.join(want)}].")
    out.append("Proof. by vm_compute. Qed.")
    return "\n".join(out) + "\n"


def _build_compute(check: str) -> B.Build:
    tools = B.CoqTools.find()
    assert tools is not None
    src = coq_sources()
    files = [
        B.CoqFile("EncoderLayer", _source()),
        B.CoqFile("EncoderLayerCompute", (src / "EncoderLayerCompute.v").read_text(), ("EncoderLayer",)),
        B.CoqFile("ComputeCheck", check, ("EncoderLayerCompute",)),
    ]
    return B.build(files, tools, COQ_BUDGET)


@needs_coq
def test_coqs_computable_scores_and_softmax_equal_the_transcription() -> None:
    """EncoderLayerCompute.v proves its fold-based scores_c / softmax_c equal EncoderLayer.v's scores
    and softmax_rows; vm_compute over rat (exp stand-in v^2 + 1) gives the transcription's exact
    values at every entry of both heads, padding and a blocked key in each row included."""
    assert not FORBIDDEN.search((coq_sources() / "EncoderLayerCompute.v").read_text())
    data, layer = _exact_data()
    built = _build_compute(_compute_check(data, layer))
    assert built.failed is None, built.failed.output[-800:]


@needs_coq
def test_a_transcription_scaling_the_float_mask_is_refused_by_vm_compute(monkeypatch: pytest.MonkeyPatch) -> None:
    """finding 1 in the other direction: the transcription's scores with the mask scaled too."""
    data, layer = _exact_data()
    monkeypatch.setattr(T.Layer, "scores", _scores_mask_inside)
    check = _compute_check(data, layer)
    built = _build_compute(check)
    assert built.failed is not None and built.failed.name == "ComputeCheck", built
    last = len(check.splitlines())  # the failure is the vm_compute of the final Proof line, nothing before it
    assert f"line {last}," in built.failed.output, built.failed.output[-400:]


@needs_coq
def test_the_computable_copy_does_not_go_through_for_scores_scaling_the_mask() -> None:
    """On EncoderLayer.v with finding 1's parse (the mask inside the scaling), scores_cE is not provable."""
    good = "(scale P * (\\sum_(c < K | (c < k)%N) proj (Wq P) (bq P) Z t i c * proj (Wk P) (bk P) Z t key c)"
    bad = "(scale P * \\sum_(c < K | (c < k)%N) proj (Wq P) (bq P) Z t i c * proj (Wk P) (bk P) Z t key c"
    tools = B.CoqTools.find()
    assert tools is not None
    files = [
        B.CoqFile("EncoderLayer", _source().replace(good, bad)),
        B.CoqFile("EncoderLayerCompute", (coq_sources() / "EncoderLayerCompute.v").read_text(), ("EncoderLayer",)),
    ]
    built = B.build(files, tools, COQ_BUDGET)
    assert built.failed is not None and built.failed.name == "EncoderLayerCompute", built
    assert built.failed.status == "rejected"
