"""All-sizes algebra by symbolic-size evaluation of a construction's program graph.

:func:`attnsim.proofs.allsizes.all_sizes_obligation` proves the selector intents and the layout
for all sizes; what remains is the algebra: what the program computes from the selected keys.
Here we evaluate the program graph itself at a query with SYMBOLIC coordinates (h, i, j) and
SYMBOLIC sizes, instead of pattern-matching its wiring:

* ``tokens`` at an entry of an input block is that entry (``A[h, i, j]``);
* a value primitive is applied with its SymPy implementation; a constant parameter equal to a
  size of the instance becomes that size's symbol (the instance is built with pairwise distinct
  sizes, and the evaluation is repeated on a second instance with other sizes, so a constant
  that only coincides with a size, or the wrong size, fails);
* an ``Aggregate`` is the mean over its selector's key set, taken from a :class:`KeySet`:
  a symbolic ``Sum`` over ``l < count`` (or the one key), divided by the number of keys.  The
  KeySet is PROVEN (Z3, all sizes, by :func:`attnsim.proofs.decode.prove_intent`) to describe
  exactly the keys of the selector's intent, which the all-sizes obligation proves to be the
  selector's keys;
* a structural index map used as a value (a parity or column flag) is replaced by a formula in
  the query's coordinates, PROVEN equal for all sizes (Z3, decoded coordinates).

The result is compared with the textbook formula (symbolic sizes and coordinates) after
case splits the caller names (parity, j < n) and sum splits at a symbolic bound.  A quick
evaluation at a concrete admissible point first refutes most wrong constructions (it can only
refute, never prove).

What is assumed, not proven: the factory builds the same graph for every size (checked on two
instances: the same symbolic layout, selectors and intents, constants read as the same size
monomials); SymPy's ``simplify`` returns 0 only for a zero expression; a runtime scalar
(masked softmax's n) satisfies the construction's input check (1 <= n <= cols).

Also registers the ``all-sizes`` obligations of the general Faddeev-LeVerrier det/inverse
steps (see :func:`faddeev_step_obligations`); fixed 3 x 3 lemmas get none (see there).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp
from sympy.simplify.simplify import factor_sum

from attnsim.proofs import decode, z3sel
from attnsim.proofs.obligation import Outcome
from attnsim.proofs.registry import provider
from attnsim.rasp import core as C
from attnsim.rasp import expr as E

Coords = tuple[E.Expr, E.Expr, E.Expr]
HV, IV, JV, LV = (E.Var(s) for s in ("h", "i", "j", "l"))


class SemanticsError(ValueError):
    """The program uses a node the symbolic-size evaluator does not cover."""


@dataclass(frozen=True)
class KeySet:
    """The keys an intent selects for the query at coordinates (h, i, j) of the query block.

    ``at(h, i, j, l)`` gives the coordinates in ``block`` of the l-th key, 0 <= l < ``count``
    (``count`` None: exactly one key, ``at(h, i, j, l)`` ignores l); ``witness(kh, ki, kj)``
    gives l back from a key's coordinates (needed to prove "every intended key is listed").
    """

    intent: str
    block: str
    at: Callable[[E.Expr, E.Expr, E.Expr, E.Expr], Coords]
    count: E.Expr | None = None
    witness: Callable[[E.Expr, E.Expr, E.Expr], E.Expr] | None = None

    def predicate(self, blocks: Mapping[str, Any], qc: Coords) -> E.Expr:
        """k is one of the listed keys of the query with coordinates ``qc`` (an index formula)."""
        b = blocks[self.block]
        k = z3sel.K
        if self.count is None:
            h, i, j = self.at(*qc, E.Const(0))
            return k.eq(b.position(i, j, h))
        if self.witness is None:
            raise SemanticsError(f"key set of {self.intent}: a counted key set needs a witness")
        kc = b.coords(k)
        w = self.witness(*kc)
        h, i, j = self.at(*qc, w)
        return b.contains(k) & (w >= 0) & (w < self.count) & kc[0].eq(h) & kc[1].eq(i) & kc[2].eq(j)


@dataclass(frozen=True)
class Semantics:
    """How to read a construction at symbolic sizes.

    ``query``: the block where the output is read: the output block itself, or an input block
    whose positions it occupies (proven); every intent with a key set must hold at all its entries.
    ``claims``: label of a structural node -> its value as a formula in the query coordinates.
    ``scalars``: input block name -> the SymPy symbol its single entry stands for (e.g. n).
    ``reference(h, i, j, sizes)``: the textbook value of output entry (h, i, j), sizes as symbols.
    ``cases``: substitutions covering all query coordinates (e.g. j = 2t and j = 2t + 1).
    ``truths``: relations of symbols whose both truth values are checked separately (j < n).
    ``splits``: (bound, upper): every Sum over [0, upper) is split at bound (0 <= bound <= upper).
    ``scalar_bounds``: scalar name -> the size bounding it (1 <= n <= size), for the quick sampled refutation.
    ``aliases``: block -> input block at the same positions, same shape (proven): tokens there are its entries.
    """

    query: str
    keysets: tuple[KeySet, ...]
    reference: Callable[..., sp.Expr]
    claims: Mapping[str, Callable[[E.Expr, E.Expr, E.Expr], E.Expr]] = field(default_factory=dict)
    scalars: Mapping[str, sp.Symbol] = field(default_factory=dict)
    cases: tuple[Mapping[str, sp.Expr], ...] = ({},)
    truths: tuple[Callable[[Mapping[str, sp.Symbol]], sp.Basic], ...] = ()
    splits: tuple[tuple[sp.Symbol, str], ...] = ()
    scalar_bounds: Mapping[str, str] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)


def size_symbol(name: str) -> sp.Symbol:
    return sp.Symbol(name, integer=True, positive=True)


QH, QI, QJ = (sp.Symbol(s, integer=True, nonnegative=True) for s in ("h", "i", "j"))


class _Eval:
    """Evaluate SOps at locations (block name, sympy coordinates)."""

    def __init__(self, con: Any, sem: Semantics) -> None:
        self.con, self.sem = con, sem
        self.blocks = {b.name: b for b in con.layout}
        self.sizes = {k: size_symbol(k) for k in con.sizes}
        self.env: dict[str, Any] = dict(self.sizes)
        self.memo: dict[tuple[int, str, tuple[Any, ...]], Any] = {}
        self.intents = {id(it.selector): it for it in con.intents}
        self.keysets = {k.intent: k for k in sem.keysets}
        self.dummies = itertools.count()
        self.constants: list[str] = []
        self.bounds: dict[sp.Symbol, Any] = {}  # coordinate symbol -> its (exclusive) upper bound

    def reduce(self, e: Any) -> Any:
        """floor(x / d) -> 0 and x mod d -> x for a coordinate x known to lie in [0, d) (decoding)."""
        e = e.replace(lambda a: isinstance(a, sp.floor), lambda a: sp.floor(sp.expand(a.args[0])))

        def bounded(x: Any, d: Any) -> bool:
            return x in self.bounds and sp.simplify(self.bounds[x] - d) == 0

        def fl(a: Any) -> Any:
            num, den = a.args[0].as_numer_denom()
            return sp.Integer(0) if bounded(num, den) else a

        e = e.replace(lambda a: isinstance(a, sp.floor), fl)
        return e.replace(lambda a: isinstance(a, sp.Mod), lambda a: a.args[0] if bounded(*a.args) else a)

    def const(self, v: Fraction) -> sp.Expr:
        """A constant equal to exactly one size monomial (degree <= 2) of the instance is that monomial."""
        names = sorted(self.con.sizes)
        monos = [(a,) for a in names] + list(itertools.combinations_with_replacement(names, 2))
        hits = [m for m in monos if sp.prod([self.con.sizes[x] for x in m]) == v]
        if len(hits) > 1:
            raise SemanticsError(f"constant {v} equals size products {hits}: build the instance with other sizes")
        if hits:
            self.constants.append(f"{v}={'*'.join(hits[0])}")
            return sp.Mul(*(self.sizes[x] for x in hits[0]))
        return sp.Rational(v.numerator, v.denominator)

    def sym(self, e: E.Expr, env: Mapping[str, Any]) -> Any:
        return e.to_sympy({**self.env, **env})

    def at(self, node: C.SOp, blk: str, xyz: tuple[Any, ...]) -> Any:
        key = (id(node), blk, xyz)
        if key not in self.memo:
            self.memo[key] = self._at(node, blk, xyz)
        return self.memo[key]

    def _at(self, node: C.SOp, blk: str, xyz: tuple[Any, ...]) -> Any:
        if isinstance(node, C.Tokens):
            if blk in self.sem.scalars:
                return self.sem.scalars[blk]
            blk = self.sem.aliases.get(blk, blk)
            if blk not in self.con.inputs:
                raise SemanticsError(f"tokens read at block {blk}, which is no input")
            return sp.IndexedBase(blk)[xyz]
        if isinstance(node, C.Full):
            return self.const(Fraction(node.value))
        if isinstance(node, (C.Map, C.SequenceMap)) and isinstance(node.fn, C.Prim):
            args = [self.at(a, blk, xyz) for a in node.args]
            return node.fn.primitive.sympy(*args, *(self.const(p) for p in node.fn.params))
        if isinstance(node, C.Aggregate):
            return self.aggregate(node, blk, xyz)
        if C.is_structural(node):
            claim = self.sem.claims.get(node.label)
            if claim is None or blk != self.sem.query:
                raise SemanticsError(f"structural value {node.label} at block {blk} has no proven formula")
            formula = claim(HV, IV, JV)
            val = self.sym(formula, dict(zip("hij", xyz, strict=True)))
            return sp.Piecewise((1, val), (0, True)) if _is_bool(formula) else val  # a 0/1 flag
        raise SemanticsError(f"node {node.label} ({type(node).__name__}) is not covered by the evaluator")

    def aggregate(self, node: C.Aggregate, blk: str, xyz: tuple[Any, ...]) -> Any:
        it = self.intents.get(id(node.selector))
        if it is None:
            raise SemanticsError(f"aggregate {node.label}: its selector has no intent")
        ks = self.keysets.get(it.name)
        if ks is None:
            raise SemanticsError(f"aggregate {node.label}: no key set for intent {it.name}")
        qb = decode.query_block(it.queries, self.con.layout)
        at_query = blk == self.sem.query and (qb is None or qb.name in (self.sem.query, self.con.output))
        same = self.sem.aliases.get  # blocks proven at the same positions are the same queries
        if not at_query and (qb is None or same(blk, blk) != same(qb.name, qb.name)):
            raise SemanticsError(f"aggregate {node.label}: intent {it.name} is not stated for queries in {blk}")
        env = dict(zip("hij", xyz, strict=True))
        if ks.count is None:
            kc = tuple(self.reduce(self.sym(x, env)) for x in ks.at(HV, IV, JV, E.Const(0)))
            return self.at(node.values, ks.block, kc)
        dummy = sp.Symbol(f"l{next(self.dummies)}", integer=True, nonnegative=True)
        count = self.sym(ks.count, env)
        self.bounds[dummy] = count
        kc = tuple(self.reduce(self.sym(x, {**env, "l": dummy})) for x in ks.at(HV, IV, JV, LV))
        rng = (dummy, 0, count - 1)
        return sp.Sum(self.at(node.values, ks.block, kc), rng) / sp.Sum(sp.Integer(1), rng).doit()


def canonical_sums(e: Any, depth: int = 0) -> Any:
    """Rename every Sum's bound index by its nesting depth (alpha-renaming, so equal sums compare equal)."""
    if isinstance(e, sp.Sum):
        (var, lo, hi), *rest = e.limits
        if rest:
            raise SemanticsError("a Sum over several indices")
        new = sp.Symbol(f"_l{depth}", integer=True)
        body = canonical_sums(e.function.xreplace({var: new}), depth + 1)
        return sp.Sum(body, (new, canonical_sums(lo, depth), canonical_sums(hi, depth)))
    if not isinstance(e, sp.Basic) or not e.args:
        return e
    return e.func(*(canonical_sums(a, depth) for a in e.args))


def _normalize(e: Any) -> Any:
    """Split exponentials of sums into products and pull factors free of the index out of sums."""
    e = sp.sympify(e)
    e = e.replace(lambda x: isinstance(x, sp.exp), lambda x: sp.expand_power_exp(sp.exp(sp.expand(x.args[0]))))
    return e.replace(lambda x: isinstance(x, sp.Sum), factor_sum)


def _split(e: Any, bound: sp.Symbol, upper: sp.Symbol) -> Any:
    """Sum_{l < upper} f(l) = Sum_{l < bound} f|_{l < bound} + Sum_{bound <= l < upper} f|_{l >= bound}."""

    def one(s: sp.Sum) -> Any:
        (var, lo, hi), *rest = s.limits
        if rest or lo != 0 or sp.simplify(hi - (upper - 1)) != 0:
            return s
        f = s.function
        below = {sp.Lt(var, bound): sp.true, sp.Ge(var, bound): sp.false}
        above = {sp.Lt(var, bound): sp.false, sp.Ge(var, bound): sp.true}
        return (
            sp.Sum(f.xreplace(below), (var, 0, bound - 1)) + sp.Sum(f.xreplace(above), (var, bound, upper - 1)).doit()
        )

    return e.replace(lambda x: isinstance(x, sp.Sum), one)


def evaluate_output(con: Any, sem: Semantics) -> tuple[Any, list[str]]:
    """The output entry at symbolic (h, i, j) of the query block, and the constants read as sizes."""
    ev = _Eval(con, sem)
    q = ev.blocks[sem.query]
    xyz = (QH if not q.is_single else sp.Integer(0), QI, QJ)
    ev.bounds.update({QH: ev.sym(q.stack, {}), QI: ev.sym(q.rows, {}), QJ: ev.sym(q.cols, {})})
    return ev.at(con.program, sem.query, xyz), ev.constants


def compare(con: Any, sem: Semantics, sample: bool = True) -> Outcome:
    """Program output at symbolic (h, i, j) and sizes == the reference, in every case."""
    try:
        got, consts = evaluate_output(con, sem)
    except SemanticsError as exc:
        return Outcome.bad(str(exc))
    ev_sizes = {k: size_symbol(k) for k in con.sizes}
    q = {b.name: b for b in con.layout}[sem.query]
    h = QH if not q.is_single else sp.Integer(0)
    want = sem.reference(h, QI, QJ, ev_sizes)
    diff = got - want
    for bound, upper in sem.splits:
        diff = _split(diff, bound, ev_sizes[upper])
    witness = _refute_by_sampling(con, sem, got, want, ev_sizes) if sample else None
    if witness:
        return Outcome.bad(witness)
    atoms = [t(ev_sizes) for t in sem.truths]
    for case in sem.cases:
        for values in itertools.product((sp.true, sp.false), repeat=len(atoms)):
            d = diff.xreplace({sp.Symbol(k, integer=True, nonnegative=True): v for k, v in case.items()})
            flips = {a: v for a, v in zip(atoms, values, strict=True)}
            d = d.xreplace({**flips, **{a.reversed: v for a, v in flips.items()}})
            d = sp.simplify(canonical_sums(_normalize(canonical_sums(d))))
            if d != 0:
                where = ", ".join(
                    [*(f"{k} = {v}" for k, v in case.items()), *(f"({a}) is {v}" for a, v in flips.items())]
                )
                return Outcome.bad(f"output (h, i, j) - reference = {d}" + (f" when {where}" if where else ""))
    note = f"; constants read as sizes: {', '.join(sorted(set(consts)))}" if consts else ""
    return Outcome.good(f"out[{h}, i, j] = {sp.sstr(want)}{note}")


def _same_positions(x: Any, y: Any, timeout: float) -> Outcome:
    """Blocks x and y have the same shape and the same position for every entry, for all sizes."""
    if [E.render(v) for v in (x.stack, x.rows, x.cols)] != [E.render(v) for v in (y.stack, y.rows, y.cols)]:
        return Outcome.bad("another shape")
    a, b, c = (E.Var(s) for s in ("a", "b", "d"))
    same = x.position(b, c, a).eq(y.position(b, c, a))
    return decode.prove(same, coords={"a": y.stack, "b": y.rows, "d": y.cols}, timeout=timeout)


def _is_bool(e: E.Expr) -> bool:
    return isinstance(e, E.Not) or (isinstance(e, E.BinOp) and e.op in ("==", "!=", "<", "<=", ">", ">=", "and", "or"))


def _prove_keys(ks: KeySet, it: Any, blocks: Mapping[str, Any], layout: Any, timeout: float) -> Outcome:
    """The key set lists exactly the intent's keys, for every query of the intent and all sizes (Z3)."""
    qb = decode.query_block(it.queries, layout)
    pred = ks.predicate(blocks, qb.coords(z3sel.Q) if qb is not None else (HV, IV, JV))
    if qb is not None:
        res = decode.prove_intent(
            pred,
            it.intent,
            queries=it.queries,
            layout=layout,
            assumptions=it.assumptions,
            minimum=dict(it.minimum),
            timeout=timeout,
        )
        return res if res is not None else Outcome.unknown("no query block")
    if {v.name for v in E.nodes(pred) if isinstance(v, E.Var)} & {"h", "i", "j", z3sel.Q.name}:
        return Outcome.bad("a key set that depends on the query needs a query block")
    goal = (pred & it.intent) | (E.Not(pred) & E.Not(it.intent))
    k_dec = decode.Decode(
        z3sel.K.name, decode.key_blocks(it.intent, layout), ranges=(z3sel.K >= 0, z3sel.K < layout.length)
    )
    return decode.prove(goal, [it.queries, *it.assumptions], decode=[k_dec], minimum=dict(it.minimum), timeout=timeout)


def _refute_by_sampling(
    con: Any, sem: Semantics, got: Any, want: Any, sizes: Mapping[str, sp.Symbol], samples: int = 2
) -> str | None:
    """A quick refutation (never a proof): program and reference differ at a concrete admissible point.

    Sizes take the instance's values, (h, i, j) a point of the query block, each scalar a value in
    1..its bounding size (else a random rational), operand entries random rationals; the
    expressions are evaluated to 30 digits.  A difference there means the identity is false, so
    the slow symbolic simplification of a wrong construction is skipped.
    """
    rng = np.random.default_rng(0)
    q = {b.name: b for b in con.layout}[sem.query]
    dims = [int(x.evaluate(C.size_bindings(q.stack + q.rows + q.cols))) for x in (q.stack, q.rows, q.cols)]
    base = {sizes[k]: sp.Integer(v) for k, v in con.sizes.items()}
    entries: dict[Any, sp.Expr] = {}

    def value(x: sp.Indexed) -> sp.Expr:
        if x not in entries:
            entries[x] = sp.Rational(int(rng.integers(-40, 41)), 20)
        return entries[x]

    for _ in range(samples):
        point = dict(base)
        point.update({QH: int(rng.integers(dims[0])), QI: int(rng.integers(dims[1])), QJ: int(rng.integers(dims[2]))})
        for name, sym in sem.scalars.items():
            if name in sem.scalar_bounds:  # an integer 1 <= n <= size
                point[sym] = int(rng.integers(1, con.sizes[sem.scalar_bounds[name]] + 1))
            else:  # a free real: a random rational
                point[sym] = sp.Rational(int(rng.integers(-40, 41)), 20)
        vals = []
        for e in (got, want):
            x = sp.sympify(e).xreplace(point).doit()
            x = x.replace(lambda a: isinstance(a, sp.Indexed), value)
            vals.append(sp.N(x, 30))
        if not all(v.is_finite for v in vals):
            continue
        if abs(vals[0] - vals[1]) > sp.Float("1e-20") * (1 + abs(vals[1])):
            at = ", ".join(f"{k} = {v}" for k, v in point.items() if k not in base)
            return (
                f"program {sp.N(vals[0], 8)} != reference {sp.N(vals[1], 8)} at {at} (sizes {con.sizes}, "
                f"random rational entries); symbolic difference {sp.sstr(canonical_sums(got - want))[:300]}"
            )
    return None


def _layout_key(con: Any) -> str:
    parts = [E.render(con.layout.length)]
    for b in con.layout:
        parts.append(f"{b.name}:" + ",".join(E.render(x) for x in (b.offset, b.stack, b.rows, b.cols)))
    return " ".join(parts)


def _signature(con: Any) -> str:
    """The symbolic layout, selectors and intents: what the all-sizes Z3 proofs are about."""
    parts = [_layout_key(con)]
    for it in con.intents:
        sel = z3sel.selector_expr(it.selector)
        parts += [it.name, *map(E.render, (sel, it.intent, it.queries, *it.assumptions))]
    return " ; ".join(parts)


def _cached(cache: dict[str, Outcome], key: str, prove: Callable[[], Outcome]) -> Outcome:
    """Z3 proofs are about the symbolic layout: an instance with the same symbolic formulas reuses them."""
    if key not in cache:
        cache[key] = prove()
    return cache[key]


def _prove_claims(con: Any, sem: Semantics, timeout: float, cache: dict[str, Outcome] | None = None) -> Outcome:
    """Every claimed structural value and key set holds for all sizes (Z3, decoded coordinates)."""
    blocks = {b.name: b for b in con.layout}
    q = blocks[sem.query]
    out = blocks[con.output]
    parts: list[str] = [f"{out.name} at the positions of {q.name}"] if q is not out else []
    for b in blocks.values():  # the encoder must put the data where the symbolic layout says
        env = C.size_bindings(b.position(IV, JV, HV) + b.stack)
        hs, rs, cs = (int(x.evaluate(env)) for x in (b.stack, b.rows, b.cols))
        sym = [int(b.position(i, j, h).evaluate(env)) for h in range(hs) for i in range(rs) for j in range(cs)]
        if sym != [int(x) for x in b.positions().reshape(-1)]:
            return Outcome.bad(f"block {b.name}: the encoder's positions are not those of its symbolic layout")
    qc = q.coords(z3sel.Q)
    if q is not out:
        res = _same_positions(out, q, timeout)
        if res.ok is not True:
            return Outcome(res.ok, f"output block {out.name} is not at the positions of {q.name}: {res.detail}")
    for name, target in sem.aliases.items():
        res = _same_positions(blocks[name], blocks[target], timeout)
        if res.ok is not True:
            return Outcome(res.ok, f"block {name} is not at the positions of {target}: {res.detail}")
        parts.append(f"{name} at the positions of {target}")
    nodes = {n.label: n for n in C.topological([con.program]) if isinstance(n, C.SOp)}
    for label, claim in sem.claims.items():
        node = nodes.get(label)
        if node is None or not C.is_structural(node):
            return Outcome.bad(f"claim {label}: no structural node of that name in the program")
        val = C.index_expr(node, z3sel.Q)
        assert val is not None
        want = claim(*qc)
        goal = ((val & want) | (E.Not(val) & E.Not(want))) if _is_bool(want) else val.eq(want)
        dec = decode.Decode(z3sel.Q.name, (q,), cover=True)
        res = _cached(
            cache if cache is not None else {},
            f"claim {E.render(goal)} ; {_layout_key(con)}",
            functools.partial(decode.prove, goal, decode=[dec], timeout=timeout),
        )
        if res.ok is not True:
            return Outcome(res.ok, f"claim {label} = {E.render(claim(HV, IV, JV))}: {res.detail}")
        parts.append(label)
    intents = {it.name: it for it in con.intents}
    for ks in sem.keysets:
        it = intents.get(ks.intent)
        if it is None:
            return Outcome.bad(f"key set for unknown intent {ks.intent}")
        qb = decode.query_block(it.queries, con.layout)
        # where the evaluator uses the key set: at q (intent over q, over out = q's positions, or
        # everywhere), else at the intent's own query block
        use = q if qb is None or qb.name in (q.name, out.name) else qb
        pred = ks.predicate(blocks, qb.coords(z3sel.Q) if qb is not None else (HV, IV, JV))
        key = " ; ".join(["keys", *map(E.render, (pred, it.intent, it.queries, *it.assumptions)), _layout_key(con)])
        kres = _cached(
            cache if cache is not None else {},
            key,
            functools.partial(_prove_keys, ks, it, blocks, con.layout, timeout),
        )
        if kres.ok is not True:
            return Outcome(kres.ok, f"key set of {ks.intent} is not its intent: {kres.detail}")
        # the evaluator uses the key set at every entry of the query block: the intent must cover it
        dec = decode.Decode(z3sel.Q.name, (use,), cover=True)
        cover = _cached(
            cache if cache is not None else {},
            f"cover {E.render(it.queries)} ; {use.name} ; {_layout_key(con)}",
            functools.partial(decode.prove, it.queries, decode=[dec], timeout=timeout),
        )
        if cover.ok is not True:
            return Outcome(cover.ok, f"intent {ks.intent} does not hold at every entry of {use.name}: {cover.detail}")
        parts.append(f"keys({ks.intent})")
    return Outcome.good(", ".join(parts))


def semantics_algebra(
    makes: Sequence[Callable[[], Any]], sem_of: Callable[[Any], Semantics], what: str = "out"
) -> Callable[[float], Outcome]:
    """The all-sizes algebra check: claims + key sets proven, then :func:`compare` on every instance.

    ``makes`` build the construction at (at least two) instances with pairwise distinct sizes
    and the SAME symbolic layout, selectors and intents (checked): the all-sizes Z3 proofs of the
    first instance then cover all of them, and only the constants differ.
    """

    def check(timeout: float) -> Outcome:
        details: list[str] = []
        out: Outcome | None = None
        cache: dict[str, Outcome] = {}
        first: str | None = None
        for make in makes:
            con = make()
            sig = _signature(con)
            if first is not None and sig != first:
                return Outcome.bad(f"instance {con.sizes} has other symbolic selectors or layout than the proven one")
            first = sig
            sem = sem_of(con)
            out = _prove_claims(con, sem, timeout, cache)
            if out.ok is not True:
                return out
            res = compare(con, sem, sample=not details)
            if res.ok is not True:
                return Outcome(res.ok, f"{what} at sizes {con.sizes}: {res.detail}")
            details.append(res.detail)
        proven = out.detail if out is not None else ""
        return Outcome.good(
            f"{what}: program evaluated at symbolic sizes and coordinates (instances {len(makes)}): "
            f"{details[0]}; proven for all sizes: {proven or 'no claims'} (SymPy + Z3)"
        )

    return check


# -- the general det(n) / inverse(n) (Faddeev-LeVerrier): its steps, for all sizes ---------------
STEPS_ID = "faddeev-steps"
STEPS_REF = "det(n) / inverse(n) by Faddeev-LeVerrier (beyond the paper): its steps"


OFFSET, PAD = C.Size("offset", 11), C.Size("pad", 13)


def _padded(*blocks: Any) -> Any:
    """The blocks inside a longer sequence: ``pad`` >= 0 positions after them (proofs for every pad)."""
    from attnsim.rasp.layout import Layout

    return Layout.of(*blocks, length=Layout.of(*blocks).length + PAD)


def _anywhere(intents: Sequence[Any]) -> list[Any]:
    """Intents for every offset >= 0 and pad >= 0 (sizes are >= 1 unless told)."""
    return [dataclasses.replace(it, minimum=(("offset", 0), ("pad", 0), *it.minimum)) for it in intents]


def trace_step(n: int) -> Any:
    """tr(A) of an n x n A (``faddeev.trace_ref``): n x mean over the diagonal keys, read at position 0."""
    from attnsim.lemmas.base import Construction
    from attnsim.lemmas.faddeev import trace_ref
    from attnsim.rasp.layout import Block, MatRef

    a_blk = Block.of("A", OFFSET, C.Size("n", n), C.Size("n", n))
    res, intents = trace_ref(MatRef(C.tokens, a_blk), name="out")
    return Construction(
        STEPS_ID,
        STEPS_REF,
        res.sop,
        _padded(a_blk, res.block),
        ("A",),
        lambda a, backend="numpy": a.trace(),
        intents=_anywhere(intents),
    )


def frobenius_step(rows: int, cols: int) -> Any:
    """<A, 2A + 1> = Sum_ij A_ij (2 A_ij + 1) (``faddeev.frobenius_ref``; y = 2A + 1 so that x != y)."""
    from attnsim.lemmas.base import Construction
    from attnsim.lemmas.faddeev import frobenius_ref
    from attnsim.rasp.layout import Block, MatRef

    a_blk = Block.of("A", OFFSET, C.Size("rows", rows), C.Size("cols", cols))
    y = MatRef(C.apply("affine", C.tokens, params=(2, 1)), dataclasses.replace(a_blk, name="Y", channel="Y"))
    res, intents = frobenius_ref(MatRef(C.tokens, a_blk), y, name="out")
    return Construction(
        STEPS_ID,
        STEPS_REF,
        res.sop,
        _padded(a_blk, res.block),
        ("A",),
        lambda a, backend="numpy": (a * (2 * a + 1)).sum(),
        intents=_anywhere(intents),
    )


def first_step(n: int) -> Any:
    """M_2 = A + c_{n-1} I with c_{n-1} = -tr(A) (``trace_ref`` + ``plus_identity``, as in ``faddeev_ref``)."""
    from attnsim.lemmas.base import Construction
    from attnsim.lemmas.faddeev import plus_identity, trace_ref
    from attnsim.rasp.layout import Block, MatRef

    a_blk = Block.of("A", OFFSET, C.Size("n", n), C.Size("n", n))
    a = MatRef(C.tokens, a_blk)
    tr, intents = trace_ref(a, name="tr")
    m2 = plus_identity(a, C.apply("scale", tr.sop, params=(-1,)), "out")
    return Construction(
        STEPS_ID,
        STEPS_REF,
        m2.sop,
        _padded(a_blk, m2.block),
        ("A",),
        lambda a, backend="numpy": a - np.trace(a) * np.eye(len(a)),
        intents=_anywhere(intents),
    )


def general_step(n: int) -> Any:
    """M' = A M + c I for n x n A, M and a scalar c: the Faddeev step k >= 2 (``matmul_ref`` + ``plus_identity``).

    c is an operand broadcast by one gather head (in ``faddeev_ref`` it is c_{n-k}, computed by
    the previous Frobenius step); the product reuses the matmul lemma's composable form as is.
    """
    from attnsim.lemmas.base import Construction, Intent
    from attnsim.lemmas.faddeev import plus_identity
    from attnsim.lemmas.matmul import matmul_ref
    from attnsim.rasp.layout import Block, MatRef

    size = C.Size("n", n)
    a_blk = Block.of("A", 0, size, size)
    m_blk = Block.of("M", a_blk.end_expr(), size, size)
    c_blk = Block.of("c", m_blk.end_expr(), 1, 1)
    prod, intents = matmul_ref(MatRef(C.tokens, a_blk), MatRef(C.tokens, m_blk), name="P")
    c_sel = C.select(C.indices, C.imap(lambda p: c_blk.position(0, 0), C.indices).named("c.source"), "==")
    c_all = C.aggregate(c_sel.named("c.broadcast"), C.tokens).named("c.everywhere")
    out = plus_identity(prod, c_all, "out")
    intents = [
        *intents,
        Intent("broadcast_c", c_sel, z3sel.K.eq(c_blk.position(0, 0)), out.block.contains(z3sel.Q), "c everywhere"),
    ]

    def reference(a: Any, m: Any, c: Any, backend: str = "numpy") -> Any:
        return a @ m + c.reshape(-1)[0] * np.eye(len(a))

    return Construction(
        STEPS_ID,
        STEPS_REF,
        out.sop,
        _padded(a_blk, m_blk, c_blk, *prod.aux, prod.block, out.block),
        ("A", "M", "c"),
        reference,
        intents=_anywhere(intents),
    )


def coefficient_step(n: int) -> Any:
    """tr(A M) read as <A^T, M>: ``transpose_ref`` placed on M's positions, then ``frobenius_ref`` (as in faddeev)."""
    from attnsim.lemmas.base import Construction
    from attnsim.lemmas.faddeev import frobenius_ref
    from attnsim.lemmas.transpose import transpose_ref
    from attnsim.rasp.layout import Block, MatRef

    size = C.Size("n", n)
    a_blk = Block.of("A", OFFSET, size, size)
    m_blk = Block.of("M", a_blk.end_expr(), size, size)
    at, intents = transpose_ref(MatRef(C.tokens, a_blk), offset=m_blk.offset, name="At")
    f, more = frobenius_ref(at, MatRef(C.tokens, m_blk), name="out")
    return Construction(
        STEPS_ID,
        STEPS_REF,
        f.sop,
        _padded(a_blk, m_blk, at.block, f.block),
        ("A", "M"),
        lambda a, m, backend="numpy": np.trace(a @ m),
        intents=_anywhere([*intents, *more]),
    )


def _coefficient_sem(con: Any) -> Semantics:
    """The Frobenius keys are the A^T block (row-major l < n^2); entry (i, j) of it gathers A[j, i]."""
    blk = con.layout["At"]
    keys = (
        KeySet(
            "out.sum",
            "At",
            lambda h, i, j, m: (E.Const(0), m // blk.cols, m % blk.cols),
            blk.rows * blk.cols,
            lambda h, i, j: i * blk.cols + j,
        ),
        KeySet("gather", "A", lambda h, i, j, m: (h, j, i)),
    )

    def reference(h: Any, i: Any, j: Any, sizes: dict[str, Any]) -> Any:
        a, b, m = sp.IndexedBase("A"), sp.IndexedBase("M"), sp.Symbol("m", integer=True)
        n = sizes["n"]
        r, c = sp.floor(m / n), sp.Mod(m, n)
        return sp.Sum(a[0, c, r] * b[0, r, c], (m, 0, n * n - 1))  # Sum_{r, c} A[c, r] M[r, c] = tr(A M)

    return Semantics("out", keys, reference, aliases={"At": "M"})


C_SCALAR = sp.Symbol("c", real=True)


def _general_sem(con: Any) -> Semantics:
    """Output (i, j) averages the n products (i, j, l); product (i, j, l) gathers A[i, l] and M[l, j]."""
    a_blk, m_blk = con.layout["A"], con.layout["M"]
    n_in, n_out = a_blk.cols, m_blk.cols
    keys = (
        KeySet("sum", "P.products", lambda h, i, j, m: (h, i * n_out + j, m), n_in, lambda h, i, j: j),
        KeySet("gather_a", "A", lambda h, i, j, m: (h, i // n_out, j)),
        KeySet("gather_b", "M", lambda h, i, j, m: (h, j, i % n_out)),
        KeySet("broadcast_c", "c", lambda h, i, j, m: (E.Const(0), E.Const(0), E.Const(0))),
    )

    def reference(h: Any, i: Any, j: Any, sizes: dict[str, Any]) -> Any:
        a, b, m = sp.IndexedBase("A"), sp.IndexedBase("M"), sp.Symbol("m", integer=True)
        prod = sp.Sum(a[0, i, m] * b[0, m, j], (m, 0, sizes["n"] - 1))
        return prod + C_SCALAR * sp.Piecewise((1, sp.Eq(i, j)), (0, True))

    return Semantics(
        "A",
        keys,
        reference,
        claims={"out.eye": lambda h, i, j: i.eq(j)},
        scalars={"c": C_SCALAR},
        truths=(lambda sizes: sp.Eq(QI, QJ),),
    )


def _trace_sem(key_intent: str, query: str) -> Callable[[Any], Semantics]:
    def sem_of(con: Any) -> Semantics:
        n = con.layout["A"].rows
        diag = KeySet(key_intent, "A", lambda h, i, j, m: (E.Const(0), m, m), n, lambda h, i, j: i)

        def reference(h: Any, i: Any, j: Any, sizes: dict[str, Any]) -> Any:
            a, m = sp.IndexedBase("A"), sp.Symbol("m", integer=True)
            tr = sp.Sum(a[0, m, m], (m, 0, sizes["n"] - 1))
            if query == "out":
                return tr
            return a[0, i, j] - tr * sp.Piecewise((1, sp.Eq(i, j)), (0, True))

        if query == "out":
            return Semantics("out", (diag,), reference)
        return Semantics(
            "A",
            (diag,),
            reference,
            claims={"out.eye": lambda h, i, j: i.eq(j)},
            truths=(lambda sizes: sp.Eq(QI, QJ),),
        )

    return sem_of


def _frobenius_sem(con: Any) -> Semantics:
    """The keys are the whole block, listed row-major: l -> (l div cols, l mod cols), l < rows cols."""
    blk = con.layout["A"]
    every = KeySet(
        "out.sum",
        "A",
        lambda h, i, j, m: (E.Const(0), m // blk.cols, m % blk.cols),
        blk.rows * blk.cols,
        lambda h, i, j: i * blk.cols + j,
    )

    def reference(h: Any, i: Any, j: Any, sizes: dict[str, Any]) -> Any:
        a, m = sp.IndexedBase("A"), sp.Symbol("m", integer=True)
        c = sizes["cols"]
        x = a[0, sp.floor(m / c), sp.Mod(m, c)]
        return sp.Sum(x * (2 * x + 1), (m, 0, sizes["rows"] * c - 1))

    return Semantics("out", (every,), reference)


@provider
def faddeev_step_obligations() -> list[Any]:
    """``all-sizes`` obligations of the Faddeev-LeVerrier steps (construction id ``faddeev-steps``).

    Every kind of step ``faddeev_ref`` chains is proven for every n, built from the same
    composable forms: ``trace`` (tr A = n x mean over the diagonal keys: c_{n-1} = -tr A),
    ``first-step`` (M_2 = A - tr(A) I), ``general-step`` (M_{k+1} = A M_k + c I: ``matmul_ref``
    and ``plus_identity``, c a broadcast scalar), ``coefficient-step`` (tr(A M) = <A^T, M>:
    ``transpose_ref`` on M's positions and ``frobenius_ref``), and ``frobenius`` alone.
    NOT proven for all n: the whole recurrence.  det(n) chains n - 1 steps in a Python loop with
    the literal constants -1/(k+1); the program graph differs for each n, so no single
    symbolic-n program exists to evaluate, and the chaining (each step's output block is the
    next step's operand; det = (-1)^n c_0, A^-1 = -M_n / c_0) is checked only by det/inverse's
    own sympy/exact obligations at the listed n: det/inverse stay bounded.  The fixed 3 x 3
    lemmas (cofactor3, det3, inverse3) have no size to quantify over: "all sizes" is void there.
    """
    from attnsim.proofs.allsizes import all_sizes_obligation

    def ob(detail: str, build: Callable[..., Any], sizes: Sequence[tuple[int, ...]], sem: Any, st: str) -> Any:
        makes = [functools.partial(build, *x) for x in sizes]
        return all_sizes_obligation(
            STEPS_ID, STEPS_REF, makes[0], semantics_algebra(makes, sem, detail), statement=st, detail=detail
        )

    return [
        ob("trace", trace_step, [(3,), (5,)], _trace_sem("out.sum", "out"), "for every n: out = Sum_l A[l, l]"),
        ob("frobenius", frobenius_step, [(3, 5), (4, 7)], _frobenius_sem, "for every rows, cols: Sum_ij X_ij Y_ij"),
        ob("first-step", first_step, [(3,), (5,)], _trace_sem("tr.sum", "A"), "for every n: M_2 = A - tr(A) I"),
        ob("general-step", general_step, [(3,), (5,)], _general_sem, "for every n: M' = A M + c I"),
        ob("coefficient-step", coefficient_step, [(3,), (5,)], _coefficient_sem, "for every n: <A^T, M> = tr(A M)"),
    ]


__all__ = [
    "STEPS_ID",
    "KeySet",
    "Semantics",
    "SemanticsError",
    "coefficient_step",
    "compare",
    "evaluate_output",
    "faddeev_step_obligations",
    "first_step",
    "frobenius_step",
    "general_step",
    "semantics_algebra",
    "trace_step",
]
