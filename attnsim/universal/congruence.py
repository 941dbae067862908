"""Sound symbolic comparison of U against the reference by congruence.

Each application of exp, erf, tanh (one atom for a and -a: tanh is odd), ReLU (``Max(0, .)``), each
other ``Max`` (a row max: U's softmax
shift) and each square root of a non-constant expression is replaced, bottom-up, by a fresh
symbol keyed by its argument in canonical rational form (``cancel``), so that equal arguments
computed differently (U sums R^2 term by term, the reference squares R - mu) get one atom.  An
exp whose argument holds row-max atoms is split first, exp(a + c M) = exp(a) exp(M)^c for
rational c (exp is a homomorphism and positive), so the shift cancels between a softmax's
numerator and denominator.  Equal arguments give equal atoms, so if the atom-replaced difference
cancels to 0 as a rational function, the original difference is 0 (congruence).  The converse
need not hold (a failure may be a missed identity), so a nonzero result is reported, never hidden.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from attnsim.symbolic.sympy_work import cancelled


def _canonical(e: Any) -> Any:
    """A canonical form of a rational function of the symbols (and atoms): equal functions, equal
    forms (``cancel``: expanded numerator over expanded denominator, common factors removed)."""
    return cancelled(sp.sympify(e), "a congruence atom's argument")


class Atoms:
    """The table of fresh symbols, shared by both sides of a comparison."""

    def __init__(self) -> None:
        self.table: dict[tuple[str, Any], sp.Symbol] = {}

    def atom(self, kind: str, arg: Any) -> sp.Symbol:
        key = (kind, arg if isinstance(arg, tuple) else _canonical(arg))
        if key not in self.table:
            self.table[key] = sp.Symbol(f"_{kind}{len(self.table)}", positive=kind in ("exp", "sqrt"))
        return self.table[key]

    def replace(self, e: Any) -> Any:
        e = sp.sympify(e)
        cache: dict[Any, Any] = {}

        def walk(x: Any) -> Any:
            if x.is_Atom:
                return x
            if x in cache:
                return cache[x]
            args = [walk(a) for a in x.args]
            if isinstance(x, sp.exp):
                out = self._exp(args[0])
            elif isinstance(x, sp.erf):
                out = self.atom("erf", args[0])
            elif isinstance(x, sp.tanh):
                out = self._odd("tanh", args[0])
            elif isinstance(x, sp.Max) and len(args) == 2 and sp.S.Zero in args:
                out = self.atom("relu", args[0] if args[1] == 0 else args[1])
            elif isinstance(x, sp.Max):
                out = self.atom("max", tuple(sorted((_canonical(a) for a in args), key=sp.default_sort_key)))
            elif isinstance(x, sp.Pow) and x.exp.is_Rational and x.exp.q == 2 and x.base.free_symbols:
                out = self.atom("sqrt", args[0]) ** x.exp.p
            else:
                out = x.func(*args) if args else x
            cache[x] = out
            return out

        return walk(e)

    def _odd(self, kind: str, arg: Any) -> Any:
        """f(arg) for an odd f (tanh): one atom for arg and -arg, f(-a) = -f(a), so that a sign
        SymPy pulled out of one side's argument (tanh(-y) -> -tanh(y)) meets the other's."""
        a, neg = _canonical(arg), _canonical(-arg)
        if sp.default_sort_key(neg) < sp.default_sort_key(a):
            return -self.atom(kind, neg)
        return self.atom(kind, a)

    def _exp(self, arg: Any) -> Any:
        """exp(arg) with the row-max atoms of arg split off as factors exp(M)^c (c rational)."""
        arg = sp.expand(arg)
        maxes = [s for s in arg.free_symbols if s.name.startswith("_max")]
        out = sp.Integer(1)
        for m in maxes:
            c = arg.coeff(m)
            if c.is_Rational and not (arg - c * m).has(m):
                out *= self.atom("exp", m) ** c
                arg = sp.expand(arg - c * m)
        return out * self.atom("exp", arg)


def difference(got: Any, want: Any, atoms: Atoms | None = None) -> Any:
    """The atom-replaced difference got - want, cancelled (0 means proven equal)."""
    atoms = atoms or Atoms()
    d = atoms.replace(got) - atoms.replace(want)
    return cancelled(d, "the difference U - T(X)")
