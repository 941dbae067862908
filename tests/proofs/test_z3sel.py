"""Vacuity decided or unknown in plain Z3 proofs (issue 26, item 4).

Backs every z3-parametric / z3-bounded obligation of paper_map.md: a proof first shows its
premises satisfiable by a model; empty premises fail "vacuous", undecided ones leave it unknown.
"""

from __future__ import annotations

from attnsim.proofs import solver_work, z3sel
from attnsim.proofs.solver_work import WorkMeter
from attnsim.rasp import core as C
from attnsim.rasp import expr as E


def test_a_false_claim_under_an_undecided_nonlinear_premise_is_not_proved() -> None:
    """x^3 = 2 y^3 has no solution in sizes (>= 1), and Z3 cannot show it: (x > 50 or y > 50) is
    unknown, never "holds for all sizes" (it was: the main query is unsat, the vacuity check
    undecided and read as "not vacuous")."""
    x, y = C.Size("x"), C.Size("y")
    out = z3sel.prove((x > 50) | (y > 50), [(x * x * x).eq(2 * y * y * y)])
    assert out.ok is None, out.detail
    assert out.premises is not None and out.premises.status == "unknown"


def test_premises_are_shown_satisfiable_by_a_model_kept_in_the_outcome() -> None:
    """sat -> the proof goes on, with the witness; unsat -> vacuous (failed)."""
    n = C.Size("n")
    out = z3sel.prove(n + 1 > n, [n > 4])
    assert out.ok is True and out.premises is not None and out.premises.status == "sat"
    assert dict(out.premises.model)["n"] > 4
    x = E.Var("x")
    empty = z3sel.prove(x.eq(5), [x < 0, x > 0])
    assert empty.ok is False and empty.detail.startswith("vacuous")
    assert empty.premises is not None and empty.premises.status == "unsat"


def test_check_premises_decides_plainly_empty_premises() -> None:
    """A size below its minimum: unsat (not 'not vacuous')."""
    n = C.Size("n")
    assert z3sel.check_premises([n < 1]).status == "unsat"
    assert z3sel.check_premises([n < 3], minimum={"n": 2}).status == "sat"


def test_a_small_witness_is_found_by_evaluation_and_then_z3_is_not_asked() -> None:
    """Premises a small point satisfies are shown so by evaluating them (no premise query: the
    proof's queries are the claim's); premises no small point satisfies still go to Z3, which
    finds a model or shows them empty.  The witness is a model of the premises: checked here."""
    n, q = C.Size("n"), E.Var("q")
    premises = [q >= 0, q < n * n + 3, n > 2]
    found = z3sel.witness_by_evaluation(premises, {"n": 1}, ["q"])
    assert found == {"n": 3, "q": 0}
    assert all(int(p.evaluate(found)) for p in premises)
    meter = WorkMeter()
    token = solver_work.METER.set(meter)
    try:
        out = z3sel.prove(q < n * n + 3, premises)
    finally:
        solver_work.METER.reset(token)
    assert out.ok is True and out.premises is not None and dict(out.premises.model) == {"n": 3, "q": 0}
    assert meter.queries == 2  # the claim without its assumptions (sat), then with them: no premise query
    assert z3sel.witness_by_evaluation([n > 7], {"n": 1}, []) is None  # past the small sizes: Z3's model
    far = z3sel.prove(n + 1 > n, [n > 7])
    assert far.ok is True and far.premises is not None and dict(far.premises.model)["n"] > 7
    assert z3sel.witness_by_evaluation([n > 2], {"n": 1}, [], bound=2) is None  # sizes stay <= bound


def test_a_claim_that_needs_no_assumption_is_decided_without_them() -> None:
    """A gather from one fixed position: its intent holds whatever the key range, so the claim is
    first shown without the assumptions (a stronger statement); a claim that needs them is proven
    with them, and a false one still fails with a counterexample inside them."""
    n, k = C.Size("n"), E.Var("k")
    length = n * n * n + 3 * n + 7
    fixed = n * n + 1
    gather = (k.eq(fixed) & ((k >= fixed) & (k < fixed + 1))) | (
        E.Not(k.eq(fixed)) & E.Not((k >= fixed) & (k < fixed + 1))
    )
    ranges = [k >= 0, k < length]
    out = z3sel.prove(gather, ranges)
    assert out.ok is True and out.detail.endswith("(without its assumptions)")
    needs = z3sel.prove(k < length + 1, ranges)
    assert needs.ok is True and "without" not in needs.detail
    wrong = z3sel.prove(k < length - 1, ranges)
    assert wrong.ok is False and wrong.counterexample is not None
    model = dict(wrong.counterexample)
    assert all(int(r.evaluate(model)) for r in ranges) and not int((k < length - 1).evaluate(model))


def test_a_witness_is_confirmed_in_unbounded_integers() -> None:
    """The grid is searched in int64, which wraps: x * 2^62 * 4 == 0 holds there at x = 2, not in
    the integers.  Such a point is no witness; the premises are then Z3's to decide (empty here:
    the false claim fails 'vacuous', never proved)."""
    x = E.Var("x")
    premises = [((x * 2**62) * 4).eq(0), x.eq(2)]
    assert z3sel.witness_by_evaluation(premises, {}, ["x"]) is None
    out = z3sel.prove(E.Const(0).eq(1), premises)
    assert out.ok is False and out.detail.startswith("vacuous")
