"""Depth by looping (stacks): the induction that run_stack on M records is the M-layer encoder.

The step is proven from the frame lemma's own cases for every capacity, record count and pass; a
frame that moves the queue wrongly, keeps the pointer, changes a header token or leaves a region
unstated fails it.  The base case is proven for every capacity and M from the stacking ``encode``
evaluates; a stacking that places a record elsewhere (also only past some size) fails the proof,
and ``encode``'s output with it fails the exact check at one capacity."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from attnsim.rasp import expr as E
from attnsim.universal.layerproof.frame import FrameCase, frame_cases
from attnsim.universal.layerproof.stack import base_case, prove_base_case, prove_stack
from attnsim.universal.record import STACKED_AT, InputMap, Stacking
from attnsim.universal.universal import UniversalSimulator


def _with(cases: list[FrameCase], what: str, **change: Any) -> list[FrameCase]:
    return [dataclasses.replace(c, **change) if c.what == what else c for c in cases]


def test_the_step_holds_for_every_capacity_record_count_and_pass() -> None:
    out = prove_stack(UniversalSimulator.over_symbolic_capacity(), timeout=300)
    assert out.ok is True, out.detail
    assert "Enc_t to Enc_(t+1)" in out.detail and "slot holds record t" in out.detail


def test_a_pointer_not_advanced_breaks_the_step() -> None:
    u = UniversalSimulator.over_symbolic_capacity()
    out = prove_stack(u, 120, _with(frame_cases(), "pointer", plus=0))
    assert out.ok is False and out.detail.startswith("pointer"), out.detail
    assert "counterexample" in out.detail


def test_a_queue_moved_by_one_record_plus_one_breaks_the_step() -> None:
    u = UniversalSimulator.over_symbolic_capacity()
    cases = frame_cases()
    inside = next(c for c in cases if c.what.startswith("records, next"))
    assert inside.reads is not None
    out = prove_stack(u, 120, _with(cases, inside.what, reads=inside.reads + 1))
    assert out.ok is False and out.detail.startswith("records, next record inside"), out.detail


def test_a_header_token_read_one_place_later_breaks_the_step() -> None:
    u = UniversalSimulator.over_symbolic_capacity()
    cases = frame_cases()
    head = cases[0]
    assert head.reads is not None
    out = prove_stack(u, 120, _with(cases, head.what, reads=head.reads + 1))
    assert out.ok is False and out.detail.startswith("header and masks"), out.detail


def test_a_region_the_frame_does_not_state_breaks_the_coverage() -> None:
    u = UniversalSimulator.over_symbolic_capacity()
    cases = [c for c in frame_cases() if c.what != "records, past the last"]
    out = prove_stack(u, 120, cases)
    assert out.ok is False and out.detail.startswith("coverage"), out.detail


def test_the_base_case_holds_and_fails_on_records_out_of_order(monkeypatch: pytest.MonkeyPatch) -> None:
    make = lambda: UniversalSimulator(2, 2, 1, 2, 2)
    assert base_case(make).ok is True
    real = UniversalSimulator.encode

    def reversed_records(self: UniversalSimulator, T: Any, X: Any, *a: Any, **kw: Any) -> np.ndarray:
        layers = [T] if not isinstance(T, list) else T
        return real(self, list(reversed(layers)) if len(layers) > 1 else layers, X, *a, **kw)

    monkeypatch.setattr(UniversalSimulator, "encode", reversed_records)
    out = base_case(make)
    assert out.ok is False and "record" in out.detail, out.detail


def test_a_slot_one_token_short_of_the_record_fails_at_the_map() -> None:
    """The slot a pass reads must hold every grid of the record: a record size one short leaves the
    last grid's last token outside it (a counterexample at the map, before the step)."""
    u = UniversalSimulator.over_symbolic_capacity()
    u.map = dataclasses.replace(u.map, record_size=u.map.record_size - 1)
    out = prove_stack(u, 120)
    assert out.ok is False and out.detail.startswith("map: grid be2 inside the slot"), out.detail
    assert "counterexample" in out.detail


@pytest.mark.parametrize("variant", ["compact", "shallow"])
def test_the_base_case_is_proven_for_every_capacity_and_record_count(variant: str) -> None:
    out = prove_base_case(UniversalSimulator.over_symbolic_capacity(variant))
    assert out.ok is True, out.detail
    assert "for all capacities and record counts" in out.detail


def _late_third_record(self: InputMap, records: E.Expr | int) -> Stacking:
    """Record l >= 2 taken one token late, only when the record is longer than 40 tokens."""
    right = REAL_STACKING(self, records)
    at, base, size = STACKED_AT, self.base, self.record_size
    late = E.if_((at >= base + 2 * size) & (size > 40), 1, 0)
    return Stacking(right.layer, right.slot + late, right.end)


def _records_reversed(self: InputMap, records: E.Expr | int) -> Stacking:
    right = REAL_STACKING(self, records)
    return Stacking(E.if_(STACKED_AT >= self.base, E.lift(records) - 1 - right.layer, 0), right.slot, right.end)


def _one_record_short(self: InputMap, records: E.Expr | int) -> Stacking:
    right = REAL_STACKING(self, records)
    return Stacking(right.layer, right.slot, right.end - self.record_size)


def _below_base_from_the_last_layer(self: InputMap, records: E.Expr | int) -> Stacking:
    """X, header and masks taken from the last layer: the same tokens in every one-layer
    encoding of one X, so encode's output does not show it; the proof does."""
    right = REAL_STACKING(self, records)
    return Stacking(E.if_(STACKED_AT >= self.base, right.layer, E.lift(records) - 1), right.slot, right.end)


REAL_STACKING = InputMap.stacking


@pytest.mark.parametrize(
    ("wrong", "fails_at"),
    [
        (_late_third_record, "Enc_0 record"),
        (_records_reversed, "Enc_0 record"),
        (_one_record_short, "Enc_0 record"),
        (_below_base_from_the_last_layer, "Enc_0 X"),
    ],
)
def test_a_wrong_stacking_fails_the_proof_and_encode_with_it_fails_the_exact_check(
    monkeypatch: pytest.MonkeyPatch, wrong: Any, fails_at: str
) -> None:
    monkeypatch.setattr(InputMap, "stacking", wrong)
    out = prove_base_case(UniversalSimulator.over_symbolic_capacity())
    assert out.ok is False and fails_at in out.detail and "counterexample" in out.detail, out.detail
    if wrong in (_records_reversed, _one_record_short):  # the others agree with encode at this capacity
        assert base_case(lambda: UniversalSimulator(2, 2, 1, 2, 2)).ok is False
