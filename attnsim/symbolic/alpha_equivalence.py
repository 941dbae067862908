"""Alpha-equivalence of SymPy expressions with sums: equal up to the names of bound variables.

Two statements built by separate runs of one specification differ in the names of their sums'
bound variables only (:class:`attnsim.symbolic.spec_symbolic.SymbolicAlg` numbers them per run).
:func:`alpha_normal` renames, bottom-up, the bound variables of every ``Sum`` (and ``MaxOver``) to
``α<k>, α<k+1>, ...`` in limit order, k one more than the largest index of any ``α`` in the
renamed body and bounds (a name nothing inside binds or uses, so nothing is captured), and
changes nothing else: renaming a bound variable keeps the value, so expressions with the same
alpha-normal form are equal.  No expansion is done: the test is cheap on large statements, and
incomplete (equal values of another shape are not seen).
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from attnsim.symbolic.maxover import MaxOver


def _level(x: Any) -> int | None:
    name = getattr(x, "name", "")
    return int(name[1:]) if name.startswith("α") and name[1:].isdigit() else None


def alpha_normal(e: Any, memo: dict[Any, Any] | None = None) -> Any:
    """``e`` with every bound variable renamed canonically (module docstring)."""
    memo = {} if memo is None else memo
    got = memo.get(e)
    if got is not None:
        return got
    if isinstance(e, (sp.Sum, MaxOver)):
        body = alpha_normal(e.function, memo)
        limits = [tuple(alpha_normal(x, memo) if k else x for k, x in enumerate(lim)) for lim in e.limits]
        names = {lim[0] for lim in limits}
        seen = [body, *(x for lim in limits for x in lim[1:])]
        levels = [
            lv for s in seen for x in sp.sympify(s).atoms(sp.Symbol) if x not in names and (lv := _level(x)) is not None
        ]
        base = max(levels) + 1 if levels else 0
        ren = {v: sp.Symbol(f"α{base + k}", integer=True) for k, (v, *_) in enumerate(limits)}
        out = e.func(body.xreplace(ren), *((ren[v], a.xreplace(ren), b.xreplace(ren)) for v, a, b in limits))
    elif not getattr(e, "args", ()) or isinstance(e, (sp.Indexed, sp.Symbol)):
        out = e
    else:
        out = e.func(*(alpha_normal(a, memo) for a in e.args))
    memo[e] = out
    return out


def alpha_equal(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are the same expression up to the names of bound variables."""
    memo: dict[Any, Any] = {}
    return bool(alpha_normal(sp.sympify(a), memo) == alpha_normal(sp.sympify(b), memo))


__all__ = ["alpha_equal", "alpha_normal"]
