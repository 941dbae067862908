"""Where a change can reach: the positions at which a program's values may differ after a change.

Mutation testing (:mod:`attnsim.proofs.mutants`) uses this to prove a mutant equivalent when every
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
  the selector's index formula (``true`` when it reads tokens);
* SelectorWidth(S): ``T(q) = exists k: D(q, k)``.

Existentials become fresh variables ``k!<i>``; every taint is a positive formula, so "no output
position is tainted" is one validity query for Z3 (``not T(p)`` for every p of the output block).
After each Aggregate, Z3 tries to show its taint empty (the usual case: a selector that reads only
inside a block), which keeps the formulas small.

A change can also make the program *raise* where the original does not, at any position, read or
not: a tainted operand of a partial primitive (``div``'s divisor, ``sqrt``, ``reciprocal``: the
``partial`` operands of the registry), a tainted non-integer value reaching an index map or a
divisor of one, or a tainted value compared by a selector that reads tokens (SymPy backend).  These
stop the analysis (:class:`Unsupported`) unless the taint there is proven empty.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from attnsim.proofs import z3sel
from attnsim.rasp import core as C
from attnsim.rasp import expr as E

POS = E.Var("p!")
TRUE: E.Expr = E.Const(1).eq(1)


class Unsupported(ValueError):
    """The change reaches something whose effect the taint rules cannot bound."""


def _or(parts: list[E.Expr]) -> E.Expr | None:
    out: E.Expr | None = None
    for x in parts:
        out = x if out is None else out | x
    return out


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


@dataclass
class Spread:
    """Taints of every node of one program, given the taints of the changed nodes.

    ``empty(formula)`` is asked (after each Aggregate and at each place where a taint must be
    empty) whether ``formula(POS)`` is unsatisfiable for every position ``0 <= POS < length``; it
    must answer True only with a proof.
    """

    length: E.Expr
    empty: Callable[[E.Expr], bool]
    sop: dict[int, E.Expr] = field(default_factory=dict)
    sel: dict[int, E.Expr] = field(default_factory=dict)
    fresh: int = 0
    emptied: int = 0  # aggregates whose taint was proven empty

    def run(self, program: C.RASPExpr, changed_sop: Mapping[int, E.Expr], changed_sel: Mapping[int, E.Expr]) -> None:
        """Taint every node of ``program`` (dependencies first)."""
        for n in C.topological([program]):
            if isinstance(n, C.Selector):
                d = self._selector(n)
                extra = changed_sel.get(id(n))
                d = _or([x for x in (d, extra) if x is not None])
                if d is not None:
                    self.sel[id(n)] = d
            elif isinstance(n, C.SOp):
                t = self._sop(n)
                extra = changed_sop.get(id(n))
                t = _or([x for x in (t, extra) if x is not None])
                if t is not None:
                    self.sop[id(n)] = t

    def at(self, node: C.RASPExpr, pos: E.Expr) -> E.Expr | None:
        """The taint of an SOp at ``pos`` (None: never differs)."""
        t = self.sop.get(id(node))
        return None if t is None else t.substitute({POS.name: pos})

    def _must_be_empty(self, node: C.RASPExpr, why: str) -> None:
        t = self.sop.get(id(node))
        if t is not None and not self.empty(t):
            raise Unsupported(f"a changed value reaches {why}")

    def _sop(self, n: C.SOp) -> E.Expr | None:
        if isinstance(n, (C.Map, C.SequenceMap)):
            fn = n.fn
            hit = [(i, a) for i, a in enumerate(n.args) if id(a) in self.sop]
            if isinstance(fn, C.Prim):
                for i, a in hit:
                    if i in fn.primitive.partial:
                        self._must_be_empty(a, f"operand {i} of {fn.name} (it may raise there)")
            else:
                div_args = set().union(*(d.variables() for d in divisors(fn.expr))) if hit else set()
                for i, a in hit:
                    if not C.is_structural(a):
                        self._must_be_empty(a, f"an index map ({n.label}) as a possibly non-integer value")
                    elif fn.argnames[i] in div_args:
                        self._must_be_empty(a, f"a divisor of the index map {n.label}")
            return _or([self.sop[id(a)] for _, a in hit])
        if isinstance(n, C.Aggregate):
            d = self.sel.get(id(n.selector))
            tv = self.sop.get(id(n.values))
            if d is None and tv is None:
                return None
            return self._exists(n.selector, d, tv)
        if isinstance(n, C.SelectorWidth):
            d = self.sel.get(id(n.selector))
            return None if d is None else self._exists(n.selector, d, None)
        return None  # tokens, indices, length, full: never differ unless changed themselves

    def _exists(self, sel: C.Selector, d: E.Expr | None, tv: E.Expr | None) -> E.Expr | None:
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
        if self.empty(body):
            self.emptied += 1
            return None
        return body

    def _selector(self, n: C.Selector) -> E.Expr | None:
        if isinstance(n, C.Select):
            parts = []
            for side, var in ((n.keys, z3sel.K), (n.queries, z3sel.Q)):
                if id(side) not in self.sop:
                    continue
                if not C.is_structural(side):  # SymPy: comparing values that may now be symbolic raises
                    self._must_be_empty(side, f"a selector comparing token values ({n.label})")
                    continue
                parts.append(self.sop[id(side)].substitute({POS.name: var}))
            return _or(parts)
        kids = [self.sel.get(id(c)) for c in n.children()]
        return _or([x for x in kids if x is not None])


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
