"""The decoding prover's linear abstraction (``z3_query._LinearTranslator``), behind every
all-sizes selector and stage proof (Lemmas (matmul), (transpose), Theorem 6's stages).

Each product of unknowns is a constant times one fresh integer per monomial, so a bound like
``x <= 10 + D*F  =>  x < 11 + 2*D*F`` (a position inside U's length, written ``(2*D)*F`` on one
side and ``D*F`` on the other) is decided by the linear query alone.  Sound: setting each fresh
integer to its product's value turns a model of the full query into one of the abstraction
(checked on random polynomials); a false bound is still refuted."""

from __future__ import annotations

import math
from typing import Any

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim.proofs.decoding import z3_query
from attnsim.proofs.decoding.rewriting import _Ctx
from attnsim.rasp import core as C
from attnsim.rasp import expr as E

D, F, N = C.Size("D"), C.Size("F"), C.Size("N")
X = E.Var("x")
SIZES = {"D": 1, "F": 1, "N": 1}


def _translator() -> tuple[z3_query._LinearTranslator, dict[str, Any]]:
    env = {n: z3.Int(n) for n in ("D", "F", "N", "x")}
    return z3_query._LinearTranslator(env, [], lower=SIZES), env


def test_one_unknown_per_monomial_whatever_the_bracketing_and_constants() -> None:
    tr, _ = _translator()
    a = tr.term((D * 2) * F)  # (2*D)*F
    b = tr.term(F * D)
    c = tr.term(D * (F * 3))
    assert len(tr.products) == 1
    assert z3.Solver().check(a != 2 * b) == z3.unsat
    assert z3.Solver().check(c != 3 * b) == z3.unsat
    assert [str(f) for f in tr.bounds] == ["mono!0 >= 1"]  # D, F >= 1


def _no_restarts(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the full nonlinear query was asked: the linear abstraction did not decide")


def test_a_length_bound_is_decided_by_the_linear_query(monkeypatch: pytest.MonkeyPatch) -> None:
    """Theorem 6's stage proofs ask this shape (a read position below U's length) hundreds of
    times; keyed by rendering, ``(2*D)*F`` and ``D*F`` were two unrelated unknowns and each such
    query went to the full nonlinear solver (3.5M units, 0.45 s each)."""
    monkeypatch.setattr(z3_query, "_check_with_restarts", _no_restarts)
    hyp = E.BinOp("<=", X, E.lift(10) + D * F + N * N)
    goal = E.BinOp("<", X, E.lift(11) + (D * 2) * F + N * N)
    status, _ = z3_query._z3(goal, [hyp], {}, _Ctx(minimum=dict(SIZES)), SIZES, 10.0)
    assert status == "unsat"


def test_a_false_bound_is_refuted() -> None:
    hyp = E.BinOp("<=", X, E.lift(10) + (D * 2) * F)
    goal = E.BinOp("<", X, E.lift(11) + D * F)  # false at x = 12, D = F = 1
    status, model = z3_query._z3(goal, [hyp], {}, _Ctx(minimum=dict(SIZES)), SIZES, 10.0)
    assert status == "sat"
    assert model["x"] > 10 + model["D"] * model["F"]


_LEAF = st.sampled_from([D, F, N, X, E.lift(2), E.lift(-3)])
_POLY = st.recursive(
    _LEAF, lambda t: st.builds(lambda a, b, op: E.BinOp(op, a, b), t, t, st.sampled_from("*+-")), max_leaves=8
)


def _value(e: E.Expr, at: dict[str, int]) -> int:
    if isinstance(e, E.Const):
        return int(e.value)
    if isinstance(e, E.Var):
        return at[e.name]
    assert isinstance(e, E.BinOp)
    a, b = _value(e.a, at), _value(e.b, at)
    return a * b if e.op == "*" else a + b if e.op == "+" else a - b


@settings(max_examples=60, deadline=None)
@given(_POLY, st.fixed_dictionaries({n: st.integers(-4, 6) for n in ("D", "F", "N", "x")}))
def test_each_unknown_at_its_products_value_gives_the_terms_value(e: E.Expr, at: dict[str, int]) -> None:
    """Soundness: a model of the full query, each fresh integer set to the value of its monomial,
    is a model of the abstraction (so unsat there is unsat here)."""
    tr, env = _translator()
    t = tr.term(e)
    sub = [(env[n], z3.IntVal(v)) for n, v in at.items()]
    values = {E.render(x): _value(x, at) for x in E.nodes(e)}  # each factor is a subterm of e
    for key, mono in tr.products.items():
        sub.append((mono, z3.IntVal(math.prod(values[k] for k in key))))
    assert z3.simplify(z3.substitute(t, *sub)).as_long() == _value(e, at)
