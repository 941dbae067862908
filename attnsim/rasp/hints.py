"""Finite value sets a program's builder knows for some of its nodes (read by the compiler).

A value read from the input (U's layer pointer ``ptr``, a token holding a size) has no finite
range the compiler could derive, yet the builder knows it: U's pointer names one of the records
that fit in the sequence.  :func:`declare` attaches that set to the node itself, so
``attnsim.compile_program(U.program, max_len=len(seq))`` needs no ``domains={...}`` argument; an
explicit ``domains=`` still overrides it.  The set may depend on ``max_len`` (a callable).

A real-valued node with no finite set may instead declare bounds (:func:`declare_bounds`): U's
attention logits, which its row-max head scores keys by.  The compiled head is exact only within
them, so a compiled model checks them at run time; ``domains=`` may widen them.

Declarations are kept beside the graph (weakly keyed by node identity) rather than in the
nodes, so that a node's structural fingerprint, which proofs and caches key on, is unchanged.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

Values = Iterable[int | Fraction] | Callable[[int], Iterable[int | Fraction]]

_DECLARED: weakref.WeakKeyDictionary[Any, Values] = weakref.WeakKeyDictionary()
_BOUNDS: weakref.WeakKeyDictionary[Any, tuple[Fraction, Fraction]] = weakref.WeakKeyDictionary()


def declare(node: Any, values: Values) -> Any:
    """Record that ``node`` only takes ``values`` (or ``values(max_len)``) on valid inputs; returns ``node``."""
    if not callable(values):
        values = tuple(values)
        if not values:
            raise ValueError(f"declare({getattr(node, 'label', node)!r}): the value set is empty")
    _DECLARED[node] = values
    return node


def declared(node: Any, max_len: int) -> tuple[Fraction, ...] | None:
    """The declared values of ``node`` for sequences up to ``max_len``, or None when none was declared."""
    v = _DECLARED.get(node)
    if v is None:
        return None
    vals = v(max_len) if callable(v) else v
    return tuple(sorted({Fraction(x) for x in vals}))


def declare_bounds(node: Any, lo: int | Fraction, hi: int | Fraction) -> Any:
    """Record that ``node`` takes real values in [lo, hi] on the inputs it is meant for; returns ``node``."""
    a, b = Fraction(lo), Fraction(hi)
    if a > b:
        raise ValueError(f"declare_bounds({getattr(node, 'label', node)!r}): lo = {a} > hi = {b}")
    _BOUNDS[node] = (a, b)
    return node


def declared_bounds(node: Any) -> tuple[Fraction, Fraction] | None:
    """The declared (lo, hi) of ``node``, or None when none was declared."""
    return _BOUNDS.get(node)
