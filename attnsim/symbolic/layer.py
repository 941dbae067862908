"""Stages of one pass of U equal the encoder layer's specification, for every capacity and size.

U (:mod:`attnsim.simulator.universal`) is built over unbound capacity sizes N, D, H, K, F; the
simulated layer has true sizes n <= N, d <= D, hh <= H, k <= K, f <= F (symbols ``n, d, hh, k,
f``).  A stage's value is computed by symbolic execution of U's own program
(:class:`LayerExecutor`, a :class:`~attnsim.symbolic.frame.FrameExecutor`) at a symbolic entry of
the grid where U holds it, and compared with the statement written from the specification's own
intermediate quantities (:func:`attnsim.symbolic.specs.encoder_layer_parts`) by the Sum normal
form (:mod:`attnsim.symbolic.sums`; ``simplify`` is never called).

Tokens are read through the input map's declared sources (:meth:`InputMap.sources`): the token at
a position is the operand entry its grid's source names, in the specification's coordinates,
times one 0/1 **guard flag** ``Ite(c < t, 1, 0)`` per padded axis (c the coordinate, t the true
size) that Z3 does not decide from the premises; an entry Z3 shows past a true size is 0.  The
header holds the symbols n and d.  The 0/1 options (residual, pre, post, gelu, ffn) are split
into cases: each case substitutes its 0/1 values into the gate tokens and into the specification,
so a ``where`` on a gate is evaluated on the branch taken only.  scale and eps stay symbols; eps
> 0 is a premise of the domain (``TransformerLayer`` enforces it).

**Truncation.**  A sum over an axis of capacity C (``l < C``) whose every term carries the guard
flag ``l < t`` of the true size t of that axis equals the sum over ``l < t`` without the flag
(the terms with ``t <= l < C`` are 0; flags are 0/1, so a flag's power is the flag).  It is
applied only when the bound is literally the capacity matching t; else the sum is kept as it is
and the comparison fails (reported, never assumed).  A sum whose terms are guarded differently is
split into its terms, its Kronecker deltas summed out and each piece truncated again
(:meth:`LayerExecutor.retruncate`; see below).

**Gathers with a condition.**  A gather whose source is ``If(c, a, b)`` with c not decided at the
entry (U's shallow W~ = [W; b] reads W at l < D and the bias at l = D) is executed once with c a
premise and once with not c, and is ``[c] v_a + [not c] v_b`` (exactly one flag is 1); under a
premise ``v < b`` on a coordinate v, v's extent is b (it ranges over [0, b)), so normalization
reads v < D for a token's coordinates.  (An indicator ``If(c1 and c2 ..., 1, 0)`` read there,
"inside the grid and l = D", has its proven conjuncts dropped by :meth:`LayerExecutor.decide_conditions`.)

**The last term.**  A sum over ``lo <= v <= hi`` (hi >= lo, shown from the sizes' signs) whose
body compares v with hi (``v < hi``, ``v = hi``, ``v >= hi`` ...; v bound nowhere inside) is
``Sum_{v=lo}^{hi-1} f(v) + f(hi)``: on the first part each such comparison has one truth value
(v - hi <= -1) and is replaced by it, the guard flags every term of an inner sum carries are then
moved out of it (a factor free of a sum's variable), and the first part is truncated as above;
f(hi) evaluates the comparisons.  So U's sum over l < D + 1 (the appended column l = D) becomes
the sum over l < d plus the bias term.

**Positivity** of the LayerNorm divisor ``sqrt(var + eps)``: U computes var as
``E[x^2] - E[x]^2``.  It is shown >= 0 by proving, in the Sum normal form, that it equals
``(1/m) Sum_{l<m} (x_l - E[x])^2`` (a mean of squares of reals, m >= 1), so var + eps > 0 with
eps > 0.  A row held as several sums (R = sum_h O_h + c) is read off its squared total
(:func:`~attnsim.symbolic.sumsplit.row_variance_nonnegative`).  ReLU and GELU:
:mod:`attnsim.symbolic.activation`.

**Key listings through intents.**  A sum or max head lists its keys by a hint (see
:mod:`attnsim.symbolic.execute`); that every selected key is listed is proven, for a selector with a
declared intent I (``u.intents``), as: S <-> I for every query of I's region and every key, for all
sizes, on the executor's own layout (the decoding prover, :func:`attnsim.lemmas.base.check_intent`,
once per selector and run); the query in I's region; and ``not I(q, K) or K listed`` with K decoded
only through the blocks I names.  The first two give S(q, K) -> I(q, K).

**Index values** whose conditionals Z3 decides at the position (``If(p in grid, coordinate, -1)``
at a key proven in the grid) are read on the branch taken (Z3-proven, like ``settle``).

**Flags.**  ``where(c, x, 0)`` on a data flag is ``[c != 0] x``, one 0/1 flag per factor of c, each
factor read with the other flag factors' conditions true (where one is false the product is 0).
In the flag form of U's value (``prove_stage(flags=True)``) a product's factors are read with its
flags' conditions true, ``[c] x = [c] x|_{c = true}`` (:func:`absorb_flags`: x is defined
everywhere, both sides are 0 where c is false; never inside a Sum or max that binds a symbol of c).
With ``spec_flags`` the statement's ``Ite(c, a, 0)`` becomes ``[c] a`` only where a is shown finite
(:meth:`LayerExecutor.finite`: e.g. ``1 / D`` with D shown > 0).

**Premises and positivity of a softmax denominator.**  A :class:`RowWitness` is a premise of the
domain, stated in the Outcome: every row r < t has a key v < t' with ``holds(r, v)`` (every query has
an unblocked key).  Under it ``Sum_{v=0}^{hi} [c_1] ... [c_m] p`` (p a product of positive factors,
hi + 1 the true size or its capacity) is > 0 when every c_i holds at such a key of a row r the stage
takes below t: every term is >= 0 and that key's term is > 0.  A variance every term of which
carries a 0/1 guard flag g is g times a mean of squares, >= 0.

**Stages and cuts.**  The layer is proven stage by stage (:mod:`attnsim.symbolic.stages`): a stage
proves one node of U equal to its statement (:class:`Cut`) at every entry of its grid in a region
(:func:`prove_stage`); a later stage reads that node as an opaque function (its proof holds for
every value of it) inside the region and as an unknown outside, and states its own claim in the
opaque functions, which is checked to be the spec's once they are unfolded -- or, with
``spec_over``, is the spec's own intermediate built over the cuts (:func:`statement_over_cuts`:
refused unless every opaque function in it is a proven cut stating that intermediate).

**Split sums, deltas, flags, row variances, padding rows** (the output stage; docs/semantics.md):
a sum left at a capacity is split into its terms, its Kronecker deltas summed out and each piece
truncated again (:meth:`LayerExecutor.retruncate`, :mod:`attnsim.symbolic.sumsplit`); an index
conditional's conjuncts are decided one by one (:meth:`LayerExecutor.decide_conditions`); flags are
compared in one form (:func:`attnsim.symbolic.flagform.merge_flags`); a variance is >= 0 when it is
a mean of squares over a row read off its own squared total (:func:`row_variance_nonnegative`); a
cut proven on the padding rows too (``Cut.padded``, :func:`prove_padding`) is read there as one value
per name (:mod:`attnsim.symbolic.padrows`).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from attnsim.lemmas.base import Intent, check_intent
from attnsim.proofs import decode, z3sel
from attnsim.proofs.obligation import Outcome
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.layout import Grid, Layout
from attnsim.simulator.record import CAPACITY, TRUE, Source
from attnsim.symbolic.activation import ACTIVATIONS, activation
from attnsim.symbolic.alpha import alpha_equal
from attnsim.symbolic.execute import ExecutionFailed, sym
from attnsim.symbolic.flagform import flag_condition, merge_flags, split_conjunctions
from attnsim.symbolic.frame import FrameExecutor, _Program
from attnsim.symbolic.ite import Ite
from attnsim.symbolic.maxover import MaxOver
from attnsim.symbolic.padrows import reads_padding
from attnsim.symbolic.positivity import Signs
from attnsim.symbolic.specs import ENCODER_LAYER, SymbolicAlg, encoder_layer_parts, given_parts
from attnsim.symbolic.sums import equal_by_normal_form, simplify_conditions
from attnsim.symbolic.sumsplit import row_variance_nonnegative, split_terms, sum_deltas

OPTIONS = ("residual", "pre", "post", "gelu", "ffn")
SIZE = {t: sp.Symbol(t, integer=True) for t in TRUE}
EPS = sp.IndexedBase("eps")[0, 0, 0]


def flag(cond: Any) -> Any:
    """The 0/1 guard ``Ite(cond, 1, 0)``."""
    return Ite(cond, sp.Integer(1), sp.Integer(0))


def _flags_of(term: Any) -> set[Any]:
    return {f.base if isinstance(f, sp.Pow) else f for f in sp.Mul.make_args(term) if flag_condition(f) is not None}


def _hoist(s: Any) -> Any:
    """``Sum(g f)`` -> ``g Sum(f)`` for the guard flags g free of the bound variable that every term
    carries (a factor free of the summation variable moves out of a finite sum; g^p = g)."""
    if not isinstance(s, sp.Sum) or len(s.limits) != 1:
        return s
    v = s.limits[0][0]
    terms = sp.Add.make_args(sp.expand(s.function))
    common = set.intersection(*(_flags_of(t) for t in terms))
    common = {g for g in common if v not in g.free_symbols}
    if not common:
        return s
    strip = lambda t: sp.Mul(
        *(f for f in sp.Mul.make_args(t) if (f.base if isinstance(f, sp.Pow) else f) not in common)
    )
    return sp.Mul(*common) * sp.Sum(sp.Add(*(strip(t) for t in terms)), s.limits[0])


def hoist_all(e: Any) -> Any:
    """``e`` with :func:`_hoist` applied to every sum, innermost first (each limit of a multiple
    sum a sum of its own): guard flags every term of a sum carries move out of it."""
    if isinstance(e, sp.Sum):
        acc = hoist_all(e.function)
        for lim in e.limits:  # innermost first
            acc = _hoist(sp.Sum(acc, lim))
        return acc
    if not getattr(e, "args", ()) or isinstance(e, (sp.Indexed, sp.Symbol)):
        return e
    return e.func(*(hoist_all(a) for a in e.args))


def below_last(r: Any, v: Any, hi: Any) -> Any:
    """The truth value of the comparison ``r`` for every v <= hi - 1, when r compares v with hi
    (``r.lhs - r.rhs`` is ``v - hi``, < 0 there, or ``hi - v``, > 0 there); else None."""
    delta = sp.expand(r.lhs - r.rhs)
    if delta == sp.expand(v - hi):
        negative = True
    elif delta == sp.expand(hi - v):
        negative = False
    else:
        return None
    truth = {
        sp.StrictLessThan: negative,
        sp.LessThan: negative,
        sp.StrictGreaterThan: not negative,
        sp.GreaterThan: not negative,
        sp.Equality: False,
        sp.Unequality: True,
    }
    t = truth.get(type(r))
    return None if t is None else sp.true if t else sp.false


@dataclass(frozen=True)
class Cut:
    """A stage's statement about one node of U, proven once and read by later stages.

    At the positions of ``grid`` whose coordinates ``a`` satisfy ``a < t`` for each ``(a, t)`` in
    ``below`` (t a true size), U's node ``label`` equals ``statement(coords)``: the 0/1 flags
    ``[a < t]`` of ``guard`` times ``spec(coords)`` (a SymPy expression in
    ENCODER_LAYER's operands, the options left as operands).  A later stage reads it as the opaque
    ``name(args)`` (an uninterpreted function: its proof then holds for every value, in particular
    the spec's; nodes with one statement share the name), and outside the region as
    ``pad[label]`` (nothing known, one unknown per node): a later stage that needs a value outside
    the proven region cannot be proven."""

    label: str
    grid: Grid
    below: tuple[tuple[str, str], ...]
    spec: Callable[[dict[str, Any]], Any]
    name: str
    args: tuple[str, ...]
    stage: str
    guard: tuple[tuple[str, str], ...] = ()  # 0/1 flags [a < t] the statement carries outside spec
    # the spec's intermediate (encoder_layer_parts) that spec(cs) is, at (cs[a] for a in args); "" if
    # none (build such a cut with part_cut: then the two agree by construction)
    part: str = ""
    # the name of the value the node holds at the padding rows i >= n (the row axis "i" past n, the
    # other coordinates in the region), one value shared by every node whose cut has this name and
    # read as ``padded(args)`` times the guard flags; proven by :func:`prove_padding` (the stage
    # that proves the cut); "" if not proven there (then ``pad[label]``: nothing known)
    padded: str = ""

    def part_call(self, args: tuple[Any, ...]) -> Any:
        """The spec at ``args`` as the unbuilt call ``spec.<part>(args)`` (an uninterpreted function
        that names a deterministic builder: two calls with equal arguments build the same value)."""
        return sp.Function(f"spec.{self.part}")(*args)

    def flags(self, cs: dict[str, Any]) -> Any:
        return sp.Mul(*(flag(sp.Lt(cs[a], SIZE[t])) for a, t in self.guard))

    def statement(self, cs: dict[str, Any]) -> Any:
        """What the stage proves at coordinates ``cs`` in the region: the guard flags times spec."""
        return self.flags(cs) * self.spec(cs)

    def opaque(self, cs: dict[str, Any]) -> Any:
        """How later stages read it: the guard flags (visible to truncation) times name(args)."""
        return self.flags(cs) * sp.Function(self.name)(*(cs[a] for a in self.args))

    def pad(self, cs: dict[str, Any]) -> Any:
        return sp.Function(f"pad[{self.label}]")(*(cs[a] for a in self.grid.axes))  # one unknown per node

    def unfold_to_part(self, e: Any) -> Any:
        """``e`` with every opaque ``name(args)`` replaced by :meth:`part_call` (``part`` set)."""
        f = sp.Function(self.name)
        return sp.sympify(e).replace(lambda x: getattr(x, "func", None) == f, lambda x: self.part_call(x.args))

    def unfold(self, e: Any) -> Any:
        """``e`` with every opaque ``name(args)`` replaced by the statement it stands for."""
        f = sp.Function(self.name)
        return sp.sympify(e).replace(
            lambda x: getattr(x, "func", None) == f,
            lambda x: self.spec(dict(zip(self.args, x.args, strict=True))),
        )


def part_cut(
    label: str,
    grid: Grid,
    below: tuple[tuple[str, str], ...],
    part: str,
    name: str,
    args: tuple[str, ...],
    stage: str,
    guard: tuple[tuple[str, str], ...] = (),
    padded: str = "",
) -> Cut:
    """A cut whose statement is the spec's intermediate ``part`` at its arguments, times the guard
    flags: spec and ``part`` agree by construction (what :func:`statement_over_cuts` relies on)."""
    spec = lambda cs: spec_parts()[part](*(cs[a] for a in args))
    return Cut(label, grid, below, spec, name, args, stage, guard, part=part, padded=padded)


@dataclass(frozen=True)
class RowWitness:
    """A premise of the domain, stated in the Outcome of every proof that uses it: every row
    ``r < rows`` has a key ``v < keys`` with ``holds(r, v)`` (rows, keys: true sizes; ``holds`` a
    SymPy condition).  E.g. every query row has an unblocked key (``AttentionMask`` enforces it)."""

    text: str
    rows: str
    keys: str
    holds: Callable[[Any, Any], Any]
    sample: tuple[tuple[str, int], ...] = ()  # operand values at which the premise holds (counterexamples)


@dataclass
class LayerExecutor(FrameExecutor):
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
    padding_used: bool = False  # a variance read a cut's proven padding values (see cut_value)
    # counterexample search only: a divisor not shown > 0 is recorded here instead of failing (its
    # value is then checked > 0 at the sampled point before U's value there is trusted)
    sampling: bool = False
    unshown: list[Any] = field(default_factory=list)
    # Z3 answers (proven or refuted) by proof_key, shared by the executors of one run (the option
    # cases ask the same goals)
    proofs: dict[tuple[Any, ...], Outcome] = field(default_factory=dict)

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
                return guards * sp.Integer(self.options[name])
            if name in SIZE:
                return guards * SIZE[name]
            return guards * sp.IndexedBase(name)[0, 0, 0]
        return guards * sp.IndexedBase(src.operand)[tuple(sp.sympify(x) for x in src.index(scs, SIZE))]

    step_cap: float = 20.0  # seconds for one Z3 call (a conditional's condition is its own call)
    # conditions assumed on the branch of a gather being executed (see gather_cases)
    assumed: list[E.Expr] = field(default_factory=list)
    _scoped_memo: dict[tuple[Any, ...], sp.Expr] = field(default_factory=dict)

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

    def _attempt(self, goal: E.Expr, what: str, decode_k: bool = False) -> Outcome:
        """Z3 on the goal after its conditionals were decided one by one (each a smaller goal)."""
        if not decode_k and any(isinstance(n, E.If) for n in E.nodes(goal)):
            goal = self.settle(goal)
        dec: list[decode.Decode] = []
        if decode_k:
            ln = self.con.layout.length
            dec = [decode.Decode(z3sel.K.name, tuple(self.con.layout.blocks), ranges=(z3sel.K >= 0, z3sel.K < ln))]
        key = self.proof_key(goal, decode_k)
        out = self.proofs.get(key)
        if out is None:
            out = decode.prove(
                goal,
                self.premises,
                decode=dec,
                coords=dict(self.coords),
                minimum=self.minimum,
                timeout=min(self.left(), self.step_cap),
            )
            if out.ok is not None:  # proven or refuted: the same goal gets the same answer (not a timeout)
                self.proofs[key] = out
        if out.ok is True:
            self.lemmas |= set(decode.lemmas_in(out.detail))
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
        its conjuncts' flags (:func:`~attnsim.symbolic.flagform.split_conjunctions`)."""
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
        :mod:`attnsim.symbolic.stages.attention`)."""
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

    def at_capacity(self, s: Any) -> bool:
        """A Sum with a limit over a whole capacity [0, C) (not yet cut to a true size)."""
        caps = [sp.expand(c) for c in self.capacity.values()]
        return any(lo == 0 and any(sp.expand(hi + 1 - c) == 0 for c in caps) for _, lo, hi in s.limits)

    def retruncate(self, e: Any) -> Any:
        """A sum left at a capacity because its terms carry different guards: split into its terms
        (:func:`split_terms`), the Kronecker deltas summed out (:func:`sum_deltas`), and each piece
        truncated again (:meth:`truncate`).  E.g. U's ``sum_{e, f} ([f = 0] c2(e) + act(f) w2[e, f])``:
        the first term is ``sum_e c2(e)``, the second ``sum_{f < f} ...``."""
        sums = [x for x in sp.sympify(e).atoms(sp.Sum) if self.at_capacity(x)]
        if not sums:
            return e
        split = sp.sympify(e).replace(lambda x: isinstance(x, sp.Sum) and self.at_capacity(x), split_terms)
        summed = sum_deltas(split, self.signs, self.steps)
        return summed.replace(lambda x: isinstance(x, sp.Sum) and self.at_capacity(x), self.truncate)

    # -- key listings through a selector's proven intent ---------------------------------------
    def intent_of(self, sel: C.Selector) -> Intent | None:
        """The intent U declares for ``sel`` (the very selector object), if any."""
        return next((it for it in self.con.intents if it.selector is sel), None)

    def selector_is_its_intent(self, it: Intent) -> Outcome:
        """``S(q, k) <-> intent(q, k)`` for every query of the intent's region and every key, for
        all sizes, on this executor's layout (the decoding prover, :func:`check_intent`); proven once
        per selector and shared by the executors of one run (``intent_proofs``)."""
        key = (id(it.selector), id(self.con.layout))
        got = self.intent_proofs.get(key)
        if got is None:
            got = check_intent(it, self.con.layout, timeout=min(self.left(), self.step_cap))
            if got.ok is True:
                self.intent_proofs[key] = got
        return got

    def every_selected_key_listed(self, sel: C.Selector, pos: E.Expr, s_expr: E.Expr, inside: E.Expr) -> None:
        """Every key ``sel`` selects for ``pos`` is listed, through the selector's intent I.

        Proven here: (1) S <-> I for all queries q with ``queries(q)`` and every key, for all sizes,
        on this layout (:meth:`selector_is_its_intent`); (2) ``queries(pos)``; (3) ``not I(pos, K) or
        K is listed``, K decoded only through the blocks I names (I is false outside them, the
        "outside" case proves it).  (1)-(2) give S(pos, K) -> I(pos, K), so (3) is the claim for S.
        A selector without an intent, or whose intent needs assumptions or larger size minimums
        than this executor's domain, is checked as before (K decoded through every block)."""
        it = self.intent_of(sel)
        if (
            it is None
            or it.assumptions
            or not it.parametric
            or any(low > self.minimum.get(name, 1) for name, low in it.minimum)
        ):
            super().every_selected_key_listed(sel, pos, s_expr, inside)
            return
        proof = self.selector_is_its_intent(it)
        if proof.ok is not True:
            raise ExecutionFailed(
                Outcome(proof.ok, f"{sel.label}: the selector is not shown to be its intent: {proof.detail}")
            )
        self.steps.append(f"{sel.label}: the selector is its intent {it.name} (decoding prover, all sizes)")
        ln = self.con.layout.length
        at = {z3sel.Q.name: pos, "length": ln}
        self.prove(it.queries.substitute(at), f"{sel.label}: query {E.render(pos)} is in its intent's query region")
        blocks = decode.key_blocks(it.intent, self.con.layout)
        goal = E.Not(it.intent.substitute(at)) | inside
        what = (
            f"{sel.label}: every selected key is listed (its intent, K decoded in {', '.join(b.name for b in blocks)})"
        )
        out = decode.prove(
            goal,
            self.premises,
            decode=[decode.Decode(z3sel.K.name, blocks, ranges=(z3sel.K >= 0, z3sel.K < ln))],
            coords=dict(self.coords),
            minimum=self.minimum,
            timeout=min(self.left(), self.step_cap),
        )
        if out.ok is not True:
            raise ExecutionFailed(Outcome(out.ok, f"{what}: {out.detail}"))
        self.lemmas |= set(decode.lemmas_in(out.detail))
        self.steps.append(what)

    # -- truncation of padded sums -------------------------------------------------------------
    def truncate(self, s: Any) -> Any:
        """Each limit of the Sum cut from a capacity to the true size every term is guarded by."""
        if not isinstance(s, sp.Sum):
            return s
        body = s.function
        for v, lo, hi in s.limits:  # innermost first
            split = self._split_last(body, v, lo, hi)
            if split is None:
                body = _hoist(self._truncate_one(body, v, lo, hi))
            else:
                head, last = split
                body = _hoist(self._truncate_one(head, v, lo, hi - 1)) + last
        return body

    def _split_last(self, body: Any, v: Any, lo: Any, hi: Any) -> tuple[Any, Any] | None:
        """``Sum_{v=lo}^{hi} f(v) = Sum_{v=lo}^{hi-1} f(v) + f(hi)`` (hi >= lo, shown from the
        sizes' signs) when some condition in f compares v with hi (``v < hi``, ``v = hi``, ...):
        such a condition is decided on v <= hi - 1 and substituted in the first sum (whose inner
        sums then have their common guard flags hoisted, so the first sum can be truncated), and
        f(hi) decides it by evaluation.  Returns (first sum's body, f(hi)); None when no
        condition compares v with hi or hi >= lo is not shown."""
        body = sp.sympify(body)
        rels = body.atoms(sp.core.relational.Relational)
        decided = {r: t for r in rels if (t := below_last(r, v, hi)) is not None}
        if not decided or not self.signs.positive(sp.expand(hi - lo + 1)):
            return None
        if any(v in {lim[0] for lim in s.limits} for s in body.atoms(sp.Sum)):
            return None  # v is also bound inside: its conditions there are not about this sum's v
        head = hoist_all(body.xreplace(decided))
        last = body.xreplace({v: hi})
        self.steps.append(f"sum over {v} <= {hi}: its last term {v} = {hi} split off")
        return head, last

    def _truncate_one(self, body: Any, v: Any, lo: Any, hi: Any) -> Any:
        terms = sp.Add.make_args(sp.expand(body))
        cut: Any = None
        kept = []
        for term in terms:
            factors = list(sp.Mul.make_args(term))
            mine = [
                f
                for f in factors
                if (g := flag_condition(f)) is not None and isinstance(g, sp.StrictLessThan) and g.lhs == v
            ]
            bounds = {flag_condition(f).rhs for f in mine}
            if len(bounds) != 1:
                return sp.Sum(body, (v, lo, hi))
            m = bounds.pop()
            if cut is None:
                cut = m
            if m != cut:
                return sp.Sum(body, (v, lo, hi))
            kept.append(sp.Mul(*(f for f in factors if f not in mine)))
        names = {str(m): t for t, m in SIZE.items()}
        t = names.get(str(cut))
        if t is None or lo != 0 or sp.expand(hi + 1 - self.capacity[t]) != 0:
            return sp.Sum(body, (v, lo, hi))
        self.steps.append(f"sum over {v} < {hi + 1} truncated to {v} < {cut} (every term guarded)")
        inside = {sp.Lt(v, cut): sp.true, sp.Gt(cut, v): sp.true}  # true on the range 0 <= v < cut
        return sp.Sum(sp.Add(*kept).xreplace(inside), (v, 0, cut - 1))

    # -- positivity ----------------------------------------------------------------------------
    @property
    def signs(self) -> Signs:
        base = super().signs
        return Signs({**base.sizes, **dict.fromkeys(TRUE, 1)}, dict(base.scalars))

    def positive(self, e: sp.Expr) -> bool:
        if super().positive(e):
            return True
        if isinstance(e, sp.Pow) and e.exp.is_real:
            return self.positive(e.base)
        if isinstance(e, sp.Add) and EPS in e.args:
            var = e - EPS
            if self.nonnegative_variance(var) or self.flagged_nonnegative_variance(var):
                return True
            if row_variance_nonnegative(var, self.signs, self.steps):
                self.padding_used |= reads_padding(var)
                return True
            return False
        if isinstance(e, sp.Sum) and self.witnessed_sum(e):
            return True
        return False

    def witnessed_sum(self, s: sp.Sum) -> bool:
        """``Sum_{v=0}^{hi} [c_1(v)] ... [c_m(v)] p(v) > 0`` (0/1 flags times p, a product of factors
        each > 0) when a premise (:class:`RowWitness`) gives a key v* < keys with ``holds(r, v*)``, for
        a row r (an entry coordinate taken below the premise's rows, or 0) such that each c_i(v*)
        holds (:meth:`implied`), and the range contains [0, keys): every term is >= 0 and the term
        of v* is p(v*) > 0."""
        if len(s.limits) != 1:
            return False
        v, lo, hi = s.limits[0]
        factors = [
            f.base if isinstance(f, sp.Pow) and flag_condition(f) is not None else f
            for f in sp.Mul.make_args(s.function)
        ]
        conds = {flag_condition(f) for f in factors if flag_condition(f) is not None}
        rest = [f for f in factors if flag_condition(f) is None]
        if not conds or lo != 0 or not all(self.positive(f) for f in rest):
            return False
        for w in self.witnesses:
            t = SIZE[w.keys]
            if sp.expand(hi + 1 - t) != 0 and sp.expand(hi + 1 - self.capacity.get(w.keys, t)) != 0:
                continue  # the range is neither [0, keys) nor [0, capacity) (keys <= capacity)
            rows = [sp.Integer(0)] + [sp.Symbol(c, integer=True) for c, b in self.below.items() if b == w.rows]
            for r in rows:
                if all(self.implied(c, v, t, w.holds(r, v)) for c in conds):
                    self.steps.append(f"{sp.sstr(s)[:60]}... > 0: a key of row {r} passes ({w.text})")
                    return True
        return False

    def implied(self, cond: Any, v: Any, t: Any, holds: Any) -> bool:
        """``cond`` holds at every v with ``v < t`` and ``holds``: it is literally true once those two
        are (:func:`assuming`); or it is ``v < m`` with m >= t by the domain's signs; or an
        (in)equality ``a ~ b`` with ``a - b = +-(x - y)`` for ``holds`` = ``x ~ y`` (same relation)."""
        c = assuming(cond, {sp.Lt(v, t): sp.true, holds: sp.true})
        if c == sp.true:
            return True
        if isinstance(c, sp.StrictLessThan) and c.lhs == v:
            return self.signs.signed(c.rhs - t).is_nonnegative is True
        if isinstance(c, (sp.Eq, sp.Ne)) and type(c) is type(holds):
            a, b = sp.expand(c.lhs - c.rhs), sp.expand(holds.lhs - holds.rhs)
            return sp.expand(a - b) == 0 or sp.expand(a + b) == 0
        return False

    def finite(self, e: Any) -> bool:
        """A sound, syntactic test that ``e`` is a finite real wherever its symbols are in the
        domain: operands, sizes, opaque functions (reals), exp, erf, |x|, sums, products, finite
        sums and Ite of finite values, integer powers >= 0, and other powers of a base shown > 0
        (:meth:`positive`).  Anything else (MaxOver, -oo, ...) is not shown finite."""
        if isinstance(e, (sp.Indexed, sp.Symbol)) or (e.is_number and e.is_finite):
            return True
        if isinstance(e, sp.core.function.AppliedUndef):
            return all(self.finite(a) for a in e.args)
        if isinstance(e, (sp.Add, sp.Mul, sp.exp, sp.erf, sp.Abs)):
            return all(self.finite(a) for a in e.args)
        if isinstance(e, sp.Pow):
            if e.exp.is_Integer and e.exp >= 0:
                return self.finite(e.base)
            return self.finite(e.base) and self.finite(e.exp) and self.positive(e.base)
        if isinstance(e, Ite):
            return self.finite(e.args[1]) and self.finite(e.args[2])
        if isinstance(e, sp.Sum):
            return self.finite(e.function)
        return False

    def as_flags_where_finite(self, e: Any) -> Any:
        """Every ``Ite(c, a, 0)`` as ``[c] a`` and ``Ite(c, 0, b)`` as ``[not c] b`` (bottom-up), only
        where the branch that becomes a factor is shown finite (:meth:`finite`): then ``0 x = 0``
        holds where c picks the other branch.  (The spec's ``Ite(blocked, 0, 1 / D)`` has D > 0 by
        :meth:`witnessed_sum`.)"""

        def rw(x: Any) -> Any:
            c, a, b = x.args
            if b == 0 and a != 1 and self.finite(a):
                return flag(c) * a
            if a == 0 and self.finite(b):
                return flag(sp.Not(c)) * b
            return x

        return sp.sympify(e).replace(lambda x: isinstance(x, Ite), rw)

    def nonnegative_variance(self, var: Any) -> bool:
        """``var`` = (1/m) Sum_{l<m} (y_l - mean)^2 by the normal form, for a Sum of y and of y^2 in it."""
        sums = [s for s in var.atoms(sp.Sum) if len(s.limits) == 1]
        for s in sums:
            v, lo, hi = s.limits[0]
            m = hi - lo + 1
            if not self.signs.positive(sp.expand(m)):
                continue
            y = s.function
            w = sp.Dummy("w")
            mean = s / m
            square = sp.Sum((y.xreplace({v: w}) - mean) ** 2, (w, lo, hi)) / m
            same, _, _ = equal_by_normal_form(var, square)
            if same:
                self.steps.append(f"variance {sp.sstr(var)[:60]}... is a mean of squares (>= 0)")
                return True
        return False

    def flagged_nonnegative_variance(self, var: Any) -> bool:
        """``var`` = g v with g the 0/1 guard flags every term of ``var`` carries (``g^p = g``) and v
        a mean of squares (:meth:`nonnegative_variance`): g >= 0 and v >= 0 give var >= 0.  (A row
        past its true size is read with its guard flag: E[x^2] and E[x]^2 of a padded row.)"""
        terms = sp.Add.make_args(sp.expand(var))
        common = set.intersection(*(_flags_of(t) for t in terms))
        if not common:
            return False
        bare = sp.Add(
            *(
                sp.Mul(*(f for f in sp.Mul.make_args(t) if (f.base if isinstance(f, sp.Pow) else f) not in common))
                for t in terms
            )
        )
        return self.nonnegative_variance(bare)


def nonzero_flags(c: Any) -> Any:
    """``[c != 0]`` as a product of 0/1 flags, one per factor of ``c`` (a product is non-zero iff
    every factor is): a flag factor is its own indicator; ``1 - x`` gives ``[x != 1]``.  The other
    factors are read with the flag factors' conditions true (:func:`assuming`: where one is false
    the product is 0 either way)."""
    out: Any = sp.Integer(1)
    given = {g: sp.true for f in sp.Mul.make_args(c) if (g := flag_condition(f)) is not None}
    for f in sp.Mul.make_args(c):
        if flag_condition(f) is None:
            f = assuming(f, given)
        if flag_condition(f) is not None:
            out *= flag(flag_condition(f))
        elif isinstance(x := sp.expand(1 - f), sp.Indexed):
            out *= flag(sp.Ne(x, 1))
        else:
            out *= flag(sp.Ne(f, 0))
    return out


def assuming(e: Any, truths: dict[Any, Any]) -> Any:
    """``e`` with each condition of ``truths`` replaced by its truth value, except inside a Sum or
    MaxOver that binds a symbol of that condition (its occurrences there are another variable's)."""
    if not truths:
        return e
    if e in truths:
        return truths[e]
    if isinstance(e, (sp.Sum, MaxOver)):
        bound = {lim[0] for lim in e.limits}
        inner = {c: t for c, t in truths.items() if not (c.free_symbols & bound)}
        return e.func(assuming(e.function, inner), *e.limits)
    if not e.args or isinstance(e, (sp.Indexed, sp.Symbol)):
        return e
    return e.func(*(assuming(a, truths) for a in e.args))


def absorb_flags(e: Any) -> Any:
    """In every product, the factors other than a 0/1 flag ``[c]`` read with c true (bottom-up):
    ``[c] x = [c] x|_{c = true}`` for a value x defined wherever its symbols are in the domain (where c
    is false both sides are 0, where c is true the two x are one value).  U's values are (every
    divisor proven positive; a stage that reads a max over a data-selected key set states the
    premise that makes it finite).  E.g. ``[h < hh] exp(Ite(h < hh, s, pad))`` = ``[h < hh] exp(s)``."""

    def rw(x: Any) -> Any:
        factors = sp.Mul.make_args(x)
        truths = {g: sp.true for f in factors if (g := flag_condition(f)) is not None}
        if not truths:
            return x
        return sp.Mul(*(f if flag_condition(f) is not None else assuming(f, truths) for f in factors))

    return sp.sympify(e).replace(lambda x: isinstance(x, sp.Mul), rw)


def as_flags(e: Any) -> Any:
    """Every ``Ite(c, a, 0)`` as ``[c] a`` and ``Ite(c, 0, b)`` as ``[not c] b`` (real a, b: the
    same value), bottom-up."""

    def rw(x: Any) -> Any:
        c, a, b = x.args
        if b == 0 and not (a == 1):
            return flag(c) * a
        if a == 0:
            return flag(sp.Not(c)) * b
        return x

    return sp.sympify(e).replace(lambda x: isinstance(x, Ite), rw)


def option_cases() -> list[dict[str, int]]:
    """The admissible 0/1 options: pre and post not both."""
    out = []
    for vals in itertools.product((0, 1), repeat=len(OPTIONS)):
        o = dict(zip(OPTIONS, vals, strict=True))
        if not (o["pre"] and o["post"]):
            out.append(o)
    return out


@functools.cache
def spec_parts() -> dict[str, Any]:
    """ENCODER_LAYER's intermediate quantities (:func:`encoder_layer_parts`) on SymPy operands,
    sizes the true-size symbols, the 0/1 options left as operands (``fix`` substitutes a case).
    One instance for every stage: a statement unfolded from a later stage's opaque functions is
    then the same SymPy object as the earlier stage's (its sums' bound variables included)."""
    ops = {name: sp.IndexedBase(name) for name in ENCODER_LAYER.operands}
    return encoder_layer_parts(SymbolicAlg(), ops, SIZE)


def statement_over_cuts(
    goal: Cut, spec_over: Mapping[str, str], cuts: Mapping[str, Cut]
) -> tuple[Callable[[dict[str, Any]], Any] | None, str]:
    """The goal's statement written over proven cuts: the spec's intermediate ``goal.part`` with each
    intermediate of ``spec_over`` (spec part -> opaque name) given as that opaque function
    (:func:`attnsim.symbolic.specs.given_parts`), times the goal's guard flags; and "" -- or
    (None, why) when refused: a name that is no cut's, a cut that states another intermediate (or
    none), a goal that is no intermediate, an opaque function in the statement that is no cut's.
    Each cut named states exactly its intermediate (``Cut.part``, with the same arguments), so the
    statement unfolded is ``goal.spec`` by construction of ``encoder_layer_parts``: the whole spec
    (slow to build: the layer up to the cuts) is never built."""
    by_name: dict[str, list[Cut]] = {}
    for c in cuts.values():
        by_name.setdefault(c.name, []).append(c)
    if not goal.part:
        return None, f"spec_over refused: {goal.label}'s statement names no intermediate of the spec"
    for part, name in spec_over.items():
        holders = by_name.get(name, [])
        if not holders:
            return None, (
                f"spec_over refused: {name} (given for the spec's {part}) is not a proven cut's name "
                f"(cuts: {', '.join(sorted(by_name)) or 'none'})"
            )
        wrong = [c for c in holders if c.part != part]
        if wrong:
            return None, (
                f"spec_over refused: the cut {wrong[0].label} named {name} states "
                f"{wrong[0].part or 'no intermediate'}, not the spec's {part}"
            )
    ops = {nm: sp.IndexedBase(nm) for nm in ENCODER_LAYER.operands}
    try:
        parts = given_parts(ops, SIZE, {part: sp.Function(name) for part, name in spec_over.items()})
    except ValueError as exc:
        return None, f"spec_over refused: {exc}"
    stmt = lambda cs: goal.flags(cs) * parts[goal.part](*(cs[a] for a in goal.args))
    probe = sp.sympify(stmt({a: sp.Symbol(f"{a}!", integer=True) for a in goal.grid.axes}))
    foreign = sorted({str(x.func) for x in probe.atoms(sp.core.function.AppliedUndef)} - set(by_name))
    if foreign:
        return None, f"spec_over refused: the statement reads {', '.join(foreign)}, no proven cut's name"
    return stmt, ""


def fix(e: Any, options: dict[str, int]) -> Any:
    """``e`` with the option operands of a case replaced by their 0/1 values."""
    return sp.sympify(e).xreplace({sp.IndexedBase(k)[0, 0, 0]: sp.Integer(v) for k, v in options.items()})


def setup(u: Any) -> tuple[_Program, dict[str, Any]]:
    im = u.map
    lay = Layout.of(*(g.block for g in im.grids), *(g.block for g in u.stage_grids), length=u._positions_expr(1))
    con = _Program(u.program, lay, [it for _, it in u.intents])
    return con, {t: sym(getattr(u, CAPACITY[t])) for t in TRUE}


def node_of(u: Any, label: str) -> C.SOp:
    """The node of U's program labelled ``label`` (the stage is checked on U's own graph)."""
    found = [n for n in C.topological([u.program]) if n.label == label]
    if len(found) != 1:
        raise KeyError(f"{label}: {len(found)} node(s) in U's program")
    node = found[0]
    assert isinstance(node, C.SOp)
    return node


SAMPLE = {"N": 3, "D": 3, "H": 3, "K": 3, "F": 3, "n": 2, "d": 2, "hh": 2, "k": 2, "f": 2}
# the entry sampled; then the same entry with n = 1 and with d = 1 (row i = 1 or column e = 1 past
# its true size: a padding entry, where U must give 0); the last entry of a full capacity; the origin
ENTRY = {"h!": 1, "i!": 1, "j!": 0, "e!": 1, "f!": 0, "h2!": 1, "l!": 1, "f2!": 1, "c!": 1}
_FULL = {**SAMPLE, **{t: SAMPLE[c] for c, t in zip("NDHKF", ("n", "d", "hh", "k", "f"), strict=True)}}
_COORDS = ("h!", "i!", "j!", "e!", "f!", "h2!", "l!", "f2!", "c!")
POINTS = (
    {**SAMPLE, **ENTRY},
    {**SAMPLE, **ENTRY, "n": 1},
    {**SAMPLE, **ENTRY, "d": 1},
    {**_FULL, **dict.fromkeys(_COORDS, SAMPLE["N"] - 1)},  # every true size at the capacity, the last entry
    {**SAMPLE, **dict.fromkeys(_COORDS, 0)},  # the origin
)


def _sample(e: Any, point: dict[str, int], fixed: Mapping[str, int] | None = None) -> Any:
    """``e`` at concrete sizes and coordinates, its sums and maxima expanded and every operand entry
    and every opaque value (a proven stage's ``name(args)``, an unknown ``pad``) a fixed
    pseudo-random rational (eps positive), the operands named in ``fixed`` at their given value:
    one point of the domain."""
    e = sp.sympify(e).xreplace({sp.Symbol(k, integer=True): sp.Integer(v) for k, v in point.items()})
    e = e.replace(lambda x: isinstance(x, (sp.Sum, MaxOver)), lambda x: x.doit())
    rep = {}
    for x in e.atoms(sp.Indexed, sp.core.function.AppliedUndef):
        seed = sum((7 + 13 * k) * ord(ch) for k, ch in enumerate(sp.sstr(x)))
        rep[x] = sp.Rational(seed % 97 + 1, 17) * (1 if x == EPS or seed % 2 else -1)
        if isinstance(x, sp.Indexed) and str(x.base) in (fixed or {}):
            rep[x] = sp.Integer((fixed or {})[str(x.base)])
    return e.xreplace(rep)


def refuted(
    what: str,
    got: Any,
    want: Any,
    shown: str,
    fixed: Mapping[str, int] | None = None,
    divisors: tuple[Any, ...] = (),
) -> Outcome:
    """A counterexample when U's value and the statement differ at one of the sampled points
    (:data:`POINTS`: a true entry, padding entries, the last capacity entry, the origin), else
    unknown.  ``divisors``: divisors of U's value not shown > 0 (a counterexample search past
    them): a point counts only where each evaluates to a positive number (U's value there is then the expression's)."""
    problem = ""
    for point in POINTS:
        try:
            a, b = _sample(got, point, fixed), _sample(want, point, fixed)
            lows = [sp.N(_sample(x, point, fixed), 50) for x in divisors]
        except (TypeError, ValueError) as exc:  # a value that does not evaluate: no counterexample
            problem = f" ({exc})"
            continue
        if not all(x.is_number and x.is_extended_real and x > 0 for x in lows):
            continue
        diff = sp.N(a - b, 50)  # exact for rational values; else 50 digits, far above any rounding here
        if diff.is_number and diff.is_extended_real and diff.is_finite and abs(diff) > sp.Float(10) ** -30:
            free = sp.sympify(got - want).free_symbols
            shown_at = [k for k in point if k in SAMPLE or sp.Symbol(k, integer=True) in free]
            where = ", ".join(f"{k} = {point[k]}" for k in shown_at)
            held = "".join(f", {k} = {v}" for k, v in (fixed or {}).items())
            opaque = sorted({str(x.func) for x in sp.sympify(got - want).atoms(sp.core.function.AppliedUndef)})
            sampled = "operands" + (f" and the opaque values {', '.join(opaque)}" if opaque else "")
            past = f"; the divisors not shown > 0 are > 0 there: {len(divisors)}" if divisors else ""
            return Outcome.bad(
                f"{what}: counterexample at {where} ({sampled} fixed rationals{held}): U gives {a}, the spec {b}{past}"
            )
    return Outcome.unknown(f"{what}: U's value and the statement are not shown equal{problem}: {shown[:300]}")


def past_divisors(
    ex: LayerExecutor,
    node: C.SOp,
    pos: E.Expr,
    goal: Cut,
    cs: dict[str, Any],
    case: dict[str, int],
    statement: Callable[[dict[str, Any]], Any] | None,
    witnesses: tuple[RowWitness, ...],
    what: str,
) -> Outcome:
    """U's value computed again with the divisors it could not show > 0 recorded (``sampling``), and
    :func:`refuted` at the points where each is > 0: a counterexample, or unknown."""
    again = LayerExecutor(
        ex.con,
        max(0.5, ex.timeout),
        sources=ex.sources,
        options=ex.options,
        capacity=ex.capacity,
        below=ex.below,
        cuts=ex.cuts,
        step_cap=ex.step_cap,
        intent_proofs=ex.intent_proofs,
        witnesses=ex.witnesses,
        above=ex.above,
        sampling=True,
    )
    again.coords.update({k: v for k, v in ex.coords.items() if k.endswith("!")})  # the entry's coordinates
    # the values computed before the failure (each proven as usual), and fresh names past theirs
    again._memo.update(ex._memo)
    again._fresh = ex._fresh
    try:
        got = again.value(node, pos)
    except ExecutionFailed as exc:
        return exc.outcome
    want = fix(goal.statement(cs) if statement is None else statement(cs), case)
    fixed = {k: v for w in witnesses for k, v in w.sample}
    where = f"{goal.stage} ({what}): {goal.label} at {goal.grid.name}"
    return refuted(where, got, want, "", fixed, tuple(again.unshown))


def _same_unfolded(statement: Any, spec: Any, cuts: Mapping[str, Cut]) -> bool:
    """``statement`` with every cut unfolded is ``spec``, structurally or up to the names of bound
    variables (:func:`alpha_equal`)."""
    by_name: dict[str, Cut] = {}
    for c in cuts.values():
        by_name.setdefault(c.name, c)  # nodes with one statement share its name (Cut)
    # each opaque application replaced at once (a cut's spec is in the spec's operands: no opaque
    # function inside it), without walking the unfolded expression once per cut
    apps = [x for x in sp.sympify(statement).atoms(sp.core.function.AppliedUndef) if x.func.__name__ in by_name]
    unfolded = sp.sympify(statement).xreplace({x: by_name[x.func.__name__].unfold(x) for x in apps})
    return bool(unfolded == spec) or alpha_equal(unfolded, spec)


def prove_stage(
    u: Any,
    goal: Cut,
    cases: list[dict[str, int]],
    timeout: float,
    *,
    cuts: Mapping[str, Cut] | None = None,
    statement: Callable[[dict[str, Any]], Any] | None = None,
    flags: bool = False,
    step_cap: float = 20.0,
    witnesses: tuple[RowWitness, ...] = (),
    spec_flags: bool = False,
    spec_over: Mapping[str, str] | None = None,
    past_divisors_search: bool = False,
    spec_once: bool = False,
) -> Outcome:
    """U's node ``goal.label`` at a symbolic position of ``goal.grid`` with coordinates in the
    goal's region equals its statement, in every option case, by the normal form.

    ``cuts`` are earlier stages' proven statements (read as opaque functions, :class:`Cut`);
    ``statement`` (default ``goal.spec``) is the goal written in those opaque functions, and is
    then checked to be ``goal.spec`` once every cut is unfolded (so a stage cannot state its
    claim in a form other than the spec's).  ``flags``: U's value is compared in its 0/1-flag form
    (:func:`as_flags`, then :func:`absorb_flags`); ``spec_flags``: the statement too, where the
    flagged branch is shown finite (:meth:`LayerExecutor.as_flags_where_finite`).  ``witnesses``:
    premises of the domain the proof may use (:class:`RowWitness`), stated in the Outcome.
    ``spec_over`` (spec intermediate -> a cut's opaque name, e.g. ``{"y1": "Y1"}``): the statement
    is the spec's own ``goal.part`` written over those cuts (:func:`statement_over_cuts`, refused
    unless every opaque function in it is a proven cut stating that intermediate), compared at that
    level: the whole spec is not built.  A cut proven on the padding rows (``Cut.padded``) is read
    there as its proven padding value; the cases where a variance read one are named in the Outcome.
    ``past_divisors_search``: when a divisor is not shown > 0, U's value is executed again past it
    and compared where the divisors are > 0 (:func:`past_divisors`; a counterexample or unknown:
    it costs a second execution of the rest of the case).
    ``spec_once``: the statement is checked to be the spec's once, with the options left as
    operands (else once per case, after the case's values are substituted)."""
    cut_map = {c.label: c for c in (cuts or {}).values()}
    over = spec_over is not None
    if spec_over is not None:
        if statement is not None:
            raise ValueError("prove_stage: give statement or spec_over, not both")
        statement, why = statement_over_cuts(goal, spec_over, cut_map)
        if statement is None:
            return Outcome.unknown(f"{goal.stage}: {why}")
    con, caps = setup(u)
    node = node_of(u, goal.label)
    grid = goal.grid
    vs = {a: E.Var(f"{a}!") for a in grid.axes}
    coords = {vs[a].name: grid.dim(a) for a in grid.axes}
    below = {vs[a].name: t for a, t in goal.below}
    cs = {a: sym(v) for a, v in vs.items()}
    pos = grid.position(*(vs[a] for a in grid.axes))
    t0 = time.perf_counter()
    # spec_once: the statement is the spec's in every case when it is so with the options left as
    # operands (structurally or up to bound names: a case substitutes the same 0/1 values into both);
    # one check on the larger unfixed expressions, cheaper than one per case when there are many
    spec_for_every_case = (
        spec_once and statement is not None and _same_unfolded(statement(cs), goal.statement(cs), cut_map)
    )
    steps = 0
    done = []
    padded: list[str] = []  # the cases where a variance read a cut's proven padding values
    intent_proofs: dict[tuple[int, int], Outcome] = {}  # selectors proven their intents, shared by the cases
    proofs: dict[tuple[Any, ...], Outcome] = {}  # Z3 answers, shared by the cases
    for case in cases:
        ex = LayerExecutor(
            con,
            max(0.5, timeout - (time.perf_counter() - t0)),
            sources=u.map.sources(),
            options=case,
            capacity=caps,
            below=below,
            cuts=cut_map,
            step_cap=step_cap,
            intent_proofs=intent_proofs,
            witnesses=witnesses,
            proofs=proofs,
        )
        ex.coords.update(coords)
        what = ", ".join(f"{k} = {v}" for k, v in case.items()) or "every option a symbol"
        try:
            got = ex.value(node, pos)
        except ExecutionFailed as exc:
            failed = Outcome(exc.outcome.ok, f"{goal.stage} ({what}): {exc.outcome.detail}")
            if not past_divisors_search or exc.outcome.ok is not None or "not shown > 0" not in exc.outcome.detail:
                return failed
            # a divisor not shown > 0: search for a counterexample where U's divisors are > 0
            found = past_divisors(ex, node, pos, goal, cs, case, statement, witnesses, what)
            return found if found.ok is False else failed
        want = fix(goal.statement(cs) if statement is None else statement(cs), case)
        mine = merge_flags(absorb_flags(as_flags(got))) if flags else got
        theirs = ex.as_flags_where_finite(want) if spec_flags else want
        theirs = merge_flags(theirs) if flags else theirs
        same, shown_nf, _ = equal_by_normal_form(mine, theirs)
        if not same:
            fixed = {k: v for w in witnesses for k, v in w.sample}
            return refuted(f"{goal.stage} ({what}): {goal.label} at {grid.name}", got, want, shown_nf, fixed)
        if statement is not None and not over and not spec_for_every_case:
            same, by_parts = False, False
            used = [c for c in cut_map.values() if sp.sympify(want).has(sp.Function(c.name))]
            if goal.part and used and all(c.part for c in used):
                # at the level of spec parts: equal calls of one builder, nothing built; a statement
                # that is not the goal's own part call is refused (stated in another form)
                by_parts, shallow = True, want
                for c in used:
                    shallow = c.unfold_to_part(shallow)
                call = goal.flags(cs) * goal.part_call(tuple(cs[a] for a in goal.args))
                lhs, rhs = fix(shallow, case), fix(call, case)
                same, shown_nf = lhs == rhs, f"{lhs} is not the spec part call {rhs}"
            if not same and not by_parts:
                unfolded = want
                for c in cut_map.values():
                    unfolded = c.unfold(unfolded)
                lhs, rhs = fix(unfolded, case), fix(goal.statement(cs), case)
                same = lhs == rhs  # structurally the same expression (the usual case): no normal form needed
                if not same:
                    same = alpha_equal(lhs, rhs)  # the same up to the names of bound variables
                if not same:
                    same, shown_nf, _ = equal_by_normal_form(lhs, rhs)
            if not same:
                return Outcome.bad(f"{goal.stage} ({what}): the stage's statement is not the spec's: {shown_nf[:300]}")
        steps += len(ex.steps)
        variances = sum(st.startswith("variance") for st in ex.steps)
        done.append(what + (f" (a variance shown a mean of squares {variances} time(s))" if variances else ""))
        if ex.padding_used:
            padded.append(what)
    region = ", ".join(f"{a} < {t}" for a, t in goal.below)
    return Outcome.good(
        f"for all capacities N, D, H, K, F and true sizes n <= N, d <= D, hh <= H, k <= K, f <= F (eps > 0): "
        f"at every entry ({', '.join(grid.axes)}) of {grid.name} with {region or 'any coordinates'}, U's "
        f"{goal.label} == its statement; cases {'; '.join(done)}; {steps} Z3/normal-form step(s)"
        + (f"; premises: the proven stages {', '.join(sorted({c.stage for c in cut_map.values()}))}" if cut_map else "")
        + "".join(f"; premise: {w.text}" for w in witnesses)
        + (
            f"; padding rows (cases {'; '.join(padded)}): read as the proven padding values "
            f"{', '.join(sorted({c.padded for c in cut_map.values() if c.padded}))}"
            if padded
            else ""
        )
        + (
            f"; stated over the cuts {', '.join(f'{v} = {k}' for k, v in spec_over.items())} (the spec's own "
            f"{goal.part} with those intermediates given)"
            if spec_over
            else ""
        )
    )


def prove_padding(
    u: Any,
    goal: Cut,
    rep: Cut,
    cases: list[dict[str, int]],
    timeout: float,
    *,
    cuts: Mapping[str, Cut] | None = None,
    step_cap: float = 120.0,
) -> Outcome:
    """The padding statement of ``goal`` (``goal.padded``): at every padding row i >= n of its grid
    (its other region conditions kept), U's node ``goal.label`` equals U's node ``rep.label`` (the
    representative of the name, ``rep`` may be ``goal``) at the same arguments, and that value
    depends on the arguments only (on no other coordinate of either grid) and is 0 where a guard
    flag of the cut is 0 (the value with the guard's condition false is 0 in the normal form).  So
    every node of the name holds one value ``padded(args)`` there, times the guard flags: what a
    later stage reads (:meth:`LayerExecutor.cut_value`).  U's nodes are executed as in
    :func:`prove_stage` (every divisor shown > 0) at a row the executor takes past n: a token of
    <T, X> at such a row is 0 (the encoding's padding, :meth:`InputMap.encode`), a proven cut read
    there is its own padding value.  The statement is about U only (no spec): its proof is that
    the values are one."""
    row = ("i", "n")
    what0 = f"{goal.stage} (padding rows): {goal.label}"
    if not goal.padded or goal.padded != rep.padded or len(goal.args) != len(rep.args):
        return Outcome.bad(f"{what0}: {rep.label} holds no padding value of the same name and arguments")
    if row not in goal.below or row not in rep.below or "i" not in goal.args:
        return Outcome.bad(f"{what0}: the padding rows are the row axis i past n, in the region of both nodes")
    if dict(zip(rep.args, goal.args, strict=True)).get("i") != "i":
        return Outcome.bad(f"{what0}: {rep.label}'s row is not the same argument")
    cut_map = {c.label: c for c in (cuts or {}).values()}
    con, caps = setup(u)
    node, rnode = node_of(u, goal.label), node_of(u, rep.label)
    vs = {a: E.Var(f"{a}!") for a in goal.grid.axes}
    to_goal = dict(zip(rep.args, goal.args, strict=True))
    rvs = {b: vs[to_goal[b]] if b in to_goal else E.Var(f"{b}_rep!") for b in rep.grid.axes}
    for b, a in to_goal.items():
        if sp.expand(sym(rep.grid.dim(b)) - sym(goal.grid.dim(a))) != 0:
            return Outcome.bad(f"{what0}: {rep.label}'s axis {b} and {goal.label}'s axis {a} differ in extent")
    coords = {vs[a].name: goal.grid.dim(a) for a in goal.grid.axes}
    coords.update({rvs[b].name: rep.grid.dim(b) for b in rep.grid.axes})
    below = {vs[a].name: t for a, t in goal.below if (a, t) != row}
    below.update({rvs[b].name: t for b, t in rep.below if (b, t) != row})
    pos = goal.grid.position(*(vs[a] for a in goal.grid.axes))
    rpos = rep.grid.position(*(rvs[b] for b in rep.grid.axes))
    args = {sym(vs[a]) for a in goal.args}
    others = {sym(v) for v in [*vs.values(), *rvs.values()]} - args
    cs = {a: sym(v) for a, v in vs.items()}
    t0 = time.perf_counter()
    intent_proofs: dict[tuple[int, int], Outcome] = {}
    proofs: dict[tuple[Any, ...], Outcome] = {}
    done = []
    for case in cases:
        ex = LayerExecutor(
            con,
            max(0.5, timeout - (time.perf_counter() - t0)),
            sources=u.map.sources(),
            options=case,
            capacity=caps,
            below=below,
            above={vs["i"].name: "n"},
            cuts=cut_map,
            step_cap=step_cap,
            intent_proofs=intent_proofs,
            proofs=proofs,
        )
        ex.coords.update(coords)
        what = ", ".join(f"{k} = {v}" for k, v in case.items()) or "every option a symbol"
        try:
            got = merge_flags(absorb_flags(as_flags(ex.value(node, pos))))
            ref = got if rep.label == goal.label else merge_flags(absorb_flags(as_flags(ex.value(rnode, rpos))))
        except ExecutionFailed as exc:
            return Outcome(exc.outcome.ok, f"{what0} ({what}): {exc.outcome.detail}")
        stray = sorted(str(x) for x in sp.sympify(ref).free_symbols & others)
        if stray:
            return Outcome.bad(
                f"{what0} ({what}): {rep.label}'s value there reads {', '.join(stray)}: {sp.sstr(ref)[:200]}"
            )
        if rep.label != goal.label:
            same, shown, _ = equal_by_normal_form(got, ref)
            if not same:
                return Outcome.bad(f"{what0} ({what}): not the value of {rep.label} there: {shown[:300]}")
        for a, t in goal.guard:
            off = merge_flags(assuming(got, {sp.Lt(cs[a], SIZE[t]): sp.false, sp.Gt(SIZE[t], cs[a]): sp.false}))
            zero, shown, _ = equal_by_normal_form(off, sp.Integer(0))
            if not zero:
                return Outcome.bad(f"{what0} ({what}): not 0 where {a} >= {t}: {shown[:300]}")
        done.append(what)
    read = f"; premises: the proven stages {', '.join(sorted({c.stage for c in cut_map.values()}))}" if cut_map else ""
    return Outcome.good(
        f"at every padding row i >= n of {goal.grid.name} (the other coordinates in the region), U's {goal.label} "
        f"== {goal.padded}({', '.join(goal.args)}), the value of {rep.label} there (the arguments' only)"
        f"{''.join(f' [{a} < {t}]' for a, t in goal.guard)}; cases {'; '.join(done)}{read}"
    )


__all__ = [
    "Cut",
    "LayerExecutor",
    "RowWitness",
    "fix",
    "option_cases",
    "part_cut",
    "prove_padding",
    "prove_stage",
    "spec_parts",
    "statement_over_cuts",
]
