"""Activation MaxMin (GroupSort, groups of 2): each pair sorted (max, min); authors' example."""

from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim import lemmas
from attnsim.lemmas import ConstructionError
from attnsim.rasp import core as C
from attnsim.rasp.engine import evaluate
from attnsim.rasp.layout import Block, MatRef

floats = st.floats(-1e6, 1e6, allow_nan=False)


def test_authors_example() -> None:
    """The paper's MaxMin example, as a regression test (float, exact)."""
    x = [14, 18, 3, 12, 6, 20, 7, 17, 13, 9]
    want = [18, 14, 12, 3, 20, 6, 17, 7, 13, 9]
    con = lemmas.maxmin(10)
    assert con.run(x).tolist() == want
    assert con.run(x, backend="exact").tolist() == [Fraction(v) for v in want]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 10).flatmap(lambda t: st.lists(floats, min_size=2 * t, max_size=2 * t)))
def test_maxmin_sorts_each_pair(xs: list[float]) -> None:
    out = lemmas.maxmin(len(xs)).run(np.array(xs))
    for t in range(0, len(xs), 2):
        assert [out[t], out[t + 1]] == sorted(xs[t : t + 2], reverse=True)


def test_maxmin_backends_and_rows() -> None:
    x = sp.symbols("x0:4", real=True)
    sy = lemmas.maxmin(4).run(np.array(x, dtype=object), backend="sympy")
    assert list(sy) == [sp.Max(x[0], x[1]), sp.Min(x[0], x[1]), sp.Max(x[2], x[3]), sp.Min(x[2], x[3])]
    m = np.array([[1.0, 2.0, 5.0, 4.0], [-1.0, -2.0, 0.0, 3.0]])
    assert lemmas.maxmin(4, rows=2).run(m).tolist() == [[2, 1, 5, 4], [-1, -2, 3, 0]]
    ex = lemmas.maxmin(2, rows=2).run(
        np.array([[Fraction(1, 3), Fraction(1, 2)], [Fraction(-1), Fraction(-2)]]), backend="exact"
    )
    assert ex.tolist() == [[Fraction(1, 2), Fraction(1, 3)], [-1, -2]]


def test_maxmin_ref_on_a_block_at_an_offset() -> None:
    """Composable form: pairs within each row of a stacked block placed after other data."""
    blk = Block.of("X", 3, 2, 4, stack=2)
    res, intents = lemmas.maxmin_ref(MatRef(C.tokens, blk), name="g")
    a = np.random.default_rng(0).normal(size=(2, 2, 4))
    seq = np.concatenate([[9.0, 9.0, 9.0], a.reshape(-1)])
    out = evaluate(res.sop, seq)[3:].reshape(2, 2, 4)
    pairs = a.reshape(2, 2, 2, 2)
    want = np.stack([pairs.max(-1), pairs.min(-1)], axis=-1).reshape(2, 2, 4)
    assert np.array_equal(out, want) and [i.name for i in intents] == ["partner"]


def test_maxmin_cost_no_deeper_than_paper() -> None:
    for n in (2, 10, 64):
        con = lemmas.maxmin(n)
        assert con.cost().layers == 1 < con.paper_cost["layers"]  # type: ignore[index]
        assert con.cost().heads == [1]


def test_maxmin_bad_input() -> None:
    with pytest.raises(ConstructionError, match="length must be even, got 9"):
        lemmas.maxmin(9)
    with pytest.raises(ConstructionError, match="row length must be even, got 3"):
        lemmas.maxmin_ref(MatRef(C.tokens, Block.of("X", 0, 2, 3)))
    con = lemmas.maxmin(4)
    with pytest.raises(ConstructionError, match="length 4"):
        con.run([1.0, 2.0, 3.0])
    with pytest.raises(ConstructionError, match="NaN"):
        con.run([1.0, np.nan, 3.0, 4.0])


def test_mutants_are_caught() -> None:
    """A wrong partner fails the Z3 intent; an identity program fails the exact check."""
    import dataclasses

    from attnsim.constructions.checks import exact_check
    from attnsim.proofs import z3sel

    con = lemmas.maxmin(4, rows=3)
    it = con.intents[0]
    wrong = C.select(C.indices, C.imap(lambda p: p + 1, C.indices), "==")
    res = z3sel.prove_selector(wrong, it.intent, queries=it.queries, length=con.layout.length, timeout=10)
    assert res.ok is False
    mutant = dataclasses.replace(con, program=C.tokens)
    assert exact_check(lambda: mutant)(5.0).ok is False
