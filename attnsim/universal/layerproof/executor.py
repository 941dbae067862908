"""The layer executor: U's program executed at a symbolic entry, tokens read through the input map.

A stage's value is computed by symbolic execution of U's own program (:class:`LayerExecutor`, a
:class:`~attnsim.universal.layerproof.frame.FrameExecutor`) at a symbolic entry of the grid where U holds it.
Tokens are read through the input map's declared sources (:meth:`InputMap.sources`): the token at
a position is the operand entry its grid's source names, in the specification's coordinates,
times one 0/1 **guard flag** ``Ite(c < t, 1, 0)`` per padded axis (c the coordinate, t the true
size) that Z3 does not decide from the premises; an entry Z3 shows past a true size is 0.  The
header holds the symbols n and d; a 0/1 option's gate token holds the case's value.

**Index values** whose conditionals Z3 decides at the position (``If(p in grid, coordinate, -1)``
at a key proven in the grid) are read on the branch taken (Z3-proven, like ``settle``); an index
conditional's conjuncts are decided one by one (:meth:`LayerExecutor.decide_conditions`).
``where(c, x, 0)`` on a data flag is ``[c != 0] x``
(:func:`~attnsim.universal.layerproof.flags.nonzero_flags`).  A node a proven stage states is read as its
cut (:meth:`LayerExecutor.cut_value`, :mod:`attnsim.universal.layerproof.cut`).

The executor's other concerns are mixins, each in its module: gathers with a condition
(:mod:`attnsim.universal.layerproof.gather_cases`), truncation of sums (:mod:`attnsim.universal.layerproof.truncation`),
positivity and finiteness (:mod:`attnsim.universal.layerproof.divisors`), key listings through intents
(:mod:`attnsim.symbolic.key_listing`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from attnsim.proofs import z3sel
from attnsim.proofs.decoding import prover
from attnsim.proofs.decoding.query import Decode
from attnsim.proofs.obligation import Outcome
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.layout import Grid
from attnsim.symbolic.execute import ExecutionFailed, sym
from attnsim.symbolic.if_then_else import Ite
from attnsim.symbolic.key_listing import IntentListing
from attnsim.universal.layerproof.activation import ACTIVATIONS, activation
from attnsim.universal.layerproof.case_sharing import CaseSharing, SharedValue, _Frame
from attnsim.universal.layerproof.cut import Cut
from attnsim.universal.layerproof.divisors import Positivity, RowWitness
from attnsim.universal.layerproof.encoder_spec import SIZE
from attnsim.universal.layerproof.flags import flag, nonzero_flags, split_conjunctions
from attnsim.universal.layerproof.gather_cases import GatherCases
from attnsim.universal.layerproof.truncation import Truncation
from attnsim.universal.record import Source


@dataclass
class LayerExecutor(CaseSharing, GatherCases, Truncation, Positivity, IntentListing):
    """U's program with tokens read through the input map's sources (see the module docstring)."""

    sources: tuple[tuple[Grid, Source], ...] = ()
    options: dict[str, int] = field(default_factory=dict)
    capacity: dict[str, Any] = field(default_factory=dict)  # true size name -> its capacity (SymPy)
    below: dict[str, str] = field(default_factory=dict)  # entry coordinate -> the true size it is below
    # entry coordinate -> the true size it is at or past (a padding row: see prove_padding)
    above: dict[str, str] = field(default_factory=dict)
    # proven stages' statements, read in place of executing their nodes again (see Cut)
    cuts: dict[str, Cut] = field(default_factory=dict)
    # (id(selector), id(layout)) -> the proof that the selector is its intent on that layout (proven
    # once, shared by the executors of one run)
    intent_proofs: dict[tuple[int, int], Outcome] = field(default_factory=dict)
    witnesses: tuple[RowWitness, ...] = ()  # premises of the domain (see witnessed_sum)
    padding_reads: int = 0  # reads of a cut's proven padding values by a variance (see cut_value)
    shared: dict[tuple[int, str], SharedValue] | None = None  # values shared by a run's cases
    case_reads: int = 0  # gate tokens read (see case_sharing)
    _tainted: set[tuple[int, str]] = field(default_factory=set)
    _frames: list[_Frame] = field(default_factory=list)
    # counterexample search only: a divisor not shown > 0 is recorded here instead of failing (its
    # value is then checked > 0 at the sampled point before U's value there is trusted)
    sampling: bool = False
    unshown: list[Any] = field(default_factory=list)
    # Z3 answers (proven or refuted) by proof_key, shared by the executors of one run (the option
    # cases ask the same goals)
    proofs: dict[tuple[Any, ...], Outcome] = field(default_factory=dict)

    @property
    def padding_used(self) -> bool:
        """A variance read a cut's proven padding values."""
        return self.padding_reads > 0

    def token(self, pos: E.Expr) -> sp.Expr:
        blocks = [g.block for g, _ in self.sources]
        guess = self._sample_block(pos, blocks)
        if guess is None:
            raise ExecutionFailed(Outcome.bad(f"a token is read at {E.render(pos)}, inside no grid of <T, X>"))
        grid, src = next((g, s) for g, s in self.sources if g.block is guess)
        self.prove(grid.contains(pos), f"{E.render(pos)} lies in grid {grid.name}")
        cs = {a: self.norm(c) for a, c in grid.coords(pos).items()}
        cs = {a: E.Const(int(v)) if (v := sp.expand(sym(c))).is_Integer else c for a, c in cs.items()}
        guards: Any = sp.Integer(1)
        for axis, true in zip(grid.axes, src.true, strict=True):
            if true is None:
                continue
            c = cs[axis]
            if self.known_above(c, true):
                return sp.Integer(0)  # a padding entry: the encoding writes 0 there
            if self.known_below(c, true):
                continue  # 0 < t (t >= 1), or an entry coordinate the stage takes below t
            guards *= flag(sp.Lt(sym(c), SIZE[true]))
        scs = {a: self.to_value(c) for a, c in cs.items()}
        if isinstance(src.operand, tuple):
            first = cs[grid.axes[0]]
            if not isinstance(first, E.Const):
                raise ExecutionFailed(Outcome.unknown(f"{grid.name}: entry {E.render(first)} is not decided"))
            name = src.operand[first.value]
            if name in self.options:
                self.case_reads += 1
                return guards * sp.Integer(self.options[name])
            if name in SIZE:
                return guards * SIZE[name]
            return guards * sp.IndexedBase(name)[0, 0, 0]
        return guards * sp.IndexedBase(src.operand)[tuple(sp.sympify(x) for x in src.index(scs, SIZE))]

    step_cap: float = 20.0  # seconds for one Z3 call (a conditional's condition is its own call)
    # conditions assumed on the branch of a gather being executed (see gather_cases)
    assumed: list[E.Expr] = field(default_factory=list)
    _scoped_memo: dict[tuple[Any, ...], sp.Expr] = field(default_factory=dict)

    def _attempt(self, goal: E.Expr, what: str, decode_k: bool = False) -> Outcome:
        """Z3 on the goal after its conditionals were decided one by one (each a smaller goal)."""
        if not decode_k and any(isinstance(n, E.If) for n in E.nodes(goal)):
            goal = self.settle(goal)
        dec: list[Decode] = []
        if decode_k:
            ln = self.con.layout.length
            dec = [Decode(z3sel.K.name, tuple(self.con.layout.blocks), ranges=(z3sel.K >= 0, z3sel.K < ln))]
        key = self.proof_key(goal, decode_k)
        out = self.proofs.get(key)
        if out is None:
            out = prover.prove(
                goal,
                self.premises,
                decode=dec,
                coords=dict(self.coords),
                minimum=self.minimum,
                timeout=min(self.net(), self.step_cap),
            )
            if out.ok is not None:  # proven or refuted: the same goal gets the same answer (not a timeout)
                self.proofs[key] = out
        if out.ok is True:
            self.lemmas |= set(out.lemmas)
            self.steps.append(what)
        return out

    def proof_key(self, goal: E.Expr, decode_k: bool) -> tuple[Any, ...]:
        """What a Z3 call's answer depends on: the goal, the premises, the coordinates' extents, the
        size minimums, and whether the key is decoded."""
        coords = tuple(sorted((k, E.render(E.lift(v))) for k, v in self.coords.items()))
        premises = tuple(E.render(p) for p in self.premises)
        return (E.render(goal), decode_k, coords, premises, tuple(sorted(self.minimum.items())))

    def _value(self, node: C.SOp, pos: E.Expr) -> sp.Expr:
        if node.label in self.cuts:
            return self.cut_value(self.cuts[node.label], pos)
        if isinstance(node, C.Map | C.SequenceMap) and isinstance(node.fn, C.Prim) and node.fn.name == "where":
            c = self.value(node.args[0], pos)
            if c.is_number:  # a gate of this case (or a decided flag): only the branch taken
                return self.value(node.args[2] if c == 0 else node.args[1], pos)
            if isinstance(node.args[2], C.Full) and node.args[2].value == 0:
                # where(c, x, 0) = [c != 0] x (x is a real: finite), one 0/1 flag per factor of c
                return nonzero_flags(c) * self.value(node.args[1], pos)
        if isinstance(node, C.Aggregate) and node.score is node.values and isinstance(node.selector, C.SelectAnd):
            return self.guarded_max(node, pos)
        if isinstance(node, C.Map) and isinstance(node.fn, C.Prim) and node.fn.name in ACTIVATIONS:
            return activation(node.fn.name, self.value(node.args[0], pos))
        if isinstance(node, C.Map | C.SequenceMap) and (ix := C.index_expr(node, pos)) is not None:
            if any(isinstance(x, E.If) for x in E.nodes(ix)):
                return self.settled_index_value(ix)
        return super()._value(node, pos)

    def settled_index_value(self, ix: E.Expr) -> sp.Expr:
        """An index Map's value with each conditional Z3 decides at this position replaced by its
        branch (``settle``: e.g. ``If(p in grid, coordinate, -1)`` at a key proven inside the grid
        is the coordinate), the conditions' conjuncts decided one by one (:meth:`decide_conditions`),
        then as the executor reads any index expression, a flag of a conjunction as the product of
        its conjuncts' flags (:func:`~attnsim.universal.layerproof.flags.split_conjunctions`)."""
        ix = self.decide_conditions(self.settle(self.norm(ix.substitute({"length": self.con.layout.length}))))
        if E.is_truth_valued(ix):
            ix = self.decide(ix)
        return split_conjunctions(self.to_value(ix))  # [a and b] = [a] [b]: deltas a sum can sum out

    def divisor_not_shown(self, node: C.Map | C.SequenceMap, operand: sp.Expr) -> None:
        if not self.sampling:
            super().divisor_not_shown(node, operand)
        self.unshown.append(operand)

    def decide_conditions(self, e: E.Expr) -> E.Expr:
        """``e`` with the condition of each conditional left undecided by ``settle`` reduced by
        :meth:`decide` (its conjuncts Z3 proves true dropped; 0 when one is proven false): e.g. a
        grid indicator ``If(p in grid and f == 0, 1, 0)`` read at a key inside the grid is
        ``If(f == 0, 1, 0)``, a Kronecker delta that :func:`sum_deltas` sums out."""
        if isinstance(e, E.If):
            return E.If(self.decide(e.cond), self.decide_conditions(e.a), self.decide_conditions(e.b))
        if isinstance(e, E.BinOp):
            return E.BinOp(e.op, self.decide_conditions(e.a), self.decide_conditions(e.b))
        if isinstance(e, E.Not):
            return E.Not(self.decide_conditions(e.a))
        return e

    def known_below(self, c: E.Expr, true: str) -> bool:
        """``c < true`` without Z3: c is 0 (a true size is >= 1) or an entry coordinate the stage
        takes below that true size."""
        return (isinstance(c, E.Const) and c.value == 0) or (isinstance(c, E.Var) and self.below.get(c.name) == true)

    def known_above(self, c: E.Expr, true: str) -> bool:
        """``c >= true`` without Z3: an entry coordinate the stage takes at or past that true size."""
        return isinstance(c, E.Var) and self.above.get(c.name) == true

    def cut_value(self, cut: Cut, pos: E.Expr) -> sp.Expr:
        """A proven stage's node at ``pos``: its opaque value where the coordinates are in the proven
        region, else ``Ite(region, value, unknown)`` (``cut.pad``: nothing is known there).  A cut
        proven on the padding rows too (``cut.padded``) reads ``[g] padded(args)`` at a row the stage
        takes past n, and ``[g] Ite(i < n, name(args), padded(args))`` at a row not decided (the
        other coordinates in the region)."""
        grid = cut.grid
        self.prove(grid.contains(pos), f"{cut.label} is read at {E.render(pos)} inside {grid.name}")
        ecs = {a: self.norm(c) for a, c in grid.coords(pos).items()}
        cs = {a: sym(c) for a, c in ecs.items()}
        # inside the region: an entry coordinate the stage takes below the same true size, or 0
        undecided = [(a, t) for a, t in cut.below if not self.known_below(ecs[a], t)]
        self.steps.append(f"{cut.label}: the proven stage {cut.stage} (cut)")
        if not undecided:
            return cut.opaque(cs)
        row = ("i", "n")
        if cut.padded and row in cut.below:
            args = tuple(cs[a] for a in cut.args)
            padded = sp.Function(cut.padded)(*args)
            others = [(a, t) for a, t in undecided if (a, t) != row]
            if self.known_above(ecs["i"], "n"):
                inside = cut.flags(cs) * padded
            elif row in undecided:
                # both branches carry the cut's guard flags: [g] Ite(i < n, name(args), padded(args))
                inside = cut.flags(cs) * Ite(sp.Lt(cs["i"], SIZE["n"]), sp.Function(cut.name)(*args), padded)
            else:
                inside = cut.opaque(cs)
            if not others:
                return inside
            return Ite(sp.And(*(sp.Lt(cs[a], SIZE[t]) for a, t in others)), inside, cut.pad(cs))
        region = sp.And(*(sp.Lt(cs[a], SIZE[t]) for a, t in undecided))
        return Ite(region, cut.opaque(cs), cut.pad(cs))

    def guarded_max(self, node: C.Aggregate, pos: E.Expr) -> sp.Expr:
        """A max head over ``structural & data``: the opaque max over the structural listing of
        ``Ite(data holds, v, -oo)`` (the max over the keys where the data condition holds; -oo is
        never the max when one listed key passes, which the executor does not prove: a stage that
        reads it states the premise that one does, a :class:`RowWitness`, see
        :mod:`attnsim.universal.layerproof.stages.attention`)."""
        sel = node.selector
        assert isinstance(sel, C.SelectAnd)
        parts = [sel.a, sel.b]
        structural = [p for p in parts if self.enumeration(p) is not None]
        data = [p for p in parts if p not in structural]
        if len(structural) != 1 or not all(isinstance(p, C.Select) for p in data):
            raise ExecutionFailed(Outcome.unknown(f"{sel.label}: max head's selector out of the method's scope"))
        picked = [p for p in data if isinstance(p, C.Select)]

        def body(key: E.Expr) -> Any:
            cond = self.indicator(picked, key, pos)
            return Ite(sp.Ne(cond, 0), self.value(node.values, key), sp.S.NegativeInfinity)

        return self.over_keys(structural[0], pos, body, combine="max")

    def over_keys(self, sel: C.Selector, pos: E.Expr, body_at: Any, combine: str = "sum") -> sp.Expr:
        total = super().over_keys(sel, pos, body_at, combine)
        return self.retruncate(self.truncate(total)) if combine == "sum" else total


__all__ = ["LayerExecutor"]
