"""Theorem 6: the whole-layer proof chains U's stages in order on U's own graph; a stage reads
only statements proven earlier in the same run, and the first goal not proven ends the run."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

import pytest

from attnsim import UniversalSimulator
from attnsim.proofs.obligation import Outcome, PaddingValue, Premise
from attnsim.universal.layerproof.cut import Cut
from attnsim.universal.layerproof.stages import Stage, output
from attnsim.universal.layerproof.stages.chain import ORDER, premises, prove_layer
from attnsim.universal.layerproof.stages.write import WRITE


def _granted(detail: str, stated: tuple[Premise, ...] = ()) -> Stage:
    """A stand-in for the output stage that grants its goal (to test the chaining alone), stating
    ``stated`` as its typed premises."""

    def prove(u: Any, goal: Cut, cuts: Mapping[str, Cut], timeout: float) -> Outcome:
        return Outcome(True, detail, stated=stated)

    return Stage("output", output.goals, (), prove)


def test_the_order_is_the_layers_and_each_stage_reads_the_one_before() -> None:
    """Each stage reads the one before it; the output stage also reads Y1, two stages back."""
    names = [st.name for st in ORDER]
    assert names == ["scores", "attention", "ffn", "act", "output", "write"]
    for before, st in itertools.pairwise(ORDER):
        assert st.requires == ((before.name,) if st.name != "output" else ("ffn", "act"))


def test_write_chained_after_a_granted_output_is_proven_and_collects_premises() -> None:
    """The premises are the stages' typed records: a detail that only *says* "premise: ..." states none."""
    stated = (Premise("a stated premise"),)
    out = prove_layer(UniversalSimulator.over_symbolic_capacity(), 120, stages=(_granted("ok", stated), WRITE))
    assert out.ok is True, out.detail
    assert "layout" in out.detail and "write" in out.detail and "NOT the whole layer" in out.detail
    assert premises(out) == ["a stated premise"] and out.stated == stated
    assert "; premise: a stated premise" in out.detail
    told = prove_layer(
        UniversalSimulator.over_symbolic_capacity(), 120, stages=(_granted("ok; premise: only text"), WRITE)
    )
    assert told.ok is True and premises(told) == [], told.detail


def test_a_premise_used_in_some_cases_is_collected_with_its_cases() -> None:
    """A stage may state a premise for some of its cases: collected whole, with its cases, and again
    in the chain's own Outcome."""
    text = "at a padding row, a stated value (a premise used in some cases only)"
    stated = (Premise(text, ("ffn = 1, post = 1", "ffn = 1, residual = 1, post = 1")),)
    (got,) = premises(Outcome(True, stated=stated))
    assert got == f"{text} (cases ffn = 1, post = 1 | ffn = 1, residual = 1, post = 1)", got
    out = prove_layer(UniversalSimulator.over_symbolic_capacity(), 120, stages=(_granted("ok", stated), WRITE))
    assert out.ok is True and premises(out) == [got], out.detail


def test_an_unproven_premise_on_us_own_values_leaves_the_layer_unknown() -> None:
    """A premise about U's own values (not its input), as the output stage once needed for its
    padding rows: a chain that needs it is not proven, and says so with the premise marked."""
    from attnsim.universal.layerproof.stages.chain import UNPROVEN

    text = "at a padding row i >= n the nodes hold one value"  # a premise on U's values, as a stage states it
    stated = (Premise(text, ("ffn = 1, post = 1",), unproven=True),)
    assert premises(Outcome(True, stated=stated)) == [f"{UNPROVEN}{text} (cases ffn = 1, post = 1)"]
    out = prove_layer(UniversalSimulator.over_symbolic_capacity(), 120, stages=(_granted("ok", stated), WRITE))
    assert out.ok is None and out.detail.startswith("every goal proven, but under 1 premise(s) on U's own values"), (
        out.detail
    )
    assert f"premise: {UNPROVEN}{text}" in out.detail, out.detail


def test_a_padding_value_is_accepted_only_where_its_proof_states_it() -> None:
    """A goal carrying a padding value (what later stages read on the rows i >= n) whose proof does
    not state it ends the run; one node of a name proven equal to another representative too."""
    import dataclasses

    from attnsim.universal.layerproof.stages.chain import padding_proven

    padded = lambda u: [dataclasses.replace(g, padded="Y~") for g in output.goals(u)]
    text = "ok; U's Y == Y~(i, e), the value of Y there (the arguments' only)"  # said, not stated
    granted = Stage("output", padded, (), lambda u, goal, cuts, timeout: Outcome.good(text))
    out = prove_layer(UniversalSimulator.over_symbolic_capacity(), 120, stages=(granted, WRITE))
    assert out.ok is False and out.detail.startswith("stage output, Y: its padding value Y~ is not proven"), out.detail
    said = Outcome(True, text, padding=(PaddingValue("Y", "Y~", "Y"),))
    stated = Stage("output", padded, (), lambda u, goal, cuts, timeout: said)
    assert prove_layer(UniversalSimulator.over_symbolic_capacity(), 120, stages=(stated, WRITE)).ok is True
    (goal,) = padded(UniversalSimulator.over_symbolic_capacity())
    reps = {"Y~": "out.Y1"}
    assert "proven as Y's, the name's is out.Y1's" in padding_proven(goal, said, reps)


def test_a_stage_reading_a_stage_not_proven_in_the_run_is_refused() -> None:
    out = prove_layer(UniversalSimulator.over_symbolic_capacity(), 120, stages=(WRITE,))
    assert out.ok is False and out.detail == "stage write reads output, not proven earlier in this run", out.detail


def test_the_first_goal_not_proven_ends_the_run_and_is_named() -> None:
    def unknown(u: Any, goal: Cut, cuts: Mapping[str, Cut], timeout: float) -> Outcome:
        return Outcome.unknown("not shown")

    out = prove_layer(
        UniversalSimulator.over_symbolic_capacity(), 120, stages=(Stage("output", output.goals, (), unknown), WRITE)
    )
    assert out.ok is None and out.detail.startswith("stage output, Y: not shown (proven before it: layout"), out.detail


def test_a_record_offset_wrong_in_the_map_fails_the_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    """``encode`` and U's selectors both read the one input map: a record grid placed one token early
    (so both agree on the wrong offset) overlaps the grid before it, and the whole-layer proof fails
    at the layout with a counterexample naming the two blocks and the entries of T that would share
    a token (the stages alone would not see it: they read each grid's entry where the map puts it)."""
    from attnsim.rasp.layout import Grid

    real = Grid.from_dims

    def from_dims(name, off, dims, *rest):  # type: ignore[no-untyped-def]
        return real(name, off - 1 if name == "bqkv" else off, dims, *rest)

    monkeypatch.setattr(Grid, "from_dims", staticmethod(from_dims))
    out = prove_layer(UniversalSimulator.over_symbolic_capacity(), 120, stages=ORDER[:1])
    assert out.ok is False and out.detail.startswith("layout: blocks ") and "overlap" in out.detail, out.detail
    assert "bqkv" in out.detail, out.detail
    assert re.search(
        r"position \d+ holds both in_proj_weight\[0, \d+, \d+\] .* and in_proj_bias\[0, 0, \d+\]", out.detail
    ), out.detail
