"""Which values are positive: the divisors the all-sizes proof must show non-zero.

A sound, syntactic test: exp, positive numbers, sizes whose minimum is >= 1, scalar operands
declared >= a positive bound, and sums, products, powers and non-empty Sums of positives (the
executor builds a Sum only after proving its count >= 1); an ``Ite`` is positive when each branch
is positive where it is taken (x + 1 where x > 0: elu + 1); a guarded sum
``Sum_{v=lo}^{hi} Ite(v < m, f, 0)`` is positive when f is and its first term is in (m > lo).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

from attnsim.symbolic.if_then_else import Ite


@dataclass(frozen=True)
class Signs:
    """The signs the domain gives: ``sizes`` name -> minimum, ``scalars`` operand -> lower bound."""

    sizes: dict[str, int]
    scalars: dict[str, int]

    def positive(self, e: sp.Expr) -> bool:
        """``e > 0`` for every admissible value of its symbols (False: not shown)."""
        if isinstance(e, sp.exp) or (e.is_number and e.is_positive):
            return True
        if isinstance(e, sp.Indexed):
            return self.scalars.get(str(e.base), 0) >= 1
        if isinstance(e, sp.Symbol):
            return self.sizes.get(e.name, 0) >= 1
        if isinstance(e, (sp.Add, sp.Mul)):
            return all(self.positive(a) for a in e.args)
        if isinstance(e, sp.Pow):
            return self.positive(e.base) and bool(e.exp.is_real)
        if isinstance(e, Ite):
            c, a, b = e.args
            return self._positive_given(a, c) and self.positive(b)
        if isinstance(e, sp.Sum):
            var, lo, hi = e.limits[0]
            body = e.function
            if (
                isinstance(body, Ite)
                and body.args[2] == 0
                and isinstance(body.args[0], sp.StrictLessThan)
                and body.args[0].lhs == var
            ):
                f, m = body.args[1], body.args[0].rhs
                first_in = self.signed(m - lo - 1).is_nonnegative is True
                return self.positive(f) and first_in and self.positive(hi - lo + 1)
            return self.positive(body) and self.positive(sp.expand(hi - lo + 1))
        return False

    def _positive_given(self, value: sp.Expr, cond: Any) -> bool:
        """``value > 0`` wherever ``cond`` holds: syntactically, or when cond is ``x > 0`` and value is
        positive for every positive x (x + 1, x, 2 x ...) by SymPy's assumptions."""
        if self.positive(value):
            return True
        if isinstance(cond, sp.StrictGreaterThan) and cond.rhs == 0:
            x = sp.Dummy("x_pos", positive=True)
            return value.xreplace({cond.lhs: x}).is_positive is True
        return False

    def size_symbols(self) -> dict[Any, Any]:
        """Each size of minimum >= 1 as a positive symbol (the plain integer symbol -> the signed one)."""
        return {
            sp.Symbol(name, integer=True): sp.Symbol(name, integer=True, positive=True)
            for name, low in self.sizes.items()
            if low >= 1
        }

    def signed(self, e: sp.Expr) -> sp.Expr:
        """``e`` over symbols that carry their domain's signs (sizes >= 1, scalars >= their lower bound)."""
        rep: dict[Any, Any] = self.size_symbols()
        for name, low in self.scalars.items():
            rep[sp.IndexedBase(name)[0, 0, 0]] = low + sp.Symbol(f"{name}!u", integer=True, nonnegative=True)
        return sp.expand(e.xreplace(rep))


__all__ = ["Signs"]
