"""Compiled index expressions (attnsim/rasp/compiled_expr.py) give the interpreter's values and
errors; the int32 path is taken only where interval arithmetic proves it exact.  They back every
numeric run of the constructions and of U (Theorem 6): its index maps run compiled."""

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim.rasp import compiled_expr as CE
from attnsim.rasp import expr as E

ARGS = ("x0", "x1")
OPS = ("+", "-", "*", "div", "mod", "min", "max", "==", "!=", "<", "<=", ">", ">=", "and", "or")


def _exprs() -> st.SearchStrategy[E.Expr]:
    leaves = st.one_of(
        st.sampled_from([E.Var("x0"), E.Var("x1"), E.Var("n")]),
        st.integers(-4, 9).map(E.Const),
    )

    def extend(sub: st.SearchStrategy[E.Expr]) -> st.SearchStrategy[E.Expr]:
        return st.one_of(
            st.tuples(st.sampled_from(OPS), sub, sub).map(lambda t: E.BinOp(t[0], t[1], t[2])),
            sub.map(E.Not),
            st.tuples(sub, sub, sub).map(lambda t: E.If(t[0], t[1], t[2])),
        )

    return st.recursive(leaves, extend, max_leaves=12)


def _outcome(fn: Any) -> Any:
    try:
        return ("value", np.asarray(fn(), dtype=np.int64).tolist())
    except E.ExprError:
        return ("error",)


def agree(code: CE.CompiledExpr, e: E.Expr, env: dict[str, Any]) -> bool:
    """The compiled code and the interpreter give the same values (or both an ExprError)."""
    args = [env[a] for a in code.argnames]
    return bool(_outcome(lambda: code(*args)) == _outcome(lambda: e.evaluate(env)))


@settings(max_examples=300, deadline=None)
@given(_exprs(), st.integers(1, 6), st.integers(-20, 40))
def test_compiled_equals_interpreted(e: E.Expr, n: int, start: int) -> None:
    x0 = np.arange(start, start + 23, dtype=np.int64)
    x1 = (x0 * 7) % 11 - 3
    code = CE.compile_expr(e, ARGS, {"n": n})
    assert agree(code, e, {"x0": x0, "x1": x1, "n": n}), CE.describe(code)


def test_common_subexpressions_are_computed_once() -> None:
    """A grid decoding written twice (as layout.coords writes it) is one step."""
    p, d = E.Var("x0"), E.Var("d")
    e = ((p - 3) // d) % 5 + ((p - 3) // d) * ((p - 3) % d)
    code = CE.compile_expr(e, ("x0",), {"d": 4})
    divs = [st for st in code.steps if st.text == "div"]
    assert len(divs) == 2  # (p - 3) div d, and its div 5 (for the mod); not one per occurrence
    assert agree(code, e, {"x0": np.arange(100, dtype=np.int64), "d": 4})


def test_int32_only_where_every_intermediate_fits() -> None:
    p = E.Var("x0")
    square = p * p - p
    code = CE.compile_expr(square, ("x0",), {})
    assert code.fits_int32([(0, 40_000)])
    assert not code.fits_int32([(0, 50_000)])  # 50,000^2 > 2^31
    big = np.array([0, 49_999, 3], dtype=np.int64)
    assert code(big).tolist() == (big * big - big).tolist()  # int64: no wrap-around


def test_errors_match_the_interpreter() -> None:
    p, n = E.Var("x0"), E.Var("n")
    with pytest.raises(E.ExprError, match="non-positive"):
        CE.compile_expr(p // n, ("x0",), {"n": 0})(np.arange(3))
    with pytest.raises(E.ExprError, match="non-positive"):
        CE.compile_expr(p % (p - 1), ("x0",), {})(np.arange(3))
    with pytest.raises(E.ExprError, match="unbound variable 'q'"):
        CE.compile_expr(p + E.Var("q"), ("x0",), {})(np.arange(3))
    with pytest.raises(E.ExprError, match="expected 1 argument"):
        CE.compile_expr(p, ("x0",), {})()


def test_a_wrong_interval_rule_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation: an interval rule that understates a product lets int32 wrap; the comparison
    with the interpreter (the property above) fails on it."""
    p = E.Var("x0")
    e = p * p
    env = {"x0": np.array([0, 60_000], dtype=np.int64)}
    assert agree(CE.compile_expr(e, ("x0",), {}), e, env)
    real = CE._interval
    monkeypatch.setattr(CE, "_interval", lambda text, ins: (0, 1) if text == "*" else real(text, ins))
    assert not agree(CE.compile_expr(e, ("x0",), {}), e, env)


def test_a_wrong_operation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation: ``min`` compiled as ``max`` disagrees with the interpreter."""
    e = E.emin(E.Var("x0"), 3)
    monkeypatch.setitem(CE._INT_OPS, "min", CE._maximum)
    assert not agree(CE.compile_expr(e, ("x0",), {}), e, {"x0": np.arange(6, dtype=np.int64)})
