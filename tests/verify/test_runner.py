"""The runner's checks read an outcome's typed fields, never its text (issue 26, item 6).

Backs every z3-parametric row of paper_map.md: a proof labelled z3-parametric must quantify over a
size symbol (else it is a fixed instance, z3-instance), whatever its detail says.
"""

from __future__ import annotations

import pytest

from attnsim.proofs.obligation import Cause, Obligation, Outcome, Result, Scope, cause_kind
from attnsim.verify.budgets import explain_unknown, is_timeout
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
    told = explain_unknown(Result.of(ob, Outcome(None, "ran out", cause="timeout"), 1.0), ob, 1.0)
    assert "rerun with `attnsim verify --only t/z3-parametric/x --timeout" in told.detail


@pytest.mark.parametrize(
    ("cause", "kind", "advice"),
    [
        ("timeout", "budget exhausted", "rerun with `attnsim verify --only t/z3-parametric/x --timeout"),
        ("rlimit exhausted", "budget exhausted", "which --timeout does not change"),
        ("over its node budget", "budget exhausted", "which --timeout does not change"),
        ("not shown equal", "not shown equal", "no counterexample was found: a longer budget does not help"),
        ("divisor not shown > 0", "side condition not shown", "a longer budget does not help"),
    ],
)
def test_an_unknown_says_its_kind_of_cause_and_what_can_help(cause: Cause, kind: str, advice: str) -> None:
    """The causes are kept apart in the result (typed) and in the message: budget exhausted, not
    shown equal, side condition not shown; a larger --timeout is suggested only for the CPU-seconds
    budget."""
    ob = _ob(Outcome(None, "stopped", cause=cause))
    told = explain_unknown(Result.of(ob, Outcome(None, "stopped", cause=cause), 1.0), ob, 1.0)
    lead = kind if kind == cause else f"{kind} ({cause})"  # the kind, and the cause where it says more
    assert cause_kind(told.cause) == kind and told.detail.startswith(f"{lead}: stopped"), told.detail
    assert "not shown equal (not shown equal)" not in told.detail
    assert advice in told.detail, told.detail
    assert ("rerun with" in told.detail) is (cause == "timeout")


def test_no_longer_budget_is_suggested_once_a_counterexample_is_found() -> None:
    """An obligation that ran out of time but whose search found a counterexample (to the claim it
    is part of) is not told to rerun with a longer budget."""
    out = Outcome(None, "timeout after 12 proven steps", cause="timeout", counterexample=(("D", 33),))
    ob = _ob(out)
    told = explain_unknown(Result.of(ob, out, 1.0), ob, 1.0)
    assert "--timeout" not in told.detail and "no longer budget will prove it" in told.detail, told.detail
    assert explain_unknown(Result.of(ob, Outcome(None, "z3 unknown (incomplete)"), 1.0), ob, 1.0).detail == (
        "z3 unknown (incomplete)"
    )
