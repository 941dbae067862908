"""SymPy work counted in steps and nodes (issue 27: the same verdict on any machine).

Past a budget the work stops (NodeBudgetExceeded) and the obligation is unknown "over its node
budget", never proved or failed; within it the same obligation is decided as before."""

from __future__ import annotations

import pytest
import sympy as sp

from attnsim import catalog
from attnsim.proofs import registry
from attnsim.proofs.solver_work import NodeBudgetExceeded
from attnsim.symbolic import sympy_work
from attnsim.universal import congruence
from attnsim.verify.runner import run_inline


def test_node_count_counts_every_occurrence_and_stops_past_its_limit() -> None:
    x, y = sp.symbols("x y")
    e = sp.Add(sp.Mul(x, y), sp.Mul(x, y, 2), evaluate=False)
    assert sympy_work.node_count(x, 10) == 1
    assert sympy_work.node_count(e, 100) == sum(1 for _ in sp.preorder_traversal(e))
    assert sympy_work.node_count(e, 2) == 3  # counted up to limit + 1 only
    assert sympy_work.within_nodes(e, 100, "e") is e
    with pytest.raises(NodeBudgetExceeded, match="e has more than 2 nodes"):
        sympy_work.within_nodes(e, 2, "e")


def test_an_executor_past_its_step_budget_leaves_the_lemma_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lemma (matmul) for all sizes: proved within the step budget, unknown past it."""
    catalog.load()
    ob = registry.by_id("matmul/all-sizes/lemma")
    assert run_inline(ob, 60).status == "proved"
    monkeypatch.setattr(sympy_work, "EXECUTOR_STEPS", 1)
    r = run_inline(ob, 60)
    assert r.status == "unknown" and r.cause == "over its node budget", r.detail
    assert "step budget" in r.detail


def test_a_congruence_difference_past_its_node_budget_is_not_cancelled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whole-U SymPy checks (Theorem 6 at n = d = 2) compare by congruence: an expression larger
    than CANCEL_NODES is not handed to SymPy's cancel."""
    x, y = sp.symbols("x y", real=True)
    got, want = (x + y) ** 2 / (x + 1), (x**2 + 2 * x * y + y**2) / (x + 1)
    assert congruence.difference(got, want) == 0
    monkeypatch.setattr(sympy_work, "CANCEL_NODES", 5)
    with pytest.raises(NodeBudgetExceeded, match="the difference U - T"):
        congruence.difference(got, want)
