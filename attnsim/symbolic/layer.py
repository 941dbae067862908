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
and the comparison fails (reported, never assumed).

**Positivity** of the LayerNorm divisor ``sqrt(var + eps)``: U computes var as
``E[x^2] - E[x]^2``.  It is shown >= 0 by proving, in the Sum normal form, that it equals
``(1/m) Sum_{l<m} (x_l - E[x])^2`` (a mean of squares of reals, m >= 1), so var + eps > 0 with
eps > 0.

**Stages and cuts.**  The layer is proven stage by stage (:mod:`attnsim.symbolic.stages`): a stage
proves one node of U equal to its statement (:class:`Cut`) at every entry of its grid in a region
(:func:`prove_stage`); a later stage reads that node as an opaque function (its proof holds for
every value of it) inside the region and as an unknown outside, and states its own claim in the
opaque functions, which is checked to be the spec's once they are unfolded.
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from attnsim.proofs import decode, z3sel
from attnsim.proofs.obligation import Outcome
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.layout import Grid, Layout
from attnsim.simulator.record import CAPACITY, TRUE, Source
from attnsim.symbolic.execute import ExecutionFailed, sym
from attnsim.symbolic.frame import FrameExecutor, _Program
from attnsim.symbolic.ite import Ite
from attnsim.symbolic.positivity import Signs
from attnsim.symbolic.specs import ENCODER_LAYER, SymbolicAlg, encoder_layer_parts
from attnsim.symbolic.sums import equal_by_normal_form

OPTIONS = ("residual", "pre", "post", "gelu", "ffn")
SIZE = {t: sp.Symbol(t, integer=True) for t in TRUE}
EPS = sp.IndexedBase("eps")[0, 0, 0]


def flag(cond: Any) -> Any:
    """The 0/1 guard ``Ite(cond, 1, 0)``."""
    return Ite(cond, sp.Integer(1), sp.Integer(0))


def _guard(f: Any) -> Any:
    """The condition of a guard flag (or of a flag's power), else None."""
    if isinstance(f, sp.Pow) and f.exp.is_Integer and f.exp > 0:
        f = f.base
    if isinstance(f, Ite) and f.args[1] == 1 and f.args[2] == 0:
        return f.args[0]
    return None


def _flags_of(term: Any) -> set[Any]:
    return {f.base if isinstance(f, sp.Pow) else f for f in sp.Mul.make_args(term) if _guard(f) is not None}


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


def _is_zero(c: E.Expr) -> bool:
    return isinstance(c, E.Const) and c.value == 0


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

    def unfold(self, e: Any) -> Any:
        """``e`` with every opaque ``name(args)`` replaced by the statement it stands for."""
        f = sp.Function(self.name)
        return sp.sympify(e).replace(
            lambda x: getattr(x, "func", None) == f,
            lambda x: self.spec(dict(zip(self.args, x.args, strict=True))),
        )


@dataclass
class LayerExecutor(FrameExecutor):
    """U's program with tokens read through the input map's sources (see the module docstring)."""

    sources: tuple[tuple[Grid, Source], ...] = ()
    options: dict[str, int] = field(default_factory=dict)
    capacity: dict[str, Any] = field(default_factory=dict)  # true size name -> its capacity (SymPy)
    below: dict[str, str] = field(default_factory=dict)  # entry coordinate -> the true size it is below
    # proven stages' statements, read in place of executing their nodes again (see Cut)
    cuts: dict[str, Cut] = field(default_factory=dict)

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
            if (isinstance(c, E.Const) and c.value == 0) or (isinstance(c, E.Var) and self.below.get(c.name) == true):
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

    def _attempt(self, goal: E.Expr, what: str, decode_k: bool = False) -> Outcome:
        """Z3 on the goal after its conditionals were decided one by one (each a smaller goal)."""
        if not decode_k and any(isinstance(n, E.If) for n in E.nodes(goal)):
            goal = self.settle(goal)
        dec: list[decode.Decode] = []
        if decode_k:
            ln = self.con.layout.length
            dec = [decode.Decode(z3sel.K.name, tuple(self.con.layout.blocks), ranges=(z3sel.K >= 0, z3sel.K < ln))]
        out = decode.prove(
            goal,
            self.premises,
            decode=dec,
            coords=dict(self.coords),
            minimum=self.minimum,
            timeout=min(self.left(), self.step_cap),
        )
        if out.ok is True:
            self.lemmas |= set(decode.lemmas_in(out.detail))
            self.steps.append(what)
        return out

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
        return super()._value(node, pos)

    def cut_value(self, cut: Cut, pos: E.Expr) -> sp.Expr:
        """A proven stage's node at ``pos``: its opaque value where the coordinates are in the proven
        region, else ``Ite(region, value, unknown)`` (``cut.pad``: nothing is known there)."""
        grid = cut.grid
        self.prove(grid.contains(pos), f"{cut.label} is read at {E.render(pos)} inside {grid.name}")
        ecs = {a: self.norm(c) for a, c in grid.coords(pos).items()}
        cs = {a: sym(c) for a, c in ecs.items()}
        # inside the region: an entry coordinate the stage takes below the same true size, or 0
        undecided = [
            (a, t)
            for a, t in cut.below
            if not (_is_zero(c := ecs[a]) or (isinstance(c, E.Var) and self.below.get(c.name) == t))
        ]
        self.steps.append(f"{cut.label}: the proven stage {cut.stage} (cut)")
        if not undecided:
            return cut.opaque(cs)
        return Ite(sp.And(*(sp.Lt(cs[a], SIZE[t]) for a, t in undecided)), cut.opaque(cs), cut.pad(cs))

    def guarded_max(self, node: C.Aggregate, pos: E.Expr) -> sp.Expr:
        """A max head over ``structural & data``: the opaque max over the structural listing of
        ``Ite(data holds, v, -oo)`` (the max over the keys where the data condition holds; -oo is
        never the max when one listed key passes, which the executor does not prove: the stages
        that use it cancel it, see :func:`prove_attention`)."""
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
        return self.truncate(total) if combine == "sum" else total

    # -- truncation of padded sums -------------------------------------------------------------
    def truncate(self, s: Any) -> Any:
        """Each limit of the Sum cut from a capacity to the true size every term is guarded by."""
        if not isinstance(s, sp.Sum):
            return s
        body = s.function
        for v, lo, hi in s.limits:  # innermost first
            body = _hoist(self._truncate_one(body, v, lo, hi))
        return body

    def _truncate_one(self, body: Any, v: Any, lo: Any, hi: Any) -> Any:
        terms = sp.Add.make_args(sp.expand(body))
        cut: Any = None
        kept = []
        for term in terms:
            factors = list(sp.Mul.make_args(term))
            mine = [
                f for f in factors if (g := _guard(f)) is not None and isinstance(g, sp.StrictLessThan) and g.lhs == v
            ]
            bounds = {_guard(f).rhs for f in mine}
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
            return self.nonnegative_variance(e - EPS)
        return False

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


def nonzero_flags(c: Any) -> Any:
    """``[c != 0]`` as a product of 0/1 flags, one per factor of ``c`` (a product is non-zero iff
    every factor is): a flag factor is its own indicator; ``1 - x`` gives ``[x != 1]``."""
    out: Any = sp.Integer(1)
    for f in sp.Mul.make_args(c):
        if _guard(f) is not None:
            out *= flag(_guard(f))
        elif isinstance(x := sp.expand(1 - f), sp.Indexed):
            out *= flag(sp.Ne(x, 1))
        else:
            out *= flag(sp.Ne(f, 0))
    return out


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


def _sample(e: Any, point: dict[str, int]) -> Any:
    """``e`` at concrete sizes and coordinates, its sums expanded and every operand entry a fixed
    pseudo-random rational (eps positive): one point of the domain."""
    e = sp.sympify(e).xreplace({sp.Symbol(k, integer=True): sp.Integer(v) for k, v in point.items()})
    e = e.replace(lambda x: isinstance(x, sp.Sum), lambda x: x.doit())
    rep = {}
    for x in e.atoms(sp.Indexed):
        seed = sum((7 + 13 * k) * ord(ch) for k, ch in enumerate(sp.sstr(x)))
        rep[x] = sp.Rational(seed % 97 + 1, 17) * (1 if x == EPS or seed % 2 else -1)
    return e.xreplace(rep)


def refuted(what: str, got: Any, want: Any, shown: str) -> Outcome:
    """A counterexample when U's value and the statement differ at a sampled point, else unknown."""
    point = {**SAMPLE, "h!": 1, "i!": 1, "j!": 0, "e!": 1}
    try:
        a, b = _sample(got, point), _sample(want, point)
    except (TypeError, ValueError) as exc:  # a value that does not evaluate: no counterexample
        return Outcome.unknown(f"{what}: U's value and the statement are not shown equal ({exc}): {shown[:300]}")
    diff = sp.N(a - b, 50)  # exact for rational values; else 50 digits, far above any rounding here
    if diff.is_number and abs(diff) > sp.Float(10) ** -30:
        where = ", ".join(f"{k} = {v}" for k, v in point.items())
        return Outcome.bad(f"{what}: counterexample at {where} (operands fixed rationals): U gives {a}, the spec {b}")
    return Outcome.unknown(f"{what}: U's value and the statement are not shown equal: {shown[:300]}")


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
) -> Outcome:
    """U's node ``goal.label`` at a symbolic position of ``goal.grid`` with coordinates in the
    goal's region equals its statement, in every option case, by the normal form.

    ``cuts`` are earlier stages' proven statements (read as opaque functions, :class:`Cut`);
    ``statement`` (default ``goal.spec``) is the goal written in those opaque functions, and is
    then checked to be ``goal.spec`` once every cut is unfolded (so a stage cannot state its
    claim in a form other than the spec's).  ``flags``: U's value is compared in its 0/1-flag form."""
    con, caps = setup(u)
    node = node_of(u, goal.label)
    grid = goal.grid
    vs = {a: E.Var(f"{a}!") for a in grid.axes}
    coords = {vs[a].name: grid.dim(a) for a in grid.axes}
    below = {vs[a].name: t for a, t in goal.below}
    cs = {a: sym(v) for a, v in vs.items()}
    pos = grid.position(*(vs[a] for a in grid.axes))
    cut_map = {c.label: c for c in (cuts or {}).values()}
    t0 = time.perf_counter()
    steps = 0
    done = []
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
        )
        ex.coords.update(coords)
        what = ", ".join(f"{k} = {v}" for k, v in case.items())
        try:
            got = ex.value(node, pos)
        except ExecutionFailed as exc:
            return Outcome(exc.outcome.ok, f"{goal.stage} ({what}): {exc.outcome.detail}")
        want = fix(goal.statement(cs) if statement is None else statement(cs), case)
        same, shown_nf, _ = equal_by_normal_form(as_flags(got) if flags else got, want)
        if not same:
            return refuted(f"{goal.stage} ({what}): {goal.label} at {grid.name}", got, want, shown_nf)
        if statement is not None:
            unfolded = want
            for c in cut_map.values():
                unfolded = c.unfold(unfolded)
            lhs, rhs = fix(unfolded, case), fix(goal.statement(cs), case)
            same = lhs == rhs  # structurally the same expression (the usual case): no normal form needed
            if not same:
                same, shown_nf, _ = equal_by_normal_form(lhs, rhs)
            if not same:
                return Outcome.bad(f"{goal.stage} ({what}): the stage's statement is not the spec's: {shown_nf[:300]}")
        steps += len(ex.steps)
        variances = sum(st.startswith("variance") for st in ex.steps)
        done.append(what + (f" (a variance shown a mean of squares {variances} time(s))" if variances else ""))
    region = ", ".join(f"{a} < {t}" for a, t in goal.below)
    return Outcome.good(
        f"for all capacities N, D, H, K, F and true sizes n <= N, d <= D, hh <= H, k <= K, f <= F (eps > 0): "
        f"at every entry ({', '.join(grid.axes)}) of {grid.name} with {region or 'any coordinates'}, U's "
        f"{goal.label} == its statement; cases {'; '.join(done)}; {steps} Z3/normal-form step(s)"
        + (f"; premises: the proven stages {', '.join(sorted({c.stage for c in cut_map.values()}))}" if cut_map else "")
    )


__all__ = ["Cut", "LayerExecutor", "fix", "option_cases", "prove_stage", "spec_parts"]
