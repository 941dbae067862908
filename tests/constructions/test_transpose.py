"""Lemma (transpose): A^T for every shape, exact, bit-exact in float64, per-head stacks."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim import lemmas
from attnsim.lemmas import ConstructionError


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(0, 1000))
def test_transpose_bit_exact(r: int, c: int, seed: int) -> None:
    a = np.random.default_rng(seed).normal(size=(r, c))
    assert np.array_equal(lemmas.transpose(r, c).run(a), a.T)


def test_transpose_heads_and_cost() -> None:
    a = np.arange(24.0).reshape(2, 3, 4)
    con = lemmas.transpose(3, 4, heads=2)
    assert np.array_equal(con.run(a), np.swapaxes(a, 1, 2))
    cost = con.cost()
    assert cost.layers <= con.paper_cost["layers"]  # type: ignore[index]
    assert cost.heads == [1]


def test_transpose_rejects_bad_shape_and_nan() -> None:
    con = lemmas.transpose(2, 3)
    with pytest.raises(ConstructionError, match=r"shape \(2, 3\)"):
        con.run(np.zeros((3, 2)))
    with pytest.raises(ConstructionError, match="NaN"):
        con.run(np.full((2, 3), np.nan))
