"""A selector's intended pattern: what a program states about which keys a selector picks.

A program's builder writes an :class:`Intent` beside each selector whose keys it means to pick
(in matrix coordinates, over the query position :data:`Q`, the key position :data:`K` and the
sizes), perhaps with an :class:`Enumeration` of those keys.  The provers prove the selector picks
exactly those keys (:func:`attnsim.proofs.intents.check_intent`) and the listing right
(:mod:`attnsim.symbolic.execute`).  This module is the statement only: it imports no prover, so
building and running a program loads neither Z3 nor SymPy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from attnsim.rasp import core as C
from attnsim.rasp import expr as E


@dataclass(frozen=True)
class Enumeration:
    """A claimed listing of a selector's keys for query position q: ``key(q, l)``, ``l < count``.

    ``witness(k)`` gives l back from a selected key.  With a tuple ``count`` (a listing over
    several indices, e.g. every (i, j) of a block), ``key(q, l1, l2, ...)`` and ``witness`` returns
    a tuple.  It is a hint: the symbolic executor proves it."""

    key: Callable[..., E.Expr]
    witness: Callable[[E.Expr], Any]
    count: Any

    @property
    def counts(self) -> tuple[E.Expr, ...]:
        return tuple(self.count) if isinstance(self.count, tuple) else (E.lift(self.count),)

    def witnesses(self, k: E.Expr) -> tuple[E.Expr, ...]:
        w = self.witness(k)
        return tuple(w) if isinstance(w, tuple) else (w,)


Q, K = E.Var("q!"), E.Var("k!")  # "!" keeps them apart from every size name (sizes may not contain it)


@dataclass(frozen=True)
class Intent:
    """A selector's intended pattern, stated over Q, K and sizes (usually via a Block)."""

    name: str
    selector: C.Selector
    intent: E.Expr
    queries: E.Expr
    statement: str
    parametric: bool = True
    assumptions: tuple[E.Expr, ...] = ()
    minimum: tuple[tuple[str, int], ...] = ()
    keys: Enumeration | None = None  # a hint that the all-sizes proof checks
