"""SymPy work budgeted in steps and nodes, never in seconds (issue 27).

A budget in seconds makes a verdict depend on the machine's load; Z3 queries are budgeted in
resource units (:mod:`attnsim.proofs.solver_work`), and the SymPy work of a proof in counts that
are the same on every machine and every run:

* **steps of symbolic execution**: the values one executor computes (a node at a position, each
  computed once); more than :data:`EXECUTOR_STEPS` stops it;
* **nodes handed to SymPy's rational canonical form** (``cancel``, the whole-U checks'
  congruence): an expression of more than :data:`CANCEL_NODES` nodes is not cancelled;
* the Sum normal form's expansions: :data:`attnsim.symbolic.sums.TERMS_BUDGET` terms.

Over budget raises :class:`~attnsim.proofs.solver_work.NodeBudgetExceeded`: the obligation is
unknown, "over its node budget", on any machine.  CPU seconds stay the outer safety net only.
The budgets are set from the largest use measured over every ``--deep`` obligation, with a margin
(:mod:`attnsim.verify.budgets` gives the figures).
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from attnsim.proofs.solver_work import NodeBudgetExceeded

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


def count_step(done: int, what: str) -> int:
    """``done + 1``, the steps taken, after checking it is within :data:`EXECUTOR_STEPS`."""
    if done + 1 > EXECUTOR_STEPS:
        raise NodeBudgetExceeded(f"{what}: more than {EXECUTOR_STEPS:,} values computed (its step budget)")
    return done + 1


__all__ = ["CANCEL_NODES", "EXECUTOR_STEPS", "count_step", "node_count", "within_nodes"]
