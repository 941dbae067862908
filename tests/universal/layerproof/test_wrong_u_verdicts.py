"""Wrong U's stopped by the layer proof say why, kept apart from a budget problem.

Each U here is wrong only past some size (a scale squared when D > 32, ReLU dropped when F > 64, the
last key dropped when N > 32): the stage goal's proof finds a counterexample past that size (a size
the difference compares with a constant is sampled there), or, when it stops undecided (here: a
divisor not shown > 0), the counterexample search runs U against the reference at capacities read
off U's program and says so; no row reads "rerun with --timeout".
"""

from __future__ import annotations

import pytest

from attnsim import UniversalSimulator
from attnsim.proofs.obligation import cause_kind
from attnsim.proofs.registry import by_id
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.universal.counterexample_search import search, size_thresholds
from attnsim.universal.program import UniversalProgram
from attnsim.universal.program.blocks import where
from attnsim.verify.budgets import run_budgeted


def _scale_squared_past_d_32(mp: pytest.MonkeyPatch) -> None:
    real = UniversalProgram._common

    def common(self):  # type: ignore[no-untyped-def]
        real(self)
        s = self._g["scale"]
        past = C.imap(lambda p: E.if_(self.D > 32, 1, 0), C.indices)
        self._g["scale"] = where(past, C.apply("mul", s, s), s)

    mp.setattr(UniversalProgram, "_common", common)


def _relu_dropped_past_f_64(mp: pytest.MonkeyPatch) -> None:
    def activation(self, pre):  # type: ignore[no-untyped-def]
        past = C.imap(lambda p: E.if_(self.F > 64, 1, 0), C.indices)
        relu = where(past, pre, C.apply("relu", pre))
        tanh_or_relu = where(self._g["gelu_tanh"], C.apply("gelu_tanh", pre), relu)
        return where(self._g["gelu"], C.apply("gelu", pre), tanh_or_relu)

    mp.setattr(UniversalProgram, "_activation", activation)


def _key_dropped_past_n_32(mp: pytest.MonkeyPatch) -> None:
    real = UniversalProgram._below

    def below(self, name, grid, coord, bound, intent):  # type: ignore[no-untyped-def]
        if name == "mask.keys":  # j < n - 1 when N > 32: the last key is dropped
            n_cap, old = self.N, coord
            coord = lambda cs: E.if_(n_cap > 32, old(cs) + 1, old(cs))
        return real(self, name, grid, coord, bound, intent)

    mp.setattr(UniversalProgram, "_below", below)


@pytest.mark.parametrize(
    ("wrong", "oid", "past"),
    [
        (_scale_squared_past_d_32, "simulator-stages/all-sizes/scores/attn.logit", ("D", 33)),
        (_relu_dropped_past_f_64, "simulator-stages/all-sizes/act/ffn2.u.act", ("F", 65)),
    ],
)
def test_a_bug_past_a_size_is_refuted_there(monkeypatch: pytest.MonkeyPatch, wrong, oid, past) -> None:  # type: ignore[no-untyped-def]
    """The difference compares a size with a constant: it is sampled just past it and refuted there,
    with the point as the result's typed counterexample."""
    wrong(monkeypatch)
    (r,) = run_budgeted([by_id(oid)], jobs=1)
    assert r.status == "failed" and "counterexample at" in r.detail, r.detail
    assert r.counterexample is not None and r.counterexample[past[0]] == past[1], r.counterexample
    assert "--timeout" not in r.detail


def test_an_undecided_goal_of_a_wrong_u_names_its_cause_and_a_counterexample(monkeypatch: pytest.MonkeyPatch) -> None:
    """The attention goal stops on a divisor not shown > 0 (a side condition, not a budget); the
    counterexample search then runs U against the reference and finds the dropped key at N = 33."""
    _key_dropped_past_n_32(monkeypatch)
    (r,) = run_budgeted([by_id("simulator-stages/all-sizes/attention/attn.o")], jobs=1)
    assert r.status == "unknown" and cause_kind(r.cause) == "side condition not shown", (r.cause, r.detail)
    assert r.detail.startswith("side condition not shown (divisor not shown > 0): "), r.detail
    assert r.counterexample is not None and (r.counterexample["N"], r.counterexample["n"]) == (33, 33)
    assert "no longer budget will prove U" in r.detail and "--timeout" not in r.detail


def test_the_search_reads_its_sizes_off_the_program(monkeypatch: pytest.MonkeyPatch) -> None:
    """The right U compares no capacity with a constant and agrees with the reference where the
    search runs it; a U wrong past N = 32 names that size, and the search finds it there."""
    right = UniversalSimulator.over_symbolic_capacity().program
    assert size_thresholds(right) == {}
    assert search(right).found is None
    _key_dropped_past_n_32(monkeypatch)
    wrong = UniversalSimulator.over_symbolic_capacity().program
    assert size_thresholds(wrong) == {"N": {32}}
    found = search(wrong).found
    assert found is not None and found.capacity[0] == 33, found
