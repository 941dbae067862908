"""Z3 budgeted in solver work (issue 27): units are reproducible, a budget can run out, and an
exhausted budget is unknown, never proved.

Backs every z3-parametric / z3-bounded / z3-instance obligation of paper_map.md (their verdicts
rest on rlimit budgets, not on seconds)."""

from __future__ import annotations

import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim.proofs import decode, solver_work, z3sel
from attnsim.proofs.solver_work import WorkMeter
from attnsim.rasp import core as C
from attnsim.rasp import expr as E


def _metered(fn: object) -> WorkMeter:
    meter = WorkMeter()
    token = solver_work.METER.set(meter)
    try:
        fn()  # type: ignore[operator]
    finally:
        solver_work.METER.reset(token)
    return meter


@settings(max_examples=5, deadline=None)
@given(st.integers(min_value=2, max_value=9))
def test_the_same_proof_uses_the_same_units_every_time(m: int) -> None:
    """Fresh contexts, fixed seeds, div/mod variables named by content: a proof's units do not
    depend on what ran before it (with a process-wide counter in those names the decoding prover's
    query text, and so its units, changed from one call to the next: 196,846 then 178,238)."""
    n, x = C.Size("n"), E.Var("x")

    def proof() -> None:
        assert decode.prove(((x + m * n) // n).eq(x // n + m), coords={"x": n * m}).ok is True
        assert z3sel.prove(n * n >= n, [n > m]).ok is True

    first, second = _metered(proof), _metered(proof)
    assert first.units > 0 and first.queries >= 3
    assert (first.units, first.queries, first.largest) == (second.units, second.queries, second.largest)


def test_a_query_out_of_its_rlimit_is_unknown_never_proved() -> None:
    """The budget is real: the same true claim with a budget of 1 unit is unknown (and counted)."""
    n = C.Size("n")
    goal = ((n * n + n) % 2).eq(0)
    assert z3sel.prove(goal).ok is True
    meter = WorkMeter()
    token = solver_work.METER.set(meter)
    try:
        out = z3sel.prove(goal, rlimit=1)
    finally:
        solver_work.METER.reset(token)
    assert out.ok is None and "rlimit" in out.detail
    assert meter.exhausted == 1


def test_check_counts_the_units_of_its_context() -> None:
    x = z3.Int("x")
    s = solver_work.isolated([x > 2, x < 5], rlimit=1_000_000)
    meter = WorkMeter()
    token = solver_work.METER.set(meter)
    try:
        assert solver_work.check(s) == z3.sat
    finally:
        solver_work.METER.reset(token)
    assert meter.queries == 1 and 0 < meter.units <= solver_work.units_of(s)
