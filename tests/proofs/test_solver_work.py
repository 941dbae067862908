"""Z3 budgeted in solver work (issue 27): units are reproducible, a budget can run out, and an
exhausted budget is unknown, never proved.

Backs every z3-parametric / z3-bounded / z3-instance obligation of paper_map.md (their verdicts
rest on rlimit budgets, not on seconds)."""

from __future__ import annotations

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim.proofs import solver_work, z3sel
from attnsim.proofs.decoding import answers, premises, prover
from attnsim.proofs.decoding.answers import query_key
from attnsim.proofs.obligation import Outcome
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
        assert prover.prove(((x + m * n) // n).eq(x // n + m), coords={"x": n * m}).ok is True
        assert z3sel.prove(n * n >= n, [n > m]).ok is True

    first, second = _metered(proof), _metered(proof)
    assert first.units > 0 and first.queries >= 2  # the two proofs (a premise witness may be found by evaluation)
    assert (first.units, first.queries, first.largest) == (second.units, second.queries, second.largest)


_MAIN_CONTEXT_USED = """
import z3
from attnsim.proofs import solver_work
from attnsim.proofs.decoding.index_lemmas import lemma_outcome

def units():
    meter = solver_work.WorkMeter()
    token = solver_work.METER.set(meter)
    assert lemma_outcome("decode-position").ok is True
    solver_work.METER.reset(token)
    return meter.units

before = units()
a = z3.Int("a")
assert z3.Solver().check(a + 1 != 1 + a) == z3.unsat  # Z3's main context used, as a test or a user may
print(before, units())
"""


def test_a_querys_units_do_not_depend_on_the_main_contexts_history() -> None:
    """Lemma (decode-position) of the decoding prover: its units are the same after a solver check
    in Z3's main context as before it, in one fresh process (translated into a fresh context, the
    query's units followed that history: 81,459 before, 99,532 after, and the local pool, forked
    from a process with such a history, disagreed with a Dask worker)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _MAIN_CONTEXT_USED], capture_output=True, text=True, check=True)
    before, after = out.stdout.split()
    assert int(before) > 0 and before == after


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
    assert out.cause == "rlimit exhausted"  # typed: a budget exhausted, which --timeout does not change
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


# -- one proof's decided answers, kept by exact query ----------------------------------------------
def test_a_query_asked_again_in_one_proof_is_answered_from_the_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside shared_answers the same query is asked of Z3 once, its premise check recorded again;
    a query that differs in any part (goal, assumption, coordinate extent, size minimum) is asked."""
    n, m, x = C.Size("n"), C.Size("m"), E.Var("x")
    goal, coords = ((x + 2 * n) // n).eq(x // n + 2), {"x": n * 3}

    def first() -> None:
        with solver_work.shared_answers():
            a = prover.prove(goal, coords=coords)
            assert prover.prove(goal, coords=coords) is a and a.ok is True

    once, plain = _metered(first), _metered(lambda: prover.prove(goal, coords=coords))
    assert once.queries == plain.queries and once.units == plain.units
    assert len(once.premises) == 2 and once.premises[0] == once.premises[1]

    asked: list[str] = []
    real = prover._prove
    monkeypatch.setattr(prover, "_prove", lambda g, *a: asked.append(E.render(g)) or real(g, *a))
    answers.PROCESS.clear()  # none kept by the proofs above (this counts what one proof asks)
    with solver_work.shared_answers():
        for _ in range(2):
            prover.prove(goal, coords=coords)
            prover.prove(((x + 3 * n) // n).eq(x // n + 3), coords=coords)  # another goal
            prover.prove(goal, [x >= 0], coords=coords)  # an assumption
            prover.prove(goal, coords={"x": n * 4})  # another extent
            prover.prove(goal, coords={"x": m * 3})  # another size
            prover.prove(goal, coords=coords, minimum={"n": 2})  # another minimum
            prover.prove(goal.substitute({"n": E.Var("n")}), coords={"x": E.Var("n") * 3})  # n not a size

    assert len(asked) == 7


def test_answers_are_kept_only_inside_a_scope_and_only_when_decided(monkeypatch: pytest.MonkeyPatch) -> None:
    mp = monkeypatch
    assert solver_work.ANSWERS.get() is None
    with solver_work.shared_answers() as outer:
        with solver_work.shared_answers() as inner:
            assert inner is outer  # a nested scope shares the outer one's answers
        x = E.Var("x")
        asked: list[int] = []
        real = prover._prove

        def undecided(*a: object) -> object:
            asked.append(1)
            return Outcome(None, "z3 unknown")

        mp.setattr(prover, "_prove", undecided)
        prover.prove(x >= 0, coords={"x": C.Size("n")})
        prover.prove(x >= 0, coords={"x": C.Size("n")})
        assert len(asked) == 2 and not outer  # an undecided answer is asked again, never kept
        mp.setattr(prover, "_prove", real)
        refuted = prover.prove(x >= 1, coords={"x": C.Size("n")})
        assert refuted.ok is False and query_key(x >= 1, [], [], {"x": C.Size("n")}, None) in outer
        # a refutation's text depends on check/explain: with them it is asked again
        told = prover.prove(x >= 1, coords={"x": C.Size("n")}, explain=lambda vals: "told")
        assert told.ok is False and "told" in told.detail
    assert solver_work.ANSWERS.get() is None


def test_a_scope_keeps_at_most_its_bound() -> None:
    answers: dict[tuple[object, ...], object] = {}
    for k in range(solver_work.ANSWERS_KEPT + 5):
        solver_work.keep_answer(answers, (k,), k)
    last = solver_work.ANSWERS_KEPT + 4
    assert len(answers) == solver_work.ANSWERS_KEPT and (0,) not in answers and (last,) in answers


def test_a_premise_check_is_kept_by_its_exact_premises(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two goals over the same premises: one premise check, recorded for each; other premises
    (an assumption, an extent) are checked again."""
    n, x = C.Size("n"), E.Var("x")
    checked: list[int] = []
    real = premises._premises_checked
    monkeypatch.setattr(premises, "_premises_checked", lambda *a: checked.append(1) or real(*a))

    def proofs() -> None:
        with solver_work.shared_answers():
            prover.prove(x < n, coords={"x": n})
            prover.prove(x >= 0, coords={"x": n})
            assert len(checked) == 1
            prover.prove(x >= 0, [x < 3], coords={"x": n})
            prover.prove(x >= 0, coords={"x": n * 2})
            assert len(checked) == 3

    meter = _metered(proofs)
    assert len(meter.premises) == 4


def _stage_like_proofs() -> None:
    """A few decoding proofs in one scope (one 'obligation'): goals over shared premises, a premise
    check kept by its premises, a refutation."""
    n, x = C.Size("n"), E.Var("x")
    with solver_work.shared_answers():
        assert prover.prove(x < n, coords={"x": n}).ok is True
        assert prover.prove(((x + 2 * n) // n).eq(x // n + 2), coords={"x": n * 3}).ok is True
        assert prover.prove(x >= 0, [x < 3], coords={"x": n}).ok is True
        assert prover.prove(x >= 1, coords={"x": n}).ok is False


def test_an_answer_kept_by_the_process_reports_the_work_of_computing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another proof in the same process (another obligation on the same worker) is given the
    decided answers with their work replayed: the same units, queries, largest query and premise
    checks as computing them, without asking Z3 (so a verdict's figures never depend on which
    obligations a worker ran before)."""
    fresh = _metered(_stage_like_proofs)
    assert fresh.queries > 0 and answers.PROCESS
    monkeypatch.setattr(solver_work, "check", lambda s: pytest.fail("Z3 asked again"))
    again = _metered(_stage_like_proofs)
    assert (again.units, again.queries, again.exhausted, again.largest) == (
        fresh.units,
        fresh.queries,
        fresh.exhausted,
        fresh.largest,
    )
    assert again.premises == fresh.premises


def test_no_answer_is_kept_by_the_process_while_queries_are_exported(tmp_path: object) -> None:
    """With --smt2 or --cross-check every deciding query must reach the sink: nothing is replayed."""
    from attnsim.proofs import smtlib

    seen: list[str] = []
    token = smtlib.SINK.set(lambda text, answer, kind: seen.append(kind))
    try:
        _metered(_stage_like_proofs)
        first = len(seen)
        _metered(_stage_like_proofs)
    finally:
        smtlib.SINK.reset(token)
    assert first > 0 and len(seen) == 2 * first and not answers.PROCESS


@pytest.mark.usefixtures("wall_clock_racing")
@pytest.mark.parametrize("oid", ["transpose/all-sizes/lemma", "simulator-stages/all-sizes/scores/attn.logit"])
def test_an_all_sizes_proof_counts_its_time_left_in_cpu_seconds(oid: str) -> None:
    """program == spec and U's stage proofs share their timeout among cases and stages by CPU seconds:
    with the wall clock racing (a very busy machine) each case still gets what an idle machine gives
    it, never just its 0.05-0.5 s minimum."""
    from attnsim.proofs.registry import by_id
    from attnsim.verify.runner import run_inline

    r = run_inline(by_id(oid), 120)
    assert r.status == "proved", r.detail


def test_a_sub_meter_budgets_work_and_adds_it_to_the_obligation() -> None:
    """sub_meter counts the checks inside it (what a budget over several queries reads) and adds
    them to the meter around it; replay gives a kept answer's work again."""
    outer = solver_work.WorkMeter()
    token = solver_work.METER.set(outer)
    try:
        with solver_work.recording() as trace, solver_work.sub_meter() as inner:
            assert z3sel.prove(E.Var("n") + 1 > E.Var("n"), (), minimum={"n": 1}).ok is True
        assert inner.units > 0 and (outer.units, outer.queries) == (inner.units, inner.queries)
        with solver_work.sub_meter() as again:
            solver_work.replay(trace)
        assert (again.units, again.queries) == (inner.units, inner.queries)
        assert outer.units == 2 * inner.units
    finally:
        solver_work.METER.reset(token)
