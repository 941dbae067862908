"""Lemma 3 (softmax): row-wise softmax with the true exp, one head, any shape; masked form."""

import dataclasses

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim import lemmas
from attnsim.constructions.checks import exp_canonical, first_difference
from attnsim.constructions.softmax.obligations import masked_sympy_check
from attnsim.lemmas import ConstructionError
from attnsim.proofs import z3sel
from attnsim.rasp import core as C
from attnsim.rasp.engine import evaluate
from attnsim.rasp.layout import Block, MatRef
from attnsim.rasp.schedule import cost


def np_softmax(a: np.ndarray) -> np.ndarray:
    z = np.exp(a - a.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.sampled_from([None, 1, 3]), st.booleans(), st.integers(0, 10**6))
def test_softmax_matches_numpy_and_rows_sum_to_one(r: int, c: int, h: int | None, stable: bool, seed: int) -> None:
    shape = (r, c) if h is None else (h, r, c)
    a = np.random.default_rng(seed).normal(size=shape) * 5
    out = lemmas.softmax(r, c, heads=h, stable=stable).run(a)
    assert out.shape == shape and out.dtype == np.float64
    # measured over 1,500 draws: 5.6e-16 against NumPy, 4.4e-16 for the row sums
    assert np.max(np.abs(out - np_softmax(a))) <= 1e-14
    assert np.max(np.abs(out.sum(axis=-1) - 1)) <= 1e-14


def test_softmax_sympy_true_exp_and_no_exact_backend() -> None:
    x = sp.Matrix(2, 3, sp.symbols("x0:6", real=True))
    con = lemmas.softmax(2, 3)
    got = con.run(x, backend="sympy")
    assert got[0, 1] == sp.exp(x[0, 1]) / (sp.exp(x[0, 0]) + sp.exp(x[0, 1]) + sp.exp(x[0, 2]))
    stable = lemmas.softmax(2, 3, stable=True).run(x, backend="sympy")
    assert first_difference(stable, con.reference(x, backend="sympy"), exp_canonical) is None
    with pytest.raises(ConstructionError, match="exact backend"):
        con.run(np.eye(2, 3), backend="exact")


def test_exp_canonical_is_sound_and_can_fail() -> None:
    x, y = sp.symbols("x y", real=True)
    assert exp_canonical(sp.exp(x + y) - sp.exp(x) * sp.exp(y)) == 0
    assert exp_canonical(sp.exp(x / 2) ** 2 - sp.exp(x)) == 0
    assert exp_canonical(sp.exp(x) / (sp.exp(x) + sp.exp(y)) - 1 / (1 + sp.exp(y - x))) == 0
    assert exp_canonical(sp.exp(x) - sp.exp(y)) != 0
    assert exp_canonical(sp.exp(x) / (sp.exp(x) + sp.exp(y)) - sp.Rational(1, 2)) != 0


def test_softmax_cost_one_layer_one_head_for_every_shape() -> None:
    for r, c, h in ((1, 1, None), (3, 3, None), (64, 64, None), (16, 64, 4)):
        con = lemmas.softmax(r, c, heads=h)
        assert con.cost().layers == 1 and con.cost().heads == [1]
        assert con.cost().layers <= con.paper_cost["layers"]  # type: ignore[index]
        st_cost = lemmas.softmax(r, c, heads=h, stable=True).cost()
        assert st_cost.layers == 2 and st_cost.heads == [1, 1]
        assert st_cost.layers <= con.paper_cost["layers"]  # type: ignore[index]


def test_softmax_bad_input() -> None:
    con = lemmas.softmax(2, 3)
    with pytest.raises(ConstructionError, match=r"shape \(2, 3\)"):
        con.run(np.zeros((3, 2)))
    with pytest.raises(ConstructionError, match="NaN"):
        con.run(np.array([[0.0, np.nan, 1.0], [0.0, 0.0, 0.0]]))
    big = 1000 + np.random.default_rng(0).normal(size=(2, 3))
    with pytest.raises(ConstructionError, match="overflows exp"):
        con.run(big)
    assert np.max(np.abs(lemmas.softmax(2, 3, stable=True).run(big) - np_softmax(big))) <= 5e-15  # measured 5.6e-17
    with pytest.raises(ConstructionError, match="cols must be a positive int"):
        lemmas.softmax(2, 0)


def test_stable_is_the_max_shift_and_finite_on_any_spread() -> None:
    """The stable variant shifts by the true row max (one max head): [1000, 0, -1000] and [1e5, -1e5]
    give the exact float64 softmax, where the plain form refuses (exp overflows) and a mean shift
    overflowed too (max - mean = 1e5 > 709)."""
    a = np.array([[1000.0, 0.0, -1000.0], [1e5, -1e5, 0.0]])
    con = lemmas.softmax(2, 3, stable=True)
    heads = [n for n in C.topological([con.program]) if isinstance(n, C.Aggregate) and n.score is not None]
    assert [n.label for n in heads] == ["out.rowmax"] and heads[0].score is heads[0].values  # a max head
    out = con.run(a)
    assert np.all(np.isfinite(out)) and np.array_equal(out, [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    with pytest.raises(ConstructionError, match="overflows exp"):
        lemmas.softmax(2, 3).run(a)
    masked = lemmas.masked_softmax(2, 3, stable=True)
    for n in (1, 2, 3):  # the max is over the valid columns only: [-1e5, 1e5] masked to n = 1 is [1, 0, 0]
        got = masked.run(-a, [[n]])
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got[:, :n], np_softmax(-a[:, :n]), rtol=0, atol=1e-300)
        assert np.all(got[:, n:] == 0)


spread = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(1, 5), st.data())
def test_stable_softmax_on_spread_rows_against_float64(r: int, c: int, data: st.DataObject) -> None:
    """Any finite rows up to +-1e6 (spreads far above 709): finite, within 1e-15 of NumPy's max-shifted
    softmax (the row sum is cols x the mean: measured <= 1.1e-16 plain, <= 3.3e-16 masked, 600 draws), and
    for the masked form, every n."""
    a = np.array(data.draw(st.lists(st.lists(spread, min_size=c, max_size=c), min_size=r, max_size=r)))
    out = lemmas.softmax(r, c, stable=True).run(a)
    assert np.all(np.isfinite(out))
    assert np.max(np.abs(out - np_softmax(a))) <= 1e-15
    n = data.draw(st.integers(1, c))
    got = lemmas.masked_softmax(r, c, stable=True).run(a, [[n]])
    assert np.all(np.isfinite(got)) and np.all(got[:, n:] == 0)
    assert np.max(np.abs(got[:, :n] - np_softmax(a[:, :n]))) <= 1e-15


def test_stable_softmax_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    a = np.concatenate([[[1000.0, 0.0, -1000.0, 3.0], [1e5, -1e5, 1e5, 0.0]], 1e4 * rng.normal(size=(4, 4))])
    want = torch.softmax(torch.tensor(a, dtype=torch.float64), dim=-1).numpy()
    got = lemmas.softmax(6, 4, stable=True).run(a)
    assert np.max(np.abs(got - want)) <= 1e-15


def test_stable_softmax_non_finite_input_is_refused() -> None:
    con = lemmas.softmax(1, 3, stable=True)
    for bad in (np.inf, -np.inf, np.nan):
        with pytest.raises(ConstructionError, match="NaN or inf"):
            con.run(np.array([[0.0, bad, 1.0]]))


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 5), st.integers(1, 6), st.data(), st.booleans(), st.integers(0, 10**6))
def test_masked_softmax_zero_padding(r: int, c: int, data: st.DataObject, stable: bool, seed: int) -> None:
    n = data.draw(st.integers(1, c))
    a = np.random.default_rng(seed).normal(size=(r, c)) * 5
    out = lemmas.masked_softmax(r, c, stable=stable).run(a, [[n]])
    assert np.all(out[:, n:] == 0)
    assert np.max(np.abs(out[:, :n] - np_softmax(a[:, :n]))) <= 1e-14  # measured 4.4e-16 over 1,500 draws


def test_masked_softmax_bad_n_and_sympy() -> None:
    con = lemmas.masked_softmax(2, 3)
    for bad in (0, 4, 1.5):
        with pytest.raises(ConstructionError, match=r"n must be an integer in 1\.\.3"):
            con.run(np.zeros((2, 3)), [[bad]])
    assert masked_sympy_check(2, 3, 2)(5.0).ok is True
    assert masked_sympy_check(2, 3, 1, heads=2, stable=True)(5.0).ok is True


def test_masked_composable_form_with_a_runtime_n() -> None:
    """valid_cols is any SOp: here n is read from the last token by the caller's own head."""
    blk = Block.of("S", 0, 3, 4)
    n_head = C.aggregate(C.select(C.indices, C.full(12), "=="), C.tokens)
    res, intents = lemmas.softmax_ref(MatRef(C.tokens, blk), name="p", valid_cols=n_head)
    assert [i.name for i in intents] == ["rowsum"]
    a = np.random.default_rng(3).normal(size=(3, 4))
    seq = np.concatenate([a.reshape(-1), [3.0]])
    out = evaluate(res.sop, seq)[:12].reshape(3, 4)
    assert np.all(out[:, 3] == 0)
    np.testing.assert_allclose(out[:, :3], np_softmax(a[:, :3]), rtol=0, atol=5e-15)  # measured 5.6e-17
    assert cost(res.sop).layers == 2  # the caller's n-head, then the row-sum head
    const_n, _ = lemmas.masked_softmax_ref(MatRef(C.tokens, blk), C.full(2), name="q")
    assert cost(const_n.sop).layers == 1


def test_mutants_are_caught() -> None:
    """A wrong selector fails the Z3 intent; a wrong program fails the SymPy check."""
    con = lemmas.softmax(2, 3, heads=2)
    it = con.intents[0]
    row = C.imap(lambda p: p // 3, C.indices)
    wrong = C.select(row, row, "<=")
    res = z3sel.prove_selector(wrong, it.intent, queries=it.queries, length=con.layout.length, timeout=10)
    assert res.ok is False and "counterexample" in res.detail
    mutant = dataclasses.replace(con, program=C.apply("exp", C.tokens))  # forgot to normalize
    x = np.array(sp.symbols("x0:12", real=True), dtype=object).reshape(2, 2, 3)
    got, want = mutant.run(x, backend="sympy"), con.reference(x, backend="sympy")
    assert first_difference(got, want, exp_canonical) is not None
