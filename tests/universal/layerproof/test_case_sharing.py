"""Theorem 6's stage proofs (attnsim.universal.layerproof.case_sharing): the option cases of a stage
share the node values that read no option, and the proof is the same as without sharing.

* with sharing, a stage's Outcome (its cases, its step count, its premises) is the one computed
  with every case executed in full, and some values were taken from an earlier case;
* the sharing rests on counting every read of a gate token: with the count dropped (a mutant), a
  value that depends on the option is taken into the wrong case and the stage fails with a
  counterexample.
"""

from __future__ import annotations

from typing import Any

import pytest

from attnsim import UniversalSimulator
from attnsim.proofs.obligation import Outcome
from attnsim.universal.layerproof import case_sharing
from attnsim.universal.layerproof.executor import LayerExecutor
from attnsim.universal.layerproof.stage_proof import CaseRun


def _prove_out_y1() -> Outcome:
    """The ffn stage's goal out.Y1 (Y1 at the out grid), every option case, with its cuts."""
    from attnsim.universal.layerproof.stages import attention, ffn, scores

    u = UniversalSimulator.over_symbolic_capacity()
    cuts = {c.label: c for c in [*scores.goals(u), *attention.goals(u)]}
    (goal,) = [g for g in ffn.goals(u) if g.label == "out.Y1"]
    return ffn.prove(u, goal, cuts, 600)


def test_sharing_the_values_that_read_no_option_gives_the_same_proof(monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[Any] = []
    replay = case_sharing.CaseSharing._replay

    def counted(self: Any, key: Any, hit: Any) -> None:
        taken.append(key)
        replay(self, key, hit)

    monkeypatch.setattr(case_sharing.CaseSharing, "_replay", counted)
    shared = _prove_out_y1()
    assert shared.ok is True, shared.detail
    assert taken, "no value was shared between the option cases"

    executor = CaseRun.executor

    def unshared(self: CaseRun, case: dict[str, int]) -> tuple[LayerExecutor, str]:
        ex, what = executor(self, case)
        ex.shared = None
        return ex, what

    monkeypatch.setattr(CaseRun, "executor", unshared)
    taken.clear()
    alone = _prove_out_y1()
    assert not taken and alone.ok is True
    assert shared.detail == alone.detail  # the same cases, step count and premises


def test_a_gate_read_that_is_not_counted_makes_the_stage_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    token = LayerExecutor.token

    def uncounted(self: LayerExecutor, pos: Any) -> Any:
        before = self.case_reads
        value = token(self, pos)
        self.case_reads = before
        return value

    monkeypatch.setattr(LayerExecutor, "token", uncounted)
    out = _prove_out_y1()
    assert out.ok is False and "counterexample" in out.detail, out.detail
