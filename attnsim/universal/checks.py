"""The checks U's obligations run (:mod:`attnsim.universal.obligations` declares them).

Each returns a ``check(timeout) -> Outcome``: the all-sizes proofs of U's layer, frame and stack
(:mod:`attnsim.universal.layerproof`), the decoding prover on each stage selector's intent, the
exhaustive layout and mask enumerations, whole-U SymPy comparisons with the reference, and float64
runs against the reference and torch's fixtures.  U is built once per capacity (:func:`u_at`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from attnsim.proofs.intents import check_intent, prove_layout
from attnsim.proofs.obligation import Outcome
from attnsim.rasp import core as C
from attnsim.rasp.engine import evaluate
from attnsim.universal.congruence import Atoms, difference
from attnsim.universal.counterexample_search import SEARCH_RESERVE, with_search
from attnsim.universal.fixtures import check_fixture
from attnsim.universal.layer import TransformerLayer
from attnsim.universal.layerproof.frame import prove_frame
from attnsim.universal.layerproof.stack import base_case, prove_base_case, prove_stack
from attnsim.universal.layerproof.stage_proof import setup
from attnsim.universal.layerproof.stages import Stage
from attnsim.universal.layerproof.stages.chain import (
    ORDER,
    layer_outcome,
    order_problem,
    prove_goal,
    read_cuts,
)
from attnsim.universal.universal import UniversalSimulator

SMALL = (3, 3, 2, 2, 3)  # the capacity whose program the Z3 obligations translate (sizes stay symbols)


def layout_check(variant: str) -> Callable[[float], Outcome]:
    """U's layout over unbound capacity sizes: every block injective, disjoint, in the sequence (the
    first premise of the layer: a token read through the input map is the entry it names)."""

    def check(timeout: float) -> Outcome:
        u = UniversalSimulator.over_symbolic_capacity(variant)
        return prove_layout(setup(u)[0].layout, timeout, describe=u.map.describe)

    return check


def stage_goal_check(variant: str, stage: str, label: str) -> Callable[[float], Outcome]:
    """One goal of one stage (attnsim.universal.layerproof.stages.chain.prove_goal) on U built over
    unbound capacity sizes, reading the statements of the stages it requires: those stages' goals
    are its premises, each an obligation of its own.  Undecided, it searches for a counterexample
    (:func:`with_search`, within :data:`SEARCH_RESERVE` of the timeout) before any longer budget is
    suggested."""

    def check(timeout: float) -> Outcome:
        u = UniversalSimulator.over_symbolic_capacity(variant)
        (st,) = [s for s in ORDER if s.name == stage]
        (goal,) = [g for g in st.goals(u) if g.label == label]
        reserve = min(SEARCH_RESERVE, timeout / 4)
        return with_search(prove_goal(u, st, goal, read_cuts(u, st), timeout - reserve), u)

    return check


def stage_goals(variant: str) -> list[tuple[str, str]]:
    """(stage, node label) of every goal of the layer's stages, in ORDER: the layer's premises."""
    u = UniversalSimulator.over_symbolic_capacity(variant)
    return [(st.name, g.label) for st in ORDER for g in st.goals(u)]


def layer_check(variant: str, stages: Sequence[Stage] = ORDER) -> Callable[[float], Outcome]:
    """Theorem 6 as the conjunction of its steps: ``stages`` chain in this order (each reads only
    stages before it) and are the whole layer (ORDER: the last writes U's output over X); the layout
    and every stage goal are its premises (``requires``), so it is proved only when each of them is."""

    def check(timeout: float) -> Outcome:
        bad = order_problem(stages)
        if bad or [st.name for st in stages] != [st.name for st in ORDER]:
            return Outcome.bad(bad or f"the stages {', '.join(st.name for st in stages)} are not the whole layer")
        u = UniversalSimulator.over_symbolic_capacity(variant)
        steps = ", ".join(f"{st.name} ({len(st.goals(u))} goal(s))" for st in stages)
        return layer_outcome(stages, f"U ({variant}): its layout, then the stages {steps}, each goal an obligation", ())

    return check


def frame_check(variant: str) -> Callable[[float], Outcome]:
    """The frame lemma of one pass (attnsim.universal.layerproof.frame) on U built over unbound capacity sizes."""

    def check(timeout: float) -> Outcome:
        return prove_frame(UniversalSimulator.over_symbolic_capacity(variant), timeout)

    return check


def stack_induction_check(variant: str) -> Callable[[float], Outcome]:
    """The step of the stack induction (attnsim.universal.layerproof.stack), from the frame lemma's cases;
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


def base_case_proof(variant: str) -> Callable[[float], Outcome]:
    """The base case of the stack induction (attnsim.universal.layerproof.stack) for every capacity and M."""

    def check(timeout: float) -> Outcome:
        return prove_base_case(UniversalSimulator.over_symbolic_capacity(variant), timeout)

    return check


BASE_CAPACITY = (2, 2, 1, 2, 2)


def base_case_check(variant: str) -> Callable[[float], Outcome]:
    """``encode``'s output for 3 layers is Enc_0, exactly, at one capacity (beside the base case's proof,
    :func:`base_case_proof`: a check of ``encode``'s evaluation of the stacking)."""

    def check(timeout: float) -> Outcome:
        return base_case(lambda: u_at(*BASE_CAPACITY, variant=variant))

    return check


def u_at(*cap: int, variant: str = "compact") -> UniversalSimulator:
    """One U per (capacity, variant), however the variant is passed."""
    return _built(cap, variant)


@C.built_once
def _built(cap: tuple[int, ...], variant: str) -> UniversalSimulator:
    return UniversalSimulator(*cap, variant=variant)


def decoded_intent_check(name: str, variant: str = "compact") -> Callable[[float], Outcome]:
    """A stage selector's intent for all sizes by the decoding prover (positions decoded into the
    grids of U's layout), as the lemmas' intents are proven."""

    def check(timeout: float) -> Outcome:
        u = u_at(*SMALL, variant=variant)
        return check_intent(dict(u.intents)[name], u.layout, timeout=timeout)

    return check


KINDS = {"gather": "Lemma (transpose), generalized", "sum": "Lemma (matmul), generalized", "rows": "row max head"}


def _value_atom(sel: C.Selector) -> bool:
    """A selector atom that compares a value with a constant (a key flag), not positions."""
    return isinstance(sel, C.Select) and isinstance(sel.queries, C.Full)


def coverage_check(timeout: float, variant: str = "compact") -> Outcome:
    """Every attention op of U has a proven intent (a conjunct of its selector, the rest key flags)."""
    u = u_at(*SMALL, variant=variant)
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
            u = u_at(*cap)
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
        u = u_at(*cap, variant=variant)
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
    """A float64 run of U past capacity 32: which variant, capacity, true sizes, masks."""

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
    one when N > 32, T's scale wrong when d_head > 8) passed every capacity <= 32 check."""

    def check(timeout: float) -> Outcome:
        u = u_at(*case.capacity, variant=case.variant)
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


def stack_check(tol: float, variant: str = "compact") -> Callable[[float], Outcome]:
    def check(timeout: float) -> Outcome:
        u = u_at(8, 8, 2, 4, 16, variant=variant)
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


def fixture_check(
    name: str, tol: float, variant: str = "compact", *, simulator: bool = True
) -> Callable[[float], Outcome]:
    """A committed torch fixture against the reference and (``simulator``) U of ``variant``."""

    def check(timeout: float) -> Outcome:
        errs = check_fixture(name, variant=variant, simulator=simulator)
        worst = max(errs.values())
        detail = ", ".join(f"{k} {v:.3g}" for k, v in errs.items())
        return Outcome.good(detail) if worst <= tol else Outcome.bad(f"{detail} > {tol:g}")

    return check


OPTION_COMBOS = [
    {"residual": r, "norm": nm, "activation": a}
    for r, nm, a in itertools.product((False, True), ("none", "post", "pre"), ("relu", "gelu", "gelu_tanh"))
]


def option_tag(o: dict[str, Any]) -> str:
    """A short tag of an option combination (its obligation ids end with it)."""
    return f"{'res' if o['residual'] else 'nores'}-{o['norm']}-{o['activation']}"


def masked_key_check(variant: str) -> Callable[[float], Outcome]:
    """A causal mask whose blocked key's logit exceeds the allowed ones by more than 745 (where
    exp underflows to 0): the softmax shift must be the max over the *allowed* keys."""

    def check(timeout: float) -> Outcome:
        u = u_at(3, 1, 1, 1, 1, variant=variant)
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


def layers_check(variant: str, most: int) -> Callable[[float], Outcome]:
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
