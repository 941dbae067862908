"""Symbolic execution at symbolic sizes: a program's value at a symbolic output entry.

The all-sizes method of issue "proofs that mean what they say".  The construction is built over
unbound sizes; the output entry (h, i, j) is a position over coordinate variables with symbolic
extents.  Its value is computed through the program graph itself:

* ``tokens`` at a position: the input block that contains it (proven by the decoding prover of
  :mod:`attnsim.proofs.decode`, for all sizes) and its coordinates there, normalized by the same
  prover's rewrites, read as the operand entry ``A[h, i, j]``;
* a primitive applies its SymPy meaning; a constant that is a size expression stays symbolic;
* an ``Aggregate`` is the mean over its key set.  A **gather** ``Select(indices, f(indices), ==)``
  selects exactly the key f(q) once 0 <= f(q) < L is proven (derived, nothing to trust).  Any
  other structural selector needs an :class:`Enumeration` hint — keys ``key(q, l)`` for
  ``l < count`` and a witness ``l = witness(k)`` — and Z3 proves, for all sizes, that the hint
  lists exactly the selector's keys, each once: count >= 1; every listed key is in range and
  selected, and its witness gives l back; every selected key is listed.  A wrong hint cannot prove
  anything.  Then the mean is ``Sum_{l < count} v(key(q, l)) / count``.  Selectors that compare
  token values are out of scope (the method says so, it does not guess).

The value is compared with the independent specification (:mod:`attnsim.symbolic.specs`) by the
Sum normal form of :mod:`attnsim.symbolic.sums`; ``simplify`` is never called.  When the
normal forms differ, small concrete sizes are searched for a counterexample (they may refute,
never prove); if none is found the result is unknown.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from attnsim.proofs import decode, z3sel
from attnsim.proofs.obligation import Outcome
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.layout import Block
from attnsim.symbolic.ite import Ite, from_piecewise, ite
from attnsim.symbolic.sums import equal_by_normal_form, simplify_conditions


class ExecutionFailed(Exception):
    """A step of the symbolic execution was refuted or could not be decided."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.detail)
        self.outcome = outcome


@dataclass(frozen=True)
class Enumeration:
    """A claimed listing of a selector's keys for query position q: ``key(q, l)``, ``l < count``.

    ``witness(k)`` gives l back from a selected key.  With a tuple ``count`` (a listing over
    several indices, e.g. every (i, j) of a block), ``key(q, l1, l2, ...)`` and ``witness`` returns
    a tuple.  It is a hint: the executor proves it."""

    key: Callable[..., E.Expr]
    witness: Callable[[E.Expr], Any]
    count: Any

    @property
    def counts(self) -> tuple[E.Expr, ...]:
        return tuple(self.count) if isinstance(self.count, tuple) else (E.lift(self.count),)

    def witnesses(self, k: E.Expr) -> tuple[E.Expr, ...]:
        w = self.witness(k)
        return tuple(w) if isinstance(w, tuple) else (w,)


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

    con: Any  # attnsim.lemmas.base.Construction, built over unbound sizes
    timeout: float = 10.0
    coords: dict[str, E.Expr] = field(default_factory=dict)
    steps: list[str] = field(default_factory=list)
    lemmas: set[str] = field(default_factory=set)
    started: float = field(default_factory=time.perf_counter)
    _fresh: Any = field(default_factory=itertools.count)
    _memo: dict[tuple[int, str], sp.Expr] = field(default_factory=dict)

    # -- proofs ------------------------------------------------------------------------------
    @property
    def premises(self) -> list[E.Expr]:
        return list(self.con.preconditions)

    @property
    def minimum(self) -> dict[str, int]:
        return dict(self.con.minimums)

    def left(self) -> float:
        left = self.timeout - (time.perf_counter() - self.started)
        if left <= 0:
            raise ExecutionFailed(Outcome.unknown(f"timeout after {len(self.steps)} proven steps"))
        return left

    def prove(self, goal: E.Expr, what: str, decode_k: bool = False) -> None:
        """``premises -> goal`` for all sizes and coordinates in range, or ExecutionFailed."""
        dec: list[decode.Decode] = []
        if decode_k:
            ln = self.con.layout.length
            dec = [decode.Decode(z3sel.K.name, tuple(self.con.layout.blocks), ranges=(z3sel.K >= 0, z3sel.K < ln))]
        out = decode.prove(
            goal, self.premises, decode=dec, coords=dict(self.coords), minimum=self.minimum, timeout=self.left()
        )
        if out.ok is not True:
            raise ExecutionFailed(Outcome(out.ok, f"{what}: {out.detail}"))
        self.lemmas |= set(decode.lemmas_in(out.detail))
        self.steps.append(what)

    def holds(self, goal: E.Expr) -> bool:
        """``premises -> goal`` proven (for all sizes and coordinates in range); False when not shown."""
        out = decode.prove(goal, self.premises, coords=dict(self.coords), minimum=self.minimum, timeout=self.left())
        if out.ok is True:
            self.lemmas |= set(decode.lemmas_in(out.detail))
            self.steps.append(f"{E.render(goal)} holds")
        return out.ok is True

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

    def norm(self, e: E.Expr) -> E.Expr:
        got = decode.normalize(e, self.coords, self.minimum)
        if got is None:
            raise ExecutionFailed(Outcome.unknown(f"cannot normalize {E.render(e)} without splitting a coordinate"))
        self.lemmas |= set(got[1])
        return got[0]

    # -- values ------------------------------------------------------------------------------
    def value(self, node: C.SOp, pos: E.Expr) -> sp.Expr:
        key = (id(node), E.render(pos))
        got = self._memo.get(key)
        if got is None:
            got = self._memo[key] = self._value(node, pos)
        return got

    def _value(self, node: C.SOp, pos: E.Expr) -> sp.Expr:
        if isinstance(node, C.Tokens):
            return self.token(pos)
        if isinstance(node, C.Full):
            return sp.Rational(Fraction(node.value).numerator, Fraction(node.value).denominator)
        if isinstance(node, (C.Map, C.SequenceMap)) and isinstance(node.fn, C.Prim):
            args = [self.value(a, pos) for a in node.args]
            for k in node.fn.primitive.partial:  # a divisor (1/x, x/y, sqrt...): shown non-zero, else no claim
                if not self.positive(args[k]):
                    raise ExecutionFailed(
                        Outcome.unknown(f"{node.label}: operand {sp.sstr(args[k])} of {node.fn.name} not shown > 0")
                    )
            out = node.fn.primitive.sympy(*args, *(self.param(p) for p in node.fn.consts))
            return simplify_conditions(from_piecewise(sp.sympify(out)))  # Ite, never Piecewise (see ite.py)
        if isinstance(node, C.Aggregate):
            return self.aggregate(node, pos)
        if isinstance(node, C.SelectorWidth):
            return self.width(node.selector, pos)
        ix = C.index_expr(node, pos)
        if ix is not None:
            ix = self.norm(ix.substitute({"length": self.con.layout.length}))
            boolean = isinstance(ix, E.Not) or (isinstance(ix, E.BinOp) and ix.op in (*E.COMPARATORS, "and", "or"))
            if boolean:
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

    def positive(self, e: sp.Expr) -> bool:
        """A sound, syntactic test that ``e > 0``: exp, positive numbers, sizes (>= their minimum
        >= 1), and sums, products, powers and non-empty Sums of positives (the executor builds a
        Sum only after proving its count >= 1)."""
        if isinstance(e, sp.exp) or (e.is_number and e.is_positive):
            return True
        if isinstance(e, sp.Indexed):  # a scalar operand declared >= a positive lower bound
            return any(str(e.base) == name and lo >= 1 for name, lo, _, _ in self.con.scalars)
        if isinstance(e, sp.Symbol):
            return e.name in self.size_names and self.minimum.get(e.name, 1) >= 1
        if isinstance(e, (sp.Add, sp.Mul)):
            return all(self.positive(a) for a in e.args)
        if isinstance(e, sp.Pow):
            return self.positive(e.base) and bool(e.exp.is_real)
        if isinstance(e, Ite):  # each branch positive where it is taken (x + 1 where x > 0: elu + 1)
            c, a, b = e.args
            return self._positive_given(a, c) and self.positive(b)
        if isinstance(e, sp.Sum):
            var, lo, hi = e.limits[0]
            body = e.function
            if (
                isinstance(body, Ite)  # Sum_{v=lo}^{hi} [v < m] f: the term v = lo is in when m > lo
                and body.args[2] == 0
                and isinstance(body.args[0], sp.StrictLessThan)
                and body.args[0].lhs == var
            ):
                f, m = body.args[1], body.args[0].rhs
                return (
                    self.positive(f) and self._signed(m - lo - 1).is_nonnegative is True and self.positive(hi - lo + 1)
                )
            return self.positive(body) and self.positive(sp.expand(hi - lo + 1))
        return False

    def _positive_given(self, value: sp.Expr, cond: Any) -> bool:
        """``value > 0`` wherever ``cond`` holds: syntactically, or when cond is ``x > 0`` and value is
        positive for every positive x (x + 1, x, 2 x ...) by SymPy's assumptions."""
        if self.positive(value):
            return True
        if isinstance(cond, sp.StrictGreaterThan) and cond.rhs == 0:
            x = sp.Dummy("x_pos", positive=True)
            return value.xreplace({cond.lhs: x}).is_positive is True
        return False

    def _signed(self, e: sp.Expr) -> sp.Expr:
        """``e`` over symbols that carry their domain's signs (sizes >= 1, scalars >= their lower bound)."""
        rep: dict[Any, Any] = {}
        for name in self.size_names:
            if self.minimum.get(name, 1) >= 1:
                rep[sp.Symbol(name, integer=True)] = sp.Symbol(name, integer=True, positive=True)
        for name, lo, _, _ in self.con.scalars:
            rep[sp.IndexedBase(name)[0, 0, 0]] = lo + sp.Symbol(f"{name}!u", integer=True, nonnegative=True)
        return sp.expand(e.xreplace(rep))

    @property
    def size_names(self) -> set[str]:
        names: set[str] = set()
        for b in self.con.layout:
            for x in (b.offset, b.rows, b.cols, b.stack):
                names |= {n.name for n in E.nodes(x) if isinstance(n, C.Size)}
        return names

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
        names: set[str] = set()
        for b in self.con.layout:
            for e in (b.offset, b.rows, b.cols, b.stack):
                names |= {n.name for n in E.nodes(e) if isinstance(n, C.Size)}
        for k, n in enumerate(sorted(names)):
            env[n] = max(self.minimum.get(n, 1), 2) + 2 * k + 1  # distinct, so that sizes are not confused
        for name, ext in self.coords.items():
            env[name] = max(int(ext.evaluate(env)) - 1, 0)
        return env

    def aggregate(self, node: C.Aggregate, pos: E.Expr) -> sp.Expr:
        sel, ln = node.selector, self.con.layout.length
        if isinstance(sel, C.Select) and sel.cmp == "==" and isinstance(sel.keys, C.Indices):
            src = C.index_expr(sel.queries, pos)
            if src is not None:
                k = self.norm(src.substitute({"length": ln}))
                self.prove((k >= 0) & (k < ln), f"{sel.label}: query {E.render(pos)} selects the one key {E.render(k)}")
                return self.value(node.values, k)
        total = self.over_keys(sel, pos, lambda key: self.value(node.values, key))
        hint = self.enumeration(sel)
        assert hint is not None
        return total / sp.Mul(*(sym(cnt) for cnt in hint.counts))

    def over_keys(self, sel: C.Selector, pos: E.Expr, body_at: Callable[[E.Expr], sp.Expr]) -> sp.Expr:
        """``Sum over the keys sel selects for query pos of body_at(key)``, the key set from a hint
        that Z3 proves to list exactly those keys, each once."""
        ln = self.con.layout.length
        hint = self.enumeration(sel)
        if hint is None:
            raise ExecutionFailed(
                Outcome.unknown(f"{sel.label}: not a gather and no enumeration hint (out of the method's scope)")
            )
        counts = hint.counts
        lvars = [f"l!{next(self._fresh)}" for _ in counts]  # "!": no size can take the name
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
        self.prove(E.Not(s_expr) | inside, f"{sel.label}: every selected key is listed", decode_k=True)
        total: Any = body
        for v, cnt in zip(lvars, counts, strict=True):
            total = sp.Sum(total, (sp.Symbol(v, integer=True), 0, sym(cnt) - 1))
        return total

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


def prove_program_equals_spec(con: Any, timeout: float = 10.0) -> Outcome:
    """For all sizes (>= their minimum, under the preconditions) and every output entry: program == spec.

    ``con.cases`` splits an output coordinate c of extent X by its residue mod m: c = m t + s for
    each s < m, t < X div m (the preconditions must make m divide X: then the cases cover c < X)."""
    if con.specification is None:
        return Outcome.bad(f"{con.name}: no independent specification")
    undeclared = _declarations_not_enforced(con)
    if undeclared:
        return Outcome.bad(undeclared)
    t0 = time.perf_counter()
    split = dict(con.cases)
    residues = [dict(zip(split, rs, strict=True)) for rs in itertools.product(*(range(m) for m in split.values()))]
    shown = []
    for case in residues:
        left = timeout - (time.perf_counter() - t0)
        out, special = _prove_case(con, case, split, max(left, 0.05))
        if out.ok is not True:
            where = ", ".join(f"{c} = {split[c]} t_{c} + {s}" for c, s in case.items())
            out = Outcome(out.ok, f"case {where}: {out.detail}" if case else out.detail)
            if out.ok is False and "counterexample" in out.detail:
                return out
            return _with_counterexample(con, out, special=special)
        shown.append(out.detail)
    return Outcome.good(" || ".join(shown) if len(shown) > 1 else shown[0])


def _prove_case(con: Any, case: dict[str, int], split: dict[str, int], timeout: float) -> tuple[Outcome, set[int]]:
    """One residue case; the outcome and the constants to try when searching a counterexample."""
    out = con.layout[con.output]
    extents = dict(zip(("o_h", "o_i", "o_j"), (out.stack, out.rows, out.cols), strict=True))
    renamed: dict[sp.Symbol, sp.Expr] = {}
    quotient: dict[str, C.Size] = {}
    for name, m in split.items():  # c = m t + s, the extent X = m X' (X' a fresh size, X' >= 1)
        ext = extents[name]
        if not (isinstance(ext, C.Size) and ext.value is None):
            return Outcome.bad(f"cannot split {name}: its extent {E.render(ext)} is not one unbound size"), set()
        if not any(E.render(p) == E.render((ext % m).eq(0)) for p in con.preconditions):
            return Outcome.bad(f"splitting {name} by {m} needs the precondition ({ext.name} mod {m}) == 0"), set()
        taken = con.free_sizes | set(con.sizes)
        fresh_name = f"{ext.name}_over{m}"
        while fresh_name in taken:  # fresh against the construction's own sizes
            fresh_name += "_"
        fresh = quotient[name] = C.Size(fresh_name)
        con = con.reparametrize(**{ext.name: fresh * m})
        renamed[sp.Symbol(ext.name, integer=True)] = m * sym(fresh)
    out = con.layout[con.output]
    ex = Executor(con, timeout)
    coords: list[E.Expr] = []
    for name, extent in (("o_h", out.stack), ("o_i", out.rows), ("o_j", out.cols)):
        if name in split:
            t = E.Var(f"t!{name}")
            ex.coords[t.name] = quotient[name]
            coords.append(t * split[name] + case[name])
        elif isinstance(extent, E.Const) and extent.value == 1:  # one value: the coordinate is 0
            coords.append(E.Const(0))
        else:
            coords.append(E.Var(internal(name)))
            ex.coords[internal(name)] = extent
    h, i, j = coords
    try:
        vacuous = _vacuous(ex)
        if vacuous:
            return Outcome.bad(f"vacuous: {vacuous}"), set()
        from attnsim.lemmas.base import prove_layout  # (no module-level import: lemmas import this module)

        lay = prove_layout(con.layout, ex.left(), minimum=ex.minimum)  # operands read where they are encoded
        if lay.ok is not True:
            return Outcome(lay.ok, f"layout: {lay.detail}"), set()
        ex.steps.append("the layout is injective, disjoint and in range")
        got = ex.value(con.program, out.position(i, j, h))
    except ExecutionFailed as exc:
        return exc.outcome, set()
    to_sym = lambda e: sym(e) if isinstance(e, E.Expr) else sp.Integer(e)
    want = con.specification.symbolic(sym(h), sym(i), sym(j), to_sym).xreplace(renamed)
    spec_shape = con.specification.spec.shape({k: to_sym(v) for k, v in con.specification.sizes.items()})
    for have, need in zip((out.stack, out.rows, out.cols), spec_shape, strict=True):
        if sp.expand(sym(have) - sp.sympify(need).xreplace(renamed)) != 0:
            return Outcome.bad(
                f"the output block is {E.render(out.stack)} x {E.render(out.rows)} x {E.render(out.cols)} but the "
                f"spec's shape is {tuple(spec_shape)}"
            ), set()
    same, shown, diff = _equal_in_every_scalar_case(con, got, want, ex)
    if same:
        lem = ", ".join(f"rasp/z3-parametric/{n}" for n in sorted(ex.lemmas)) or "none"
        domain = ", ".join(f"{n} >= {v}" for n, v in sorted(ex.minimum.items()) if v != 1)
        pre = ", ".join(E.render(p) for p in ex.premises)
        scope = "all sizes" + (f" with {domain}" if domain else "") + (f" under {pre}" if pre else "")
        return Outcome.good(
            f"program == spec ({con.specification.spec.statement}) for {scope}: {shown}; "
            f"{len(ex.steps)} Z3 step(s); lemmas: {lem}"
        ), set()
    return Outcome.unknown(f"normal forms differ: program - spec = {shown}"), _constants_compared(diff)


def _equal_in_every_scalar_case(con: Any, got: Any, want: Any, ex: Executor) -> tuple[bool, str, Any]:
    """Decide got == want, splitting on each declared scalar operand (see ``Construction.scalars``).

    Sizes become positive symbols and coordinates non-negative ones (their domain).  A scalar s with
    lo <= s <= X (X a size) compared with coordinate c < X is split into two cases that cover every
    admissible (s, c, X): s = c + 1 + u, X = s + v (c < s); or s = lo + u, c = s + w, X = c + 1 + v
    (c >= s); u, v, w >= 0.  SymPy's assumptions then decide each comparison, and the normal form's
    truncation rule may use X - s >= 0."""
    base: dict[sp.Symbol, sp.Symbol] = {}
    for name in ex.size_names:
        if ex.minimum.get(name, 1) >= 1:
            base[sp.Symbol(name, integer=True)] = sp.Symbol(name, integer=True, positive=True)
    for name in ex.coords:
        base[sp.Symbol(name, integer=True)] = sp.Symbol(name, integer=True, nonnegative=True)
    got, want = _binary(con, got.xreplace(base)), _binary(con, want.xreplace(base))
    if not con.scalars:
        bad = _possibly_negative_sum(want)
        if bad is not None:  # SymPy's Sum over hi < lo - 1 is not empty (Karr): the spec means range()
            return False, f"the spec's sum {sp.sstr(bad)} is not shown to have length >= 0", sp.nan
        return equal_by_normal_form(got, want)
    cases: list[tuple[str, dict[Any, Any]]] = [("", {})]
    for name, lo, upper, coord in con.scalars:
        s = sp.IndexedBase(name)[0, 0, 0]
        x = base.get(sp.Symbol(upper.name, integer=True)) if isinstance(upper, C.Size) else None
        c = base.get(sp.Symbol(internal(coord), integer=True))
        if x is None or c is None:
            return False, f"scalar {name}: its bound {upper} or coordinate {coord} is not a symbol here", sp.nan
        u, v, w = (sp.Symbol(f"{name}!{t}", integer=True, nonnegative=True) for t in "uvw")
        below = {s: c + 1 + u, x: c + 1 + u + v}
        above = {s: lo + u, c: lo + u + w, x: lo + u + w + 1 + v}
        cases = [
            (f"{tag}{'; ' if tag else ''}{what}", {**prev, **new})
            for tag, prev in cases
            for what, new in ((f"{coord} < {name}", below), (f"{coord} >= {name}", above))
        ]
    shown = []
    for tag, subst in cases:
        bad = _possibly_negative_sum(_substitute(want, subst))
        if bad is not None:
            return False, f"case {tag}: the spec's sum {sp.sstr(bad)} is not shown to have length >= 0", sp.nan
        same, text, diff = equal_by_normal_form(_substitute(got, subst), _substitute(want, subst))
        if not same:
            return False, f"case {tag}: {text}", diff
        shown.append(f"[{tag}] {text}")
    return True, " ".join(shown), 0


def _declarations_not_enforced(con: Any) -> str:
    """Non-empty when a declared scalar or binary operand is not what the declaration says: a scalar
    must be a 1 x 1 block, and the input check must refuse a value outside the declared range (tried
    at one small instance).  The proof takes the declarations as premises."""
    if not (con.scalars or con.binary):
        return ""
    for name, _, _, _ in con.scalars:
        blk = con.layout[name]
        if not all(isinstance(x, E.Const) and x.value == 1 for x in (blk.stack, blk.rows, blk.cols)):
            return f"scalar operand {name} is not a 1 x 1 block"
    inst = None
    for v in (2, 3, 4):
        try:
            inst = con.bind(**dict.fromkeys(con.free_sizes, v))
            break
        except ValueError:
            continue
    if inst is None:
        return "declarations not checked: no small instance binds"
    scalar = {n: (lo, int(E.lift(up).evaluate(inst.sizes))) for n, lo, up, _ in con.scalars}
    fill = {n: scalar[n][0] if n in scalar else 0 for n in inst.inputs}

    def refused(name: str, bad: int) -> bool:
        ops = [np.full(inst.layout[n].shape, bad if n == name else fill[n], dtype=object) for n in inst.inputs]
        try:
            inst._operands(ops, "exact")
        except ValueError:
            return True
        return False

    for n, (lo, hi) in scalar.items():
        if not (refused(n, lo - 1) and refused(n, hi + 1)):
            return f"scalar operand {n} is declared in [{lo}, upper] but the input check does not enforce it"
    for n in con.binary:
        if not refused(n, 2):
            return f"operand {n} is declared binary but the input check accepts 2"
    return ""


def _possibly_negative_sum(e: Any) -> Any:
    """A Sum in ``e`` whose length hi - lo + 1 is not known >= 0 from the symbols' signs, else None."""
    for s in e.atoms(sp.Sum):
        for _, lo, hi in s.limits:
            if (hi - lo + 1).is_nonnegative is not True:
                return s
    return None


def _binary(con: Any, e: Any) -> Any:
    """``Ite(x == 1, 1, 0)`` is ``x`` for an entry x of an operand declared binary (0 or 1: what its
    input check enforces)."""
    names = set(con.binary)

    def flag_of_binary(t: Any) -> bool:
        if not (isinstance(t, Ite) and t.args[1] == 1 and t.args[2] == 0 and isinstance(t.args[0], sp.Eq)):
            return False
        lhs, rhs = t.args[0].args
        entry = lhs if rhs == 1 else rhs if lhs == 1 else None
        return isinstance(entry, sp.Indexed) and str(entry.base) in names

    def entry_of(t: Any) -> Any:
        lhs, rhs = t.args[0].args
        return lhs if rhs == 1 else rhs

    return e.replace(flag_of_binary, entry_of) if names else e


def internal(coord: str) -> str:
    """The executor's name of a declared output coordinate (o_h, o_i, o_j): with "!", which no size
    name may contain, so a size can never be captured as a coordinate or a bound key variable."""
    return coord.replace("_", "!", 1)


def _substitute(e: Any, subst: dict[Any, Any]) -> Any:
    """Simultaneous substitution (scalars and sizes by expressions of fresh symbols)."""
    return e.xreplace(subst)


def _vacuous(ex: Executor) -> str:
    """Non-empty when the premises, size minimums and output region admit no instance."""
    goal = E.Const(0).eq(1)
    extent = [E.Const(0) < ext for ext in ex.coords.values()]
    out = z3sel.prove(goal, [*ex.premises, *extent], minimum=ex.minimum, timeout=max(0.5, ex.left()))
    return "the premises admit no sizes" if out.ok is True else ""


def _constants_compared(diff: Any) -> set[int]:
    """Integers a size is compared with in the difference (where a branch on sizes may switch)."""
    out: set[int] = set()
    for rel in diff.atoms(sp.core.relational.Relational):
        for n in rel.atoms(sp.Integer):
            out |= {int(n) - 1, int(n), int(n) + 1}
    return {v for v in out if v >= 1}


def _program_constants(con: Any) -> set[int]:
    """Integers that index expressions or size-valued constants of the program compare with (+-1)."""
    out: set[int] = set()
    exprs: list[E.Expr] = []
    for n in C.topological([con.program]):
        fn = getattr(n, "fn", None)
        if isinstance(fn, C.IndexFn):
            exprs.append(fn.expr)
        elif isinstance(fn, C.Prim):
            exprs += [p for p in fn.consts if isinstance(p, E.Expr)]
    for e in exprs:
        for x in E.nodes(e):
            if isinstance(x, E.BinOp) and x.op in E.COMPARATORS:
                for side in (x.a, x.b):
                    if isinstance(side, E.Const):
                        out |= {side.value - 1, side.value, side.value + 1}
    return {v for v in out if 1 <= v <= 256}


def _with_counterexample(
    con: Any, out: Outcome, cap: int = 4, tries: int = 48, special: set[int] | None = None, max_len: int = 20000
) -> Outcome:
    """Search small sizes, and the constants the program compares sizes with, for an entry where
    program and spec differ (this refutes; it never proves)."""
    names = sorted(con.free_sizes)
    rng = np.random.default_rng(0)
    special = (special or set()) | _program_constants(con)
    values = sorted(set(range(1, cap + 1)) | special)
    combos = list(itertools.product(values, repeat=len(names)))
    rng.shuffle(combos)
    combos.sort(key=lambda c: -sum(v in (special or set()) for v in c))  # the constants first
    for combo in combos[:tries]:
        sizes = dict(zip(names, combo, strict=True))
        try:
            inst = con.bind(**sizes)
            if inst.layout.total > max_len:
                continue
            scalar = {name: (lo, upper) for name, lo, upper, _ in con.scalars}
            ops = [
                np.full(inst.layout[n].shape, rng.integers(scalar[n][0], int(E.lift(scalar[n][1]).evaluate(sizes)) + 1))
                if n in scalar
                else rng.integers(0, 2, size=inst.layout[n].shape)
                if n in con.binary
                else rng.integers(-5, 6, size=inst.layout[n].shape)
                for n in inst.inputs
            ]
            backend = "exact" if inst.exact else "numpy"
            got, want = inst.run(*ops, backend=backend), inst.spec(*ops, backend=backend)
        except (ValueError, IndexError):  # sizes outside the construction's or the spec's domain
            continue
        diff = np.argwhere(np.asarray(got != want) if backend == "exact" else ~np.isclose(got, want, rtol=0, atol=1e-9))
        if len(diff):
            ix = tuple(int(x) for x in diff[0])
            return Outcome.bad(
                f"{out.detail}; counterexample at {', '.join(f'{k}={v}' for k, v in sizes.items())}: "
                f"{con.output}{list(ix)} = {got[ix]} but the spec gives {want[ix]}"
            )
    return out


__all__ = ["Enumeration", "ExecutionFailed", "Executor", "prove_program_equals_spec", "sym"]
