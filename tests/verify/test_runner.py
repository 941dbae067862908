"""The runner's checks read an outcome's typed fields, never its text (issue 26, item 6).

Backs every z3-parametric row of paper_map.md: a proof labelled z3-parametric must quantify over a
size symbol (else it is a fixed instance, z3-instance), whatever its detail says.
"""

from __future__ import annotations

from attnsim.proofs.obligation import Obligation, Outcome, Result, Scope
from attnsim.verify.budgets import explain_timeout, is_timeout
from attnsim.verify.runner import run_inline


def _ob(out: Outcome, method: str = "z3-parametric") -> Obligation:
    return Obligation(f"t/{method}/x", "t", "Proposition 1", method, lambda t: out)


def test_a_z3_parametric_proof_over_no_sizes_is_refused_from_its_scope_not_its_text() -> None:
    """The scope says "no sizes" though the detail does not: refused; the detail says "no sizes" but
    the scope names a size: proved (the text is not read)."""
    silent = Outcome(True, "unsat: holds (the text names no scope)", scope=Scope(()))
    r = run_inline(_ob(silent), 10)
    assert r.status == "failed" and "z3-instance" in r.detail, r.detail
    assert r.scope == Scope(())
    said = Outcome(True, "unsat: holds for all sizes (no sizes)", scope=Scope(("n",)))
    assert run_inline(_ob(said), 10).status == "proved"
    assert run_inline(_ob(silent, "z3-instance"), 10).status == "proved"  # a fixed instance, labelled so


def test_a_timeout_is_the_typed_cause_not_a_word_in_the_detail() -> None:
    stopped = run_inline(_ob(Outcome(None, "ran out", cause="timeout")), 10)
    assert is_timeout(stopped) and stopped.cause == "timeout"
    worded = run_inline(_ob(Outcome(None, "z3 said unknown; no timeout involved")), 10)
    assert not is_timeout(worded)
    ob = _ob(Outcome(None, "ran out", cause="timeout"))
    told = explain_timeout(Result.of(ob, Outcome(None, "ran out", cause="timeout"), 1.0), ob, 1.0)
    assert "rerun with `attnsim verify --only t/z3-parametric/x --timeout" in told.detail
