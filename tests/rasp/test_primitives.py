"""Every registered primitive: its NumPy, exact and SymPy meanings agree (docs/semantics.md)."""

import math
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from attnsim.rasp import primitives as P

SAMPLES = [Fraction(-3, 2), Fraction(0), Fraction(1, 3), Fraction(2), Fraction(9, 4)]


def _args(prim: P.Primitive) -> list[tuple[Fraction, ...]]:
    if prim.arity == 1:
        return [(x,) for x in SAMPLES]
    if prim.arity == 2:
        return [(x, y) for x in SAMPLES for y in SAMPLES]
    return [(c, x, y) for c in (Fraction(0), Fraction(1)) for x in SAMPLES[:2] for y in SAMPLES[2:]]


def _params(prim: P.Primitive) -> tuple[Fraction, ...]:
    return tuple(Fraction(k + 2, 3) for k in range(prim.n_params))


@pytest.mark.parametrize("name", P.names())
def test_three_meanings_agree(name: str) -> None:
    prim = P.get(name)
    ps = _params(prim)
    assert prim.realization in P.REALIZATIONS
    for xs in _args(prim):
        if (name in ("reciprocal",) and xs[0] == 0) or (name == "div" and xs[1] == 0):
            continue
        if name == "sqrt" and xs[0] < 0:
            continue
        num = float(prim.numpy(*(np.array([float(x)]) for x in xs), *(float(p) for p in ps))[0])
        sym = prim.sympy(
            *(sp.Rational(x.numerator, x.denominator) for x in xs),
            *(sp.Rational(p.numerator, p.denominator) for p in ps),
        )
        # float64 against SymPy to 30 digits: measured <= 4.4e-16 absolute, 1.9e-16 relative (values
        # of every size, so both parts are meant)
        assert math.isclose(num, float(sp.N(sym, 30)), rel_tol=1e-14, abs_tol=1e-14), (name, xs)
        if prim.exact is not None:
            try:
                ex = prim.exact(*xs, *ps)
            except P.PrimitiveError:
                assert name == "sqrt"  # irrational square roots have no exact value
                continue
            assert sp.Rational(ex.numerator, ex.denominator) == sp.nsimplify(sym), (name, xs)


def test_exact_errors_are_clear() -> None:
    with pytest.raises(P.PrimitiveError, match="reciprocal of 0"):
        P.get("reciprocal").exact(Fraction(0))  # type: ignore[misc]
    with pytest.raises(P.PrimitiveError, match="irrational"):
        P.get("sqrt").exact(Fraction(2))  # type: ignore[misc]
    with pytest.raises(P.PrimitiveError, match="unknown primitive 'nope'"):
        P.get("nope")


def test_realization_tags() -> None:
    assert P.get("relu").realization == "relu-exact"
    assert P.get("max").realization == "relu-exact"
    assert P.get("exp").realization == "generalized"
    assert P.get("mul").realization == "generalized"


def test_sympy_relu_decides_the_sign_from_assumptions_only() -> None:
    """SymPy's relu: a number or a sign known from assumptions is decided; otherwise Max(0, x) unevaluated
    (an evaluated Max runs factor_terms on x: 181 s of one whole-U GELU check)."""
    relu = P.get("relu").sympy
    x = sp.Symbol("x", real=True)
    p = sp.Symbol("p", positive=True)
    assert relu(sp.Rational(-3, 2)) == 0 and relu(sp.Rational(5, 2)) == sp.Rational(5, 2)
    assert relu(p**2 + 1) == p**2 + 1
    assert relu(-(p**2) - 1) == 0
    got = relu(x - 1)
    assert isinstance(got, sp.Max) and set(got.args) == {sp.S.Zero, x - 1}
    assert got.subs(x, 3) == 2 and got.subs(x, -3) == 0
