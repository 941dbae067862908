"""A normal form for finite sums with symbolic bounds, which decides the equalities we need.

SymPy's ``simplify`` is neither sound nor complete on these sums (it moves a Piecewise on the
bound variable outside the Sum, and does not equate renamed or re-associated sums), so it is
never called here.  Instead both sides are rewritten by rules that hold for every finite sum
``Sum_{v=lo}^{hi} f(v)`` with ``hi >= lo - 1`` (each is elementary; docs/semantics.md states them):

1. **linearity**: the body is expanded; ``Sum(a + b) = Sum(a) + Sum(b)``;
2. **constant factors**: a factor free of ``v`` moves out, ``Sum(c f) = c Sum(f)``; ``Sum(c) = c (hi - lo + 1)``;
3. **renaming** (alpha-conversion): the bound variable becomes ``β<k>``, k one more than the
   largest index of any ``β`` in the body, bound or free (0 when there is none): a name no inner
   sum binds, so nothing is captured, and sums that differ only in the names of their bound
   variables become the same object; **order** (Fubini): the limits of a multiple sum whose
   bounds are independent are tried in every order and the smallest text is kept; **distributivity**:
   a sum factor inside a sum's body joins it, ``Sum_v c Sum_w g = Sum_{v, w} c g`` (inner bound
   names made apart first), so nested sums become one multiple sum (a prenex form); a power of a sum
   is that many copies of it, ``Sum_v c (Sum_w g)^2 = Sum_{v, w, w'} c g(w) g(w')``;
4. **exp of a sum**: ``exp(a + b) = exp(a) exp(b)`` (SymPy's ``expand``; the values are real);
6. **flags**: ``Ite(c, 1, 0) != 0`` is ``c``, and ``Ite(c, 1, 0)^k = Ite(c, 1, 0)`` for k >= 1
   (conditional values are ``Ite``, never ``Piecewise``, which SymPy folds out of sums:
   :mod:`attnsim.symbolic.if_then_else`);
7. **guards**: in the then-branch of ``Ite(c, a, b)`` c is true, in the else-branch false;
8. **truncation**: ``Sum_{v=lo}^{hi} Ite(v < m, f, 0) = Sum_{v=lo}^{m-1} f`` when
   ``lo <= m <= hi + 1``, decided by SymPy's assumptions on the symbols (the executor gives sizes,
   coordinates and case variables their signs), else not applied;
9. the result is a polynomial (with rational exponents, exp...) over canonical Sum atoms, and two
   sides are equal when their expanded difference is structurally 0.

Structural zero is a sound test: SymPy's automatic evaluation of +, *, / and ``expand`` are field
identities.  The one that needs a premise, ``x * c / c = x``, is used only where the executor
proved ``c >= 1`` (the count of a mean).  The test is incomplete: an equality that needs more
(a split of a sum, a case split) is reported as not decided, never as proved.  An ``Ite`` is an
ordinary factor: it moves out of a sum only when the bound variable is not free in it.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import sympy as sp

from attnsim.symbolic.if_then_else import Ite
from attnsim.symbolic.sympy_work import expanded_terms

SUMS_KEPT = 4096  # the most Sums whose normal form one process keeps (least recently used dropped)


def bound_symbol(k: int) -> sp.Symbol:
    """The canonical bound variable number ``k``."""
    return sp.Symbol(f"β{k}", integer=True)


def fresh_bound(*exprs: Any) -> sp.Symbol:
    """A bound variable ``β<k>`` no ``β`` in ``exprs`` (bound or free) has: binding it in a Sum over
    parts of them captures nothing.  Named by the expressions, unlike a Dummy, so the same Sum is
    built each time (and its normal form is kept, :func:`_sum`)."""
    return bound_symbol(max((_fresh_level(sp.sympify(e)) for e in exprs), default=0))


def _level(sym: Any) -> int | None:
    name = getattr(sym, "name", "")
    return int(name[1:]) if name.startswith("β") and name[1:].isdigit() else None


def normal_form(e: Any) -> Any:
    """``e`` with every Sum rewritten by the rules of the module docstring (bottom-up)."""
    if isinstance(e, sp.Sum):
        return _sum(e)
    if not getattr(e, "args", ()) or isinstance(e, (sp.Indexed, sp.Symbol)):
        return e
    if isinstance(e, sp.Piecewise):
        raise ValueError(
            "a Piecewise reached the normal form: conditional values must be Ite (attnsim.symbolic.if_then_else)"
        )
    out = e.func(*(normal_form(a) for a in e.args))
    return _guarded(_flag_condition(out))


def simplify_conditions(e: Any) -> Any:
    """Rules 6 and 7 alone, bottom-up (no sum is touched): what the executor applies as it builds values."""
    if not getattr(e, "args", ()) or isinstance(e, (sp.Indexed, sp.Symbol, sp.Sum)):
        return e
    return _guarded(_flag_condition(e.func(*(simplify_conditions(a) for a in e.args))))


def _flag_condition(e: Any) -> Any:
    """Rule 6: ``Ne(Ite(c, 1, 0), 0)`` is ``c`` (a 0/1 flag is non-zero iff c)."""
    if isinstance(e, sp.Ne) and e.args[1] == 0 and _is_flag(e.args[0]):
        return e.args[0].args[0]
    return e


def _flag_powers(e: Any) -> Any:
    """``Ite(c, 1, 0)^k`` (k a positive integer) as ``Ite(c, 1, 0)``: 0^k = 0, 1^k = 1."""
    return e.replace(
        lambda x: isinstance(x, sp.Pow) and _is_flag(x.base) and x.exp.is_Integer and x.exp > 0, lambda x: x.base
    )


def _is_flag(e: Any) -> bool:
    return isinstance(e, Ite) and e.args[1] == 1 and e.args[2] == 0


def _guarded(e: Any) -> Any:
    """Rule 7: in the then-branch of ``Ite(c, a, b)`` c is true, in the else-branch false."""
    if not isinstance(e, Ite):
        return e
    c, a, b = e.args
    return Ite(c, a.xreplace({c: sp.true}), b.xreplace({c: sp.false}))


def _truncate(body: Any, var: Any, lo: Any, hi: Any) -> tuple[Any, Any] | None:
    """Rule 8: ``Sum_{v=lo}^{hi} Ite(v < m, f, 0) = Sum_{v=lo}^{m-1} f`` when
    lo <= m <= hi + 1 (decided by SymPy's assumptions on the symbols, else not applied)."""
    if not (isinstance(body, Ite) and body.args[2] == 0):
        return None
    cond, f = body.args[0], body.args[1]
    if not (isinstance(cond, sp.StrictLessThan) and cond.lhs == var and var not in cond.rhs.free_symbols):
        return None
    m = cond.rhs
    if (m - lo).is_nonnegative is True and (hi + 1 - m).is_nonnegative is True:
        return f, m - 1
    return None


@functools.lru_cache(maxsize=SUMS_KEPT)
def _sum(s: sp.Sum) -> Any:
    """A Sum (SymPy flattens nested Sums into several limits, innermost first) in normal form.

    Kept by the Sum (a SymPy expression: equal when structurally equal, its symbols' assumptions
    included): the normal form depends on nothing else (the names it introduces are the canonical
    ``β<k>``), and one proof normalizes the same Sums many times (a LayerNorm mean in every
    option case and padding row: the ffn pre-activation goal asks 926 times for 173 Sums)."""
    out = normal_form(s.function)
    for var, lo, hi in s.limits:  # innermost first
        out = _sum_one(out, var, lo, hi)
    return out


def _fresh_level(e: Any) -> int:
    """One more than the index of every ``β`` in ``e``, bound or free: a name that cannot be captured."""
    levels = [lv for x in e.atoms(sp.Symbol) if (lv := _level(x)) is not None]
    return max(levels) + 1 if levels else 0


def _sum_one(inner: Any, var: Any, lo: Any, hi: Any) -> Any:
    """``Sum_{var=lo}^{hi} inner`` (``inner`` already in normal form) by rules 1-3 and 8."""
    cut = _truncate(inner, var, lo, hi)
    if cut is not None:
        inner, hi = normal_form(cut[0]), cut[1]
    new = sp.Dummy("v")
    body = inner.xreplace({var: new})
    total: Any = sp.Integer(0)
    grouped: dict[Any, Any] = {}
    for term in expanded_terms(body, "a Sum's body"):
        coeff, dep = sp.Integer(1), sp.Integer(1)
        for f in sp.Mul.make_args(term):
            if new in f.free_symbols:
                dep *= f
            else:
                coeff *= f
        grouped[dep] = grouped.get(dep, 0) + coeff
    for dep, coeff in grouped.items():
        # a sum in ``inner`` that binds a variable of var's name (a canonical ``β<k>``, named
        # before this sum was) was renamed with it; a factor free of ``new`` holds ``new`` only
        # bound, so naming it back is a renaming of bound variables (no Dummy leaks out)
        coeff = sp.sympify(coeff).xreplace({new: var})
        total += coeff * (hi - lo + 1) if dep == 1 else coeff * _prenex(dep, new, lo, hi)
    return total


def _prenex(dep: Any, var: Any, lo: Any, hi: Any) -> Any:
    """``Sum_{var} dep`` with every sum factor of ``dep`` merged in (rule 9, distributivity):
    ``Sum_v c Sum_w g = Sum_{v, w} c g`` (the inner bound names are made apart first)."""
    body: Any = sp.Integer(1)
    limits: list[tuple[Any, Any, Any]] = []
    for f in _sum_copies(sp.Mul.make_args(dep)):
        if isinstance(f, sp.Sum):
            apart = {lim[0]: sp.Dummy("w") for lim in f.limits}
            body *= f.function.xreplace(apart)
            limits += [(apart[v], a.xreplace(apart), b.xreplace(apart)) for v, a, b in f.limits]
        else:
            body *= f
    limits.append((var, lo, hi))
    return _canonical_sum(body, limits)


def _sum_copies(factors: tuple[Any, ...]) -> list[Any]:
    """A power ``Sum(g)^k`` (k a positive integer) as k copies of the Sum (each made apart when it
    joins the multiple sum): ``(Sum_w g(w))^2 = Sum_w g(w) Sum_w' g(w')``."""
    out: list[Any] = []
    for f in factors:
        if isinstance(f, sp.Pow) and isinstance(f.base, sp.Sum) and f.exp.is_Integer and f.exp > 0:
            out += [f.base] * int(f.exp)
        else:
            out.append(f)
    return out


def _canonical_sum(body: Any, limits: list[tuple[Any, Any, Any]]) -> Any:
    """The multiple sum with its bound variables named ``β<base>, β<base+1>, ...`` in limit order (base
    fresh against every other name in the body); limits whose bounds mention no bound variable may come
    in any order (Fubini for finite sums): every order is tried and the smallest text is kept."""
    names = [v for v, _, _ in limits]
    independent = all(not ((a.free_symbols | b.free_symbols) & set(names)) for _, a, b in limits)
    orders = itertools.permutations(limits) if independent and len(limits) <= 4 else [tuple(limits)]
    base = _fresh_level(body.xreplace(dict.fromkeys(names, sp.Integer(0))))
    best: Any = None
    best_text = ""
    for order in orders:
        ren = {v: bound_symbol(base + k) for k, (v, _, _) in enumerate(order)}
        cand = sp.Sum(body.xreplace(ren), *((ren[v], a.xreplace(ren), b.xreplace(ren)) for v, a, b in order))
        text = sp.sstr(cand)  # each candidate printed once (the kept one's text kept with it)
        if best is None or text < best_text:
            best, best_text = cand, text
    return best


def _shared_closed_terms(a: Any, b: Any) -> dict[Any, Any]:
    """Each compound subterm that occurs in both ``a`` and ``b`` and mentions no bound variable of
    either (so it means the same wherever it stands), mapped to a fresh symbol."""
    binders = sp.concrete.expr_with_limits.ExprWithLimits  # Sum, MaxOver
    bound = {v for e in (a, b) for w in sp.sympify(e).atoms(binders) for v in w.variables}

    def closed(t: Any) -> bool:
        compound = isinstance(t, sp.Expr) and bool(t.args) and not isinstance(t, (sp.Indexed, Ite))
        return compound and not (t.free_symbols & bound)  # an Expr: no condition, no limits tuple

    in_a = {t for t in sp.preorder_traversal(a) if t.args}
    return {t: sp.Dummy("shared") for t in sp.preorder_traversal(b) if t in in_a and closed(t)}


def _difference(na: Any, nb: Any) -> Any:
    """``na - nb`` expanded, a positive power of a flag made the flag (rule 6)."""
    diff = sp.Add(*expanded_terms(na - nb, "the difference of the two sides"))
    if diff != 0:  # rule 6: a positive power of a 0/1 flag is the flag (expand makes [c] [c] = [c]^2)
        diff = sp.Add(*expanded_terms(_flag_powers(diff), "the difference of the two sides"))
    return diff


@functools.lru_cache(maxsize=SUMS_KEPT)
def normal_forms(a: Any, b: Any) -> tuple[Any, Any, Any]:
    """The normal forms of ``a`` and ``b`` and their difference (0 when they are equal).

    Before expanding the whole difference, the subterms the two sides share (compound, mentioning
    no bound variable) are read as fresh symbols (:func:`_shared_closed_terms`; ``xreplace`` takes
    the largest first): a difference 0 for every value of those symbols is 0 at the shared terms'
    values, so equal sides are decided without multiplying out, e.g., the cube of a LayerNorm
    output inside tanh-GELU on both sides.  Otherwise the whole difference is expanded (the result
    and the difference shown are the same as without the shortcut).  Kept by the pair (like
    :func:`_sum`: the result depends on the two expressions only)."""
    na, nb = normal_form(a), normal_form(b)
    if na == nb:  # structurally one expression: the difference is 0, nothing to expand
        return na, nb, sp.Integer(0)
    shared = _shared_closed_terms(na, nb)
    if shared and _difference(na.xreplace(shared), nb.xreplace(shared)) == 0:
        return na, nb, sp.Integer(0)
    return na, nb, _difference(na, nb)


def same_normal_form(a: Any, b: Any) -> bool:
    """Whether a - b normalizes to 0: :func:`equal_by_normal_form`'s verdict, without printing the
    common normal form (a caller that shows nothing when they agree)."""
    return bool(normal_forms(a, b)[2] == 0)


def equal_by_normal_form(a: Any, b: Any) -> tuple[bool, str, Any]:
    """(True, the common normal form, 0) when a - b normalizes to 0; else (False, shown, the difference)."""
    na, _, diff = normal_forms(a, b)
    if diff == 0:
        return True, f"both normalize to {sp.sstr(na)}", diff
    return False, sp.sstr(diff), diff


__all__ = [
    "bound_symbol",
    "equal_by_normal_form",
    "fresh_bound",
    "normal_form",
    "normal_forms",
    "same_normal_form",
    "simplify_conditions",
]
