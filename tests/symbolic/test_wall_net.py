"""Every proof's verdict is decided by CPU seconds and Z3 rlimits, never by how busy the machine is
(README, "Budgets"): the wall-clock net given to each Z3 query is the whole budget, not the CPU
seconds left, which a loaded machine would turn into an early "timeout" (issue 45, item 5)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from attnsim import lemmas
from attnsim.proofs.obligation import Outcome
from attnsim.rasp import expr as E
from attnsim.symbolic.execute import ExecutionFailed, Executor
from attnsim.universal.layerproof import stack


def test_a_query_late_in_the_budget_gets_the_whole_budget_as_its_net() -> None:
    """9.5 of 10 CPU seconds spent: the next query's net is 10 s (it was 0.5 s); all 10 spent: a
    typed timeout before any query."""
    ex = Executor(lemmas.transpose(2, 3), timeout=10.0, started=time.process_time() - 9.5)
    assert ex.net() == 10.0
    ex = Executor(lemmas.transpose(2, 3), timeout=10.0, started=time.process_time() - 11.0)
    with pytest.raises(ExecutionFailed) as exc:
        ex.net()
    assert exc.value.outcome.cause == "timeout"


def test_the_stack_proof_gives_each_goal_the_whole_budget_and_stops_on_cpu_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """_all_proved passes every goal the same net (its whole budget), and stops with a typed
    timeout once its CPU seconds are spent, naming the goal it did not reach."""
    nets: list[float] = []

    def fake(goal: Any, assume: Any, what: str, net: float) -> Outcome:
        nets.append(net)
        return Outcome.good(what)

    monkeypatch.setattr(stack, "_prove", fake)
    goals: list[tuple[str, E.Expr, list[E.Expr]]] = [(f"g{i}", E.Const(1) >= E.Const(0), []) for i in range(3)]
    assert stack._all_proved(goals, 30.0, "claim").ok is True and nets == [30.0, 30.0, 30.0]
    clock = iter([0.0, 0.0, 50.0])
    monkeypatch.setattr(stack.time, "process_time", lambda: next(clock))
    out = stack._all_proved(goals, 30.0, "claim")
    assert out.ok is None and out.cause == "timeout" and "g1 not reached" in out.detail, out.detail
