"""Depth by looping: ``run_stack`` on m records is the m-layer encoder, for every m and capacity.

The induction: each of its parts machine-checked (the base case, the step, the frame lemma and
the one-layer statement, each an obligation), their combination by induction on t argued here.
The invariant I(t), for a pass index 0 <= t <= M (M records, a
symbol), says the sequence before pass t is ``Enc_t``, region by region (S the record size, L the
sequence length, R(q) the q-th token after ``base`` in the encoding, X_t the X block):

* X block: X_t (the encoding's X when t = 0; zero past the true sizes);
* header and masks, the pointer aside: the encoding's token; the pointer: t;
* records, p >= base: R(p - base + t S) while p - base + t S < M S, else 0.

Base, proven by Z3 for every capacity and M (:func:`prove_base_case`): ``encode`` takes each token
where the input map's stacking (:meth:`attnsim.universal.record.InputMap.stacking`, the index
expressions ``encode`` evaluates) says, so below ``base`` the tokens are layer 0's one-layer
encoding (the pointer is ``encode``'s argument, 0), at ``base + l S + r`` layer l's one-layer
record token ``base + r``, and zero from ``base + M S`` on, region by region of ``Enc_0`` as the
step states it (also checked exactly on ``encode``'s output at one capacity, :func:`base_case`,
which goes through the same stacking).  Step, proven here by Z3 for every capacity, M and t < M at a symbolic
position: a pass that satisfies the frame lemma (:func:`attnsim.universal.layerproof.frame.frame_cases`, the
cases :func:`~attnsim.universal.layerproof.frame.prove_frame` proves on U's program) maps ``Enc_t`` outside X
to ``Enc_{t+1}``; the frame cases and X cover every position; the record slot [base, base + S),
which holds every grid of the one record a pass reads, holds record t.  With the one-layer
statement (``simulator/all-sizes/layer``: the X block after a pass is [i < n][l < d] T(X)[i, l],
T read from the slot), pass t computes X_{t+1} = T_t(X_t), so after M passes the X block is
T_{M-1}(... T_0(X)).
"""

from __future__ import annotations

import functools
import operator
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnsim.proofs.decoding import prover
from attnsim.proofs.obligation import Outcome
from attnsim.rasp import expr as E
from attnsim.universal.layer import TransformerLayer
from attnsim.universal.layerproof.frame import (
    BASE,
    LENGTH,
    POINTER,
    POSITION,
    RECORD,
    RECORDS,
    X_END,
    FrameCase,
    frame_binding,
    frame_cases,
)
from attnsim.universal.record import STACKED_AT

PASS = E.Var("t!")  # the pass index


@dataclass(frozen=True)
class Region:
    """A region of ``Enc_t`` at position ``at``: where it holds, what kind of token, its argument."""

    kind: str  # "X", "pointer", "fixed", "record", "zero", "outside"
    cond: E.Expr
    arg: E.Expr | None = None  # fixed: the position; record: the offset q into R; pointer: its value


def regions(at: E.Expr, t: E.Expr) -> list[Region]:
    """``Enc_t`` at position ``at``, one region per kind, over the abstract places."""
    S = RECORD
    q = at - BASE + t * S
    return [
        Region("X", (at >= 0) & (at < X_END)),
        Region("pointer", at.eq(POINTER), t),
        Region("fixed", (at >= X_END) & (at < BASE) & E.Not(at.eq(POINTER)), at),
        Region("record", (at >= BASE) & (at < LENGTH) & (q < RECORDS * S), q),
        Region("zero", (at >= BASE) & (at < LENGTH) & (q >= RECORDS * S)),
        Region("outside", (at < 0) | (at >= LENGTH)),
    ]


def place_facts() -> list[tuple[str, E.Expr]]:
    """What the step assumes of the places, each proven on U's map (:func:`map_goals`)."""
    return [
        ("X starts the sequence", X_END >= 1),
        ("the pointer lies between X and the records", (POINTER >= X_END) & (POINTER < BASE)),
        ("a record holds a token", RECORD >= 1),
        ("the sequence holds the M records", LENGTH >= BASE + RECORDS * RECORD),
    ]


def _prove(goal: E.Expr, assume: Sequence[E.Expr], what: str, net: float) -> Outcome:
    out = prover.prove(goal, assume, timeout=net)  # ``net``: a wall net only; each query's rlimit decides
    return out.retold(f"{what}: {out.detail}")


def _all_proved(goals: Sequence[tuple[str, E.Expr, list[E.Expr]]], timeout: float, claim: str) -> Outcome:
    """``claim`` (with the number of goals) when Z3 proves every one of ``goals`` (what, goal,
    premises), in order, within ``timeout`` seconds for all; else the first one's outcome."""
    t0 = time.process_time()
    for done, (what, goal, premises) in enumerate(goals):
        if time.process_time() - t0 > timeout:
            return Outcome(None, f"timeout after {done} of {len(goals)} goals ({what} not reached)", cause="timeout")
        out = _prove(goal, premises, what, timeout)
        if out.ok is not True:
            return out
    return Outcome.good(f"{claim} ({len(goals)} Z3 goals)")


def map_goals(u: Any) -> list[tuple[str, E.Expr, list[E.Expr]]]:
    """The place facts at ``u``'s own places, and the slot [base, base + S) holding every record grid."""
    binding = frame_binding(u)
    goals: list[tuple[str, E.Expr, list[E.Expr]]] = [
        (f"map: {what}", fact.substitute(binding), []) for what, fact in place_facts()
    ]
    im = u.map
    for g in im.record:
        inside = (g.offset >= im.base) & (g.end_expr() <= im.base + im.record_size)
        goals.append((f"map: grid {g.name} inside the slot [base, base + S)", inside, []))
    return goals


def step_goals(cases: Sequence[FrameCase]) -> list[tuple[str, E.Expr, list[E.Expr]]]:
    """(what, goal, premises) whose proofs make the step I(t) -> I(t + 1) outside X, the coverage
    of the positions and the record slot, for all places with the place facts."""
    p, t, M, S = POSITION, PASS, RECORDS, RECORD
    facts = [f for _, f in place_facts()]
    ranges = [*facts, t >= 0, t < M, p >= 0, p < LENGTH]
    goals: list[tuple[str, E.Expr, list[E.Expr]]] = []
    for case in cases:
        got_regions = regions(case.reads, t) if case.reads is not None else [Region("zero", E.Const(1))]
        plus = case.plus if case.reads is not None else 0
        for want in regions(p, t + 1):
            for got in got_regions:
                both = want.cond & got.cond
                label = f"{case.what}: Enc_(t+1) {want.kind} vs the pass's {got.kind}"
                if want.kind == got.kind == "zero" and plus == 0:
                    continue  # 0 == 0 wherever both hold
                if want.kind == got.kind and want.kind in ("fixed", "record") and plus == 0:
                    assert want.arg is not None and got.arg is not None
                    goal = E.Not(both) | want.arg.eq(got.arg)
                elif want.kind == got.kind == "pointer":
                    assert want.arg is not None and got.arg is not None
                    goal = E.Not(both) | want.arg.eq(got.arg + plus)
                else:
                    goal = E.Not(both)  # a region pair whose tokens differ: never both
                goals.append((label, goal, [*case.conditions, *ranges]))
    stated = [functools.reduce(operator.and_, c.conditions) for c in cases]
    goals.append(("coverage: X or a frame case", functools.reduce(operator.or_, stated, p < X_END), ranges))
    r = E.Var("r!")
    slot = next(g for g in regions(BASE + r, t) if g.kind == "record")
    assert slot.arg is not None
    goals.append(
        (
            "slot: [base, base + S) holds record t",
            slot.cond & slot.arg.eq(r + t * S),
            [*facts, t >= 0, t < M, r >= 0, r < S],
        )
    )
    return goals


def base_case(make: Any, layers: int = 3, seed: int = 0) -> Outcome:
    """``encode`` of ``layers`` random layers at one capacity is ``Enc_0``, exactly: record l at
    base + l S (the one-layer encoding's record), the pointer 0, zeros past M S."""

    u = make()
    rng = np.random.default_rng(seed)
    cap = u.capacity
    d = cap["d_model"]
    Ts = [TransformerLayer.random(d, cap["n_heads"], cap["d_head"], cap["d_ff"], seed=seed + i) for i in range(layers)]
    x = rng.standard_normal((cap["max_len"], d))
    seq = u.encode(Ts, x)
    base, S = int(u.base), int(u.record_size)
    ptr = int(u.map.header_position("ptr"))
    ones = [u.encode([T], x) for T in Ts]
    if not np.array_equal(seq[:base], ones[0][:base]):
        return Outcome.bad("base case: X, header or masks differ from the one-layer encoding")
    for li, one in enumerate(ones):
        if not np.array_equal(seq[base + li * S : base + (li + 1) * S], one[base : base + S]):
            return Outcome.bad(f"base case: encode places layer {li}'s record elsewhere than base + {li} S")
    if seq[ptr] != 0 or np.any(seq[base + layers * S :] != 0):
        return Outcome.bad("base case: the pointer is not 0 or a token past the records is not 0")
    return Outcome.good(f"encode == Enc_0 at capacity {dict(cap)}, M = {layers} (exact)")


def base_goals(u: Any) -> list[tuple[str, E.Expr, list[E.Expr]]]:
    """(what, goal, premises) whose proofs make ``encode`` of M records ``Enc_0`` for ``u`` built
    over unbound sizes, for every capacity and M >= 1: region by region of ``regions(p, 0)`` at
    ``u``'s places, where its input map's stacking (what ``encode`` evaluates) takes the token.
    X, the pointer and the fixed tokens: layer 0's one-layer encoding at the same place (their
    values are that encoding's: the pointer is ``encode``'s argument, 0 by default); record token
    q = p - base: layer q div S's one-layer record token base + q mod S; past the records: 0."""
    place = u.map.stacking(RECORDS)
    binding = frame_binding(u)
    p, base, S = POSITION, u.map.base, u.map.record_size
    layer, slot = (e.substitute({STACKED_AT.name: p}) for e in (place.layer, place.slot))
    goals: list[tuple[str, E.Expr, list[E.Expr]]] = []
    for region in regions(p, E.Const(0)):
        cond = region.cond.substitute(binding)
        if region.kind in ("X", "pointer", "fixed"):
            what, goal = "layer 0's one-layer encoding at the same place", layer.eq(0) & slot.eq(p) & (p < place.end)
        elif region.kind == "record":
            assert region.arg is not None
            q = region.arg.substitute(binding)
            what = "layer q div S's one-layer record token base + q mod S"
            goal = layer.eq(q // S) & slot.eq(base + q % S) & (p < place.end)
        elif region.kind == "zero":
            what, goal = "0 (past the stacking's end)", p >= place.end
        else:
            continue  # outside the sequence: no token
        goals.append((f"base: Enc_0 {region.kind} is {what}", goal, [RECORDS >= 1, cond]))
    return goals


def prove_base_case(u: Any, timeout: float = 60.0) -> Outcome:
    """The base case of the induction for ``u`` built over unbound sizes (see the module docstring)."""
    return _all_proved(
        base_goals(u),
        timeout,
        "for all capacities and record counts M >= 1, region by region of Enc_0: encode (the input map's "
        "stacking it evaluates) takes X, the pointer and the fixed tokens from layer 0's one-layer encoding at "
        "the same place, record token q from layer q div S's at base + q mod S, and 0 past base + M S",
    )


def prove_stack(u: Any, timeout: float = 120.0, cases: Sequence[FrameCase] | None = None) -> Outcome:
    """The step of the induction for ``u`` built over unbound sizes, given the frame cases
    (default: the frame lemma's, :func:`frame_cases`); see the module docstring."""
    return _all_proved(
        [*map_goals(u), *step_goals(frame_cases() if cases is None else cases)],
        timeout,
        "for all capacities, record counts M >= 1 and passes t < M: a pass that satisfies the frame lemma maps "
        "Enc_t to Enc_(t+1) outside X, the frame cases and X cover every position, and the slot holds record t",
    )


__all__ = [
    "PASS",
    "Region",
    "base_case",
    "base_goals",
    "map_goals",
    "place_facts",
    "prove_base_case",
    "prove_stack",
    "regions",
    "step_goals",
]
