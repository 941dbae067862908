"""Deciding queries as SMT-LIB: cvc5 re-checks them; vacuous proofs fail (the proofs issue, items 6 and 8).

Backs every proving method of paper_map.md: a proof is only as good as the solver call it rests on.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import z3

from attnsim.cli.main import main
from attnsim.proofs import decoding, smtlib, z3sel
from attnsim.proofs.obligation import Obligation
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.verify.runner import SmtOptions, run_inline


def test_cross_check_confirms_and_catches_a_disagreement() -> None:
    """cvc5 confirms a true unsat; a query recorded with the wrong answer is reported as a disagreement."""
    x, y = z3.Ints("x y")
    s = z3.Solver()
    s.add(x >= 1, y >= 1, x + y < 2)
    text = s.to_smt2()
    assert smtlib.cvc5_answer(smtlib.standalone(text, "unsat")) == "unsat"
    col = smtlib.Collector(cross_check=True)
    col(text, "unsat")
    col(text, "sat")  # as if Z3 had said sat: cvc5 says unsat
    col.run_cross_check()
    assert col.confirmed == 1 and col.disagreements == ["query 2 (query): z3 sat, cvc5 unsat"]
    assert "DISAGREE" in col.summary()
    stats = col.stats()  # the typed tally verify sums (never the summary's text)
    assert (stats.exported, stats.confirmed, stats.disagree) == (2, 1, ("query 2 (query): z3 sat, cvc5 unsat",))


def test_a_disagreement_fails_the_obligation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """sat against unsat fails the obligation, whatever Z3 said; the files carry '; expected: unsat'.
    The premise (vacuity) check is exported too, and re-checked (issue 26, item 9)."""
    n = C.Size("n")
    ob = Obligation("t/z3-parametric/x", "t", "Proposition 1", "z3-parametric", lambda t: z3sel.prove(n + 1 > n))
    good = run_inline(ob, 10, SmtOptions(tmp_path, cross_check=True))
    assert good.status == "proved" and "cvc5: 2 of 2 deciding queries confirmed" in good.detail
    two = good.second_solver
    assert two is not None and (two.exported, two.premise_checks, two.confirmed, two.disagree) == (2, 1, 2, ())
    texts = sorted(f.read_text() for f in tmp_path.glob("*.smt2"))
    assert len(texts) == 2
    assert texts[0].startswith("; expected: sat\n; t_z3-parametric_x (premises)")
    assert texts[1].startswith("; expected: unsat\n; t_z3-parametric_x (query)")
    monkeypatch.setattr(smtlib, "cvc5_run", lambda text, rlimit=0: ("sat", 1))
    bad = run_inline(ob, 10, SmtOptions(None, cross_check=True))
    assert bad.status == "failed" and "DISAGREE" in bad.detail
    assert bad.second_solver is not None and len(bad.second_solver.disagree) == 1


def test_a_vacuous_proof_fails() -> None:
    """A false claim under premises that admit no values is not 'proved': it fails 'vacuous'."""
    x, n = E.Var("x"), C.Size("n")
    out = z3sel.prove(x.eq(5), [x < 0, x > 0])
    assert out.ok is False and out.detail.startswith("vacuous")
    out = decoding.prove(x.eq(5), [x >= n], coords={"x": n})  # x < n and x >= n: empty
    assert out.ok is False and out.detail.startswith("vacuous")
    assert decoding.prove(x < n, [], coords={"x": n}).ok is True


def test_z3_parametric_without_a_size_is_refused() -> None:
    """A proof labelled z3-parametric that mentions no size symbol fails: it is a z3-instance proof."""
    x = E.Var("x")
    ob = Obligation("t/z3-parametric/y", "t", "Proposition 1", "z3-parametric", lambda t: z3sel.prove(x + 1 > x))
    r = run_inline(ob, 10)
    assert r.status == "failed" and "z3-instance" in r.detail
    ok = Obligation("t/z3-instance/y", "t", "Proposition 1", "z3-instance", lambda t: z3sel.prove(x + 1 > x))
    assert run_inline(ok, 10).status == "proved"


def test_verify_cross_check_and_smt2_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """attnsim verify --cross-check --smt2 DIR: files written, cvc5's tally printed, exit 0."""
    code = main(["verify", "--only", "transpose/all-sizes", "-j", "1", "--cross-check", "--smt2", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "cvc5 confirmed" in out and "disagreed on 0" in out
    assert any(tmp_path.glob("transpose_all-sizes_lemma-*.smt2"))


def test_cvc5_has_a_budget_per_obligation() -> None:
    """Queries left when an obligation's cvc5 budget (resource units) runs out are counted as not
    checked (never pass/fail); a query within budget records the units it used."""
    x = z3.Int("x")
    s = z3.Solver()
    s.add(x > 1, x < 1)
    col = smtlib.Collector(cross_check=True)
    for _ in range(3):
        col(s.to_smt2(), "unsat")
    col.run_cross_check(budget=0)
    assert (col.confirmed, col.unknown, col.unchecked) == (0, 0, 3)
    assert "3 not checked (cvc5 budget)" in col.summary()
    one = smtlib.Collector(cross_check=True)
    one(s.to_smt2(), "unsat")
    one.run_cross_check()
    assert one.confirmed == 1 and 0 < one.units <= smtlib.CVC5_RLIMIT_PER


def test_cvc5_stops_on_its_resource_limit_not_the_clock() -> None:
    """A query cvc5 cannot decide within its rlimit is unknown, whatever the machine's load."""
    x, y = z3.Ints("x y")
    s = z3.Solver()
    s.add(x * x * y > 7, x * y < 3)
    answer, used = smtlib.cvc5_run(smtlib.standalone(s.to_smt2(), "sat"), rlimit=10)
    assert answer == "unknown" and used >= 10
