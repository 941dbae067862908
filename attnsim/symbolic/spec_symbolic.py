"""The symbolic reading of a specification (:mod:`attnsim.symbolic.spec_language`): the entry
formula over SymPy, which the all-sizes proof compares a program with.

Its own module, apart from the spec language, so that a specification read on float64 operands
(a construction's check against its NumPy reference) never loads SymPy.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import sympy as sp

from attnsim.symbolic.if_then_else import ite


class SymbolicAlg:
    """Sums as SymPy ``Sum`` over a fresh bound variable; exp, max, min as SymPy functions."""

    def __init__(self, prefix: str = "s!") -> None:
        self._n = itertools.count()
        self.prefix = prefix  # two instances whose statements meet need two prefixes (no capture)

    def sum(self, body: Callable[[Any], Any], upper: Any) -> Any:
        var = sp.Symbol(f"{self.prefix}{next(self._n)}", integer=True)  # "!": never a size's name
        return sp.Sum(body(var), (var, 0, upper - 1))

    def exp(self, x: Any) -> Any:
        return sp.exp(x)

    def max(self, a: Any, b: Any) -> Any:
        return sp.Max(a, b)

    def min(self, a: Any, b: Any) -> Any:
        return sp.Min(a, b)

    def if_even(self, j: Any, even: Callable[[], Any], odd: Callable[[], Any]) -> Any:
        return ite(sp.Eq(sp.Mod(j, 2), 0), even(), odd())

    def if_less(self, a: Any, b: Any, then: Callable[[], Any], other: Callable[[], Any]) -> Any:
        return ite(sp.Lt(a, b), then(), other())

    def delta(self, i: Any, j: Any) -> Any:
        return ite(sp.Eq(i, j), 1, 0)

    def elu1(self, x: Any) -> Any:
        return ite(x > 0, x + 1, sp.exp(x))

    def sqrt(self, x: Any) -> Any:
        return sp.sqrt(x)

    def mod(self, x: Any, m: int) -> Any:
        return sp.Mod(x, m)

    def if_true(self, flag: Any, then: Callable[[], Any], other: Callable[[], Any]) -> Any:
        """``then`` where the 0/1 operand ``flag`` is 1, else ``other`` (an ``Ite``, never a Piecewise)."""
        return ite(sp.Eq(flag, 1), then(), other())

    def erf(self, x: Any) -> Any:
        return sp.erf(x)

    def tanh(self, x: Any) -> Any:
        return sp.tanh(x)

    def pi(self) -> Any:
        return sp.pi

    def rational(self, p: int, q: int) -> Any:
        return sp.Rational(p, q)

    def rsqrt(self, x: Any) -> Any:
        """1 / sqrt(x), left unevaluated: evaluating the power of a large sum asks SymPy's assumptions
        about every Sum in it (minutes for one encoder layer)."""
        return sp.Pow(x, -sp.S.Half, evaluate=False)

    def power(self, x: Any, k: int) -> Any:
        """x ** k for an integer k >= 2.  SymPy's ``Pow`` of a real sum to a positive integer power is
        the unevaluated power itself, but it first asks whether each term is infinite, which rebuilds
        every Sum in it: 30 minutes for one encoder layer with tanh-GELU (u ** 3 and LayerNorm 2's
        squared deviations).  The same tree is built here without asking (an ``Add`` base only; a
        term with the imaginary unit, which the asking could change, never occurs in a real spec)."""
        return sp.Pow(x, k, evaluate=False) if isinstance(x, sp.Add) else x**k

    def relu(self, x: Any) -> Any:
        """max(x, 0) as (x + |x|) / 2: SymPy's Max and x > 0 refuse a large argument its assumptions
        wrongly call non-real (a product of a real power and a Sum of operands)."""
        return (x + sp.Abs(x)) / 2


__all__ = ["SymbolicAlg"]
