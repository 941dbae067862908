"""The names of a head's summation variables, derived from what is being computed.

A head over listed keys binds one variable per count of its hint (``Sum_{l < count}``).  The name
is a digest of the node value being computed (the node's place in the program and its label, its
position, with the assumptions of a gather's branch), the how-many-th variable that computation
draws, and the variable's extent; a name already bound by an enclosing head gets a prime.  So:

* within one executor a name is never bound twice at once, and one name always has one extent
  (a value memoized at a position over it is read only where the name means the same range);
* the same computation gets the same names in every option case of a stage proof and in every
  run (a process-wide counter gave names that depended on what was computed before: the cases
  could not share the values that read no option, :mod:`attnsim.universal.layerproof.case_sharing`).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from attnsim.rasp import expr as E


@dataclass
class _Scope:
    """A node value being computed: what its names are derived from, and how many it drew."""

    base: str
    drawn: int = 0


@dataclass
class SummationNames:
    """The executor's naming scopes: one per node value being computed, innermost last."""

    # the first is the executor's own (a head outside any node value)
    scopes: list[_Scope] = field(default_factory=lambda: [_Scope("")])

    @contextlib.contextmanager
    def computing(self, node: str, pos: E.Expr, assumed: tuple[E.Expr, ...] = ()) -> Iterator[None]:
        """A node's value at ``pos`` (under ``assumed``) is being computed: its heads draw names here.
        ``node`` names the node uniquely in its program (:meth:`attnsim.symbolic.execute.Executor.node_key`)."""
        base = "|".join([node, E.render(pos), *(E.render(a) for a in assumed)])
        self.scopes.append(_Scope(base))
        try:
            yield
        finally:
            self.scopes.pop()

    def draw(self, extent: E.Expr, bound: Mapping[str, object]) -> str:
        """A fresh name for a variable ranging over [0, extent), none of ``bound`` (the variables
        in scope)."""
        scope = self.scopes[-1]
        scope.drawn += 1
        text = f"{scope.base}#{scope.drawn}#{E.render(extent)}"
        name = "l!" + hashlib.blake2b(text.encode(), digest_size=6).hexdigest()
        while name in bound:
            name += "'"
        return name


__all__ = ["SummationNames"]
