"""SymPy work budgeted in steps and nodes, never in seconds.

A budget in seconds makes a verdict depend on the machine's load; Z3 queries are budgeted in
resource units (:mod:`attnsim.proofs.solver_work`), and the SymPy work of a proof in counts that
are the same on every machine and every run:

* **steps of symbolic execution**: the values one executor computes (a node at a position, each
  computed once); more than :data:`EXECUTOR_STEPS` stops it;
* **nodes handed to SymPy's rational canonical form** (``cancel``, the whole-U checks'
  congruence): an expression of more than :data:`CANCEL_NODES` nodes is not cancelled;
* **terms of one expansion** in the Sum normal form (:mod:`attnsim.symbolic.sums`: a Sum's body,
  the difference of two sides): more than :data:`TERMS_BUDGET` stops it.

Over budget raises :class:`~attnsim.proofs.solver_work.NodeBudgetExceeded`: the obligation is
unknown, "over its node budget", on any machine.  CPU seconds stay the outer safety net only.
The budgets are set from the largest use measured over every ``--deep`` obligation, with a margin
(:mod:`attnsim.verify.budgets` gives the figures).
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from attnsim.proofs.solver_work import NodeBudgetExceeded

# Measured on 2026-12-05 over every obligation of ``attnsim verify --deep`` (1,246): at most 21
# terms (a Sum's body) and 18 (a difference), both in ``simulator-stages/all-sizes/ffn/ffn2.Y1``.
TERMS_BUDGET = 2_000  # terms of one expansion of the Sum normal form: about 100 times the most measured
EXECUTOR_STEPS = 20_000  # values one executor computes; measured at most 187 over every --deep obligation
CANCEL_NODES = 100_000  # nodes of one expression cancelled; measured at most 3,173 over every --deep obligation


def node_count(e: Any, limit: int) -> int:
    """The nodes of ``e``'s expression tree (each occurrence of a shared subtree counted), counted
    up to ``limit + 1`` at most (so counting a huge expression stops early)."""
    count = 0
    for _ in sp.preorder_traversal(e):
        count += 1
        if count > limit:
            break
    return count


def within_nodes(e: Any, limit: int, what: str) -> Any:
    """``e``, after checking that it has at most ``limit`` nodes (else NodeBudgetExceeded)."""
    if node_count(e, limit) > limit:
        raise NodeBudgetExceeded(f"{what} has more than {limit:,} nodes (its node budget)")
    return e


def expanded_terms(e: Any, what: str) -> tuple[Any, ...]:
    """The terms of ``e`` expanded, at most :data:`TERMS_BUDGET` of them (else NodeBudgetExceeded)."""
    terms = sp.Add.make_args(sp.expand(e))
    if len(terms) > TERMS_BUDGET:
        raise NodeBudgetExceeded(f"the Sum normal form: {what} has {len(terms)} terms (budget {TERMS_BUDGET})")
    return terms


def cancelled(e: Any, what: str) -> Any:
    """SymPy's rational canonical form of ``e`` (``cancel`` of ``together``), its input within
    :data:`CANCEL_NODES` (else NodeBudgetExceeded)."""
    return sp.cancel(within_nodes(sp.together(e), CANCEL_NODES, what))


def count_step(done: int, what: str) -> int:
    """``done + 1``, the steps taken, after checking it is within :data:`EXECUTOR_STEPS`."""
    if done + 1 > EXECUTOR_STEPS:
        raise NodeBudgetExceeded(f"{what}: more than {EXECUTOR_STEPS:,} values computed (its step budget)")
    return done + 1


__all__ = [
    "CANCEL_NODES",
    "EXECUTOR_STEPS",
    "TERMS_BUDGET",
    "cancelled",
    "count_step",
    "expanded_terms",
    "node_count",
    "within_nodes",
]
