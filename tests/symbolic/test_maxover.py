"""The max head in symbolic execution (attnsim.symbolic.maxover) and the max-shifted softmax proof."""

from __future__ import annotations

import dataclasses

import sympy as sp

from attnsim import lemmas
from attnsim.rasp import core as C
from attnsim.symbolic.maxover import MaxOver, max_over
from attnsim.symbolic.program_equals_spec import prove_program_equals_spec
from attnsim.symbolic.sums import equal_by_normal_form

ROWS, COLS = C.Size("rows"), C.Size("cols")
A = sp.IndexedBase("A")
c, i, k, v, n = sp.symbols("c i k v n", integer=True)


def test_max_over_renames_its_bound_variable_canonically() -> None:
    assert max_over(A[i, v], [(v, 0, c - 1)]) == max_over(A[i, k], [(k, 0, c - 1)])
    assert max_over(A[i, v], [(v, 0, c - 1)]) != max_over(A[i, k], [(k, 0, c)])  # another key set
    assert max_over(A[i, v], [(v, 0, c - 1)]) != max_over(A[i + 1, k], [(k, 0, c - 1)])
    inner = max_over(A[v, k], [(k, 0, c - 1)])
    outer = max_over(inner, [(v, 0, n - 1)])  # nested: the inner name is not captured
    assert len({s.name for s in outer.atoms(sp.Symbol) if s.name.startswith("μ")}) == 2
    assert max_over(A[i, v], [(v, 0, 2)]).doit() == sp.Max(A[i, 0], A[i, 1], A[i, 2])
    assert max_over(A[i, v], [(v, 0, c - 1)]).free_symbols >= {c, i}
    assert v not in max_over(A[i, v], [(v, 0, c - 1)]).free_symbols


def test_a_common_max_cancels_and_a_different_one_does_not() -> None:
    m = max_over(A[i, v], [(v, 0, c - 1)])
    s = sp.Sum(sp.exp(A[i, k] - m), (k, 0, c - 1))
    same, _, _ = equal_by_normal_form(sp.exp(A[i, 0] - m) / s, sp.exp(A[i, 0]) / sp.Sum(sp.exp(A[i, k]), (k, 0, c - 1)))
    assert same
    other = max_over(2 * A[i, v], [(v, 0, c - 1)])
    same, _, _ = equal_by_normal_form(
        sp.exp(A[i, 0] - other) / s, sp.exp(A[i, 0]) / sp.Sum(sp.exp(A[i, k]), (k, 0, c - 1))
    )
    assert not same
    assert isinstance(m, MaxOver) and m.is_commutative


def _nodes(con: lemmas.Construction) -> dict[str, C.RASPExpr]:
    return {x.label: x for x in C.topological([con.program])}


def test_stable_softmax_shift_by_another_max_is_not_proved() -> None:
    """Numerator shifted by the max of 2x, denominator by the max of x: the two maxes do not cancel."""
    con = lemmas.softmax(ROWS, COLS, stable=True)
    nd = _nodes(con)
    sel = nd["out.rowsum"]
    assert isinstance(sel, C.Selector)
    m2 = C.maximum(sel, C.apply("scale", C.tokens, params=(2,)))
    num = C.apply("exp", C.apply("sub", C.tokens, m2))
    prog = C.apply("div", num, nd["out.sum"])
    out = prove_program_equals_spec(dataclasses.replace(con, program=prog))
    assert out.ok is not True, out.detail


def test_an_argmax_head_is_refused_clearly() -> None:
    con = lemmas.softmax(ROWS, COLS, stable=True)
    sel = _nodes(con)["out.rowsum"]
    assert isinstance(sel, C.Selector)
    head = C.argmax_aggregate(sel, C.tokens, C.apply("exp", C.tokens))
    out = prove_program_equals_spec(dataclasses.replace(con, program=head))
    assert out.ok is not True and "values are not its scores" in out.detail, out.detail


def test_max_shifted_softmax_proved_for_all_sizes() -> None:
    for con in (
        lemmas.softmax(ROWS, COLS, stable=True),
        lemmas.masked_softmax(ROWS, COLS, C.Size("heads"), stable=True),
    ):
        out = prove_program_equals_spec(con)
        assert out.ok is True and "MaxOver" in out.detail, out.detail
