"""Summation variables named by the computation (attnsim.symbolic.summation_names): the all-sizes
executor's heads (Lemma (matmul)'s sum, Theorem 6's stage proofs) bind one variable per count.

* the same computation gets the same names (so the option cases of a stage proof can share values,
  and a run's queries do not depend on what ran before); different computations, different names;
* a name bound by an enclosing head is never drawn again while it is bound;
* a name always has one extent: the extent is part of what the name is derived from.
"""

from __future__ import annotations

from attnsim.rasp import expr as E
from attnsim.symbolic.summation_names import SummationNames


def _draw(label: str, pos: E.Expr, extent: E.Expr, bound: dict[str, object] | None = None) -> list[str]:
    names = SummationNames()
    with names.computing(label, pos):
        return [names.draw(extent, bound or {}), names.draw(extent, bound or {})]


def test_the_same_computation_gets_the_same_names_and_another_other_names() -> None:
    q, n = E.Var("q!"), E.Var("n")
    first = _draw("sum", q + 1, n)
    assert first == _draw("sum", q + 1, n) and first[0] != first[1]
    assert set(first).isdisjoint(_draw("sum", q + 2, n))
    assert set(first).isdisjoint(_draw("other", q + 1, n))
    assert set(first).isdisjoint(_draw("sum", q + 1, n + 1))  # another extent, another name
    assert all(x.startswith("l!") for x in first)


def test_a_bound_name_is_not_drawn_again() -> None:
    q, n = E.Var("q!"), E.Var("n")
    outer = _draw("sum", q, n)[0]
    inner = _draw("sum", q, n, {outer: n})[0]
    assert inner != outer and inner.startswith(outer)


def test_an_assumed_branch_is_another_computation() -> None:
    q, n = E.Var("q!"), E.Var("n")
    names = SummationNames()
    with names.computing("gather", q, (q < n,)):
        under = names.draw(n, {})
    assert under != _draw("gather", q, n)[0]


def test_two_nodes_with_one_label_are_two_computations() -> None:
    """Labels need not be unique (``.named`` does not enforce it): the executor names a node by its
    place in the program too, so two nodes of one label never share summation names."""
    from types import SimpleNamespace

    from attnsim.rasp import core as C
    from attnsim.symbolic.execute import Executor

    a = C.apply("relu", C.tokens).named("same")
    b = C.apply("relu", a).named("same")
    ex = Executor(SimpleNamespace(program=b))
    assert ex.node_key(a) != ex.node_key(b) and ex.node_key(a).endswith(":same")
    assert ex.node_key(a) == Executor(SimpleNamespace(program=b)).node_key(a)  # the same in every run
