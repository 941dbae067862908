"""Index expressions: one definition, evaluated in NumPy, translated to Z3 and SymPy consistently."""

import numpy as np
import sympy as sp
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim.rasp import expr as E
from attnsim.rasp.core import Size
from attnsim.rasp.z3_translation import Z3Translator


def _reflected(n: E.Expr) -> E.Expr:
    p = E.Var("p")
    return (p % n) * n + p // n


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 9))
def test_numpy_z3_sympy_agree(n: int) -> None:
    e = _reflected(Size("n", n))
    ps = np.arange(n * n)
    got = e.evaluate({"n": n, "p": ps})
    assert sorted(got.tolist()) == list(range(n * n))  # a permutation
    for p in range(0, n * n, max(1, n // 2)):
        side: list[object] = []
        zt = Z3Translator({"n": z3.IntVal(n), "p": z3.IntVal(p)}, side).term(e)
        s = z3.Solver()
        s.add(*side)
        v = z3.Int("v")
        s.add(v == zt)
        assert s.check() == z3.sat and s.model()[v].as_long() == got[p]
        assert int(e.to_sympy({"n": sp.Integer(n), "p": sp.Integer(p)})) == got[p]


def test_if_min_max_and_booleans() -> None:
    x = E.Var("x")
    e = E.if_((x > 2) & ~(x.eq(5)), E.emin(x, 4), E.emax(x, 1))
    assert e.evaluate({"x": np.arange(7)}).tolist() == [1, 1, 2, 3, 4, 5, 4]


def test_division_by_nonpositive_is_an_error() -> None:
    import pytest

    with pytest.raises(E.ExprError, match="non-positive"):
        (E.Var("p") // E.Var("n")).evaluate({"p": 3, "n": 0})
    with pytest.raises(E.ExprError, match="unbound variable 'q'"):
        E.Var("q").evaluate({})


def test_render_is_readable() -> None:
    assert E.render(_reflected(E.Var("n"))) == "(((p mod n) * n) + (p div n))"


def test_a_fingerprint_writes_only_bound_sizes_as_values() -> None:
    """Review finding: a bound and an unbound size of one name, or an argument named like a bound
    size, must not collide with constants (the fingerprint identifies the program)."""
    from attnsim.rasp import core as C
    from attnsim.rasp import expr as E

    assert C.shape_text(C.Size("n", 3) + C.Size("n")) == "(3 + n)"
    fn = C.IndexFn(E.Var("x0") + C.Size("x0", 2), ("x0",))
    assert fn.fingerprint != C.IndexFn(E.Const(2) + E.Const(2), ("x0",)).fingerprint
