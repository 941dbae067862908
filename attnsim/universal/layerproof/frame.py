"""The frame lemma of one pass of U, for every capacity and every number of records m.

Outside the X block a pass of U (:mod:`attnsim.universal.universal`) must only move the record
queue and advance the pointer: with S the record size and L the sequence length,

* header and mask positions p (not the pointer): out[p] = seq[p];
* the pointer: out[p] = seq[p] + 1;
* record positions p >= base: out[p] = seq[p + S] when p + S < L, else 0.

So pass t reads, in the record slot it always reads, what the encoding put in record t, and keeps
the header and the masks: with the one-layer correctness of the X block, ``run_stack`` on m
records computes the m-layer encoder, by induction on the passes.

The proof is symbolic execution of U's own program (:class:`attnsim.symbolic.execute.Executor`) at
a symbolic position of each region, U built over unbound capacity sizes and the sequence length
over a symbolic record count M >= 1; tokens are one uninterpreted function ``seq`` of the
position, so nothing is assumed of their values.  A conditional (``where``) whose flag Z3 decides
is evaluated on the chosen branch only; a gather whose one key lies outside the sequence reads 0.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from attnsim.proofs.obligation import Outcome
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.layout import Layout
from attnsim.symbolic.execute import ExecutionFailed, Executor, sym

SEQ = sp.Function("seq")


@dataclass
class _Program:
    """What the executor reads of a construction: U's program, layout and head intents."""

    program: C.SOp
    layout: Layout
    intents: list[Any]
    inputs: tuple[str, ...] = ()
    preconditions: tuple[E.Expr, ...] = ()
    minimums: tuple[tuple[str, int], ...] = ()
    scalars: tuple[Any, ...] = ()
    binary: tuple[str, ...] = ()
    free_sizes: frozenset[str] = field(default_factory=frozenset)


class FrameExecutor(Executor):
    """The executor with opaque tokens, lazy ``where`` and out-of-range gathers reading 0."""

    def token(self, pos: E.Expr) -> sp.Expr:
        return SEQ(sym(self.norm(pos)))

    def _value(self, node: C.SOp, pos: E.Expr) -> sp.Expr:  # noqa: C901
        if isinstance(node, C.Map | C.SequenceMap) and isinstance(node.fn, C.Prim) and node.fn.name == "where":
            ix = C.index_expr(node.args[0], pos)  # a structural flag: decided by Z3 at this position
            if ix is not None:
                ix = ix.substitute({"length": self.con.layout.length})
                if self.holds(ix.eq(0)):
                    return self.value(node.args[2], pos)
                if self.holds(E.Not(ix.eq(0))):
                    return self.value(node.args[1], pos)
        ix = C.index_expr(node, pos) if isinstance(node, C.Map | C.SequenceMap) else None
        if ix is not None and not isinstance(ix, E.Const):
            decided = self._branches(ix.substitute({"length": self.con.layout.length}))
            if isinstance(decided, E.Const):
                return sp.Integer(decided.value)
        if isinstance(node, C.Aggregate):
            sel, ln = node.selector, self.con.layout.length
            if isinstance(sel, C.Select) and sel.cmp == "==" and isinstance(sel.keys, C.Indices):
                src = C.index_expr(sel.queries, pos)
                if src is not None:
                    k = self.norm(src.substitute({"length": ln}))
                    if self.holds((k < 0) | (k >= ln)):
                        self.steps.append(f"{sel.label}: query {E.render(pos)} selects no key (reads 0)")
                        return sp.Integer(0)
        return super()._value(node, pos)

    def _branches(self, e: E.Expr) -> E.Expr:
        """``e`` with every conditional whose condition Z3 decides replaced by its branch."""
        if isinstance(e, E.If):
            if self.holds(e.cond):
                return self._branches(e.a)
            if self.holds(E.Not(e.cond)):
                return self._branches(e.b)
        return e


@dataclass(frozen=True)
class FrameCase:
    """One region of the frame lemma: at positions p with ``conditions``, a pass writes the input
    token at ``reads`` plus ``plus``, or 0 when ``reads`` is None.  Written over the names of
    :data:`PLACES` (bound to U's map by :meth:`bind`), so that the stack induction
    (:mod:`attnsim.universal.layerproof.stack`) reads these same cases with the places abstract."""

    what: str
    conditions: tuple[E.Expr, ...]
    reads: E.Expr | None
    plus: int = 0

    def bind(self, binding: dict[str, E.Expr]) -> FrameCase:
        """The case at U's own places (``binding``: :func:`frame_binding`)."""
        reads = None if self.reads is None else self.reads.substitute(binding)
        return FrameCase(self.what, tuple(c.substitute(binding) for c in self.conditions), reads, self.plus)

    def want(self) -> sp.Expr:
        """The token the lemma states, with tokens the function ``seq`` of the position."""
        return sp.Integer(0) if self.reads is None else SEQ(sym(self.reads)) + self.plus


POSITION = E.Var("p!")
RECORDS = C.Size("M")  # the number of records in the sequence
X_END, POINTER, BASE, RECORD, LENGTH = (E.Var(n) for n in ("x_end!", "ptr!", "base!", "S!", "L!"))
PLACES = (X_END, POINTER, BASE, RECORD, LENGTH)  # the end of X, the pointer, the records' base, record size, length


def frame_length(u: Any) -> E.Expr:
    """The sequence length for M records: the records, or U's working positions if longer."""
    return E.emax(u.map.base + RECORDS * u.map.record_size, u._positions_expr(1))


def frame_binding(u: Any) -> dict[str, E.Expr]:
    """The places of :data:`PLACES` in ``u``'s input map, at M records."""
    im = u.map
    values = (im.x.end_expr(), im.header_position("ptr"), im.base, im.record_size, frame_length(u))
    return {v.name: e for v, e in zip(PLACES, values, strict=True)}


def frame_cases() -> list[FrameCase]:
    """The frame lemma of a pass, region by region (positions at or past the X block), over the
    places of :data:`PLACES` (a pass's own places: :func:`frame_binding`)."""
    p, S = POSITION, RECORD
    return [
        FrameCase("header and masks", (p >= X_END, p < BASE, E.Not(p.eq(POINTER))), p),
        FrameCase("pointer", (p.eq(POINTER),), p, 1),
        FrameCase("records, next record inside", (p >= BASE, p + S < LENGTH), p + S),
        FrameCase("records, past the last", (p >= BASE, p < LENGTH, p + S >= LENGTH), None),
    ]


def prove_frame(u: Any, timeout: float = 60.0) -> Outcome:
    """The frame lemma for ``u`` built over unbound sizes (see the module docstring)."""
    t0 = time.process_time()
    im = u.map
    lay = Layout.of(*(g.block for g in im.grids), *(g.block for g in u.stage_grids), length=frame_length(u))
    con = _Program(u.program, lay, [it for _, it in u.intents])
    shown = []
    steps = 0
    binding = frame_binding(u)
    for case in (c.bind(binding) for c in frame_cases()):
        con.preconditions = case.conditions
        ex = FrameExecutor(con, max(0.5, timeout - (time.process_time() - t0)))
        try:
            got = ex.value(u.program, POSITION)
        except ExecutionFailed as exc:
            return exc.outcome.retold(f"{case.what}: {exc.outcome.detail}")
        want = case.want()
        if sp.expand(sym_subs(got) - sym_subs(want)) != 0:
            at = witness(u, case, got, want)
            return Outcome.bad(f"{case.what}: a pass writes {got} where the frame lemma says {want}{at}")
        steps += len(ex.steps)
        shown.append(case.what)
    return Outcome.good(
        f"for all capacities N, D, H, K, F and record counts M >= 1, outside X a pass only advances the "
        f"pointer and moves the record queue by S = {sp.expand(sym(im.record_size))}: {', '.join(shown)}; "
        f"{steps} Z3 step(s)"
    )


def witness(u: Any, case: FrameCase, got: Any, want: Any, most: int = 2) -> str:
    """A counterexample to ``got == want`` at concrete capacities (each in 1..``most``, M in 1..2) and
    a position of the case, with the entry of T, X or the masks that position holds; '' if none."""
    names = ("N", "D", "H", "K", "F")
    diff = sp.sympify(got - want)
    for caps in itertools.product(range(1, most + 1), repeat=len(names)):
        for m in (1, 2):
            env = {**dict(zip(names, caps, strict=True)), RECORDS.name: m}
            for p in range(int(frame_length(u).evaluate(env))):
                at = {**env, POSITION.name: p}
                if not all(bool(c.evaluate(at)) for c in case.conditions):
                    continue
                subs = {x: at[x.name] for x in diff.free_symbols if x.name in at}
                if sp.expand(sym_subs(diff.subs(subs))) == 0:
                    continue
                held = next((d for g in u.map.grids if (d := u.map.describe(g.name, p, env)) is not None), None)
                shown = ", ".join(f"{k}={v}" for k, v in env.items())
                return (
                    f"; counterexample: at {shown}, position {p} ({held or 'a working position'}): the pass "
                    f"writes {sp.sympify(got).subs(subs)}, the lemma says {sp.sympify(want).subs(subs)}"
                )
    return ""


def sym_subs(e: Any) -> Any:
    """``seq`` arguments in canonical (expanded) form, so equal positions compare equal."""
    return sp.sympify(e).replace(
        lambda x: isinstance(x, sp.core.function.AppliedUndef), lambda x: x.func(*(sp.expand(a) for a in x.args))
    )


__all__ = ["PLACES", "FrameCase", "FrameExecutor", "frame_binding", "frame_cases", "frame_length", "prove_frame"]
