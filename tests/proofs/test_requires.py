"""Conditional results: a conclusion is "proved" only when the obligations it rests on are too (issue 26 item 5).

Backs the stacks row (depth by looping): the stack induction rests on the frame lemma, on the whole
layer (Theorem 6, ``--deep``) and on a base case checked at one capacity; a run that did not prove
them must not print "stacks: all sizes".
"""

from __future__ import annotations

import pytest

from attnsim.proofs import registry
from attnsim.proofs.obligation import Obligation, ObligationError, Outcome, Result, settle
from attnsim.verify.scope import scope_by_result, scope_summary


def _r(oid: str, status: str, requires: tuple[str, ...] = (), method: str = "all-sizes") -> Result:
    return Result(oid, oid.split("/")[0], "stacks", method, None, status, 0.1, "ok", requires)


def test_a_conclusion_whose_premise_was_not_run_is_conditional_not_proved() -> None:
    out = settle(
        [
            _r("s/all-sizes/frame", "proved"),
            _r("s/all-sizes/stack", "proved", ("s/all-sizes/frame", "u/all-sizes/layer")),
        ]
    )
    stack = out[1]
    assert stack.status == "conditional"
    assert "u/all-sizes/layer (not run)" in stack.detail and "s/all-sizes/frame" not in stack.detail.split(";")[0]
    assert ("s", "conditional") == scope_summary(out)[0][:2]
    assert scope_by_result(out)[0][1] == "conditional"


@pytest.mark.parametrize("premise", ["unknown", "failed", "conditional"])
def test_a_premise_that_does_not_hold_leaves_the_conclusion_conditional(premise: str) -> None:
    out = settle([_r("a/all-sizes/x", premise), _r("b/all-sizes/y", "proved", ("a/all-sizes/x",))])
    assert out[1].status == "conditional" and f"a/all-sizes/x ({premise})" in out[1].detail


def test_chains_settle_and_a_proved_premise_keeps_the_conclusion() -> None:
    ok = settle([_r("a/all-sizes/x", "proved"), _r("b/exact/y", "passed", ("a/all-sizes/x",), "exact")])
    assert [r.status for r in ok] == ["proved", "passed"]
    chain = settle(
        [
            _r("c/all-sizes/z", "proved", ("b/all-sizes/y",)),
            _r("b/all-sizes/y", "proved", ("a/all-sizes/x",)),
            _r("a/all-sizes/x", "unknown"),
        ]
    )
    assert [r.status for r in chain] == ["conditional", "conditional", "unknown"]
    assert scope_by_result(chain)[0][1] == "NOT VERIFIED"


def test_the_stack_obligations_declare_the_layer_the_frame_and_the_base_case() -> None:
    """The registered stack induction (both variants) names its premises, and each exists."""
    for tag in ("", "shallow/"):
        ob = registry.by_id(f"simulator-frame/{tag}all-sizes/stack")
        assert f"simulator/{tag}all-sizes/layer" in ob.requires
        assert f"simulator-frame/{tag}all-sizes/frame" in ob.requires
        assert f"simulator-frame/{tag}all-sizes/base-case" in ob.requires
        assert registry.by_id(f"simulator-frame/{tag}all-sizes/base-case").method == "all-sizes"
        assert not [q for q in ob.requires if "/exact/" in q]  # no premise checked at one capacity only


def test_a_requirement_naming_no_obligation_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    ob = Obligation("x/all-sizes/y", "x", "r", "all-sizes", lambda t: Outcome.good(), requires=("no/such/thing",))
    monkeypatch.setattr(registry, "_PROVIDERS", [lambda: [ob]])
    monkeypatch.setattr(registry, "_CACHE", None)
    with pytest.raises(ObligationError, match="requires no/such/thing: no such obligation"):
        registry.all_obligations()


def test_a_premise_checked_only_at_instances_does_not_make_an_all_sizes_conclusion_proved() -> None:
    """The stack's base case is exact at one capacity: with every other premise proved, the
    all-sizes induction is still conditional (review finding: 'passed' is not a proof)."""
    out = settle(
        [
            _r("s/all-sizes/frame", "proved"),
            _r("s/exact/base-case", "passed", method="exact"),
            _r("s/all-sizes/stack", "proved", ("s/all-sizes/frame", "s/exact/base-case")),
        ]
    )
    assert out[2].status == "conditional" and "s/exact/base-case (passed)" in out[2].detail


@pytest.mark.parametrize("cycle", [("a/all-sizes/x",), ("b/all-sizes/y", "a/all-sizes/x")])
def test_circular_premises_are_refused(monkeypatch: pytest.MonkeyPatch, cycle: tuple[str, ...]) -> None:
    a = Obligation("a/all-sizes/x", "a", "r", "all-sizes", lambda t: Outcome.good(), requires=(cycle[0],))
    b = Obligation("b/all-sizes/y", "b", "r", "all-sizes", lambda t: Outcome.good(), requires=("a/all-sizes/x",))
    monkeypatch.setattr(registry, "_PROVIDERS", [lambda: [a, b]])
    monkeypatch.setattr(registry, "_CACHE", None)
    with pytest.raises(ObligationError, match="circular premises"):
        registry.all_obligations()
