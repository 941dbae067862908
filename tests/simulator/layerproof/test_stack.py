"""Depth by looping (stacks): the induction that run_stack on M records is the M-layer encoder.

The step is proven from the frame lemma's own cases for every capacity, record count and pass; a
frame that moves the queue wrongly, keeps the pointer, changes a header token or leaves a region
unstated fails it, and an ``encode`` that places a record elsewhere fails the base case."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from attnsim.simulator.layerproof.frame import FrameCase, frame_cases
from attnsim.simulator.layerproof.stack import base_case, prove_stack
from attnsim.simulator.universal import UniversalSimulator


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
