"""The frame lemma of a pass of U (depth by looping): proven for all capacities, and it fails on a
pass that writes outside the X block or moves the record queue by the wrong amount."""

from __future__ import annotations

import pytest

from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.universal import universal
from attnsim.universal.layerproof.frame import prove_frame
from attnsim.universal.program import UniversalProgram
from attnsim.universal.universal import UniversalSimulator


@pytest.mark.parametrize("variant", ["compact", "shallow"])
def test_frame_lemma_holds_for_every_capacity(variant: str) -> None:
    out = prove_frame(UniversalSimulator.over_symbolic_capacity(variant), timeout=120)
    assert out.ok is True, out.detail
    assert "record counts M >= 1" in out.detail


def test_a_pass_that_also_writes_a_mask_token_fails() -> None:
    u = UniversalSimulator.over_symbolic_capacity()
    x_end = u.map.x.end_expr()
    stray = C.imap(lambda p: E.if_(p.eq(x_end + 3), 1, 0), C.indices)  # one mask token gets + 1
    u.program = C.apply("add", u.program, stray)
    out = prove_frame(u, timeout=120)
    assert out.ok is False and out.detail.startswith("header and masks"), out.detail
    assert "counterexample: at N=1, D=1" in out.detail and "(additive[0, 0, 0] (mask_add" in out.detail, out.detail


def test_a_queue_moved_by_one_record_plus_one_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    real = UniversalProgram._gather_rel
    monkeypatch.setattr(UniversalProgram, "_gather_rel", lambda self, name, size: real(self, name, size + 1))
    out = prove_frame(UniversalSimulator.over_symbolic_capacity(), timeout=120)
    assert out.ok is False and out.detail.startswith("records"), out.detail


def test_a_pointer_not_advanced_fails() -> None:
    u = UniversalSimulator.over_symbolic_capacity()
    ptr = u.map.header_position("ptr")
    back = C.imap(lambda p: E.if_(p.eq(ptr), -1, 0), C.indices)
    u.program = C.apply("add", u.program, back)
    out = prove_frame(u, timeout=120)
    assert out.ok is False and out.detail.startswith("pointer"), out.detail


_ = universal
