"""Sound symbolic comparison of U against the reference by congruence.

Each application of exp, erf, ReLU (``Max(0, .)``) and each square root of a non-constant
expression is replaced, bottom-up, by a fresh symbol keyed by its canonicalized (expanded)
argument.  Equal arguments give equal atoms, so if the atom-replaced difference cancels to 0
as a rational function, the original difference is 0 (congruence).  The converse need not
hold (a failure may be a missed identity), so a nonzero result is reported, never hidden.
"""

from __future__ import annotations

from typing import Any

import sympy as sp


class Atoms:
    """The table of fresh symbols, shared by both sides of a comparison."""

    def __init__(self) -> None:
        self.table: dict[tuple[str, Any], sp.Symbol] = {}

    def atom(self, kind: str, arg: Any) -> sp.Symbol:
        key = (kind, sp.expand(arg))
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
                out = self.atom("exp", args[0])
            elif isinstance(x, sp.erf):
                out = self.atom("erf", args[0])
            elif isinstance(x, sp.Max) and len(args) == 2 and sp.S.Zero in args:
                out = self.atom("relu", args[0] if args[1] == 0 else args[1])
            elif isinstance(x, sp.Pow) and x.exp.is_Rational and x.exp.q == 2 and x.base.free_symbols:
                out = self.atom("sqrt", args[0]) ** x.exp.p
            else:
                out = x.func(*args) if args else x
            cache[x] = out
            return out

        return walk(e)


def difference(got: Any, want: Any, atoms: Atoms | None = None) -> Any:
    """The atom-replaced difference got - want, cancelled (0 means proven equal)."""
    atoms = atoms or Atoms()
    d = atoms.replace(got) - atoms.replace(want)
    return sp.cancel(sp.together(d))
