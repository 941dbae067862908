"""Gathers with a condition: a gather executed on each branch of its source's condition.

A gather whose source is ``If(c, a, b)`` with c not decided at the entry (U's shallow W~ = [W; b]
reads W at l < D and the bias at l = D) is executed once with c a premise and once with not c, and
is ``[c] v_a + [not c] v_b`` (exactly one flag is 1); under a premise ``v < b`` on a coordinate v,
v's extent is b (it ranges over [0, b)), so normalization reads v < D for a token's coordinates.
(An indicator ``If(c1 and c2 ..., 1, 0)`` read there, "inside the grid and l = D", has its proven
conjuncts dropped by :meth:`attnsim.universal.layerproof.executor.LayerExecutor.decide_conditions`.)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import sympy as sp

from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.symbolic.sums import simplify_conditions
from attnsim.universal.layerproof.flags import flag
from attnsim.universal.layerproof.frame import FrameExecutor


class GatherCases(FrameExecutor):
    """The layer executor's gathers on the cases of a condition (a mixin of
    :class:`~attnsim.universal.layerproof.executor.LayerExecutor`, whose fields below it reads)."""

    # conditions assumed on the branch of a gather being executed (see gather_cases)
    assumed: list[E.Expr]
    _scoped_memo: dict[tuple[Any, ...], sp.Expr]

    @property
    def premises(self) -> list[E.Expr]:
        return [*super().premises, *self.assumed]

    def value(self, node: C.SOp, pos: E.Expr) -> sp.Expr:
        """A node's value, memoized; on a branch (``assumed`` not empty) a value computed under its
        assumptions is kept apart (it holds there only), a value computed without any is reused."""
        if not self.assumed:
            return super().value(node, pos)
        key = (id(node), E.render(pos))
        got = self._memo.get(key)
        if got is None:
            scoped = (*key, *(E.render(a) for a in self.assumed))
            got = self._scoped_memo.get(scoped)
            if got is None:
                with self._names.computing(self.node_key(node), pos, tuple(self.assumed)):
                    got = self._scoped_memo[scoped] = self._value(node, pos)
        return got

    def sample_env(self) -> dict[str, int]:
        """The executor's sample point (where a token's grid is guessed, then proven), moved to
        satisfy the branch's assumptions: coordinates at their largest value, else at 0, else one
        below the largest (the first that satisfies them; else the plain sample, and the proof
        that follows fails)."""
        env = super().sample_env()
        if not self.assumed:
            return env
        for shift in (None, 0, 2):
            cand = dict(env)
            if shift is not None:
                for name, ext in self.coords.items():
                    cand[name] = 0 if shift == 0 else max(int(ext.evaluate(env)) - shift, 0)
            try:
                if all(int(a.evaluate(cand)) for a in self.assumed):
                    return cand
            except (E.ExprError, ZeroDivisionError):
                continue
        return env

    @contextlib.contextmanager
    def assuming(self, cond: E.Expr) -> Iterator[None]:
        """Execute with ``cond`` a premise; under ``v < b`` (v a coordinate) v's extent is b while
        it holds (v ranges over [0, b): what normalization reads)."""
        narrow = (
            isinstance(cond, E.BinOp) and cond.op == "<" and isinstance(cond.a, E.Var) and cond.a.name in self.coords
        )
        extents = dict(self.coords)
        self.assumed.append(cond)
        if narrow:
            assert isinstance(cond, E.BinOp) and isinstance(cond.a, E.Var)
            self.coords[cond.a.name] = cond.b
        try:
            yield
        finally:
            self.assumed.pop()
            self.coords.clear()
            self.coords.update(extents)

    def aggregate(self, node: C.Aggregate, pos: E.Expr) -> sp.Expr:
        sel = node.selector
        if isinstance(sel, C.Select) and sel.cmp == "==" and isinstance(sel.keys, C.Indices):
            src = C.index_expr(sel.queries, pos)
            # a gather onto a grid reads If(inside, source, -1): a second conditional is a "when"
            if src is not None and sum(isinstance(x, E.If) for x in E.nodes(src)) > 1:
                k = self.settle(src.substitute({"length": self.con.layout.length}))
                if isinstance(k, E.If):
                    cond = self.norm(k.cond)
                    seen = {E.render(a) for a in self.assumed}
                    if not {E.render(cond), E.render(E.Not(cond))} & seen:  # a case is split once
                        return self.gather_cases(node, pos, cond)
        return super().aggregate(node, pos)

    def gather_cases(self, node: C.Aggregate, pos: E.Expr, cond: E.Expr) -> sp.Expr:
        """A gather whose source is ``If(cond, a, b)`` with cond not decided at ``pos`` (a gather
        with ``when``, e.g. W~ = [W; b] on the axis l < D + 1; cond normalized, no div/mod left, so
        Z3 reads it well as a premise): the gather executed once assuming cond and once assuming
        not cond, as ``[c] v_a + [not c] v_b`` (c = cond in SymPy; the two flags are 0/1 and
        exactly one is 1, so this is the value in both cases)."""
        c = simplify_conditions(sp.Ne(self.to_value(cond), 0))
        branches = []
        for assume in (cond, E.Not(cond)):
            with self.assuming(assume):
                branches.append(self._value(node, pos))
        self.steps.append(f"{node.label}: a gather on the cases {E.render(cond)} and its negation")
        return flag(c) * branches[0] + flag(sp.Not(c)) * branches[1]


__all__ = ["GatherCases"]
