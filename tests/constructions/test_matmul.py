"""Lemma (matmul): AB for every shape by count x AHAT mean; three backends."""

from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from attnsim import lemmas


def test_matmul_public_api() -> None:
    con = lemmas.matmul(rows=3, inner=2, cols=4)
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 2)), rng.normal(size=(2, 4))
    out = con.run(a, b)
    assert out.shape == (3, 4) and out.dtype == np.float64
    assert np.max(np.abs(out - a @ b)) <= 1e-15  # measured 0.0
    ex = con.run(a, b, backend="exact")
    assert ex.dtype == object and isinstance(ex[0, 0], Fraction)
    assert (ex == con.reference(a, b, backend="exact")).all()
    sa = sp.Matrix(3, 2, sp.symbols("a0:6"))
    sb = sp.Matrix(2, 4, sp.symbols("b0:8"))
    got = con.run(sa, sb, backend="sympy")
    assert all(sp.expand(x) == 0 for x in (sp.Matrix(got) - sa * sb))
    assert con.cost().layers == 2 and con.paper_ref.startswith("Lemma")


def test_matmul_heads() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(2, 3, 2)), rng.normal(size=(2, 2, 4))
    np.testing.assert_allclose(lemmas.matmul(3, 2, 4, heads=2).run(a, b), a @ b, rtol=0, atol=1e-14)  # measured 2.2e-16


def test_matmul_overflow_is_refused_never_returned() -> None:
    """Lemma (matmul) in float64: a product past 1.8e308 is a clear error naming the node and
    primitive where it overflowed, not an inf in the result."""
    with pytest.raises(
        lemmas.NonFiniteResultError,
        match=r"^matmul: output position \d+ is inf .*node 'out\.products' \(primitive mul\), which gave inf "
        r".*\(overflow\)$",
    ):
        lemmas.matmul(1, 1, 1).run([[1e200]], [[1e200]])
