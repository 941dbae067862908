"""Lemma (matmul) and Lemma (transpose), in the composable forms U is built from.

Two heads do all of U's data movement and sums:

* :func:`gather_onto` (Lemma (transpose), generalized): query position x of grid ``onto``
  reads the entry ``coords(x)`` of a source grid: one head ``Select(indices, source, ==)``.
  A transpose is the map (h, i, j) -> (h, j, i); U folds transposes, views and broadcasts into
  the gather that feeds a product, so none of them costs a layer of its own.
* :func:`contract` (Lemma (matmul), generalized): query position x of ``onto`` receives
  ``sum_{over} P[group(x), over]`` for a grid P of products: one head averages the products whose
  kept coordinates equal ``group(x)`` and the MLP multiplies the mean by their count (the
  paper's "sum = count x AHAT mean").  The sum is read **at its consumer's positions**: no
  gather layer between a matmul and the stage that uses it.

Each returns the SOp and the :class:`Intent` of its selector, stated in grid coordinates; the
intents are proven for all sizes (decoding prover) and the symbolic executor reads their key
listings.  :mod:`attnsim.constructions.forms.program` states both forms as lemmas (a gathered transpose, a 3-axis
permutation, a broadcast, a matmul read at a larger consumer grid, a sum over two axes), each
proven equal to an independent spec for every size.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.intent import Enumeration, Intent, K, Q
from attnsim.rasp.layout import Grid, GridRef

PAPER_REF = "Lemma (matmul), Lemma (transpose)"
Coords = Mapping[str, E.Expr]


def _flat(values: list[E.Expr], dims: list[E.Expr]) -> E.Expr:
    """Row-major index of ``values`` in a grid of ``dims`` (0 for no axis)."""
    out: E.Expr = E.Const(0)
    for v, d in zip(values, dims, strict=True):
        out = out * d + v
    return out


def gather_onto(
    src: GridRef,
    onto: Grid | None,
    coords: Callable[[Coords], Coords],
    name: str,
    *,
    when: Callable[[Coords], E.Expr] | None = None,
    otherwise: tuple[Grid, Callable[[Coords], Coords]] | None = None,
) -> tuple[C.SOp, Intent]:
    """Every position x of ``onto`` (every position when None) reads ``src[coords(x)]``.

    With ``when`` (a test on x's coordinates), x reads ``src[coords(x)]`` where the test holds and
    elsewhere the entry ``coords2(x)`` of ``otherwise = (grid2, coords2)`` (a second grid of the
    same SOp), or nothing (the value 0) without ``otherwise``."""
    g = src.grid

    def at_of(grid: Grid, cf: Callable[[Coords], Coords], cs: Coords) -> E.Expr:
        at = cf(cs)
        return grid.position(**{a: E.lift(at[a]) for a in grid.axes})

    def source(p: E.Expr) -> E.Expr:
        cs = onto.coords(p) if onto is not None else {}
        pos = at_of(g, coords, cs)
        if when is not None:
            pos = E.if_(when(cs), pos, at_of(otherwise[0], otherwise[1], cs) if otherwise is not None else -1)
        return pos if onto is None else E.if_(onto.contains(p), pos, -1)

    sel = C.select(C.indices, C.imap(source, C.indices).named(f"{name}.source"), "==").named(f"{name}.gather")
    q, k = Q, K
    cq = onto.coords(q) if onto is not None else {}
    reads: E.Expr = g.contains(k) & k.eq(at_of(g, coords, cq))
    if when is not None:
        other: E.Expr = E.Const(0).eq(1)
        if otherwise is not None:
            other = otherwise[0].contains(k) & k.eq(at_of(otherwise[0], otherwise[1], cq))
        reads = (when(cq) & reads) | (~when(cq) & other)
    where = "every position" if onto is None else f"entry x of {onto.name}"
    what = f"{g.name}[coords(x)]"
    if when is not None:
        what += f" where its test holds, else {otherwise[0].name + '[coords2(x)]' if otherwise else 'no key'}"
    intent = Intent(
        "gather",
        sel,
        reads,
        onto.contains(q) if onto is not None else q >= 0,
        f"{where} selects exactly the key holding {what}",
    )
    return C.aggregate(sel, src.sop).named(name), intent


def contract(
    prod: GridRef,
    over: tuple[str, ...],
    onto: Grid,
    group: Callable[[Coords], Coords],
    name: str,
) -> tuple[C.SOp, Intent]:
    """Entry x of ``onto`` receives ``sum over the axes 'over' of P[group(x), over]``."""
    g = prod.grid
    kept = [a for a in g.axes if a not in over]
    kept_dims = [g.dim(a) for a in kept]
    count: E.Expr = E.Const(1)
    for a in over:
        count = g.dim(a) if isinstance(count, E.Const) and count.value == 1 else count * g.dim(a)

    def key_id(p: E.Expr) -> E.Expr:
        c = g.coords(p)
        return E.if_(g.contains(p), _flat([c[a] for a in kept], kept_dims), -1)

    def query_id(p: E.Expr) -> E.Expr:
        want = group(onto.coords(p))
        return E.if_(onto.contains(p), _flat([E.lift(want[a]) for a in kept], kept_dims), -2)

    keys = C.imap(key_id, C.indices).named(f"{name}.key_group")
    queries = C.imap(query_id, C.indices).named(f"{name}.query_group")
    sel = C.select(keys, queries, "==").named(f"{name}.sum")
    mean = C.aggregate(sel, prod.sop).named(f"{name}.mean")
    total = C.apply("scale", mean, params=(count,)).named(name)

    q, k = Q, K
    want = group(onto.coords(q))
    ck = g.coords(k)
    intent_expr: E.Expr = g.contains(k)
    for a in kept:
        intent_expr = intent_expr & ck[a].eq(E.lift(want[a]))

    def listed(qp: E.Expr, *ls: E.Expr) -> E.Expr:
        w = group(onto.coords(qp))
        at = dict(zip(over, ls, strict=True))
        return g.position(**{a: (E.lift(w[a]) if a in w and a not in over else at[a]) for a in g.axes})

    def witness(kp: E.Expr) -> tuple[E.Expr, ...]:
        c = g.coords(kp)
        return tuple(c[a] for a in over)

    intent = Intent(
        "sum",
        sel,
        intent_expr,
        onto.contains(q),
        f"entry x of {onto.name} selects exactly the products {g.name}[group(x), {', '.join(over)}]",
        keys=Enumeration(key=listed, witness=witness, count=tuple(g.dim(a) for a in over)),
    )
    return total, intent
