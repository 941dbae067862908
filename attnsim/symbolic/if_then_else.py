"""``Ite(c, a, b)``: if-then-else as an opaque SymPy function, never a ``Piecewise``.

SymPy 1.14 runs ``piecewise_fold`` whenever a ``Sum`` is built over a body holding a
``Piecewise``, and the fold can move a condition on an inner sum's bound variable outside that
sum (``Sum(g(m) Sum(Piecewise((f(l), c(l)), ...), l), m)`` becomes a Piecewise whose condition
mentions l where l is no longer bound).  The all-sizes proof therefore builds every conditional
value (a comparison flag, a gate, elu + 1, the spec's cases) as ``Ite``, which SymPy leaves
alone; it evaluates only when its condition is literally true or false.  The normal form of
:mod:`attnsim.symbolic.sums` knows its rules.
"""

from __future__ import annotations

from typing import Any

import sympy as sp


class Ite(sp.Function):
    """if ``c`` then ``a`` else ``b`` (``c`` a SymPy boolean); positive when both branches are."""

    nargs = 3

    @classmethod
    def eval(cls, c: Any, a: Any, b: Any) -> Any:
        if c == sp.true:
            return a
        if c == sp.false:
            return b
        if a == b:
            return a
        return None

    def _eval_is_commutative(self) -> bool:
        """A real number (its condition, a SymPy boolean, has no commutativity of its own: without
        this a product of two Ite would keep its factors' order and equal products would differ)."""
        return True

    def _eval_is_positive(self) -> bool | None:
        _, a, b = self.args
        return True if (a.is_positive and b.is_positive) else None


def ite(c: Any, a: Any, b: Any) -> Any:
    """``Ite(c, a, b)``, with Python booleans accepted for ``c``."""
    return Ite(sp.sympify(c), sp.sympify(a), sp.sympify(b))


def from_piecewise(e: Any) -> Any:
    """Every ``Piecewise`` in ``e`` rewritten as nested ``Ite`` (bottom-up, before any Sum is built on it)."""

    def convert(p: sp.Piecewise) -> Any:
        out: Any = sp.nan  # a Piecewise without a True branch is undefined outside its conditions
        for value, cond in reversed(p.args):
            out = value if cond == sp.true else Ite(cond, value, out)
        return out

    return e.replace(lambda x: isinstance(x, sp.Piecewise), convert)


__all__ = ["Ite", "from_piecewise", "ite"]
