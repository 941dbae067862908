"""Every rule of the Sum normal form, tested on its own (issue 26, part 7): the all-sizes proofs
(Lemma (matmul), Lemma 3 (softmax), Theorem 6's layer ...) trust :mod:`attnsim.symbolic.sums` and
:mod:`attnsim.symbolic.sumsplit`; here each rule's two sides are evaluated by brute force (Python
loops over ``range``, the textbook meaning of a finite sum) at random concrete bounds and values,
including each side condition's boundary, and a rule with its side condition dropped
(monkeypatched) is shown to fail the same property."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any

import pytest
import sympy as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st

from attnsim.symbolic import sums, sumsplit
from attnsim.symbolic.if_then_else import Ite
from attnsim.symbolic.positivity import Signs
from attnsim.symbolic.program_equals_spec import _possibly_negative_sum

A, B = sp.IndexedBase("A"), sp.IndexedBase("B")
V, W, U = (sp.Symbol(s, integer=True) for s in ("v", "w", "u"))
LO, HI, M, X = (sp.Symbol(s, integer=True) for s in ("lo", "hi", "m", "x"))
NOSIGNS = Signs({}, {})
RULES = settings(max_examples=60, deadline=None)


# -- the brute-force meaning of an expression with finite sums ------------------------------------
class Entries:
    """Operand entries A[idx], B[idx]: small integers drawn once per index (a fixed random table)."""

    def __init__(self, draw: Callable[[], int]) -> None:
        self.draw = draw
        self.table: dict[tuple[str, tuple[int, ...]], int] = {}

    def __call__(self, base: str, idx: tuple[int, ...]) -> int:
        key = (base, idx)
        if key not in self.table:
            self.table[key] = self.draw()
        return self.table[key]



def _forget_kept_forms() -> None:
    """Drop the normal forms kept so far (``sums._sum``, ``sums.normal_forms``): after a rule is
    sabotaged, the next normal form is computed with it, never read from before."""
    sums._sum.cache_clear()
    sums.normal_forms.cache_clear()

def value(e: Any, env: Mapping[Any, int], entries: Entries) -> Any:
    """``e`` with every symbol from ``env``, every operand entry from ``entries``, and every Sum a
    Python loop over ``range(lo, hi + 1)`` (empty when hi < lo: what range() means)."""
    if isinstance(e, sp.Sum):
        return _loop(e.function, list(e.limits), env, entries)
    if isinstance(e, sp.Product):  # exp of a sum, expanded: a finite product
        return _loop(e.function, list(e.limits), env, entries, product=True)
    if isinstance(e, sp.Indexed):
        return sp.Integer(entries(str(e.base), tuple(int(value(i, env, entries)) for i in e.indices)))
    if isinstance(e, sp.Symbol):
        return sp.Integer(env[e])
    if isinstance(e, Ite):
        c = value(e.args[0], env, entries)
        return value(e.args[1] if c == sp.true else e.args[2], env, entries)
    if not e.args:
        return e
    return e.func(*(value(a, env, entries) for a in e.args))


def _loop(body: Any, limits: list[Any], env: Mapping[Any, int], entries: Entries, product: bool = False) -> Any:
    if not limits:
        return value(body, env, entries)
    var, lo, hi = limits[-1]  # SymPy lists the innermost limit first
    total: Any = sp.Integer(1 if product else 0)
    for k in range(int(value(lo, env, entries)), int(value(hi, env, entries)) + 1):
        term = _loop(body, limits[:-1], {**env, var: k}, entries, product)
        total = total * term if product else total + term
    return total


def same_value(a: Any, b: Any) -> bool:
    d = sp.N(a - b, 30)
    return abs(float(d)) <= 1e-9 * (1 + abs(float(sp.N(a, 30))))


def agrees(before: Any, after: Any, env: Mapping[Any, int], entries: Entries) -> bool:
    return same_value(value(before, env, entries), value(after, env, entries))


values = st.integers(-3, 3)
bounds = st.integers(-2, 5)


def _entries(data: st.DataObject) -> Entries:
    return Entries(lambda: data.draw(values))


# -- rules 1, 2: linearity, constant factors, the count -------------------------------------------
@RULES
@given(st.data(), bounds, st.integers(0, 6), values, values, values)
@example(data=None, lo=3, length=0, a=1, b=2, c=3)  # hi = lo - 1, the side condition's boundary: empty
def test_linearity_constant_factors_and_the_count(data: Any, lo: int, length: int, a: int, b: int, c: int) -> None:
    """Sum(a f + b g) = a Sum f + b Sum g, Sum(c x) = c x (hi - lo + 1), for hi >= lo - 1."""
    hi = lo + length - 1
    ents = _entries(data) if data is not None else Entries(itertools.cycle([2, -1, 3]).__next__)
    before = sp.Sum(a * A[V] + b * A[V] * B[V + 1] + c * X + X * A[V] ** 2, (V, LO, HI))
    after = sums.normal_form(before)
    assert agrees(before, after, {LO: lo, HI: hi, X: 2}, ents)


def test_the_count_needs_hi_at_least_lo_minus_1() -> None:
    """Below the boundary (hi = lo - 2) the count c (hi - lo + 1) is -c, not the empty sum's 0: the
    rule's premise, which the all-sizes proof enforces (a spec sum not shown of length >= 0 fails)."""
    before = sp.Sum(X, (V, LO, HI))
    after = sums.normal_form(before)
    assert not agrees(before, after, {LO: 3, HI: 1, X: 2}, Entries(lambda: 0))
    assert _possibly_negative_sum(before) is not None  # the premise is checked where the rule is used
    n = sp.Symbol("n", integer=True, positive=True)
    assert _possibly_negative_sum(sp.Sum(X, (V, 0, n - 1))) is None


# -- rule 3: renaming, Fubini, distributivity, powers of a sum ---------------------------------------
@RULES
@given(st.data(), st.integers(0, 4), st.integers(0, 4), st.booleans())
def test_nested_sums_merge_into_one_multiple_sum(data: Any, n: int, k: int, triangular: bool) -> None:
    """Sum_v A[v] Sum_w B[v, w] = Sum_{v, w} A[v] B[v, w] (distributivity, inner names made apart),
    with w's bound depending on v (triangular: no reordering allowed) or not."""
    upper = V if triangular else X - 1
    inner = sp.Sum(B[V, W] * A[W], (W, 0, upper))
    before = sp.Sum(A[V] * inner + A[V] * inner**2, (V, 0, M - 1))
    assert agrees(before, sums.normal_form(before), {M: n, X: k}, _entries(data))


@RULES
@given(st.data(), st.integers(0, 4), st.integers(0, 4))
def test_renaming_never_captures(data: Any, n: int, k: int) -> None:
    """An inner sum the merge cannot reach (inside exp) keeps its own bound variable apart from
    the outer one's new name, and two sums equal up to names have one normal form."""
    before = sp.Sum(A[V] * sp.exp(sp.Sum(B[V, W], (W, 0, X - 1))), (V, 0, M - 1))
    after = sums.normal_form(before)
    assert agrees(before, after, {M: n, X: k}, _entries(data))
    renamed = before.xreplace({V: U})
    assert sums.normal_form(renamed) == after


def _fubini_without_independence(body: Any, limits: list[tuple[Any, Any, Any]]) -> Any:
    """``_canonical_sum`` with its side condition dropped: every order tried even when a bound
    mentions another limit's variable."""
    names = [v for v, _, _ in limits]
    base = sums._fresh_level(body.xreplace(dict.fromkeys(names, sp.Integer(0))))
    best: Any = None
    for order in itertools.permutations(limits):
        ren = {v: sums.bound_symbol(base + k) for k, (v, _, _) in enumerate(order)}
        cand = sp.Sum(body.xreplace(ren), *((ren[v], a.xreplace(ren), b.xreplace(ren)) for v, a, b in order))
        if best is None or sp.sstr(cand) < sp.sstr(best):
            best = cand
    return best


def test_fubini_with_its_side_condition_dropped_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reordering limits whose bounds depend on each other (a triangular sum) is wrong: with the
    independence check dropped the triangular case of the property above fails."""
    before = sp.Sum(A[V] * sp.Sum(B[V, W], (W, 0, V)), (V, 0, M - 1))
    ents = Entries(itertools.cycle([1, 2, -1, 3, 0, 2, 1]).__next__)
    assert agrees(before, sums.normal_form(before), {M: 3}, ents)
    monkeypatch.setattr(sums, "_canonical_sum", _fubini_without_independence)
    _forget_kept_forms()
    try:
        ok = agrees(before, sums.normal_form(before), {M: 3}, ents)
    except KeyError:  # a bound reads a variable that no enclosing sum binds any more: no value at all
        ok = False
    assert not ok


def test_renaming_with_its_freshness_dropped_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The new name must be fresh against every β in the body; always β0 captures the inner sum's."""
    before = sp.Sum(A[V] * sp.exp(sp.Sum(B[V, W], (W, 0, X - 1))), (V, 0, M - 1))
    ents = Entries(itertools.cycle([1, 2, -1, 3, 0, 2, 1]).__next__)
    monkeypatch.setattr(sums, "_fresh_level", lambda e: 0)
    _forget_kept_forms()
    assert not agrees(before, sums.normal_form(before), {M: 2, X: 2}, ents)


# -- rule 4: exp of a sum ----------------------------------------------------------------------------
@RULES
@given(st.data(), st.integers(0, 4))
def test_exp_of_a_sum_is_a_product(data: Any, n: int) -> None:
    before = sp.Sum(sp.exp(A[V] + X) * B[V], (V, 0, M - 1))
    assert agrees(before, sums.normal_form(before), {M: n, X: 1}, _entries(data))


# -- rule 6: flags -------------------------------------------------------------------------------------
@RULES
@given(st.integers(-3, 3), st.integers(-3, 3), st.integers(1, 4))
def test_flags(a: int, b: int, k: int) -> None:
    """Ne(Ite(c, 1, 0), 0) is c; Ite(c, 1, 0)^k = Ite(c, 1, 0) for k >= 1 (k = 1: the boundary)."""
    flag = Ite(X < M, 1, 0)
    env = {X: a, M: b}
    ne = sp.Ne(flag, 0, evaluate=False)
    assert value(sums._flag_condition(ne), env, Entries(lambda: 0)) == value(ne, env, Entries(lambda: 0))
    power = sp.Pow(flag, k, evaluate=False)
    assert value(sums._flag_powers(power), env, Entries(lambda: 0)) == value(power, env, Entries(lambda: 0))


def test_a_flag_power_needs_a_positive_exponent() -> None:
    """At k = -1 (outside the side condition) the rule is not applied: the flag's power stays."""
    flag = Ite(X < M, 1, 0)
    p = sp.Pow(flag, -1, evaluate=False)
    assert sums._flag_powers(p) == p


# -- rule 7: guards ------------------------------------------------------------------------------------
@RULES
@given(st.data(), st.integers(-3, 3), st.integers(-3, 3))
def test_guards(data: Any, a: int, b: int) -> None:
    """In the then-branch of Ite(c, p, q) c is true, in the else-branch false."""
    c = X < M
    inner = Ite(c, A[0], B[0])
    before = Ite(c, inner + 1, 2 * inner)
    after = sums._guarded(before)
    assert agrees(before, after, {X: a, M: b}, _entries(data))


def test_guards_with_the_branches_swapped_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    c = X < M
    before = Ite(c, Ite(c, A[0], B[0]), Ite(c, A[1], B[1]))
    ents = Entries(itertools.cycle([1, 2, 3, 4]).__next__)

    def swapped(e: Any) -> Any:
        cond, p, q = e.args
        return Ite(cond, p.xreplace({cond: sp.false}), q.xreplace({cond: sp.true}))

    assert agrees(before, sums._guarded(before), {X: 0, M: 1}, ents)
    assert not agrees(before, swapped(before), {X: 0, M: 1}, ents)


# -- rule 8: truncation ------------------------------------------------------------------------------
@RULES
@given(st.data(), bounds, st.integers(0, 6), st.integers(-2, 8))
@example(data=None, lo=0, length=3, m=4)  # m = hi + 1: the boundary, applied
@example(data=None, lo=0, length=3, m=5)  # m = hi + 2: outside, must not be applied
@example(data=None, lo=2, length=3, m=2)  # m = lo: applied (empty)
@example(data=None, lo=2, length=3, m=1)  # m = lo - 1: outside
def test_truncation(data: Any, lo: int, length: int, m: int) -> None:
    """Sum_{v=lo}^{hi} Ite(v < m, f, 0) = Sum_{v=lo}^{m-1} f exactly when lo <= m <= hi + 1 is
    known; at concrete bounds, every m is tried (outside the range the rule must not fire)."""
    hi = lo + length - 1
    ents = _entries(data) if data is not None else Entries(itertools.cycle([1, 2, -1, 3]).__next__)
    before = sp.Sum(Ite(V < m, A[V] + 1, 0), (V, lo, hi))
    after = sums.normal_form(before)
    assert agrees(before, after, {}, ents)


@RULES
@given(st.data(), st.integers(0, 4), st.integers(0, 4))
def test_truncation_on_symbols_with_signs(data: Any, u: int, v: int) -> None:
    """The executor's case split: m = u + 1 <= hi + 1 = u + v + 1 (u, v >= 0) decided by the signs."""
    un, vn = sp.Symbol("u", integer=True, nonnegative=True), sp.Symbol("v", integer=True, nonnegative=True)
    before = sp.Sum(Ite(V < un + 1, A[V], 0), (V, 0, un + vn))
    after = sums.normal_form(before)
    assert not after.has(Ite)  # applied
    assert agrees(before, after, {un: u, vn: v}, _entries(data))


def _truncate_unguarded(body: Any, var: Any, lo: Any, hi: Any) -> tuple[Any, Any] | None:
    """Rule 8 with its side condition lo <= m <= hi + 1 dropped."""
    if not (isinstance(body, Ite) and body.args[2] == 0 and isinstance(body.args[0], sp.StrictLessThan)):
        return None
    return body.args[1], body.args[0].rhs - 1


def test_truncation_with_its_side_condition_dropped_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """A guarded sum truncated without its bound (m = hi + 2): the property above fails."""
    before = sp.Sum(Ite(V < 5, A[V] + 1, 0), (V, 0, 2))
    ents = Entries(itertools.cycle([1, 2, -1, 3]).__next__)
    assert agrees(before, sums.normal_form(before), {}, ents)
    monkeypatch.setattr(sums, "_truncate", _truncate_unguarded)
    _forget_kept_forms()
    assert not agrees(before, sums.normal_form(before), {}, ents)


# -- rule 9 / the decision: equal_by_normal_form is sound ----------------------------------------------
@RULES
@given(st.data(), st.integers(0, 3), st.integers(0, 3), st.integers(-1, 1))
def test_equal_by_normal_form_never_equates_different_values(data: Any, n: int, k: int, shift: int) -> None:
    """Whenever the normal form says equal, the brute-force values agree (here: a shifted bound or
    index, never equal at every size, is never said equal)."""
    a = sp.Sum(sp.Sum(A[V] * B[W], (W, 0, X - 1)), (V, 0, M - 1))
    b = sp.Sum(B[W] * sp.Sum(A[V], (V, 0, M - 1 + shift)), (W, 0, X - 1))
    same, _, _ = sums.equal_by_normal_form(a, b)
    assert same is (shift == 0)
    if same:
        assert agrees(a, b, {M: n, X: k}, _entries(data))


# -- sumsplit: terms, deltas, the row variance -------------------------------------------------------
@RULES
@given(st.data(), bounds, st.integers(0, 5))
def test_split_terms(data: Any, lo: int, length: int) -> None:
    before = sp.Sum(A[V] * (B[V] + 2) + X, (V, LO, HI))
    after = sumsplit.split_terms(before)
    assert isinstance(after, sp.Add)
    assert agrees(before, after, {LO: lo, HI: lo + length - 1, X: 3}, _entries(data))


@RULES
@given(st.data(), bounds, st.integers(0, 5), st.integers(-3, 8))
@example(data=None, lo=0, length=3, c=0)  # c = lo: applied
@example(data=None, lo=0, length=3, c=2)  # c = hi: applied
@example(data=None, lo=0, length=3, c=3)  # c = hi + 1: outside, not applied
@example(data=None, lo=1, length=3, c=0)  # c = lo - 1: outside
def test_sum_deltas(data: Any, lo: int, length: int, c: int) -> None:
    """Sum_{v=lo}^{hi} [v = c] g(v) = g(c) when lo <= c <= hi (and the Sum is kept otherwise)."""
    hi = lo + length - 1
    ents = _entries(data) if data is not None else Entries(itertools.cycle([1, 2, -1, 3]).__next__)
    before = sp.Sum(Ite(sp.Eq(V, c), 1, 0) * (A[V] + 1) * B[W], (V, lo, hi), (W, 0, 1))
    after = sumsplit.sum_deltas(before, NOSIGNS)
    assert agrees(before, after, {}, ents)


def test_sum_deltas_with_the_range_check_dropped_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """c = hi + 1 is outside the range: the sum is 0, g(c) is not."""
    before = sp.Sum(Ite(sp.Eq(V, 3), 1, 0) * (A[V] + 1), (V, 0, 2))
    ents = Entries(itertools.cycle([1, 2, -1, 3]).__next__)
    monkeypatch.setattr(sumsplit, "within_range", lambda c, lo, hi, signs: True)
    assert not agrees(before, sumsplit.sum_deltas(before, NOSIGNS), {}, ents)


def test_sum_deltas_respects_a_limit_that_depends_on_v() -> None:
    """A limit whose bound mentions v blocks dropping v (the rule's last side condition)."""
    before = sp.Sum(Ite(sp.Eq(V, 1), 1, 0) * A[W], (W, 0, V), (V, 0, 2))
    ents = Entries(itertools.cycle([1, 2, -1, 3]).__next__)
    assert agrees(before, sumsplit.sum_deltas(before, NOSIGNS), {}, ents)


@RULES
@given(st.data(), st.integers(1, 5))
def test_row_variance_is_shown_nonnegative_only_when_it_is(data: Any, m: int) -> None:
    """(1/m) Sum y^2 - (S/m)^2 (a variance) is shown >= 0 and is >= 0; the same with the square
    counted twice (which can be negative) is never shown >= 0."""
    n = sp.Symbol("n", integer=True, positive=True)
    signs = Signs({"n": 1}, {})
    s = sp.Sum(A[V], (V, 0, n - 1))
    var = sp.Sum(A[V] ** 2, (V, 0, n - 1)) / n - (s / n) ** 2
    assert sumsplit.row_variance_nonnegative(var, signs)
    ents = _entries(data)
    assert value(var, {n: m}, ents) >= 0
    wrong = sp.Sum(A[V] ** 2, (V, 0, n - 1)) / n - 2 * (s / n) ** 2
    assert not sumsplit.row_variance_nonnegative(wrong, signs)
