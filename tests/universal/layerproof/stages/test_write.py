"""Theorem 6, the last step of a pass: U's output on the X block is the output stage's Y at the
same entry (Y over X), for every capacity; a U that writes anything else there fails."""

from __future__ import annotations

import pytest

from attnsim import UniversalSimulator
from attnsim.rasp import core as C
from attnsim.universal.layerproof.cut import part_cut
from attnsim.universal.layerproof.stages import output, write
from attnsim.universal.program import UniversalProgram


def _prove(u: UniversalSimulator) -> tuple[bool | None, str]:
    cuts = {c.label: c for c in output.goals(u)}  # the output stage's statement, a premise here
    (goal,) = write.goals(u)
    out = write.prove(u, goal, cuts, 120)
    return out.ok, out.detail


def test_the_pass_writes_y_over_x_for_every_size() -> None:
    ok, detail = _prove(UniversalSimulator.over_symbolic_capacity())
    assert ok is True, detail
    assert "for all capacities" in detail and "at every entry (i, l) of X" in detail
    assert "premises: the proven stages output" in detail


def test_a_pass_that_writes_y_plus_one_over_x_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    real = UniversalProgram._stage_next

    def stage_next(self, y, out_grid):  # type: ignore[no-untyped-def]
        return real(self, C.apply("affine", y, params=(1, 1)), out_grid)  # Y + 1 written over X

    monkeypatch.setattr(UniversalProgram, "_stage_next", stage_next)
    ok, detail = _prove(UniversalSimulator.over_symbolic_capacity())
    assert ok is False and detail.startswith("write (every option a symbol): U at X: counterexample"), detail


def test_a_pass_whose_x_indicator_misses_the_last_row_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    real = UniversalProgram._indicator

    def indicator(self, name, grid, test=None):  # type: ignore[no-untyped-def]
        if name == "is_X":  # the last capacity row of X keeps its old tokens
            return real(self, name, grid, lambda cs: cs["i"] < self.map.x.dim("i") - 1)
        return real(self, name, grid, test)

    monkeypatch.setattr(UniversalProgram, "_indicator", indicator)
    ok, detail = _prove(UniversalSimulator.over_symbolic_capacity())
    assert ok is False and "U at X: counterexample" in detail, detail


def test_the_statement_is_checked_against_the_spec_part() -> None:
    """A Y cut that states another intermediate of the spec is refused (nothing proven, nothing
    shown of U: unknown), before any of U is executed."""
    u = UniversalSimulator.over_symbolic_capacity()
    (y,) = output.goals(u)
    wrong = part_cut("Y", y.grid, y.below, "y1", y.name, y.args, y.stage, y.guard)  # Y stated as y1, not out
    (goal,) = write.goals(u)
    out = write.prove(u, goal, {"Y": wrong}, 120)
    assert out.ok is None and "spec_over refused: the cut Y named Y states y1, not the spec's out" in out.detail, (
        out.detail
    )
