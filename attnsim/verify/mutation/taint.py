"""Where a change can reach: the positions at which a program's values may differ after a change.

Mutation testing (:mod:`attnsim.verify.mutation`) uses this to prove a mutant equivalent when every
value it changes lies where no output reads it (e.g. an identity map that also writes a 1 just
past its block, on a position that every selector reading it leaves out).

A *taint* of an SOp is a boolean index expression ``T(p)`` over the position :data:`POS`: "at p
the mutant's value may differ from the original's".  A selector's taint ``D(q, k)`` says "the
selection at (q, k) may differ".  Starting from the changed nodes, the rules follow the semantics
(docs/semantics.md), each an over-approximation:

* Map / SequenceMap (position-wise): ``T(p) = T_1(p) or ... or T_m(p)``;
* Select(keys, queries): ``D(q, k) = T_keys(k) or T_queries(q)``; ``&``, ``|``, ``~`` or-combine
  their parts' D;
* Aggregate(S, v): ``T(q) = exists k in [0, length): D(q, k) or (S(q, k) and T_v(k))``, with S
  the selector's index formula (``true`` when it reads tokens); a value-scored head (score s)
  uses ``T_v(k) or T_s(k)`` (a changed score of a selected key may change which keys win);
* SelectorWidth(S): ``T(q) = exists k: D(q, k)``.

Existentials become fresh variables ``k!<i>``; every taint is a positive formula, so "no output
position is tainted" is one validity query for Z3 (``not T(p)`` for every p of the output block).
After each Aggregate, Z3 tries to show its taint empty (the usual case: a selector that reads only
inside a block), which keeps the formulas small; a taint of more than :data:`MAX_TERMS` terms is
replaced by ``true`` (may differ anywhere: an over-approximation, so still sound).

Two domains run these rules: :class:`Formulas` keeps the sizes symbolic (Z3 proves emptiness: a
proof for all sizes of the domain); :class:`Positions` fixes the instance's sizes and evaluates
every taint as a boolean array over its positions (an exhaustive proof for that instance only).

A change can also make the program *raise* where the original does not, at any position, read or
not: a tainted operand of a partial primitive (``div``'s divisor, ``sqrt``, ``reciprocal``: the
``partial`` operands of the registry; only on the exact backend, so not in a program that cannot
run there), a tainted non-integer value reaching an index map or a
divisor of one, or a tainted value compared by a selector that reads tokens (SymPy backend).  These
stop the analysis (:class:`Unsupported`) unless the taint there is proven empty.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnsim.proofs import z3sel
from attnsim.rasp import core as C
from attnsim.rasp import expr as E

POS = E.Var("p!")
QN, KN = z3sel.Q.name, z3sel.K.name  # the selector formula's query and key position variables
TRUE: E.Expr = E.Const(1).eq(1)
MAX_TERMS = 4000  # a larger taint becomes "may differ anywhere" (sound; keeps Z3 queries small)


class Unsupported(ValueError):
    """The change reaches something whose effect the taint rules cannot bound."""


def _or(parts: list[E.Expr]) -> E.Expr | None:
    out: E.Expr | None = None
    for x in parts:
        out = x if out is None else out | x
    return out


def terms(e: E.Expr, stop: int) -> int:
    """The number of sub-terms of ``e`` (as a tree), counting stops once past ``stop``."""
    n, stack = 0, [e]
    while stack and n <= stop:
        x = stack.pop()
        n += 1
        stack.extend(x.children())
    return n


def runs_exactly(nodes: list[C.RASPExpr]) -> bool:
    """Every primitive has an exact (Fraction) meaning.  Only the exact backend raises on a value
    (float64 gives inf/nan, SymPy zoo); a program with exp, gelu... never runs there, so a changed
    divisor cannot make it raise where the original does not."""
    for n in nodes:
        fn = getattr(n, "fn", None)
        if isinstance(fn, C.Prim) and fn.primitive.exact is None:
            return False
    return True


def divisors(e: E.Expr) -> list[E.Expr]:
    """The divisor of every ``div`` / ``mod`` in ``e``."""
    out: list[E.Expr] = []
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, E.BinOp) and x.op in ("div", "mod"):
            out.append(x.b)
        stack.extend(x.children())
    return out


class Formulas:
    """Taints as index formulas over symbolic sizes: Z3 decides emptiness (``empty(f)`` must answer
    True only with a proof that ``f(POS)`` holds at no position ``0 <= POS < length``)."""

    def __init__(self, length: E.Expr, empty: Callable[[E.Expr], bool], limit: int = MAX_TERMS) -> None:
        self.length, self.empty_f, self.limit, self.fresh = length, empty, limit, 0

    def lift_t(self, f: E.Expr) -> E.Expr:
        return f

    def lift_d(self, f: E.Expr) -> E.Expr:
        return f

    def or_(self, xs: list[Any]) -> Any:
        return _or(xs)

    def cap(self, t: E.Expr) -> E.Expr:
        return t if terms(t, self.limit) <= self.limit else TRUE

    def empty(self, t: E.Expr) -> bool:
        return self.empty_f(t)

    def side(self, t: E.Expr, var: E.Var) -> E.Expr:
        return t.substitute({POS.name: var})

    def exists(self, sel: C.Selector, d: E.Expr | None, tv: E.Expr | None) -> E.Expr | None:
        self.fresh += 1
        k = E.Var(f"k!{self.fresh}")
        parts = []
        if d is not None:
            parts.append(d.substitute({z3sel.Q.name: POS, z3sel.K.name: k}))
        if tv is not None:
            try:
                s = z3sel.selector_expr(sel).substitute({z3sel.Q.name: POS, z3sel.K.name: k})
            except z3sel.NotStructural:
                s = TRUE
            parts.append(s & tv.substitute({POS.name: k}))
        body = (k >= 0) & (k < self.length) & _or(parts)  # type: ignore[operator]
        return None if self.empty(body) else body


class Positions:
    """Taints as boolean arrays over the positions of one instance (every size fixed): the rules
    evaluated exhaustively (a proof for that instance only).  ``T`` is a vector over positions; a
    selector's ``D`` is (queries that may differ, keys that may differ, a dense q x k part for a
    changed selector), and an attention read evaluates its selector only on the tainted keys."""

    def __init__(self, length: int, env: Mapping[str, int]) -> None:
        self.n = length
        self.env: dict[str, Any] = {**env, "length": length}
        self.pos = np.arange(length, dtype=np.int64)

    def _env(self, e: E.Expr, at: Mapping[str, Any]) -> dict[str, Any]:
        return {**self.env, **C.size_bindings(e), **at}

    def _eval(self, f: E.Expr, shape: tuple[int, ...], **at: Any) -> np.ndarray:
        env = self._env(f, at)
        if not f.variables() <= set(env):  # a free operand value (x!...): may differ anywhere
            return np.ones(shape, dtype=bool)
        return np.broadcast_to(np.asarray(f.evaluate(env)) != 0, shape).copy()

    def lift_t(self, f: E.Expr) -> np.ndarray:
        return self._eval(f, (self.n,), **{POS.name: self.pos})

    def lift_d(self, f: E.Expr) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self.n > MAX_ENUMERATED:
            raise Unsupported(f"a changed selector on {self.n} positions is too large to enumerate")
        none = np.zeros(self.n, dtype=bool)
        return none, none, self._eval(f, (self.n, self.n), **{QN: self.pos[:, None], KN: self.pos[None, :]})

    def or_(self, xs: list[Any]) -> Any:
        if not xs:
            return None
        if not isinstance(xs[0], tuple):
            return np.logical_or.reduce(xs)
        dense = [x[2] for x in xs if x[2] is not None]
        return (
            np.logical_or.reduce([x[0] for x in xs]),
            np.logical_or.reduce([x[1] for x in xs]),
            np.logical_or.reduce(dense) if dense else None,
        )

    def cap(self, t: np.ndarray) -> np.ndarray:
        return t

    def empty(self, t: np.ndarray) -> bool:
        return not bool(t.any())

    def side(self, t: np.ndarray, var: E.Var) -> tuple[np.ndarray, np.ndarray, None]:
        none = np.zeros(self.n, dtype=bool)
        return (none, t, None) if var.name == z3sel.K.name else (t, none, None)

    def exists(self, sel: C.Selector, d: Any, tv: np.ndarray | None) -> np.ndarray | None:
        t = np.zeros(self.n, dtype=bool)
        if d is not None:
            rows, cols, dense = d
            t |= rows
            if cols.any():  # the selection at a changed key may differ for every query
                t[:] = True
            if dense is not None:
                t |= dense.any(axis=1)
        if tv is not None and tv.any() and not t.all():
            keys = np.flatnonzero(tv)
            fast = self._reads_any(sel, keys)
            if fast is not None:
                return self._nonempty(t | fast)
            try:
                f: E.Expr | None = z3sel.selector_expr(sel)
            except z3sel.NotStructural:
                f = None
            if f is None:
                t[:] = True
            else:
                step = max(1, ENUMERATION_CHUNK // len(keys))
                for lo in range(0, self.n, step):
                    q = self.pos[lo : lo + step, None]
                    t[lo : lo + step] |= self._eval(f, (len(q), len(keys)), **{QN: q, KN: keys[None, :]}).any(axis=1)
        return self._nonempty(t)

    @staticmethod
    def _nonempty(t: np.ndarray) -> np.ndarray | None:
        return t if t.any() else None

    def _reads_any(self, sel: C.Selector, keys: np.ndarray) -> np.ndarray | None:
        """For a Select of two index maps: the queries that select at least one of ``keys``, from
        the key values at ``keys`` and the query values (O(length log length)); None otherwise."""
        if not isinstance(sel, C.Select) or sel.cmp in ("TRUE", "FALSE"):
            return None
        ek, eq = C.index_expr(sel.keys, z3sel.K), C.index_expr(sel.queries, z3sel.Q)
        if ek is None or eq is None:
            return None
        kv = np.unique(np.asarray(self._values(ek, **{KN: keys})))
        qv = np.asarray(self._values(eq, **{QN: self.pos}))
        if sel.cmp == "==":
            return np.isin(qv, kv)
        if sel.cmp == "!=":
            return np.ones(self.n, dtype=bool) if len(kv) > 1 else qv != kv[0]
        lo, hi = kv.min(), kv.max()  # S(q, k) = key cmp query
        return {"<": lo < qv, "<=": lo <= qv, ">": hi > qv, ">=": hi >= qv}[sel.cmp]

    def _values(self, e: E.Expr, **at: Any) -> Any:
        n = len(next(iter(at.values())))
        return np.broadcast_to(np.asarray(e.evaluate(self._env(e, at))), (n,))


MAX_ENUMERATED = 4096  # a changed selector is enumerated as a dense q x k array up to this length
ENUMERATION_CHUNK = 1 << 22  # (query, key) pairs evaluated at once by an attention read


@dataclass
class Spread:
    """Taints of every node of one program, given the taints of the changed nodes, in a domain
    (:class:`Formulas`: all sizes, by Z3; :class:`Positions`: one instance, by enumeration)."""

    dom: Formulas | Positions
    sop: dict[int, Any] = field(default_factory=dict)
    exact: bool = True  # the program runs on the exact backend (else no primitive can raise: see raises())
    sel: dict[int, Any] = field(default_factory=dict)
    emptied: int = 0  # attention reads whose taint was proven empty

    def run(self, program: C.RASPExpr, changed_sop: Mapping[int, E.Expr], changed_sel: Mapping[int, E.Expr]) -> None:
        """Taint every node of ``program`` (dependencies first); changed nodes' taints are formulas."""
        nodes = C.topological([program])
        self.exact = runs_exactly(nodes)
        for n in nodes:
            if isinstance(n, C.Selector):
                parts = [self._selector(n)]
                extra = changed_sel.get(id(n))
                if extra is not None:
                    parts.append(self.dom.lift_d(extra))
                d = self.dom.or_([x for x in parts if x is not None])
                if d is not None:
                    self.sel[id(n)] = d
            elif isinstance(n, C.SOp):
                extra_t = changed_sop.get(id(n))
                parts = [self._sop(n)]
                if extra_t is not None:
                    parts.append(self.dom.lift_t(extra_t))
                t = self.dom.or_([x for x in parts if x is not None])
                if t is not None:
                    self.sop[id(n)] = self.dom.cap(t)

    def taint(self, node: C.RASPExpr) -> Any:
        """The taint of an SOp (None: never differs)."""
        return self.sop.get(id(node))

    def _must_be_empty(self, node: C.RASPExpr, why: str) -> None:
        t = self.sop.get(id(node))
        if t is not None and not self.dom.empty(t):
            raise Unsupported(f"a changed value reaches {why}")

    def _sop(self, n: C.SOp) -> Any:  # noqa: C901
        if isinstance(n, (C.Map, C.SequenceMap)):
            fn = n.fn
            hit = [(i, a) for i, a in enumerate(n.args) if id(a) in self.sop]
            if isinstance(fn, C.Prim):
                for i, a in hit:
                    if self.exact and i in fn.primitive.partial:
                        self._must_be_empty(a, f"operand {i} of {fn.name} (it may raise there)")
            else:
                div_args = set().union(*(d.variables() for d in divisors(fn.expr))) if hit else set()
                for i, a in hit:
                    if not C.is_structural(a):
                        self._must_be_empty(a, f"an index map ({n.label}) as a possibly non-integer value")
                    elif fn.argnames[i] in div_args:
                        self._must_be_empty(a, f"a divisor of the index map {n.label}")
            return self.dom.or_([self.sop[id(a)] for _, a in hit])
        if isinstance(n, (C.Aggregate, C.SelectorWidth)):
            d = self.sel.get(id(n.selector))
            tv = None
            if isinstance(n, C.Aggregate):  # a changed score at a selected key may change which keys win
                reads = [self.sop[id(r)] for r in n.reads() if id(r) in self.sop]
                tv = self.dom.or_(reads) if reads else None
            if d is None and tv is None:
                return None
            t = self.dom.exists(n.selector, d, tv)
            self.emptied += t is None
            return t
        return None  # tokens, indices, length, full: never differ unless changed themselves

    def _selector(self, n: C.Selector) -> Any:
        if isinstance(n, C.Select):
            parts = []
            for side, var in ((n.keys, z3sel.K), (n.queries, z3sel.Q)):
                if id(side) not in self.sop:
                    continue
                if not C.is_structural(side):  # SymPy: comparing values that may now be symbolic raises
                    self._must_be_empty(side, f"a selector comparing token values ({n.label})")
                parts.append(self.dom.side(self.sop[id(side)], var))
            return self.dom.or_(parts)
        kids = [self.sel.get(id(c)) for c in n.children()]
        return self.dom.or_([x for x in kids if x is not None])


def changed_map(
    node: C.Map | C.SequenceMap,
    old_fn: C.IndexFn,
    old_args: tuple[C.SOp, ...],
    at_least_one: Callable[[E.Expr], bool],
) -> E.Expr:
    """``T(p)``: the changed index map differs from the original at p (a non-structural operand
    may hold any integer: a fresh variable).  Raises :class:`Unsupported` when a divisor of the new
    map reads an operand, or is a size expression that ``at_least_one`` cannot prove >= 1
    (evaluation would raise where the original does not)."""
    assert isinstance(node.fn, C.IndexFn)
    fresh: dict[int, E.Expr] = {}

    def operand(a: C.SOp) -> E.Expr:
        e = C.index_expr(a, POS)
        if e is None:
            e = fresh.setdefault(id(a), E.Var(f"x!{len(fresh)}"))
        return e

    new = node.fn.expr.substitute({nm: operand(a) for nm, a in zip(node.fn.argnames, node.args, strict=True)})
    old = old_fn.expr.substitute({nm: operand(a) for nm, a in zip(old_fn.argnames, old_args, strict=True)})
    for d in divisors(node.fn.expr):
        if d.variables() & set(node.fn.argnames):
            raise Unsupported(f"the changed index map divides by an operand ({E.render(d)})")
        if not at_least_one(d):
            raise Unsupported(f"the changed index map divides by {E.render(d)}, not proven >= 1")
    return new.ne(old)
