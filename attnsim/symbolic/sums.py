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
   bounds are independent are tried in every order and the smallest text is kept;
4. **exp of a sum**: ``exp(a + b) = exp(a) exp(b)`` (SymPy's ``expand``; the values are real);
6. **flags**: ``Piecewise((1, c), (0, True)) != 0`` is ``c``;
7. **guards**: inside the branch of a Piecewise where ``c`` holds, ``c`` is replaced by true;
8. **truncation**: ``Sum_{v=lo}^{hi} Piecewise((f, v < m), (0, True)) = Sum_{v=lo}^{m-1} f`` when
   ``lo <= m <= hi + 1``, decided by SymPy's assumptions on the symbols (the executor gives sizes,
   coordinates and case variables their signs), else not applied;
9. the result is a polynomial (with rational exponents, exp...) over canonical Sum atoms, and two
   sides are equal when their expanded difference is structurally 0.

Structural zero is a sound test: SymPy's automatic evaluation of +, *, / and ``expand`` are field
identities.  The one that needs a premise, ``x * c / c = x``, is used only where the executor
proved ``c >= 1`` (the count of a mean).  The test is incomplete: an equality that needs more
(a split of a sum, a Piecewise) is reported as not decided, never as proved.
"""

from __future__ import annotations

import itertools
from typing import Any

import sympy as sp


def bound_symbol(k: int) -> sp.Symbol:
    """The canonical bound variable number ``k``."""
    return sp.Symbol(f"β{k}", integer=True)


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
        return _guarded(sp.Piecewise(*((normal_form(v), normal_form(c)) for v, c in e.args)))
    out = e.func(*(normal_form(a) for a in e.args))
    return _flag_condition(out)


def _flag_condition(e: Any) -> Any:
    """Rule 6: ``Ne(Piecewise((1, c), (0, True)), 0)`` is ``c`` (a 0/1 flag is non-zero iff c)."""
    if isinstance(e, sp.Ne) and e.args[1] == 0 and _is_flag(e.args[0]):
        return e.args[0].args[0][1]
    return e


def _is_flag(e: Any) -> bool:
    return (
        isinstance(e, sp.Piecewise)
        and len(e.args) == 2
        and e.args[0][0] == 1
        and e.args[1][0] == 0
        and e.args[1][1] == sp.true
    )


def _guarded(e: Any) -> Any:
    """Rule 7: inside the branch where condition c holds, c is true."""
    if not isinstance(e, sp.Piecewise):
        return e
    pieces = [(v.xreplace({c: sp.true}) if c != sp.true else v, c) for v, c in e.args]
    return sp.Piecewise(*pieces)


def _truncate(body: Any, var: Any, lo: Any, hi: Any) -> tuple[Any, Any] | None:
    """Rule 8: ``Sum_{v=lo}^{hi} Piecewise((f, v < m), (0, True)) = Sum_{v=lo}^{m-1} f`` when
    lo <= m <= hi + 1 (decided by SymPy's assumptions on the symbols, else not applied)."""
    if not (isinstance(body, sp.Piecewise) and len(body.args) == 2 and body.args[1] == (0, sp.true)):
        return None
    f, cond = body.args[0]
    if not (isinstance(cond, sp.StrictLessThan) and cond.lhs == var and var not in cond.rhs.free_symbols):
        return None
    m = cond.rhs
    if (m - lo).is_nonnegative is True and (hi + 1 - m).is_nonnegative is True:
        return f, m - 1
    return None


def _sum(s: sp.Sum) -> Any:
    """A Sum (SymPy flattens nested Sums into several limits, innermost first) in normal form.

    Limits whose bounds mention no other limit's variable may be taken in any order (Fubini, for
    finite sums): every order is normalized and the one whose text is smallest is kept."""
    body = normal_form(s.function)
    limits = [tuple(lim) for lim in s.limits]
    bound_vars = {lim[0] for lim in limits}
    independent = all(not ((lo.free_symbols | hi.free_symbols) & bound_vars) for _, lo, hi in limits)
    orders = itertools.permutations(limits) if independent and 1 < len(limits) <= 3 else [tuple(limits)]
    results = []
    for order in orders:
        out = body
        for var, lo, hi in order:  # innermost first
            out = _sum_one(out, var, lo, hi)
        results.append(out)
    return min(results, key=sp.sstr)


def _fresh_level(e: Any) -> int:
    """One more than the index of every ``β`` in ``e``, bound or free: a name that cannot be captured."""
    levels = [lv for x in e.atoms(sp.Symbol) if (lv := _level(x)) is not None]
    return max(levels) + 1 if levels else 0


def _sum_one(inner: Any, var: Any, lo: Any, hi: Any) -> Any:
    """``Sum_{var=lo}^{hi} inner`` (``inner`` already in normal form) by rules 1-3 and 8."""
    cut = _truncate(inner, var, lo, hi)
    if cut is not None:
        inner, hi = normal_form(cut[0]), cut[1]
    new = bound_symbol(_fresh_level(inner.xreplace({var: sp.Integer(0)})))
    body = inner.xreplace({var: new})
    if isinstance(body, sp.Piecewise) or body.has(sp.Piecewise):
        return sp.Sum(body, (new, lo, hi))  # no rule applies under a Piecewise: kept as an opaque atom
    total: Any = sp.Integer(0)
    grouped: dict[Any, Any] = {}
    for term in sp.Add.make_args(sp.expand(body)):
        coeff, dep = sp.Integer(1), sp.Integer(1)
        for f in sp.Mul.make_args(term):
            if new in f.free_symbols:
                dep *= f
            else:
                coeff *= f
        grouped[dep] = grouped.get(dep, 0) + coeff
    for dep, coeff in grouped.items():
        if dep == 1:
            total += coeff * (hi - lo + 1)
        else:  # renamed again: the factors moved out may have held the only inner sums
            fresh = bound_symbol(_fresh_level(dep.xreplace({new: sp.Integer(0)})))
            total += coeff * sp.Sum(dep.xreplace({new: fresh}), (fresh, lo, hi))
    return total


def equal_by_normal_form(a: Any, b: Any) -> tuple[bool, str, Any]:
    """(True, the common normal form, 0) when a - b normalizes to 0; else (False, shown, the difference)."""
    na, nb = normal_form(a), normal_form(b)
    diff = sp.expand(na - nb)
    if diff == 0:
        return True, f"both normalize to {sp.sstr(na)}", diff
    return False, sp.sstr(diff), diff


__all__ = ["bound_symbol", "equal_by_normal_form", "normal_form"]
