"""Obligations for the universal simulator U (Theorem 6, Corollary 6.1, Theorem 9, Corollary 9.1, hierarchy).

Compositional: every head of U is a gather (Lemma (transpose), generalized), a sum read at its
consumer (Lemma (matmul), generalized), the row-max head, or the record-queue shift; Z3 proves,
for all sizes and U's own layout, that each selector picks exactly the keys its intent states
(decoding prover).  An exhaustive enumeration checks that the MLP masks select exactly the true
sizes for every n <= N, d <= D.  On top: whole-U SymPy checks at n = d_model = 2 and float64
runs up to capacity 32, against the reference and torch's fixtures.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from attnsim.proofs.intents import check_intent
from attnsim.proofs.obligation import Obligation, Outcome
from attnsim.proofs.registry import ConstructionEntry
from attnsim.rasp import core as C
from attnsim.rasp.engine import evaluate
from attnsim.simulator.congruence import Atoms, difference
from attnsim.simulator.fixtures import FIXTURES, MASK_FIXTURES, check_fixture
from attnsim.simulator.layerproof.frame import prove_frame
from attnsim.simulator.layerproof.stack import base_case, prove_stack
from attnsim.simulator.layerproof.stages.chain import ORDER, prove_layer
from attnsim.simulator.layerproof.stages.scores import prove_scores
from attnsim.simulator.reference import TransformerLayer
from attnsim.simulator.universal import UniversalSimulator

CID = "simulator"
THM6 = "Theorem 6"
COR61 = "Corollary 6.1"
THM9 = "Theorem 9 / Corollary 9.1"
HIER = "hierarchy (N >= n)"
SMALL = (3, 3, 2, 2, 3)  # the capacity whose program the Z3 obligations translate (sizes stay symbols)

FRAME = "simulator-frame"
FRAME_REF = "stacks (depth by looping)"

STAGES = "simulator-stages"
STAGES_REF = "Theorem 6: U's attention stages (projections, scores, softmax, head outputs)"


def scores_check(timeout: float) -> Outcome:
    """Stage ``scores`` (attnsim.simulator.layerproof.stage_proof) on U (compact) built over unbound capacity sizes."""

    return prove_scores(UniversalSimulator.over_symbolic_capacity(), timeout)


def chain_check(names: tuple[str, ...] | None = None, variant: str = "compact") -> Callable[[float], Outcome]:
    """U's layout and the stages ``names`` (all: the whole layer; attnsim.simulator.layerproof.stages.chain) in
    one run on U built over unbound capacity sizes: each stage reads only what the run proved
    before it.  Both variants: the shallow U's scores (one spread product straight from X) are
    proven by the same stage (attnsim.simulator.layerproof.stages.scores), and its later stages are the compact
    build's nodes."""

    def check(timeout: float) -> Outcome:
        stages = [st for st in ORDER if names is None or st.name in names]
        return prove_layer(UniversalSimulator.over_symbolic_capacity(variant), timeout, stages)

    return check


def frame_check(variant: str) -> Callable[[float], Outcome]:
    """The frame lemma of one pass (attnsim.simulator.layerproof.frame) on U built over unbound capacity sizes."""

    def check(timeout: float) -> Outcome:
        return prove_frame(UniversalSimulator.over_symbolic_capacity(variant), timeout)

    return check


def stack_induction_check(variant: str) -> Callable[[float], Outcome]:
    """The step of the stack induction (attnsim.simulator.layerproof.stack), from the frame lemma's cases;
    its premises (the frame lemma, the layer, the base case) are obligations of their own (``requires``)."""

    def check(timeout: float) -> Outcome:
        step = prove_stack(UniversalSimulator.over_symbolic_capacity(variant), timeout)
        if step.ok is not True:
            return Outcome(step.ok, f"induction step: {step.detail}")
        return Outcome.good(
            f"step ({step.detail}); with its premises (the frame cases hold for U's pass, the X block after a pass "
            "is [i < n][l < d] T(X)[i, l] with T read from the slot, and encode is Enc_0), pass t computes layer t "
            "and M passes the M-layer encoder, by induction on t"
        )

    return check


BASE_CAPACITY = (2, 2, 1, 2, 2)


def base_case_check(variant: str) -> Callable[[float], Outcome]:
    """The base case of the stack induction: ``encode`` of 3 layers is Enc_0, exactly, at one capacity."""

    def check(timeout: float) -> Outcome:
        return base_case(lambda: _u(*BASE_CAPACITY, variant=variant))

    return check


def _u(*cap: int, variant: str = "compact") -> UniversalSimulator:
    """One U per (capacity, variant), however the variant is passed."""
    return _built(cap, variant)


@functools.cache
def _built(cap: tuple[int, ...], variant: str) -> UniversalSimulator:
    return UniversalSimulator(*cap, variant=variant)


def decoded_intent_check(name: str, variant: str = "compact") -> Callable[[float], Outcome]:
    """A stage selector's intent for all sizes by the decoding prover (positions decoded into the
    grids of U's layout), as the lemmas' intents are proven."""

    def check(timeout: float) -> Outcome:
        u = _u(*SMALL, variant=variant)
        return check_intent(dict(u.intents)[name], u.layout, timeout=timeout)

    return check


KINDS = {"gather": "Lemma (transpose), generalized", "sum": "Lemma (matmul), generalized", "rows": "row max head"}


def _value_atom(sel: C.Selector) -> bool:
    """A selector atom that compares a value with a constant (a key flag), not positions."""
    return isinstance(sel, C.Select) and isinstance(sel.queries, C.Full)


def coverage_check(timeout: float, variant: str = "compact") -> Outcome:
    """Every attention op of U has a proven intent (a conjunct of its selector, the rest key flags)."""
    u = _u(*SMALL, variant=variant)
    covered = {id(it.selector) for _, it in u.intents}
    heads = [n for n in C.topological([u.program]) if isinstance(n, (C.Aggregate, C.SelectorWidth))]
    loose = []
    for n in heads:
        sel = n.selector
        parts = [sel.a, sel.b] if isinstance(sel, C.SelectAnd) else [sel]
        if not any(id(p) in covered for p in parts) or not all(id(p) in covered or _value_atom(p) for p in parts):
            loose.append(n.label)
    if loose:
        return Outcome.bad(f"attention ops without an intent: {loose}")
    kinds: dict[str, int] = {}
    for _, it in u.intents:
        kinds[it.name] = kinds.get(it.name, 0) + 1
    unknown = sorted(k for k in kinds if k not in KINDS and k not in ("shift",))
    if unknown:
        return Outcome.bad(f"heads of no known kind: {unknown}")
    detail = ", ".join(f"{kinds[k]} {KINDS.get(k, 'record-queue shift')}" for k in sorted(kinds))
    return Outcome.good(f"{len(heads)} attention ops, all covered: {detail}")


def layout_enum_check(bound: int) -> Callable[[float], Outcome]:
    """Every grid's positions (row-major, per channel) are distinct, disjoint and inside the sequence;
    the input grids (X, header, masks, one record) tile [0, base + S) with no gap (one token per
    scalar, Proposition 1)."""

    def check(timeout: float) -> Outcome:
        n = 0
        for cap in itertools.product(range(1, bound + 1), repeat=5):
            u = UniversalSimulator(*cap)
            lay, total = u.layout, u.positions()
            tiled = sorted(p for g in u.map.grids for p in g.positions().reshape(-1).tolist())
            if tiled != list(range(u.positions_of_input(1))):
                return Outcome.bad(f"capacity {cap}: the input grids do not tile [0, base + S) (a gap or an overlap)")
            used: dict[str, set[int]] = {}
            for b in lay:
                pos = b.positions().reshape(-1)
                if len(set(pos.tolist())) != b.size or (b.size and (pos.min() < 0 or pos.max() >= total)):
                    return Outcome.bad(f"capacity {cap}: block {b.name} is not injective or leaves the sequence")
                seen = used.setdefault(b.channel, set())
                if seen & set(pos.tolist()):
                    return Outcome.bad(f"capacity {cap}: block {b.name} overlaps another block of {b.channel}")
                seen |= set(pos.tolist())
            n += 1
        return Outcome.good(f"{len(lay.blocks)} blocks checked position by position for {n} capacities in 1..{bound}")

    return check


# -- masks: exhaustive enumeration, exact arithmetic -------------------------------------------
def mask_check(caps: tuple[tuple[int, int, int, int, int], ...]) -> Callable[[float], Outcome]:
    def check(timeout: float) -> Outcome:
        count = 0
        for cap in caps:
            u = _u(*cap)
            N, D = cap[:2]
            for n, d in itertools.product(range(1, N + 1), range(1, D + 1)):
                T = TransformerLayer.random(d, 1, 1, None, seed=count)
                seq = [Fraction(v) for v in u.encode(T, np.ones((n, d)))]
                vals = evaluate([m.sop for m in u.masks], np.array(seq, dtype=object), "exact")
                sizes = {"n": n, "d": d}
                for m, v in zip(u.masks, vals, strict=True):
                    pos = m.grid.positions()
                    for ix in np.ndindex(*m.grid.shape):
                        want = Fraction(int(m.intent(dict(zip(m.grid.axes, ix, strict=True)), sizes)))
                        if v[pos[ix]] != want:
                            return Outcome.bad(f"capacity {cap}, sizes {sizes}: {m.name}{ix} = {v[pos[ix]]}")
                count += 1
        return Outcome.good(f"{len(u.masks)} masks equal their intent (==) on {count} (capacity, size) combinations")

    return check


# -- whole-U SymPy checks ------------------------------------------------------------------------
def _rational_layer(d: int, h: int, k: int, f: int | None, seed: int, **kw: Any) -> TransformerLayer:
    T = TransformerLayer.random(d, h, k, f, seed=seed, **kw)
    rng = np.random.default_rng(seed)

    def rat(a: np.ndarray) -> np.ndarray:
        out = np.empty(a.shape, dtype=object)
        for ix in np.ndindex(*a.shape):
            out[ix] = sp.Rational(int(rng.integers(-9, 10)), int(rng.integers(1, 5)))
        return out

    fields = [
        "w_q",
        "w_k",
        "w_v",
        "w_o",
        "b_q",
        "b_k",
        "b_v",
        "b_o",
        "ln1_weight",
        "ln1_bias",
        "ln2_weight",
        "ln2_bias",
    ]
    if f is not None:
        fields += ["w1", "b1", "w2", "b2"]
    rep = {nm: rat(getattr(T, nm)) for nm in fields}
    return T.with_options(**rep, scale=1 / sp.sqrt(k), eps=sp.Rational(1, 100))


def whole_check(
    cap: tuple[int, int, int, int, int | None],
    sizes: tuple[int, int, int, int, int | None],
    options: dict[str, Any],
    symbolic_weights: bool = True,
    variant: str = "compact",
) -> Callable[[float], Outcome]:
    """U (sympy backend) == T(X) on symbolic X (and symbolic or random rational weights), by congruence."""

    def check(timeout: float) -> Outcome:
        u = UniversalSimulator(*cap, variant=variant)
        n, d, h, k, f = sizes
        if symbolic_weights:
            T = TransformerLayer.symbolic(d, h, k, f, **options)
        else:
            T = _rational_layer(d, h, k, f, seed=1, **options)
        x = np.array([[sp.Symbol(f"x_{i}_{j}", real=True) for j in range(d)] for i in range(n)], dtype=object)
        got = u.run(T, x, backend="sympy")
        want = T(x)
        atoms = Atoms()
        for ix in np.ndindex(*want.shape):
            diff = difference(got[ix], want[ix], atoms)
            if diff != 0:
                return Outcome.bad(f"entry {ix}: U - T(X) = {str(diff)[:200]}")
        return Outcome.good(f"{want.size} entries equal symbolically ({len(atoms.table)} congruence atoms)")

    return check


# -- numerics --------------------------------------------------------------------------------------
def numeric_check(
    cap: tuple[int, int, int, int, int],
    sizes: tuple[int, int, int, int, int | None],
    options: dict[str, Any],
    tol: float,
    variant: str = "compact",
) -> Callable[[float], Outcome]:
    def check(timeout: float) -> Outcome:
        u = _u(*cap, variant=variant)
        n, d, h, k, f = sizes
        T = TransformerLayer.random(d, h, k, f, seed=7, **options)
        x = np.random.default_rng(3).normal(size=(n, d))
        err = float(np.max(np.abs(u.run(T, x) - T(x))))
        if err <= tol:
            return Outcome.good(f"max abs error {err:.3g} <= {tol:g}")
        return Outcome.bad(f"max abs error {err:.3g} > {tol:g}")

    return check


WIDE_SCALE = 0.37  # a non-default attention scale (the default is 1 / sqrt(d_head))


@dataclass(frozen=True)
class WideCase:
    """A float64 run of U past capacity 32 (issue 27): which variant, capacity, true sizes, masks."""

    tag: str
    variant: str
    capacity: tuple[int, int, int, int, int]
    sizes: tuple[int, int, int, int, int | None]
    masks: str  # "causal" (is_causal + key padding) or "float" (a float src_mask + key padding)
    options: tuple[tuple[str, Any], ...] = ()


# Chosen to stay cheap (CPU seconds measured on this 2-core machine, 2026-12-03): the compact U at
# capacity 64 runs in 1.0 s, at capacity 128 (n = 100) in 2.0 s; the shallow U's spread grid grows
# as N^2 D^2 (N = 40, D = 34 took 12 s), so its two cases take N > 32 and D > 32 apart (0.6 s, 0.2 s).
WIDE_CASES = (
    WideCase(
        "cap64-d36-k10-causal",
        "compact",
        (64, 40, 2, 12, 16),
        (40, 36, 2, 10, 12),
        "causal",
        (("residual", True), ("norm", "post"), ("activation", "relu")),
    ),
    WideCase(
        "cap128-d34-k9-float-mask",
        "compact",
        (128, 36, 2, 10, 8),
        (100, 34, 2, 9, 8),
        "float",
        (("residual", True), ("norm", "pre"), ("activation", "gelu")),
    ),
    WideCase(
        "cap34-k9-causal",
        "shallow",
        (34, 6, 1, 9, 2),
        (34, 5, 1, 9, 2),
        "causal",
        (("residual", True), ("norm", "post"), ("activation", "relu")),
    ),
    WideCase(
        "d33-k9-float-mask",
        "shallow",
        (4, 34, 1, 9, 2),
        (4, 33, 1, 9, 2),
        "float",
        (("residual", False), ("norm", "none"), ("activation", "relu")),
    ),
)


def wide_check(case: WideCase, tol: float = 1e-10) -> Callable[[float], Outcome]:
    """float64 U against the independent reference past capacity 32: d_model > 32 or N > 32,
    d_head > 8, a non-default scale, masks (causal or a float src_mask, with key padding) at n > 32.

    Bugs that only show past 32 (a scale squared when d_model > 32, a key-mask coordinate off by
    one when N > 32, T's scale wrong when d_head > 8) passed every capacity <= 32 check (issue 27)."""

    def check(timeout: float) -> Outcome:
        u = _u(*case.capacity, variant=case.variant)
        n, d, h, k, f = case.sizes
        T = TransformerLayer.random(d, h, k, f, seed=11, **dict(case.options)).with_options(scale=WIDE_SCALE)
        rng = np.random.default_rng(5)
        x = rng.normal(size=(n, d))
        pad = np.zeros(n, dtype=bool)
        pad[-max(1, n // 16) :] = True  # the last keys padded (blocked for every query), most keys left
        masks: dict[str, Any] = {"src_key_padding_mask": pad}
        if case.masks == "causal":
            masks["is_causal"] = True
        else:
            masks["src_mask"] = rng.normal(scale=0.5, size=(n, n))
        err = float(np.max(np.abs(u.run(T, x, **masks) - T(x, **masks))))
        what = f"n={n}, d={d}, h={h}, d_head={k}, scale {WIDE_SCALE:g}, {case.masks} mask + key padding"
        if err <= tol:
            return Outcome.good(f"{what}: max abs error {err:.3g} <= {tol:g}")
        return Outcome.bad(f"{what}: max abs error {err:.3g} > {tol:g}")

    return check


def wide_obligations(variant: str) -> Iterable[Obligation]:
    """The past-capacity-32 float64 runs of one variant (in the default run: a few seconds in all)."""
    prefix = CID if variant == "compact" else SHALLOW
    for case in WIDE_CASES:
        if case.variant != variant:
            continue
        yield Obligation(
            f"{prefix}/numeric/{case.tag}",
            CID,
            COR61,
            "numeric",
            wide_check(case),
            f"float64 {variant} U at capacity (N, D, H, K, F) = {case.capacity} vs the reference: d_model > 32 or "
            f"N > 32, d_head > 8, scale {WIDE_SCALE:g}, {case.masks} mask + key padding, max abs error <= 1e-10",
        )


def stack_check(tol: float, variant: str = "compact") -> Callable[[float], Outcome]:
    def check(timeout: float) -> Outcome:
        u = _u(8, 8, 2, 4, 16, variant=variant)
        layers = [
            TransformerLayer.random(6, 2, 3, 16, seed=1, residual=True, norm="post"),
            TransformerLayer.random(6, 1, 4, None, seed=2, residual=True, norm="pre"),
            TransformerLayer.random(6, 2, 2, 5, seed=3, activation="gelu"),
        ]
        x = np.random.default_rng(0).normal(size=(5, 6))
        want = x
        for T in layers:
            want = T(want)
        err = float(np.max(np.abs(u.run_stack(layers, x) - want)))
        if err <= tol:
            return Outcome.good(f"3 looped passes of one program: max abs error {err:.3g} <= {tol:g}")
        return Outcome.bad(f"max abs error {err:.3g} > {tol:g}")

    return check


def fixture_check(name: str, tol: float, variant: str = "compact") -> Callable[[float], Outcome]:
    def check(timeout: float) -> Outcome:
        errs = check_fixture(name, variant=variant)
        worst = max(errs.values())
        detail = ", ".join(f"{k} {v:.3g}" for k, v in errs.items())
        return Outcome.good(detail) if worst <= tol else Outcome.bad(f"{detail} > {tol:g}")

    return check


OPTION_COMBOS = [
    {"residual": r, "norm": nm, "activation": a}
    for r, nm, a in itertools.product((False, True), ("none", "post", "pre"), ("relu", "gelu", "gelu_tanh"))
]


def _tag(o: dict[str, Any]) -> str:
    return f"{'res' if o['residual'] else 'nores'}-{o['norm']}-{o['activation']}"


def masked_key_check(variant: str) -> Callable[[float], Outcome]:
    """A causal mask whose blocked key's logit exceeds the allowed ones by more than 745 (where
    exp underflows to 0): the softmax shift must be the max over the *allowed* keys."""

    def check(timeout: float) -> Outcome:
        u = _u(3, 1, 1, 1, 1, variant=variant)
        T = TransformerLayer(w_q=[[[63.3]]], w_k=[[[63.3]]], w_v=[[[1.0]]], w_o=[[1.0]], scale=1.0)
        x = np.array([[0.3], [0.0], [1.0]])  # query 0: logits 360.6 (allowed) and 4006.9 (blocked)
        want = T(x, is_causal=True)
        try:
            got = u.run(T, x, is_causal=True)
        except ValueError as exc:
            return Outcome.bad(f"U refused: {exc}")
        err = float(np.max(np.abs(got - want)))
        return Outcome.good(f"max abs error {err:.3g}") if err <= 1e-12 else Outcome.bad(f"max abs error {err:.3g}")

    return check


def frame_obligations() -> Iterable[Obligation]:
    for variant in ("compact", "shallow"):
        tag = "" if variant == "compact" else f"{variant}/"
        yield Obligation(
            f"{FRAME}/{tag}all-sizes/frame",
            FRAME,
            FRAME_REF,
            "all-sizes",
            frame_check(variant),
            f"U ({variant}), every capacity and record count: outside X a pass only advances the pointer and moves "
            "the record queue by one record (so pass t reads record t and keeps the header and masks)",
        )
        base_id = f"{FRAME}/{tag}exact/base-case-{'-'.join(map(str, BASE_CAPACITY))}"
        yield Obligation(
            base_id,
            FRAME,
            FRAME_REF,
            "exact",
            base_case_check(variant),
            f"U ({variant}) at capacity {BASE_CAPACITY} only (not every capacity): encode of M = 3 random layers is "
            "Enc_0 (record l at base + l S, the pointer 0, zeros past M S), compared exactly",
        )
        yield Obligation(
            f"{FRAME}/{tag}all-sizes/stack",
            FRAME,
            FRAME_REF,
            "all-sizes",
            stack_induction_check(variant),
            f"U ({variant}), every capacity, record count M >= 1 and pass t < M: the step of the induction that "
            "run_stack on M records is the M-layer encoder: a pass that satisfies the frame lemma's cases keeps the "
            "invariant Enc_t (X block X_t; header and masks kept; pointer t; record slot k holding record t + k, "
            "zeros past the last), the slot holding record t. Conditional on its premises, each its own obligation: "
            "the frame lemma, the layer (deep) and the base case (checked exactly at one capacity only)",
            requires=(f"{FRAME}/{tag}all-sizes/frame", f"{CID}/{tag}all-sizes/layer", base_id),
        )

    yield Obligation(
        f"{STAGES}/all-sizes/scores",
        STAGES,
        STAGES_REF,
        "all-sizes",
        scores_check,
        "U (compact), every capacity N, D, H, K, F and true sizes n, d, hh, k (eps > 0; every option: pre and "
        "not pre as cases, the others symbolic): at every attention product (h, i, j, e), h < hh, i < n, j < n, "
        "the logit U feeds its softmax equals the spec's logit(h, i, j) (ENCODER_LAYER's own intermediate): the "
        "projections with LayerNorm 1 and the scores, attention layers 1-3.  NOT covered: the row max and "
        "softmax, head outputs, R, LayerNorms after attention, the FFN, the output, the shallow variant (the "
        "whole layer, both variants: simulator/all-sizes/layer)",
        deep=True,
    )
    for variant in ("compact", "shallow"):
        tag = "" if variant == "compact" else f"{variant}/"
        yield Obligation(
            f"{CID}/{tag}all-sizes/layer",
            CID,
            THM6,
            "all-sizes",
            chain_check(None, variant),
            f"U ({variant}), every capacity N, D, H, K, F and every true size n <= N, d <= D, hh <= H, k <= K, "
            "f <= F (eps > 0; every option; premises stated in the result): U's output at every entry (i, l) of "
            "the X block equals [i < n] [l < d] T(X)[i, l] (ENCODER_LAYER, in T's matrices), by symbolic "
            "execution of U's own program: its layout, then the stages scores, attention, ffn, output, write "
            "chained in one run (multi-head and the hierarchy are this statement: h, n, d are symbols)",
            deep=True,
        )
    yield Obligation(
        f"{STAGES}/all-sizes/attention",
        STAGES,
        STAGES_REF,
        "all-sizes",
        chain_check(("scores", "attention")),
        "U (compact), every capacity and true size (eps > 0; every query row has an unblocked key, stated): "
        "U's layout, then in one run the scores stage and, reading its logits, the row max, softmax and head "
        "outputs (attention layers 1-5) at the four grids that hold them equal the spec's "
        "sum_c W_O[e, h k + c] sum_j weight(h, i, j) v_h[j, c].  NOT covered: R, the LayerNorms after "
        "attention, the FFN, the output, the write over X, the shallow variant",
        deep=True,
    )


def simulator_obligations() -> Iterable[Obligation]:
    u = _u(*SMALL)
    yield Obligation(
        f"{CID}/numeric/masked-key-dominates",
        CID,
        COR61,
        "numeric",
        masked_key_check("compact"),
        "causal mask, a blocked key's logit 3,646 above the allowed one: U == T(X) within 1e-12",
    )
    # stage selectors: every head's intent, for all sizes (decoding prover)
    for name, it in u.intents:
        stmt = f"{it.statement} (stage {name.rsplit('.', 1)[0]} of U, {u.fingerprint})"
        yield Obligation(f"{CID}/z3-parametric/{name}", CID, THM9, "z3-parametric", decoded_intent_check(name), stmt)
    yield Obligation(
        f"{CID}/exact/layout-capacities-2",
        CID,
        "Proposition 1",
        "exact",
        layout_enum_check(2),
        "every block injective, disjoint per channel, inside the sequence: all capacities with sizes in 1..2",
    )
    yield Obligation(
        f"{CID}/exact/layout-capacities-3",
        CID,
        "Proposition 1",
        "exact",
        layout_enum_check(3),
        "every block injective, disjoint per channel, inside the sequence: all capacities with sizes in 1..3",
        deep=True,
    )
    yield Obligation(
        f"{CID}/exact/stage-coverage",
        CID,
        THM9,
        "exact",
        coverage_check,
        "every attention op of U is a gather, a sum read at its consumer, the row max or the record shift",
    )
    yield Obligation(
        f"{CID}/exact/masks-all-sizes",
        CID,
        HIER,
        "exact",
        mask_check(((3, 2, 2, 2, 2), (1, 1, 1, 1, 1), (4, 3, 1, 2, 1))),
        "every MLP mask is 1 exactly on the true n (keys, rows) and d (columns), for every size <= capacity",
    )
    # whole-U symbolic
    yield Obligation(
        f"{CID}/sympy/attn-h1-n2-d2",
        CID,
        THM6,
        "sympy",
        whole_check((2, 2, 1, 2, None), (2, 2, 1, 2, None), {}),
        "U == softmax attention on symbolic X and weights (1 head)",
    )
    yield Obligation(
        f"{CID}/sympy/attn-h2-n2-d2",
        CID,
        THM9,
        "sympy",
        whole_check((2, 2, 2, 1, None), (2, 2, 2, 1, None), {}),
        "U == 2-head attention on symbolic X and weights",
    )
    yield Obligation(
        f"{CID}/sympy/ffn-res-rational-n2-d2",
        CID,
        COR61,
        "sympy",
        whole_check((2, 2, 1, 2, 2), (2, 2, 1, 2, 2), {"residual": True}, symbolic_weights=False),
        "U == encoder layer with ReLU FFN and residual: symbolic X, random rational weights",
    )
    yield Obligation(
        f"{CID}/sympy/ffn-res-n2-d2",
        CID,
        COR61,
        "sympy",
        whole_check((2, 2, 1, 2, 2), (2, 2, 1, 2, 2), {"residual": True}),
        "U == encoder layer with ReLU FFN and residual, all symbolic",
        deep=True,
    )
    yield Obligation(
        f"{CID}/sympy/hier-attn-N3-n2",
        CID,
        HIER,
        "sympy",
        whole_check((3, 3, 2, 2, None), (2, 2, 1, 1, None), {}),
        "a capacity (N, D, H, K) = (3, 3, 2, 2) U == a smaller symbolic T (n = d = 2, 1 head, d_head 1)",
    )
    yield Obligation(
        f"{CID}/sympy/post-attn-rational-n2-d2",
        CID,
        COR61,
        "sympy",
        whole_check((2, 2, 1, 2, None), (2, 2, 1, 2, None), {"residual": True, "norm": "post"}, symbolic_weights=False),
        "U == post-norm attention layer (LayerNorm by congruence): symbolic X, rational weights",
    )
    for norm, act in (("post", "relu"), ("pre", "gelu")):
        yield Obligation(
            f"{CID}/sympy/{norm}-ffn-{act}-n2-d2",
            CID,
            COR61,
            "sympy",
            whole_check((2, 2, 1, 2, 2), (2, 2, 1, 2, 2), {"residual": True, "norm": norm, "activation": act}),
            f"U == {norm}-norm encoder layer with {act} FFN, all symbolic (congruence)",
            deep=True,
        )
    yield Obligation(
        f"{CID}/sympy/ffn-gelu_tanh-res-rational-n2-d2",
        CID,
        COR61,
        "sympy",
        whole_check(
            (2, 2, 1, 2, 2), (2, 2, 1, 2, 2), {"residual": True, "activation": "gelu_tanh"}, symbolic_weights=False
        ),
        "U == encoder layer with torch's tanh-GELU FFN and residual: symbolic X, rational weights (congruence)",
        deep=True,
    )
    # numerics at capacity 32
    cap32 = (32, 32, 4, 8, 64)
    for o in OPTION_COMBOS:
        for f in (64, None):
            if f is None and o["activation"] != "relu":  # no FFN: the activation is unread
                continue
            tag = _tag(o) + ("" if f else "-noffn")
            yield Obligation(
                f"{CID}/numeric/cap32-{tag}",
                CID,
                COR61 if f else THM9,
                "numeric",
                numeric_check(cap32, (32, 32, 4, 8, f), o, 1e-10),
                "float64 U vs reference at full capacity 32 (4 heads), max abs error <= 1e-10",
            )
    yield Obligation(
        f"{CID}/numeric/cap32-hier-small",
        CID,
        HIER,
        "numeric",
        numeric_check(cap32, (7, 20, 3, 5, 33), {"residual": True, "norm": "post", "activation": "gelu"}, 1e-10),
        "capacity-32 U simulates n=7, d=20, h=3, d_head=5, d_ff=33 within 1e-10",
    )
    yield from wide_obligations("compact")
    yield Obligation(
        f"{CID}/numeric/stack-3-layers",
        CID,
        FRAME_REF,
        "numeric",
        stack_check(1e-10),
        "run_stack: one program looped 3 times == composed references (mixed options, sizes)",
    )
    for name in ("encoder_post_relu", "encoder_pre_gelu", "mha"):
        yield Obligation(
            f"{CID}/numeric/torch-{name}",
            CID,
            COR61,
            "numeric",
            fixture_check(name, 1e-10),
            "from_state_dict + reference + U vs torch's float64 output (committed fixture)",
        )

    for name in MASK_FIXTURES:
        yield Obligation(
            f"{CID}/numeric/torch-{name}",
            CID,
            COR61,
            "numeric",
            fixture_check(name, 1e-10),
            "U with torch's mask arguments (causal, additive, key padding), batches and logit rows spread over 2000 "
            "vs torch's float64 output (committed fixture)",
        )
    yield Obligation(
        f"{CID}/numeric/torch-stack2",
        CID,
        FRAME_REF,
        "numeric",
        fixture_check("stack2", 1e-10),
        "run_stack vs torch nn.TransformerEncoder (2 layers), committed fixture",
    )


SHALLOW = f"{CID}/shallow"
SHALLOW_SMALL = (4, 4, 2, 2, 4)  # numeric checks of the shallow build (its spread grid grows as N^2 D^2)


def shallow_obligations() -> Iterable[Obligation]:
    """U with ``variant="shallow"`` (6 attention layers): its own stage selectors, coverage,
    numerics for every option combination, the torch fixtures, a stack and whole-U SymPy checks."""
    v = "shallow"
    u = _u(*SMALL, variant=v)
    yield Obligation(
        f"{SHALLOW}/numeric/masked-key-dominates",
        CID,
        COR61,
        "numeric",
        masked_key_check(v),
        "causal mask, a blocked key's logit 3,646 above the allowed one: U == T(X) within 1e-12",
    )
    yield from wide_obligations(v)
    for name, it in u.intents:
        stmt = f"{it.statement} (stage {name.rsplit('.', 1)[0]} of shallow U, {u.fingerprint})"
        yield Obligation(
            f"{SHALLOW}/z3-parametric/{name}", CID, THM9, "z3-parametric", decoded_intent_check(name, v), stmt
        )
    yield Obligation(
        f"{SHALLOW}/exact/stage-coverage",
        CID,
        THM9,
        "exact",
        functools.partial(coverage_check, variant=v),
        "every attention op of shallow U is a gather, a sum read at its consumer, the row max or the record shift",
    )
    yield Obligation(
        f"{SHALLOW}/exact/six-layers",
        CID,
        THM9,
        "exact",
        _layers_check(v, 6),
        "shallow U has at most 6 attention layers at capacities c = 2, 3, 8, 32, 64 (max_len = d_model = d_ff = c; "
        "the test suite checks every c in 2..64)",
    )
    yield Obligation(
        f"{SHALLOW}/sympy/attn-h1-n2-d2",
        CID,
        THM6,
        "sympy",
        whole_check((2, 2, 1, 2, None), (2, 2, 1, 2, None), {}, variant=v),
        "shallow U == softmax attention on symbolic X and weights (1 head)",
    )
    yield Obligation(
        f"{SHALLOW}/sympy/ffn-res-rational-n2-d2",
        CID,
        COR61,
        "sympy",
        whole_check((2, 2, 1, 2, 2), (2, 2, 1, 2, 2), {"residual": True}, symbolic_weights=False, variant=v),
        "shallow U == encoder layer with ReLU FFN and residual: symbolic X, random rational weights",
    )
    for norm, how in (("post", "LayerNorm by congruence"), ("pre", "LayerNorm of X in the spread product")):
        yield Obligation(
            f"{SHALLOW}/sympy/{norm}-attn-rational-n2-d2",
            CID,
            COR61,
            "sympy",
            whole_check(
                (2, 2, 1, 2, None),
                (2, 2, 1, 2, None),
                {"residual": True, "norm": norm},
                symbolic_weights=False,
                variant=v,
            ),
            f"shallow U == {norm}-norm attention layer ({how}): symbolic X, rational weights",
        )
    cap = SHALLOW_SMALL
    for o in OPTION_COMBOS:
        for f in (cap[4], None):
            if f is None and o["activation"] != "relu":  # no FFN: the activation is unread
                continue
            tag = _tag(o) + ("" if f else "-noffn")
            yield Obligation(
                f"{SHALLOW}/numeric/cap4-{tag}",
                CID,
                COR61 if f else THM9,
                "numeric",
                numeric_check(cap, (4, 4, 2, 2, f), o, 1e-10, variant=v),
                "float64 shallow U vs reference at full capacity (4, 4, 2, 2, 4), max abs error <= 1e-10",
            )
    yield Obligation(
        f"{SHALLOW}/numeric/stack-3-layers",
        CID,
        FRAME_REF,
        "numeric",
        stack_check(1e-10, variant=v),
        "shallow run_stack: one program looped 3 times == composed references (mixed options, sizes)",
    )

    for name in FIXTURES:
        yield Obligation(
            f"{SHALLOW}/numeric/torch-{name}",
            CID,
            COR61,
            "numeric",
            fixture_check(name, 1e-10, variant=v),
            "shallow U (with torch's mask arguments where the fixture has them) vs torch's float64 output",
        )


def _layers_check(variant: str, most: int) -> Callable[[float], Outcome]:
    CAPS = (2, 3, 8, 32, 64)

    def check(timeout: float) -> Outcome:
        got = {
            c: UniversalSimulator(c, c, min(c, 4), max(1, c // 4), c, variant=variant).cost()["layers"] for c in CAPS
        }
        over = {c: n for c, n in got.items() if n > most}
        if over:
            return Outcome.bad(f"more than {most} layers at {over}")
        return Outcome.good(f"layers {sorted(set(got.values()))} at capacities {CAPS}")

    return check


#: The constructions this module declares (registered by :mod:`attnsim.catalog`).
CONSTRUCTIONS = (
    ConstructionEntry(CID, f"{THM6}, {COR61}, {THM9}, {HIER}", lambda: UniversalSimulator(3, 3, 2, 2, 3)),
    ConstructionEntry(FRAME, FRAME_REF, lambda: UniversalSimulator(3, 3, 2, 2, 3), part_of=CID),
    ConstructionEntry(STAGES, STAGES_REF, lambda: UniversalSimulator(3, 3, 2, 2, 3), part_of=CID),
)


__all__ = ["OPTION_COMBOS", "shallow_obligations", "simulator_obligations"]
