"""Every rewriting rule of the decoding prover, tested on its own (issue 26, part 7).

The selector proofs behind the all-sizes results (Lemma (matmul), Lemma (transpose), Theorem 6's
gathers) hand Z3 the formulas :mod:`attnsim.proofs.decoding.rewriting` has rewritten in Python: decode-position
((X d + Y) div d = X, mod = Y when 0 <= Y < d), divmod-unique (X1 d + Y1 = X2 d + Y2 as digit
equalities), div-characterization ((P div d) = t as t d <= P < t d + d), interval bounds,
the non-negativity test on size polynomials, and the boolean folding of ``_norm1``.  Each is
checked here by evaluating both sides at random sizes (>= their minimum) and coordinates (in
their extents), the side conditions' boundaries included (a coordinate at extent - 1, a size at
its minimum); a rule whose side condition is dropped (monkeypatched) fails the same check."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
import sympy as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st

from attnsim.proofs.decoding import rewriting as D
from attnsim.rasp import core as C
from attnsim.rasp import expr as E

N, M = C.Size("n"), C.Size("m")
CI, CJ, CT = E.Var("i"), E.Var("j"), E.Var("t")
EXTENTS: dict[str, E.Expr] = {"i": M, "j": N, "t": N + 1}  # i < m, j < n, t < n + 1
RULES = settings(max_examples=80, deadline=None)


def _ctx(minimum: dict[str, int] | None = None) -> D._Ctx:
    """A decoding context with the coordinates i < m, j < n, t < n + 1 (sizes n, m >= 1)."""
    ctx = D._Ctx(minimum=dict(minimum or {"n": 1, "m": 1}))
    for name, ext in EXTENTS.items():
        ctx.extents[name] = ctx.to_sym(ext)
    return ctx


def _points(n_max: int = 4, m_max: int = 3) -> Iterator[dict[str, int]]:
    """Every admissible point with n <= n_max, m <= m_max (the boundaries n = 1, i = m - 1 ... included)."""
    for n, m in itertools.product(range(1, n_max + 1), range(1, m_max + 1)):
        for i, j, t in itertools.product(range(m), range(n), range(n + 1)):
            yield {"n": n, "m": m, "i": i, "j": j, "t": t}


def _value(e: E.Expr, env: dict[str, int]) -> int | None:
    """e's value, None where it has none (a div by a non-positive number)."""
    try:
        return int(e.evaluate(env))
    except E.ExprError:
        return None


def _sym_value(p: sp.Expr, env: dict[str, int]) -> int:
    return int(sp.expand(p).xreplace({sp.Symbol(k, integer=True): v for k, v in env.items()}))


points = st.builds(
    lambda n, m, fi, fj, ft: {"n": n, "m": m, "i": fi % m, "j": fj % n, "t": ft % (n + 1)},
    st.integers(1, 9),
    st.integers(1, 9),
    st.integers(0, 100),
    st.integers(0, 100),
    st.integers(0, 100),
)

# (op, dividend, divisor): instances of decode-position and its near misses
DIVMODS: list[tuple[str, E.Expr, E.Expr]] = [
    (op, a, d)
    for op in ("div", "mod")
    for a, d in (
        (CI * N + CJ, N),  # the rule: X = i, Y = j
        (CI * N + CJ + 1, N),  # Y = j + 1 can be n: must not be rewritten to i
        (CI * (N + 1) + CT, N + 1),  # a sum divisor (split_by_sum)
        (CI * (N + 1) + CJ, N + 1),  # j < n < n + 1
        (CI * 3 + 2, E.Const(3)),
        (CI * 3 + CJ, E.Const(3)),  # j may be >= 3: no rewrite
        ((CI * M + CI) * N + CJ, N),
        (CI * N * M + CJ * M + CI, M),
    )
]


# -- decode-position: (X d + Y) div d = X, mod d = Y when 0 <= Y < d ---------------------------
@RULES
@given(points, st.sampled_from(range(len(DIVMODS))))
@example(p={"n": 1, "m": 1, "i": 0, "j": 0, "t": 1}, k=1)  # sizes at their minimum, t at its extent - 1
@example(p={"n": 3, "m": 2, "i": 1, "j": 2, "t": 3}, k=1)  # j = n - 1: j + 1 = n, the remainder's boundary
def test_decode_position(p: dict[str, int], k: int) -> None:
    op, a, d = DIVMODS[k]
    ctx = _ctx()
    try:
        got = ctx.divmod(op, a, d)
    except D._Refine:  # the prover splits a coordinate and starts again: nothing rewritten
        return
    if got is not None:
        assert _value(got, p) == _value(E.BinOp(op, a, d), p), (op, E.render(a), E.render(d), E.render(got))


def test_decode_position_rewrites_what_it_should() -> None:
    """The rule fires on the instances it exists for (else the property above would be vacuous)."""
    ctx = _ctx()
    quotient, remainder = ctx.divmod("div", CI * N + CJ, N), ctx.divmod("mod", CI * N + CJ, N)
    assert quotient is not None and remainder is not None
    assert (E.render(quotient), E.render(remainder)) == ("i", "j")
    assert ctx.divmod("div", CI * (N + 1) + CT, N + 1) is not None
    assert ctx.divmod("div", CI * N + CJ + 1, N) is None


def test_decode_position_without_its_range_check_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """(i n + j + 1) div n is i only while j + 1 < n: with the range check dropped, wrong at j = n - 1."""
    monkeypatch.setattr(D._Ctx, "in_range", lambda self, y, d: True)
    a = CI * N + CJ + 1
    got = _ctx().divmod("div", a, N)
    assert got is not None
    bad = [p for p in _points() if _value(got, p) != _value(a // N, p)]
    assert bad and all(p["j"] == p["n"] - 1 for p in bad)


# -- divmod-unique: X1 d + Y1 = X2 d + Y2, 0 <= Y < d  <=>  X1 = X2 and Y1 = Y2 -------------------
PAIRS: list[tuple[E.Expr, E.Expr]] = [
    (CI * N + CJ, CT * N + CJ),
    (CI * N + CJ, CI * N + CT),  # t may equal n: the digits are not both in range
    (CI * (N + 1) + CT, CJ * (N + 1) + CT),
    (CI * N * M + CJ * M + CI, CJ * N * M + CI * M + CI),
    (CI * N + CJ + 1, CT * N),  # Y = j + 1 may be n
]


@RULES
@given(points, st.sampled_from(range(len(PAIRS))))
@example(p={"n": 2, "m": 2, "i": 0, "j": 1, "t": 1}, k=4)  # j + 1 = n: i n + n = t n at t = i + 1
def test_divmod_unique(p: dict[str, int], k: int) -> None:
    a, b = PAIRS[k]
    ctx = _ctx()
    parts = ctx.eq_parts(ctx.to_sym(a), ctx.to_sym(b))
    equal = _value(a, p) == _value(b, p)
    assert equal == all(_sym_value(x, p) == _sym_value(y, p) for x, y in parts)


def test_divmod_unique_without_its_range_check_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """i n + j + 1 = t n split into digits although j + 1 may be n: wrong at some admissible point."""
    monkeypatch.setattr(D._Ctx, "in_range", lambda self, y, d: True)
    a, b = CI * N + CJ + 1, CT * N
    ctx = _ctx()
    parts = ctx.eq_parts(ctx.to_sym(a), ctx.to_sym(b))
    assert any(
        (_value(a, p) == _value(b, p)) != all(_sym_value(x, p) == _sym_value(y, p) for x, y in parts) for p in _points()
    )


# -- div-characterization: (P div d) = t  <=>  t d <= P < t d + d, d >= 1 -------------------------
@RULES
@given(points, st.sampled_from([N, M, N + 1, E.Const(1), N * M]), st.sampled_from([CI + CJ, CI * N + CJ + CT, CJ * CJ]))
@example(p={"n": 1, "m": 1, "i": 0, "j": 0, "t": 0}, d=N, x=CI + CJ)  # d at its minimum 1
def test_div_characterization(p: dict[str, int], d: E.Expr, x: E.Expr) -> None:
    ctx = _ctx()
    u = E.BinOp("div", x, d)
    for t in (CT, CI, CJ + 1):
        got = ctx.compare("==", u, t)
        assert got is not None
        assert _value(got, p) == _value(u.eq(t), p), (E.render(got), p)


def test_div_characterization_needs_a_positive_divisor() -> None:
    """With d = n - 1 (0 at n = 1) the rule must not fire: the comparison keeps its div."""
    ctx = _ctx()
    got = ctx.compare("==", E.BinOp("div", CI + CJ, N - 1), CT)
    assert got is not None and "div" in E.render(got)


# -- interval bounds and non-negativity ----------------------------------------------------------
POLYS: list[E.Expr] = [
    CI * N + CJ,
    CI * N - CJ,
    N * M - CI * N - CJ - 1,
    CI * CJ - CT,
    (CI + 1) * (CJ + 1) - N * M,
    CT * CT - CI,
]


@RULES
@given(points, st.sampled_from(range(len(POLYS))))
@example(p={"n": 4, "m": 3, "i": 2, "j": 3, "t": 4}, k=0)  # every coordinate at extent - 1
@example(p={"n": 1, "m": 1, "i": 0, "j": 0, "t": 0}, k=2)  # every size at its minimum
def test_interval_bounds(p: dict[str, int], k: int) -> None:
    """lb <= T <= ub at every admissible point, for every bound the procedure gives."""
    ctx = _ctx()
    poly = ctx.to_sym(POLYS[k])
    val = _sym_value(poly, p)
    lo, hi = ctx.bound(poly, upper=False), ctx.bound(poly, upper=True)
    if lo is not None:
        assert _sym_value(lo, p) <= val
    if hi is not None:
        assert val <= _sym_value(hi, p)


def test_interval_bounds_refuse_a_size_of_unknown_sign() -> None:
    """A size whose minimum is negative times a coordinate gets no bound (its sign is unknown)."""
    ctx = _ctx({"n": -2, "m": 1})
    assert ctx.bound(ctx.to_sym(CI * N), upper=True) is None
    assert _ctx().bound(_ctx().to_sym(CI * N), upper=True) is not None


SIZE_POLYS: list[E.Expr] = [N - 1, N - 2, N * M - N, M - N, N * N - 2 * N + 1, N * M - 1, E.Const(0) - N]


@RULES
@given(st.integers(1, 20), st.integers(1, 20), st.sampled_from(range(len(SIZE_POLYS))))
@example(n=1, m=1, k=0)
@example(n=1, m=1, k=1)  # n - 2 < 0 at the minimum: must not be said >= 0
def test_nonneg(n: int, m: int, k: int) -> None:
    ctx = _ctx()
    p = ctx.to_sym(SIZE_POLYS[k])
    if ctx.nonneg(p):
        assert _sym_value(p, {"n": n, "m": m}) >= 0


def test_nonneg_says_yes_where_it_should() -> None:
    ctx = _ctx()
    assert ctx.nonneg(ctx.to_sym(N - 1)) and ctx.nonneg(ctx.to_sym(N * M - N))
    assert not ctx.nonneg(ctx.to_sym(N - 2)) and not ctx.nonneg(ctx.to_sym(M - N))


def _nonneg_ignoring_the_minimum(self: D._Ctx, p: sp.Expr) -> bool:
    """``_nonneg`` with its side condition (each size shifted by *its* minimum) replaced by 2 for all."""
    if p.is_Number:
        return bool(p >= 0)
    subs = {s: sp.Symbol(f"shift_{s.name}", nonnegative=True) + 2 for s in p.free_symbols}
    q = sp.expand(p.xreplace(subs))
    return all(c.is_Number and c >= 0 for c in q.as_coefficients_dict().values())


def test_nonneg_with_the_minimum_ignored_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shift by each size's minimum is the side condition: n - 2 is >= 0 for n >= 2, not for n >= 1."""
    assert _ctx({"n": 2, "m": 1}).nonneg(_ctx().to_sym(N - 2))
    monkeypatch.setattr(D._Ctx, "_nonneg", _nonneg_ignoring_the_minimum)
    ctx = _ctx()
    p = ctx.to_sym(N - 2)
    assert ctx.nonneg(p) and _sym_value(p, {"n": 1}) < 0  # said >= 0, and -1 at n = 1


# -- the whole rewriting, on random formulas ------------------------------------------------------
def _terms() -> st.SearchStrategy[E.Expr]:
    leaves = st.sampled_from([CI, CJ, CT, N, M, E.Const(0), E.Const(1), E.Const(2)])

    def grow(sub: st.SearchStrategy[E.Expr]) -> st.SearchStrategy[E.Expr]:
        return st.one_of(
            st.builds(lambda a, b: a + b, sub, sub),
            st.builds(lambda a, b: a * b, sub, sub),
            st.builds(lambda a, b: a - b, sub, sub),
            st.builds(lambda a, d: E.BinOp("div", a, d), sub, st.sampled_from([N, M, N + 1, E.Const(2)])),
            st.builds(lambda a, d: E.BinOp("mod", a, d), sub, st.sampled_from([N, M, N + 1, E.Const(3)])),
            st.builds(lambda a: a * N + CJ, sub),  # a decodable position
        )

    return st.recursive(leaves, grow, max_leaves=6)


def _formulas() -> st.SearchStrategy[E.Expr]:
    ops = st.sampled_from(["==", "!=", "<", "<=", ">", ">="])
    atoms = st.builds(lambda op, a, b: E.BinOp(op, a, b), ops, _terms(), _terms())

    def grow(sub: st.SearchStrategy[E.Expr]) -> st.SearchStrategy[E.Expr]:
        return st.one_of(
            st.builds(lambda a, b: a & b, sub, sub),
            st.builds(lambda a, b: a | b, sub, sub),
            st.builds(lambda a: ~a, sub),
            st.builds(lambda a: a & E.Const(1), sub),
            st.builds(lambda a: E.Const(0) | a, sub),
        )

    return st.recursive(atoms, grow, max_leaves=4)


@settings(max_examples=150, deadline=None)
@given(_formulas(), points)
def test_the_whole_rewriting_keeps_every_value(formula: E.Expr, p: dict[str, int]) -> None:
    """ctx.norm (decode-position, divmod-unique, div-characterization, the boolean folds, all at
    once) changes no formula's truth at any admissible point."""
    want = _value(formula, p)
    if want is None:
        return
    try:
        got = _ctx().norm(formula)
    except D._Refine:
        return
    assert _value(got, p) == want, (E.render(formula), E.render(got), p)


def test_split_by_sum_is_kept_by_its_exact_operands() -> None:
    """The kept quotient and remainder of a by d (D._split_by_sum) are those of the very
    operands: another divisor, or a symbol of the same name with other assumptions, is divided again."""
    dd, i = sp.Symbol("D", integer=True), sp.Symbol("i", integer=True)
    a = sp.expand(i * (dd + 1) + 3)
    assert D._split_by_sum(a, dd + 1) == (i, 3)
    assert D._split_by_sum(a, dd + 1) == (i, 3)  # kept
    x, y = D._split_by_sum(a, dd + 2)
    assert sp.expand(x * (dd + 2) + y - a) == 0 and (x, y) != (i, 3)
    plain = sp.Symbol("D")
    assert D._split_by_sum(a, plain + 1) == (0, a)  # not the integer D: no polynomial split
