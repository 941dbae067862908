"""Symbolic execution at symbolic sizes: a program's value at a symbolic output entry.

The all-sizes method of issue "proofs that mean what they say".  The construction is built over
unbound sizes; the output entry (h, i, j) is a position over coordinate variables with symbolic
extents.  Its value is computed through the program graph itself:

* ``tokens`` at a position: the input block that contains it (proven by the decoding prover of
  :mod:`attnsim.proofs.decoding`, for all sizes) and its coordinates there, normalized by the same
  prover's rewrites, read as the operand entry ``A[h, i, j]``;
* a primitive applies its SymPy meaning; a constant that is a size expression stays symbolic;
* an ``Aggregate`` is the mean over its key set.  A **gather** ``Select(indices, f(indices), ==)``
  selects exactly the key f(q) once 0 <= f(q) < L is proven (derived, nothing to trust); a branch
  ``If(c, a, b)`` of f whose condition Z3 decides at q is taken (a gather onto a grid).  Any
  other structural selector needs an :class:`Enumeration` hint — keys ``key(q, l)`` for
  ``l < count`` and a witness ``l = witness(k)`` — and Z3 proves, for all sizes, that the hint
  lists exactly the selector's keys, each once: count >= 1; every listed key is in range and
  selected, and its witness gives l back; every selected key is listed.  A wrong hint cannot prove
  anything.  Then the mean is ``Sum_{l < count} v(key(q, l)) / count``.  A **max head**
  (``C.maximum``: scored by its own values) over such a listing is the opaque
  ``MaxOver(v(key(q, l)), l < count)`` (:mod:`attnsim.symbolic.maxover`): queries with the same key
  set get the same value; an argmax head whose values are not its scores is refused.  A SelectorWidth of a
  hinted selector and a token comparison is an indicator sum; other selectors that compare token
  values are out of scope (the method says so, it does not guess).

The value is compared with the independent specification (each construction folder's ``spec.py``) by
:mod:`attnsim.symbolic.program_equals_spec` (the Sum normal form of :mod:`attnsim.symbolic.sums`;
``simplify`` is never called); divisors are shown positive by :mod:`attnsim.symbolic.positivity`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import sympy as sp

from attnsim.proofs import z3sel
from attnsim.proofs.construction import ProgramView
from attnsim.proofs.decoding import prover, rewriting
from attnsim.proofs.decoding.query import Decode
from attnsim.proofs.decoding.refutation import refuted_at
from attnsim.proofs.obligation import Outcome
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.intent import Enumeration
from attnsim.rasp.layout import Block
from attnsim.symbolic.if_then_else import from_piecewise, ite
from attnsim.symbolic.maxover import max_over
from attnsim.symbolic.positivity import Signs
from attnsim.symbolic.summation_names import SummationNames
from attnsim.symbolic.sums import simplify_conditions
from attnsim.symbolic.sympy_work import count_step


class ExecutionFailed(Exception):
    """A step of the symbolic execution was refuted or could not be decided."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.detail)
        self.outcome = outcome


_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "==": sp.Eq,
    "!=": sp.Ne,
    "<": sp.Lt,
    "<=": sp.Le,
    ">": sp.Gt,
    ">=": sp.Ge,
}


def _int_value(e: E.Expr, env: dict[str, Any]) -> Any:
    """SymPy value of an index expression under the engine's semantics (booleans are 0/1 values)."""

    def flag(x: E.Expr) -> Any:  # the truth of x as a SymPy condition
        v = _int_value(x, env)
        return sp.Ne(v, 0)

    if isinstance(e, E.Var):
        return env[e.name] if e.name in env else sp.Symbol(e.name, integer=True)
    if isinstance(e, E.Const):
        return sp.Integer(e.value)
    if isinstance(e, E.Not):
        return ite(sp.Eq(_int_value(e.a, env), 0), 1, 0)
    if isinstance(e, E.If):
        return ite(flag(e.cond), _int_value(e.a, env), _int_value(e.b, env))
    assert isinstance(e, E.BinOp)
    if e.op in ("and", "or"):
        cond = sp.And(flag(e.a), flag(e.b)) if e.op == "and" else sp.Or(flag(e.a), flag(e.b))
        return ite(cond, 1, 0)
    a, b = _int_value(e.a, env), _int_value(e.b, env)
    if e.op in E.COMPARATORS:
        return ite(_COMPARE[e.op](a, b), 1, 0)
    ops: dict[str, Callable[[Any, Any], Any]] = {
        "+": lambda x, y: x + y,
        "-": lambda x, y: x - y,
        "*": lambda x, y: x * y,
        "div": lambda x, y: sp.floor(x / y),
        "mod": lambda x, y: sp.Mod(x, y),
        "min": lambda x, y: sp.Min(x, y),
        "max": lambda x, y: sp.Max(x, y),
    }
    return ops[e.op](a, b)


def sym(e: E.Expr | int) -> sp.Expr:
    """An index expression as SymPy (sizes and coordinates as integer symbols of their names)."""
    return E.lift(e).to_sympy({})


@dataclass
class Executor:
    """Evaluates one construction's program at symbolic positions (see the module docstring)."""

    con: ProgramView  # a Construction built over unbound sizes, or U's program record
    timeout: float = 10.0
    coords: dict[str, E.Expr] = field(default_factory=dict)
    steps: list[str] = field(default_factory=list)
    lemmas: set[str] = field(default_factory=set)
    started: float = field(default_factory=time.process_time)  # CPU seconds: load does not move it
    _names: SummationNames = field(default_factory=SummationNames)  # summation variables' names
    _order: dict[int, int] | None = field(default=None, repr=False)  # id(node) -> topological index
    _memo: dict[tuple[int, str], sp.Expr] = field(default_factory=dict)
    computed: int = 0  # values computed (memo misses), within sympy_work.EXECUTOR_STEPS
    _layout_sizes: tuple[Any, frozenset[str]] | None = field(default=None, repr=False)

    # -- proofs ------------------------------------------------------------------------------
    @property
    def premises(self) -> list[E.Expr]:
        return list(self.con.preconditions)

    @property
    def minimum(self) -> dict[str, int]:
        return dict(self.con.minimums)

    def left(self) -> float:
        left = self.timeout - (time.process_time() - self.started)
        if left <= 0:
            raise ExecutionFailed(Outcome(None, f"timeout after {len(self.steps)} proven steps", cause="timeout"))
        return left

    def net(self) -> float:
        """The wall-clock net for one more Z3 query (times ``solver_work.SAFETY_FACTOR``): this
        executor's whole budget, never the CPU seconds left, so that a loaded machine cannot stop a
        query its rlimit would decide; raises the CPU timeout when no second is left."""
        self.left()
        return self.timeout

    def _attempt(self, goal: E.Expr, what: str, decode_k: bool = False) -> Outcome:
        """Z3 on ``premises -> goal`` for all sizes and coordinates in range (the key decoded through
        the layout's blocks with ``decode_k``); a proof's lemmas and step are recorded."""
        dec: list[Decode] = []
        if decode_k:
            ln = self.con.layout.length
            dec = [Decode(z3sel.K.name, tuple(self.con.layout.blocks), ranges=(z3sel.K >= 0, z3sel.K < ln))]
        out = prover.prove(
            goal, self.premises, decode=dec, coords=dict(self.coords), minimum=self.minimum, timeout=self.net()
        )
        if out.ok is True:
            self.lemmas |= set(out.lemmas)
            self.steps.append(what)
        return out

    def prove(self, goal: E.Expr, what: str, decode_k: bool = False) -> None:
        """``premises -> goal`` proven, or ExecutionFailed (refuted or not decided)."""
        out = self._attempt(goal, what, decode_k)
        if out.ok is not True:
            raise ExecutionFailed(out.retold(f"{what}: {out.detail}"))

    def holds(self, goal: E.Expr) -> bool:
        """``premises -> goal`` proven; False when not shown.  A goal false at one of the sample
        points (:meth:`sample_points`) where every premise holds is not shown by any proof
        (:func:`attnsim.proofs.decoding.refutation.refuted_at`): False without asking Z3 (most of the
        conditions the executor decides are false one way round, and a refutation is Z3's
        costliest answer: a model, then a smaller one)."""
        if any(refuted_at(goal, self.premises, self.coords, self.minimum, env) for env in self.sample_points()):
            return False
        return self._attempt(goal, f"{E.render(goal)} holds").ok is True

    def sample_points(self) -> list[dict[str, int]]:
        """A few points of the domain to evaluate a goal at: :meth:`sample_env`, and it with every
        coordinate at 0 and at the middle of its range (points outside the premises are skipped
        by :func:`~attnsim.proofs.decoding.refutation.refuted_at`)."""
        try:
            base = self.sample_env()
        except (E.ExprError, ZeroDivisionError):
            return []
        points = [base]
        for pick in (lambda ext: 0, lambda ext: ext // 2):
            env = dict(base)
            try:
                for name, ext in self.coords.items():
                    env[name] = pick(int(ext.evaluate(env)))
            except (E.ExprError, ZeroDivisionError):
                continue
            points.append(env)
        return points

    def decide(self, flag: E.Expr) -> E.Expr:
        """A boolean index expression with each conjunct that Z3 proves true dropped (1 if none is
        left); 0 when one is proven false.  What is left stays a condition in the value."""
        parts: list[E.Expr] = []
        stack = [flag]
        while stack:
            e = stack.pop()
            if isinstance(e, E.BinOp) and e.op == "and":
                stack += [e.b, e.a]
            else:
                parts.append(e)
        kept = []
        for c in parts:
            if self.holds(c):
                continue
            if self.holds(E.Not(c)):
                return E.Const(0)
            kept.append(c)
        if not kept:
            return E.Const(1)
        out = kept[0]
        for c in kept[1:]:
            out = out & c
        return out

    def settle(self, e: E.Expr) -> E.Expr:
        """``e`` with each ``If(c, a, b)`` whose condition Z3 proves true (false) at this point replaced
        by ``a`` (``b``); an undecided one is kept.  A gather onto a grid reads ``If(x in grid, source,
        -1)``: at a query proven inside the grid this is the source."""
        if isinstance(e, E.If):
            if self.holds(e.cond):
                return self.settle(e.a)
            if self.holds(E.Not(e.cond)):
                return self.settle(e.b)
            return E.If(self.settle(e.cond), self.settle(e.a), self.settle(e.b))
        if isinstance(e, E.BinOp):
            return E.BinOp(e.op, self.settle(e.a), self.settle(e.b))
        if isinstance(e, E.Not):
            return E.Not(self.settle(e.a))
        return e

    def norm(self, e: E.Expr) -> E.Expr:
        got = rewriting.normalize(e, self.coords, self.minimum)
        if got is None:
            raise ExecutionFailed(Outcome.unknown(f"cannot normalize {E.render(e)} without splitting a coordinate"))
        self.lemmas |= set(got[1])
        return got[0]

    # -- values ------------------------------------------------------------------------------
    def node_key(self, node: C.SOp) -> str:
        """The node's label and its place in the program's topological order: unique in the program
        (labels alone need not be) and the same in every run, so summation names derived from it
        never give one name two bindings."""
        if self._order is None:
            self._order = {id(n): k for k, n in enumerate(C.topological([self.con.program]))}
        return f"{self._order.get(id(node), -1)}:{node.label}"

    def value(self, node: C.SOp, pos: E.Expr) -> sp.Expr:
        key = (id(node), E.render(pos))
        got = self._memo.get(key)
        if got is None:
            self.computed = count_step(self.computed, "symbolic execution")
            with self._names.computing(self.node_key(node), pos):
                got = self._memo[key] = self._value(node, pos)
        return got

    def _value(self, node: C.SOp, pos: E.Expr) -> sp.Expr:  # noqa: C901
        if isinstance(node, C.Tokens):
            return self.token(pos)
        if isinstance(node, C.Full):
            return sp.Rational(Fraction(node.value).numerator, Fraction(node.value).denominator)
        if isinstance(node, (C.Map, C.SequenceMap)) and isinstance(node.fn, C.Prim):
            args = [self.value(a, pos) for a in node.args]
            for k in node.fn.primitive.partial:  # a divisor (1/x, x/y, sqrt...): shown non-zero, else no claim
                if not self.positive(args[k]):
                    self.divisor_not_shown(node, args[k])
            out = node.fn.primitive.sympy(*args, *(self.param(p) for p in node.fn.consts))
            return simplify_conditions(from_piecewise(sp.sympify(out)))  # Ite, never Piecewise (see ite.py)
        if isinstance(node, C.Aggregate):
            return self.aggregate(node, pos)
        if isinstance(node, C.SelectorWidth):
            return self.width(node.selector, pos)
        ix = C.index_expr(node, pos)
        if ix is not None:
            ix = self.norm(ix.substitute({"length": self.con.layout.length}))
            if E.is_truth_valued(ix):
                ix = self.decide(ix)  # a comparison is a 0/1 flag; conjuncts Z3 decides here are dropped
            return self.to_value(ix)
        if isinstance(node, (C.Map, C.SequenceMap)) and isinstance(node.fn, C.IndexFn):  # on data values
            env = {a: self.value(arg, pos) for a, arg in zip(node.fn.argnames, node.args, strict=True)}
            return self.to_value(node.fn.expr, env)
        raise ExecutionFailed(Outcome.unknown(f"{node.label} ({type(node).__name__}) is out of the method's scope"))

    def width(self, sel: C.Selector, pos: E.Expr) -> sp.Expr:
        """SelectorWidth: the number of selected keys.  A structural selector with a hint counts its
        listed keys; ``structural & data`` (a token comparison) counts the listed keys where the data
        condition holds: an indicator sum."""
        parts = [sel.a, sel.b] if isinstance(sel, C.SelectAnd) else [sel]
        structural = [p for p in parts if self.enumeration(p) is not None]
        data = [p for p in parts if p not in structural]
        if len(structural) != 1 or not all(isinstance(p, C.Select) for p in data):
            raise ExecutionFailed(Outcome.unknown(f"{sel.label}: selector width out of the method's scope"))
        picked = [p for p in data if isinstance(p, C.Select)]
        return self.over_keys(structural[0], pos, lambda key: self.indicator(picked, key, pos))

    def divisor_not_shown(self, node: C.Map | C.SequenceMap, operand: sp.Expr) -> None:
        """A divisor not shown > 0: no claim (a subclass searching for a counterexample may go on)."""
        assert isinstance(node.fn, C.Prim)
        what = f"{node.label}: operand {sp.sstr(operand)} of {node.fn.name} not shown > 0"
        raise ExecutionFailed(Outcome(None, what, cause="divisor not shown > 0"))

    @property
    def signs(self) -> Signs:
        """The domain's signs: each size's minimum, each declared scalar operand's lower bound."""
        lows = {n: self.minimum.get(n, 1) for n in self.size_names}
        return Signs(lows, {name: lo for name, lo, _, _ in self.con.scalars})

    def positive(self, e: sp.Expr) -> bool:
        """A sound, syntactic test that ``e > 0`` (:class:`attnsim.symbolic.positivity.Signs`)."""
        return self.signs.positive(e)

    @property
    def size_names(self) -> set[str]:
        """The sizes in the shapes of the layout's blocks (found once per layout: a Layout is frozen)."""
        lay = self.con.layout
        if self._layout_sizes is None or self._layout_sizes[0] is not lay:
            names: set[str] = set()
            for b in lay:
                for x in (b.offset, b.rows, b.cols, b.stack):
                    names |= {n.name for n in E.nodes(x) if isinstance(n, C.Size)}
            self._layout_sizes = (lay, frozenset(names))
        return set(self._layout_sizes[1])

    def param(self, p: C.Param) -> sp.Expr:
        if isinstance(p, E.Expr):
            return self.to_value(p)
        if isinstance(p, C.Ratio):
            self.prove(p.den >= 1, f"constant {p.render()} has a positive denominator")
            return self.to_value(p.num) / self.to_value(p.den)
        return sp.Rational(p.numerator, p.denominator)

    def to_value(self, e: E.Expr, env: dict[str, Any] | None = None) -> sp.Expr:
        """An index expression's value with the engine's meaning, after proving each of its divisors
        >= 1 (the engine raises otherwise): comparisons and connectives are 0/1, div is floor."""
        env = env or {}
        for n in E.nodes(e):
            if isinstance(n, E.BinOp) and n.op in ("div", "mod"):
                if n.b.variables() & set(env):
                    raise ExecutionFailed(Outcome.unknown(f"divisor {E.render(n.b)} depends on data values"))
                self.prove(n.b >= 1, f"divisor {E.render(n.b)} >= 1")
        return simplify_conditions(_int_value(e, env))

    def token(self, pos: E.Expr) -> sp.Expr:
        blocks = [self.con.layout[n] for n in self.con.inputs]
        guess = self._sample_block(pos, blocks)
        if guess is None:
            raise ExecutionFailed(Outcome.bad(f"a token is read at {E.render(pos)}, inside no input block"))
        self.prove(guess.contains(pos), f"{E.render(pos)} lies in input block {guess.name}")
        h, i, j = (self.to_value(self.norm(c)) for c in guess.coords(pos))
        return sp.IndexedBase(guess.name)[h, i, j]

    def _sample_block(self, pos: E.Expr, blocks: list[Block]) -> Block | None:
        """Which block holds ``pos`` at one admissible sample (a guess: then proven)."""
        env = self.sample_env()
        try:
            p = int(pos.evaluate(env))
        except (E.ExprError, ZeroDivisionError):
            return None
        for b in blocks:
            if int(b.contains(E.Const(p)).evaluate(env)):
                return b
        return None

    def sample_env(self) -> dict[str, int]:
        env: dict[str, int] = {}
        for k, n in enumerate(sorted(self.size_names)):
            env[n] = max(self.minimum.get(n, 1), 2) + 2 * k + 1  # distinct, so that sizes are not confused
        for name, ext in self.coords.items():
            env[name] = max(int(ext.evaluate(env)) - 1, 0)
        return env

    def aggregate(self, node: C.Aggregate, pos: E.Expr) -> sp.Expr:
        sel, ln = node.selector, self.con.layout.length
        if isinstance(sel, C.Select) and sel.cmp == "==" and isinstance(sel.keys, C.Indices):
            src = C.index_expr(sel.queries, pos)
            if src is not None:
                k = self.norm(self.settle(src.substitute({"length": ln})))
                self.prove((k >= 0) & (k < ln), f"{sel.label}: query {E.render(pos)} selects the one key {E.render(k)}")
                return self.value(node.values, k)  # one key: its score changes nothing
        if node.score is not None:
            if node.score is not node.values:
                raise ExecutionFailed(
                    Outcome.unknown(
                        f"{node.label}: an argmax head whose values are not its scores is out of the method's "
                        "scope (which key wins depends on the data; only max heads, C.maximum, are executed)"
                    )
                )
            return self.over_keys(sel, pos, lambda key: self.value(node.values, key), combine="max")
        total = self.over_keys(sel, pos, lambda key: self.value(node.values, key))
        hint = self.enumeration(sel)
        assert hint is not None
        return total / sp.Mul(*(sym(cnt) for cnt in hint.counts))

    def over_keys(
        self, sel: C.Selector, pos: E.Expr, body_at: Callable[[E.Expr], sp.Expr], combine: str = "sum"
    ) -> sp.Expr:
        """``Sum over the keys sel selects for query pos of body_at(key)``, the key set from a hint
        that Z3 proves to list exactly those keys, each once (``combine="max"``: their maximum,
        an opaque :class:`attnsim.symbolic.maxover.MaxOver` over the same listing)."""
        ln = self.con.layout.length
        hint = self.enumeration(sel)
        if hint is None:
            raise ExecutionFailed(
                Outcome.unknown(f"{sel.label}: not a gather and no enumeration hint (out of the method's scope)")
            )
        counts = hint.counts
        lvars: list[str] = []  # "!": no size can take the name
        for cnt in counts:
            lvars.append(self._names.draw(cnt, {**self.coords, **dict.fromkeys(lvars)}))
        ls = [E.Var(v) for v in lvars]
        try:
            s_expr = z3sel.selector_expr(sel).substitute({"length": ln, z3sel.Q.name: pos})
        except z3sel.NotStructural as exc:
            raise ExecutionFailed(Outcome.unknown(f"{sel.label}: {exc} (out of the method's scope)")) from None
        for cnt in counts:
            self.prove(cnt >= 1, f"{sel.label}: the key set is not empty")
        self.coords.update(zip(lvars, counts, strict=True))
        try:
            key = self.norm(hint.key(pos, *ls))
            listed = s_expr.substitute({z3sel.K.name: key})
            back: E.Expr = E.Const(1).eq(1)
            for w_i, l_i in zip(hint.witnesses(key), ls, strict=True):
                back = back & w_i.eq(l_i)
            self.prove(
                (key >= 0) & (key < ln) & listed & back,
                f"{sel.label}: every listed key is in range, selected, and listed once",
            )
            body = body_at(key)
        finally:
            for v in lvars:
                del self.coords[v]
        ws = hint.witnesses(z3sel.K)
        inside: E.Expr = hint.key(pos, *ws).eq(z3sel.K)
        for w_i, cnt in zip(ws, counts, strict=True):
            inside = inside & (w_i >= 0) & (w_i < cnt)
        self.every_selected_key_listed(sel, pos, s_expr, inside)
        if combine == "max":
            limits = [(sp.Symbol(v, integer=True), 0, sym(cnt) - 1) for v, cnt in zip(lvars, counts, strict=True)]
            return max_over(body, limits)
        total: Any = body
        for v, cnt in zip(lvars, counts, strict=True):
            total = sp.Sum(total, (sp.Symbol(v, integer=True), 0, sym(cnt) - 1))
        return total

    def every_selected_key_listed(self, sel: C.Selector, pos: E.Expr, s_expr: E.Expr, inside: E.Expr) -> None:
        """Z3 proves ``not S(pos, K) or K is listed`` (``inside``), the key K decoded through every
        block of the layout (a subclass may prove the same claim by a cheaper, equally sound route)."""
        self.prove(E.Not(s_expr) | inside, f"{sel.label}: every selected key is listed", decode_k=True)

    def indicator(self, data: list[C.Select], key: E.Expr, pos: E.Expr) -> sp.Expr:
        """1 where every data comparison holds at (query ``pos``, key ``key``), else 0 (an Ite)."""
        conds = []
        for s in data:
            kv, qv = self.value(s.keys, key), self.value(s.queries, pos)
            conds.append(_COMPARE[s.cmp](kv, qv))
        return ite(sp.And(*conds), 1, 0)

    def enumeration(self, sel: C.Selector) -> Enumeration | None:
        for it in self.con.intents:
            if it.selector is sel and it.keys is not None:
                return it.keys
        return None


__all__ = ["Enumeration", "ExecutionFailed", "Executor", "sym"]
