"""Activation ReLU: max(x, 0) element-wise with no attention, on every backend."""

from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim import lemmas
from attnsim.lemmas import ConstructionError

floats = st.floats(-1e6, 1e6, allow_nan=False)


@settings(max_examples=40, deadline=None)
@given(st.lists(floats, min_size=1, max_size=20))
def test_relu_is_max_with_zero(xs: list[float]) -> None:
    out = lemmas.relu(len(xs)).run(np.array(xs))
    assert out.shape == (len(xs),)
    assert np.array_equal(out, np.maximum(np.array(xs), 0.0))


def test_relu_backends_and_matrix() -> None:
    xs = [Fraction(-3, 2), Fraction(0), Fraction(7, 3)]
    ex = lemmas.relu(3).run(np.array(xs, dtype=object), backend="exact")
    assert list(ex) == [0, 0, Fraction(7, 3)] and isinstance(ex[2], Fraction)
    x = sp.symbols("x0:3", real=True)
    sy = lemmas.relu(3).run(np.array(x, dtype=object), backend="sympy")
    assert all(sp.simplify(g - sp.Max(v, 0)) == 0 for g, v in zip(sy, x, strict=True))
    m = np.arange(-3.0, 3.0).reshape(2, 3)
    assert np.array_equal(lemmas.relu(3, rows=2).run(m), np.maximum(m, 0))


def test_relu_costs_no_attention() -> None:
    for n in (1, 64):
        con = lemmas.relu(n)
        assert con.cost().layers == 0 == con.paper_cost["layers"]  # type: ignore[index]
        assert con.cost().heads == []


def test_relu_bad_input() -> None:
    con = lemmas.relu(3)
    with pytest.raises(ConstructionError, match="length 3"):
        con.run(np.zeros(4))
    with pytest.raises(ConstructionError, match="NaN"):
        con.run(np.array([0.0, np.nan, 1.0]))
    with pytest.raises(ConstructionError, match="NaN"):
        con.run(np.array([0.0, np.nan, 1.0], dtype=object), backend="exact")
    with pytest.raises(ConstructionError, match="length must be a positive int"):
        lemmas.relu(0)
