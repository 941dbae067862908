"""Theorem 6 (and 9, the hierarchy): one pass of U equals the encoder layer, for every capacity.

:func:`prove_layer` chains the stages on U's own graph: it proves U's layout (every block
injective, disjoint, in the sequence, so a token read through the input map is the entry it
names), then runs the stages in order, handing each only the statements (:class:`Cut`) that the
stages it reads proved earlier in the same run.  The last stage states U's output on the X block
as the spec's output (``write``), so a green run is the whole layer, program == spec, for all
capacities N, D, H, K, F and true sizes n <= N, d <= D, hh <= H, k <= K, f <= F (the multi-head
and hierarchy claims are the same statement: h, n, d are symbols).  Premises the stages state
(e.g. every query row has an unblocked key) are collected into the Outcome.  A goal that carries a
padding value (``Cut.padded``: what later stages read on the rows i >= n) is accepted only when its
proof states it (:func:`attnsim.simulator.layerproof.padding.prove_padding`), every node of one name proven equal
to one representative node.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from attnsim.proofs.intents import prove_layout
from attnsim.proofs.obligation import Outcome, Premise
from attnsim.proofs.solver_work import sharing_answers
from attnsim.simulator.layerproof.cut import Cut
from attnsim.simulator.layerproof.stage_proof import setup
from attnsim.simulator.layerproof.stages import Stage
from attnsim.simulator.layerproof.stages.attention import ATTENTION
from attnsim.simulator.layerproof.stages.ffn import FFN
from attnsim.simulator.layerproof.stages.output import OUTPUT
from attnsim.simulator.layerproof.stages.scores import SCORES
from attnsim.simulator.layerproof.stages.write import WRITE

ORDER: tuple[Stage, ...] = (SCORES, ATTENTION, FFN, OUTPUT, WRITE)


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


@sharing_answers  # the stages of one chain share their decided Z3 answers
def prove_layer(u: Any, timeout: float, stages: Sequence[Stage] = ORDER) -> Outcome:
    """U's layout, then every goal of every stage in order; the first goal not proven ends the run
    (its stage, node and detail named); a stage reading a stage not yet proven is refused."""
    for k, st in enumerate(stages):  # the order first: nothing is run for a chain that cannot hold
        missing = [r for r in st.requires if r not in {s.name for s in stages[:k]}]
        if missing:
            return Outcome.bad(f"stage {st.name} reads {', '.join(missing)}, not proven earlier in this run")
    t0 = time.perf_counter()
    left = lambda: max(0.5, timeout - (time.perf_counter() - t0))
    lay = prove_layout(setup(u)[0].layout, left(), describe=u.map.describe)
    if lay.ok is not True:
        return lay.retold(f"layout: {lay.detail}")
    done = [f"layout {time.perf_counter() - t0:.1f} s"]
    proven: dict[str, Cut] = {}
    stated: list[Premise] = []
    reps: dict[str, str] = {}  # padding value name -> the node it is proven to be (padding_proven)
    for st in stages:
        cuts = {lb: c for lb, c in proven.items() if c.stage in st.requires}
        t1 = time.perf_counter()
        goals = st.goals(u)
        for goal in goals:
            out = st.prove(u, goal, cuts, left())
            if out.ok is not True:
                so_far = f" (proven before it: {'; '.join(done)})"
                return out.retold(f"stage {st.name}, {goal.label}: {out.detail}{so_far}")
            why = padding_proven(goal, out, reps)
            if why:
                return Outcome.bad(f"stage {st.name}, {goal.label}: {why} (proven before it: {'; '.join(done)})")
            stated += [p for p in out.stated if p not in stated]
        proven.update({g.label: g for g in goals})
        done.append(f"{st.name} {time.perf_counter() - t1:.1f} s ({len(goals)} goal(s))")
    claim = (
        "U's output at every entry (i, l) of X equals [i < n] [l < d] T(X)[i, l], the spec's output"
        if [st.name for st in stages] == [st.name for st in ORDER]
        else f"the stages {', '.join(st.name for st in stages)} in order, nodes {', '.join(proven)} "
        "(NOT the whole layer)"
    )
    text = (
        "for all capacities N, D, H, K, F and true sizes n <= N, d <= D, hh <= H, k <= K, f <= F (eps > 0): "
        f"{claim}; {'; '.join(done)}" + "".join(f"; premise: {_shown(p)}" for p in stated)
    )
    gaps = [p for p in stated if p.unproven]
    if gaps:  # a premise on U's own values: the claim holds only where it does, so it is not proven
        why = f"every goal proven, but under {len(gaps)} premise(s) on U's own values not proven"
        return Outcome(None, f"{why}: {text}", stated=tuple(stated))
    return Outcome(True, text, stated=tuple(stated))


__all__ = ["ORDER", "UNPROVEN", "padding_proven", "premises", "prove_layer"]
