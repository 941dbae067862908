"""``MaxOver(f, (v, lo, hi))``: the maximum of ``f(v)`` over ``lo <= v <= hi``, an opaque real.

The symbolic executor's value of a **max head** (``C.maximum``: an Aggregate scored by its own
values) at a query whose selected keys a proven hint lists as ``key(q, l)``, ``l < count``:
``MaxOver(v(key(q, l)), (l, 0, count - 1))``.  It is what the head computes (the hint lists
exactly the selected keys, each once, and the executor proves count >= 1, so the max is over a
non-empty set); it is kept opaque: no rule of the normal form looks inside it.

Soundness of equality: the bound variable is renamed canonically (``μ<k>``, k one more than the
largest μ-index in the body), so two MaxOver objects are the same SymPy object only when their
bodies and bounds are the same expressions up to the bound name: the same multiset of values, the
same max.  Two queries with the same selected key set (e.g. every entry of one row) thus get one
and the same value, which then cancels like any common factor (``exp(x - m) = exp(x) exp(-m)``;
m is free of every summation variable, so the constant-factor rule moves ``exp(-m)`` out of a Sum).
Different objects may still be equal numbers; the normal form then fails to prove, never proves
wrongly.

The bound variables are named ``μ<k>`` so that no Sum's bound variable (``β<k>`` or a Dummy) can
capture or be captured.  ``doit()`` on concrete bounds gives SymPy's ``Max`` (for evaluation).
"""

from __future__ import annotations

from typing import Any

import sympy as sp
from sympy.concrete.expr_with_limits import ExprWithLimits


def max_symbol(k: int) -> sp.Symbol:
    """The canonical bound variable number ``k`` of a MaxOver."""
    return sp.Symbol(f"μ{k}", integer=True)


def _level(sym: Any) -> int | None:
    name = getattr(sym, "name", "")
    return int(name[1:]) if name.startswith("μ") and name[1:].isdigit() else None


class MaxOver(ExprWithLimits):
    """max_{v=lo}^{hi} f(v) (non-empty ranges only: the executor proves the count >= 1)."""

    def __new__(cls, function: Any, *symbols: Any, **assumptions: Any) -> Any:
        obj = super().__new__(cls, function, *symbols, **assumptions)
        obj.is_commutative = True  # a real number (ExprWithLimits copies the body's, None for an Ite body)
        return obj

    def _eval_is_extended_real(self) -> bool | None:
        return bool(self.function.is_extended_real) or None

    def doit(self, **hints: Any) -> Any:
        body: Any = self.function
        ranges = []
        for v, lo, hi in self.limits:
            if not (lo.is_Integer and hi.is_Integer):
                return self
            ranges.append((v, int(lo), int(hi)))
        vals: list[Any] = [body]
        for v, lo, hi in ranges:
            vals = [x.xreplace({v: sp.Integer(k)}) for x in vals for k in range(lo, hi + 1)]
        return sp.Max(*vals)


def max_over(body: Any, limits: list[tuple[Any, Any, Any]]) -> MaxOver:
    """``max`` of ``body`` over the limits, its bound variables renamed canonically (``μ<k>``)."""
    names = [v for v, _, _ in limits]
    levels = [lv for x in body.atoms(sp.Symbol) if (lv := _level(x)) is not None and x not in names]
    base = max(levels) + 1 if levels else 0
    ren = {v: max_symbol(base + k) for k, v in enumerate(names)}
    lims = [(ren[v], sp.sympify(lo).xreplace(ren), sp.sympify(hi).xreplace(ren)) for v, lo, hi in limits]
    return MaxOver(sp.sympify(body).xreplace(ren), *lims)


__all__ = ["MaxOver", "max_over", "max_symbol"]
