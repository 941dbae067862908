"""Binding sizes: a program built over unbound :class:`~attnsim.rasp.core.Size` symbols, given values.

A lemma factory builds its program once over unbound sizes (so that nothing in it can depend on
a size's value: a Python branch on one raises) and an integer call is that symbolic build
followed by :func:`bind_program`.  Binding rebuilds the graph with every unbound size of a
given name replaced by the same size bound to its value (still a variable to Z3, now runnable);
labels and encodings are kept, shared sub-graphs stay shared, and nodes with nothing to bind are
reused as they are.  The mutation hook is off while binding: a mutant was applied when the
symbolic graph was built, and the rebuilt nodes copy it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from attnsim.rasp import core as C
from attnsim.rasp import expr as E

T = TypeVar("T")


def _sizes(values: Mapping[str, int]) -> dict[str, E.Expr]:
    return {name: C.Size(name, int(v)) for name, v in values.items()}


def bind_expr(e: E.Expr, values: Mapping[str, int | E.Expr]) -> E.Expr:
    """``e`` with its unbound sizes named in ``values`` bound (bound sizes are left alone).

    A value may also be a size expression (a re-parametrization such as n = 2 m, used by the
    all-sizes proof to split a coordinate by residue)."""
    names = C.unbound_sizes(e) & set(values)
    if not names:
        return e
    return _replace_unbound(e, {n: _as_size(n, values[n]) for n in names})


def _as_size(name: str, v: int | E.Expr) -> E.Expr:
    return v if isinstance(v, E.Expr) else C.Size(name, int(v))


def _replace_unbound(e: E.Expr, m: Mapping[str, E.Expr]) -> E.Expr:
    if isinstance(e, C.Size):
        return m.get(e.name, e) if e.value is None else e
    if isinstance(e, (E.Var, E.Const)):
        return e
    if isinstance(e, E.Not):
        return E.Not(_replace_unbound(e.a, m))
    if isinstance(e, E.If):
        return E.If(_replace_unbound(e.cond, m), _replace_unbound(e.a, m), _replace_unbound(e.b, m))
    assert isinstance(e, E.BinOp)
    return E.BinOp(e.op, _replace_unbound(e.a, m), _replace_unbound(e.b, m))


def _bind_param(p: C.Param, values: Mapping[str, int | E.Expr]) -> C.Param:
    if isinstance(p, E.Expr):
        return bind_expr(p, values)
    if isinstance(p, C.Ratio):
        return C.Ratio(bind_expr(p.num, values), bind_expr(p.den, values))
    return p


def _bind_fn(fn: C.Fn, values: Mapping[str, int | E.Expr]) -> C.Fn:
    if isinstance(fn, C.IndexFn):
        new = bind_expr(fn.expr, values)
        return fn if new is fn.expr else C.IndexFn(new, fn.argnames)
    consts = tuple(_bind_param(p, values) for p in fn.consts)
    return fn if all(a is b for a, b in zip(consts, fn.consts, strict=True)) else C.Prim(fn.name, consts)


class Binder:
    """Binds nodes, expressions, blocks and intents with one memo (so identities stay consistent)."""

    def __init__(self, values: Mapping[str, int | E.Expr]) -> None:
        self.values = dict(values)
        self.memo: dict[int, Any] = {}

    def expr(self, e: E.Expr) -> E.Expr:
        return bind_expr(e, self.values)

    def node(self, root: T) -> T:
        """The bound copy of a program node (an SOp or a Selector)."""
        token = C.MUTATION_HOOK.set(None)
        try:
            for n in C.topological([root]):  # type: ignore[list-item]
                if id(n) not in self.memo:
                    self.memo[id(n)] = self._rebuild(n)
        finally:
            C.MUTATION_HOOK.reset(token)
        out: T = self.memo[id(root)]
        return out

    def _rebuild(self, n: C.RASPExpr) -> C.RASPExpr:
        changes: dict[str, Any] = {}
        for f in dataclasses.fields(n):
            old = getattr(n, f.name)
            if isinstance(old, C.RASPExpr):
                new: Any = self.memo[id(old)]
            elif isinstance(old, tuple) and old and all(isinstance(x, C.RASPExpr) for x in old):
                new = tuple(self.memo[id(x)] for x in old)
                new = old if all(a is b for a, b in zip(new, old, strict=True)) else new
            elif isinstance(old, (C.Prim, C.IndexFn)):
                new = _bind_fn(old, self.values)
            else:
                continue
            if new is not old:
                changes[f.name] = new
        if not changes:
            return n
        out = dataclasses.replace(n, **changes)
        object.__setattr__(out, "_label", getattr(n, "_label", None))
        if isinstance(n, C.SOp):
            object.__setattr__(out, "_encoding", n.encoding)
        return out

    def block(self, b: Any) -> Any:
        """A Block (or subclass) with its shape and offset expressions bound."""
        changes = {
            f.name: self.expr(getattr(b, f.name))
            for f in dataclasses.fields(b)
            if isinstance(getattr(b, f.name), E.Expr)
        }
        return dataclasses.replace(b, **changes)


def bind_program(root: T, values: Mapping[str, int]) -> T:
    """The program ``root`` with the unbound sizes named in ``values`` bound to them."""
    return Binder(values).node(root)


__all__ = ["Binder", "bind_expr", "bind_program"]
