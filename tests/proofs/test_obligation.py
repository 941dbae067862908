"""Structured results (issue 26, item 6): a proof's outcome is a typed record, and the JSON row of
`attnsim verify --json` carries its fields; no fact is lost when a caller retells or joins outcomes.

Backs every row of paper_map.md whose obligations `verify` runs: what the scope table, the cache
and the cvc5 summary read comes from these fields, never from the human ``detail`` text.
"""

from __future__ import annotations

import json

import pytest

from attnsim.proofs import z3sel
from attnsim.proofs.obligation import (
    STRUCTURED,
    NormalForm,
    Obligation,
    Outcome,
    PaddingValue,
    Premise,
    PremiseCheck,
    Result,
    Scope,
    SecondSolver,
)
from attnsim.rasp import core as C
from attnsim.rasp import expr as E


def test_a_proof_says_its_scope_and_a_refutation_its_model_in_fields() -> None:
    n, x = C.Size("n"), E.Var("x")
    proved = z3sel.prove(n + 1 > n)
    assert proved.ok is True and proved.scope == Scope(("n",)) and proved.counterexample is None
    fixed = z3sel.prove(x + 1 > x)
    assert fixed.ok is True and fixed.scope == Scope(())  # a fixed instance: no sizes, said in the field
    refuted = z3sel.prove(n < 3)
    assert refuted.ok is False and refuted.counterexample is not None
    assert dict(refuted.counterexample)["n"] >= 3
    bounded = z3sel.prove(n < 9, bound=8)
    assert bounded.ok is True and bounded.scope == Scope(("n",), 8)


def test_retold_and_joined_keep_every_typed_fact() -> None:
    pc = PremiseCheck("sat", (("n", 1),))
    a = Outcome(
        True,
        "a",
        pc,
        scope=Scope(("n",)),
        stated=(Premise("p"),),
        lemmas=("row-bound",),
        normal_forms=(NormalForm("s", "p", "s'", "p'"),),
    )
    b = Outcome(
        True,
        "b",
        scope=Scope(("m",), 4),
        stated=(Premise("p"), Premise("q", ("c = 1",), unproven=True)),
        padding=(PaddingValue("Y", "Y~", "Y"),),
        lemmas=("block-decode",),
    )
    told = a.retold("wrapped: a", ok=None)
    assert told.ok is None and told.detail == "wrapped: a" and told.premises == pc and told.lemmas == a.lemmas
    both = a.joined(b, detail="a; b")
    assert both.ok is True and both.detail == "a; b" and both.premises == pc
    assert both.scope == Scope(("m", "n"), 4)  # a conjunction holds where both do: the smaller bound
    assert both.stated == (Premise("p"), Premise("q", ("c = 1",), unproven=True))  # each once, in order
    assert both.lemmas == ("block-decode", "row-bound") and both.padding == b.padding
    assert both.normal_forms == a.normal_forms
    with pytest.raises(ValueError, match="unknown cause"):
        Outcome(None, "x", cause="busy")  # type: ignore[arg-type]
    assert Outcome(None, "t", cause="timeout").timed_out and not Outcome(None, "timeout").timed_out


def test_a_result_row_carries_the_structured_fields_and_reads_back_typed() -> None:
    ob = Obligation("t/z3-parametric/x", "t", "P", "z3-parametric", lambda t: Outcome.good())
    out = Outcome(
        True,
        "ok",
        PremiseCheck("sat", (("n", 2),)),
        scope=Scope(("n",)),
        normal_forms=(NormalForm("s", "p", "n", "n", "c < s"),),
        stated=(Premise("n is an integer", ("c = 0",)),),
        padding=(PaddingValue("Y", "Y~", "Y"),),
        lemmas=("row-bound",),
        second_solver=SecondSolver(3, 1, True, 2, 1, 0, (), 0.5),
    )
    r = Result.of(ob, out, 0.25, units=10, queries=3)
    row = json.loads(json.dumps(r.as_dict()))
    assert set(STRUCTURED) <= set(row)
    assert row["scope"] == {"sizes": ["n"], "bound": None} and row["premise_model"] == {"n": 2}
    assert row["second_solver"]["exported"] == 3 and row["second_solver"]["premise_checks"] == 1
    assert row["stated"] == [{"text": "n is an integer", "cases": ["c = 0"], "unproven": False}]
    assert Result.from_dict(row) == r  # the cache reads rows back with their records typed
    old = {k: v for k, v in row.items() if k not in STRUCTURED}  # a row written before the fields
    assert Result.from_dict(old).scope is None and Result.from_dict(old).stated == ()
