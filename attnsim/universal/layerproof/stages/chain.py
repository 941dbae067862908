"""Theorem 6 (and 9, the hierarchy): one pass of U equals the encoder layer, for every capacity.

The layer is a chain on U's own graph: U's layout (every block injective, disjoint, in the
sequence, so a token read through the input map is the entry it names), then the stages in
:data:`ORDER`, each goal proven over only the statements (:class:`Cut`) of the stages it reads
(:func:`read_cuts`, :func:`prove_goal`).  The last stage states U's output on the X block as the
spec's output (``write``), so every goal proven is the whole layer, program == spec, for all
capacities N, D, H, K, F and true sizes n <= N, d <= D, hh <= H, k <= K, f <= F (the multi-head
and hierarchy claims are the same statement: h, n, d are symbols).  The default ``attnsim
verify`` runs each goal as an obligation of its own, the layer their conjunction
(:mod:`attnsim.universal.obligations`); :func:`prove_layer` chains them in one run.  Premises the
stages state (e.g. every query row has an unblocked key) are collected into the Outcome.  A goal
that carries a padding value (``Cut.padded``: what later stages read on the rows i >= n) is
accepted only when its proof states it (:func:`attnsim.universal.layerproof.padding.prove_padding`),
every node of one name proven equal to one representative node (:func:`padding_reps`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from attnsim.proofs.intents import prove_layout
from attnsim.proofs.obligation import Outcome, Premise
from attnsim.proofs.solver_work import sharing_answers
from attnsim.universal.layerproof.cut import Cut
from attnsim.universal.layerproof.stage_proof import setup
from attnsim.universal.layerproof.stages import Stage
from attnsim.universal.layerproof.stages.act import ACTIVATION
from attnsim.universal.layerproof.stages.attention import ATTENTION
from attnsim.universal.layerproof.stages.ffn import FFN
from attnsim.universal.layerproof.stages.output import OUTPUT
from attnsim.universal.layerproof.stages.scores import SCORES
from attnsim.universal.layerproof.stages.write import WRITE

ORDER: tuple[Stage, ...] = (SCORES, ATTENTION, FFN, ACTIVATION, OUTPUT, WRITE)


UNPROVEN = "NOT PROVEN: "  # how :func:`premises` marks a premise on U's own values that no stage proved


def premises(out: Outcome) -> list[str]:
    """The premises a stage's Outcome states (its typed ``stated`` records, each with the cases it was
    used in, joined by `` | ``), not the proven stages it read (those are discharged by the chain).
    A premise stated ``unproven`` (on U's own values, not on its input) is marked :data:`UNPROVEN`."""
    return [_shown(p) for p in out.stated]


def _shown(p: Premise) -> str:
    """A premise as printed, marked :data:`UNPROVEN` when it is."""
    return UNPROVEN + p.shown() if p.unproven else p.shown()


def padding_proven(goal: Cut, out: Outcome, reps: dict[str, str]) -> str:
    """Why ``out`` does not prove the goal's padding value, or "" when it does (the goal has none, or
    ``out`` states (a :class:`~attnsim.proofs.obligation.PaddingValue`) that U's ``goal.label`` holds
    ``goal.padded`` there, the value of a representative node, the same for every goal of the name,
    recorded in ``reps``)."""
    if not goal.padded:
        return ""
    said = [v for v in out.padding if v.label == goal.label and v.value == goal.padded]
    if not said:
        return f"its padding value {goal.padded} is not proven"
    rep = reps.setdefault(goal.padded, said[0].rep)
    if rep != said[0].rep:
        return f"its padding value {goal.padded} is proven as {said[0].rep}'s, the name's is {rep}'s"
    return ""


def padding_reps(goals: Sequence[Cut]) -> dict[str, str]:
    """Each padding value's representative node: the first goal of the stage that carries it (the
    node every stage's padding proof compares the others with)."""
    reps: dict[str, str] = {}
    for g in goals:
        if g.padded:
            reps.setdefault(g.padded, g.label)
    return reps


def order_problem(stages: Sequence[Stage]) -> str:
    """Why ``stages`` cannot be chained in this order (a stage reads one not before it), or ""."""
    for k, st in enumerate(stages):
        missing = [r for r in st.requires if r not in {s.name for s in stages[:k]}]
        if missing:
            return f"stage {st.name} reads {', '.join(missing)}, not proven earlier in this run"
    return ""


def read_cuts(u: Any, st: Stage, stages: Sequence[Stage] = ORDER) -> dict[str, Cut]:
    """The statements stage ``st`` reads: every goal of the stages it requires (their proofs are
    premises: the chain's earlier steps, or obligations of their own)."""
    return {g.label: g for s in stages if s.name in st.requires for g in s.goals(u)}


def prove_goal(u: Any, st: Stage, goal: Cut, cuts: Mapping[str, Cut], timeout: float) -> Outcome:
    """One goal of stage ``st`` proven over the statements ``cuts`` of the stages it reads, its
    padding value (if any) proven as its representative's (:func:`padding_reps`)."""
    out = st.prove(u, goal, cuts, timeout)
    if out.ok is not True:
        return out.retold(f"stage {st.name}, {goal.label}: {out.detail}")
    why = padding_proven(goal, out, padding_reps(st.goals(u)))
    return Outcome.bad(f"stage {st.name}, {goal.label}: {why}") if why else out


@sharing_answers  # the stages of one chain share their decided Z3 answers
def prove_layer(u: Any, timeout: float, stages: Sequence[Stage] = ORDER) -> Outcome:
    """U's layout, then every goal of every stage in order; the first goal not proven ends the run
    (its stage, node and detail named); a stage reading a stage not yet proven is refused."""
    bad_order = order_problem(stages)  # the order first: nothing is run for a chain that cannot hold
    if bad_order:
        return Outcome.bad(bad_order)
    t0 = time.process_time()
    left = lambda: max(0.5, timeout - (time.process_time() - t0))
    lay = prove_layout(setup(u)[0].layout, left(), describe=u.map.describe)
    if lay.ok is not True:
        return lay.retold(f"layout: {lay.detail}")
    done = [f"layout {time.process_time() - t0:.1f} s"]
    stated: list[Premise] = []
    for st in stages:
        cuts = read_cuts(u, st, stages)
        t1 = time.process_time()
        goals = st.goals(u)
        for goal in goals:
            out = prove_goal(u, st, goal, cuts, left())
            if out.ok is not True:
                return out.retold(f"{out.detail} (proven before it: {'; '.join(done)})")
            stated += [p for p in out.stated if p not in stated]
        done.append(f"{st.name} {time.process_time() - t1:.1f} s ({len(goals)} goal(s))")
    return layer_outcome(stages, "; ".join(done), stated)


def layer_outcome(stages: Sequence[Stage], done: str, stated: Sequence[Premise]) -> Outcome:
    """The chain's claim once every goal of ``stages`` is proven (``done``: how), under the premises
    the goals stated; not proven while one of them is on U's own values."""
    claim = (
        "U's output at every entry (i, l) of X equals [i < n] [l < d] T(X)[i, l], the spec's output"
        if [st.name for st in stages] == [st.name for st in ORDER]
        else f"the stages {', '.join(st.name for st in stages)} in order (NOT the whole layer)"
    )
    text = (
        "for all capacities N, D, H, K, F and true sizes n <= N, d <= D, hh <= H, k <= K, f <= F (eps > 0): "
        f"{claim}; {done}" + "".join(f"; premise: {_shown(p)}" for p in stated)
    )
    gaps = [p for p in stated if p.unproven]
    if gaps:  # a premise on U's own values: the claim holds only where it does, so it is not proven
        why = f"every goal proven, but under {len(gaps)} premise(s) on U's own values not proven"
        return Outcome(None, f"{why}: {text}", stated=tuple(stated))
    return Outcome(True, text, stated=tuple(stated))


__all__ = [
    "ORDER",
    "UNPROVEN",
    "layer_outcome",
    "order_problem",
    "padding_proven",
    "padding_reps",
    "premises",
    "prove_goal",
    "prove_layer",
    "read_cuts",
]
