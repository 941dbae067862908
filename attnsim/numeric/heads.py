"""Attention heads of the numeric executor (design: docs/engine-performance.md).

:func:`plan_head` splits a selector's AND-ed parts into key conditions (any AND, OR, negation of
comparisons of one key-side value with constants), query conditions (the same on the query side)
and equalities ``Select(k, q, ==)`` of two non-constant values; any other part makes the head
dense (the reference interpreter's rows).  One equality with keys = ``indices`` is a gather;
otherwise the allowed keys are grouped by their equality values (:func:`groups`, reduced over
the frame axes no key side varies on, the tail one weighted entry) and each query reads its
group's mean (0 when it has none or fails a query condition).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from attnsim.numeric.values import Val, conform
from attnsim.rasp import core as C
from attnsim.rasp.interpreter import compare


@dataclass
class HeadPlan:
    """A selector's parts: equalities (key side, query side), key and query conditions; ``dense``
    when some part is none of those."""

    eqs: list[tuple[C.SOp, C.SOp]] = field(default_factory=list)
    keys: list[C.Selector] = field(default_factory=list)
    queries: list[C.Selector] = field(default_factory=list)
    dense: bool = False

    @property
    def gather(self) -> bool:
        return len(self.eqs) == 1 and isinstance(self.eqs[0][0], C.Indices)


def _atoms(sel: C.Selector) -> list[C.Select]:
    return [sel] if isinstance(sel, C.Select) else [a for c in sel.children() for a in _atoms(c)]  # type: ignore[arg-type]


def _side(a: C.Select) -> str:
    kc, qc = isinstance(a.keys, C.Full), isinstance(a.queries, C.Full)
    if a.cmp in ("TRUE", "FALSE") or (kc and qc):
        return "const"
    return "key" if qc else "query" if kc else "pair"


def plan_head(sel: C.Selector) -> HeadPlan:
    """The parts of ``sel`` (module docstring)."""
    plan, stack = HeadPlan(), [sel]
    while stack:
        s = stack.pop()
        if isinstance(s, C.SelectAnd):
            stack += [s.b, s.a]
            continue
        sides = {_side(a) for a in _atoms(s)} - {"const"}
        if sides <= {"key"}:
            plan.keys.append(s)
        elif sides == {"query"}:
            plan.queries.append(s)
        elif isinstance(s, C.Select) and s.cmp == "==":
            plan.eqs.append((s.keys, s.queries))
        else:
            plan.dense = True
    return plan


def scalar(c: Fraction | int) -> Any:
    """A constant as the executor compares with it (an int, or the float64 it rounds to)."""
    f = Fraction(c)
    return int(f) if f.denominator == 1 else float(f)


def condition(sel: C.Selector, get: Any) -> Val:
    """A key or query condition as a 0/1 value over its side's positions (``get``: SOp -> Val)."""
    if isinstance(sel, C.Select):
        if sel.cmp in ("TRUE", "FALSE"):
            return Val.const(np.bool_(sel.cmp == "TRUE"))
        k = Val.const(scalar(sel.keys.value)) if isinstance(sel.keys, C.Full) else get(sel.keys)
        q = Val.const(scalar(sel.queries.value)) if isinstance(sel.queries, C.Full) else get(sel.queries)
        return k.map(lambda a, b: compare(sel.cmp, a, b), q)
    parts = [condition(x, get) for x in sel.children()]  # type: ignore[arg-type]
    if isinstance(sel, C.SelectNot):
        return parts[0].map(np.logical_not)
    return parts[0].map(np.logical_and if isinstance(sel, C.SelectAnd) else np.logical_or, parts[1])


# -- gathers ------------------------------------------------------------------------------------
def gather(q: Val, v: Val, kmask: Val | None, qmask: Val | None, L: int) -> Val:
    """Query p reads the value at position q[p] (0 when it is not a position in [0, L), or a key
    condition fails there, or a query condition fails at p)."""
    flat = len(v.shape) == 1 and v.head.shape[0] > 1
    if flat and q.lin is not None and q.lin.coef == (1,) and kmask is None and qmask is None and 0 <= q.lin.c < v.m:
        shifted = _shift(q, v, L)  # compact U at capacity 128: 0.27 s of CPU with it, 0.46 s without
        if shifted is not None:
            return shifted
    if qmask is not None:
        shape, (qh, mh) = conform([q, qmask])
        head = np.where(mh, _read(qh, v, kmask, L), 0.0)
        tail = np.where(qmask.tail, _read(np.asarray(q.tail), v, kmask, L), 0.0)[()]
        return Val.const(tail) if not shape else Val(head, shape, tail)
    tail = _read(np.asarray(q.tail), v, kmask, L)[()]
    return Val.const(tail) if not q.shape else Val(_read(q.head, v, kmask, L), q.shape, tail)


def _shift(q: Val, v: Val, L: int) -> Val | None:
    """Query p < m reads position c + p (0 <= c < the values' head): the values' head from c on
    (a view), then their tail, then 0 past position L - 1, then the queries' tail reads one
    position; a Val when what follows the view is one value throughout."""
    c, n = q.lin.c, q.m  # type: ignore[union-attr]
    n1 = min(v.m - c, n)
    pieces = [(v.tail, min(n, L - c) - n1 if n1 < n else 0), (0.0, n - min(n, L - c))]
    pieces.append((_read(np.asarray(q.tail), v, None, L)[()], L - n))
    rest = {float(x) for x, k in pieces if k > 0}
    if len(rest) > 1:
        return None
    return Val.flat(v.head[c : c + n1], rest.pop() if rest else None)


def _read(pos: np.ndarray, v: Val, kmask: Val | None, L: int) -> np.ndarray:
    ok = (pos >= 0) & (pos < L)
    if pos.dtype.kind == "f":
        ok &= np.rint(pos) == pos
    idx = np.where(ok, pos, 0).astype(np.int64)
    if kmask is not None:
        ok &= kmask.at(idx).astype(bool)
    got = v.at(idx)
    return got if bool(ok.all()) else np.where(ok, got, 0.0)


# -- grouped heads ------------------------------------------------------------------------------
def _fold(x: np.ndarray, axes: list[int], shape: tuple[int, ...], op: str) -> np.ndarray:
    """``x`` summed (or maximized) over ``axes`` of the frame ``shape``, keeping them at extent 1;
    an axis along which ``x`` does not vary sums to ``x`` times its extent."""
    for a in axes:
        if x.shape[a] > 1:
            x = x.sum(axis=a, keepdims=True) if op == "sum" else x.max(axis=a, keepdims=True)
        elif op == "sum":
            x = x * shape[a]
    return x


@dataclass
class Coder:
    """One equality's key values as group numbers: bins over [lo, lo + size) for integer keys in
    a range at most a few times their number, else the rank among the distinct keys ``uniq``."""

    lo: int = 0
    size: int = 1
    uniq: np.ndarray | None = None

    @staticmethod
    def of(k: np.ndarray) -> Coder:
        if k.dtype.kind == "f" and bool(np.isfinite(k).all()) and bool((np.rint(k) == k).all()):
            k = k.astype(np.int64)
        if k.dtype.kind in "iu" and k.size and int(k.max()) - int(k.min()) <= 4 * k.size + 1024:
            return Coder(int(k.min()), int(k.max()) - int(k.min()) + 1)
        uniq = np.unique(k[~np.isnan(k)] if k.dtype.kind == "f" else k)
        return Coder(0, max(len(uniq), 1), uniq if len(uniq) else np.array([np.nan]))  # NaN: no group

    def code(self, x: np.ndarray) -> np.ndarray:
        """Group numbers of ``x`` (-1: no group; NaN and non-integers never have one)."""
        with np.errstate(invalid="ignore"):
            if self.uniq is None:
                inside = (x >= self.lo) & (x < self.lo + self.size)
                if x.dtype.kind == "f":
                    inside &= np.rint(x) == x
                return np.where(inside, x - self.lo, -1).astype(np.int64)
            pos = np.minimum(np.searchsorted(self.uniq, x), len(self.uniq) - 1)
            return np.where(self.uniq[pos] == x, pos, -1).astype(np.int64)


@dataclass
class Groups:
    """The allowed keys of a head grouped by their equality values: per group the mean of the
    values (or the count), looked up by the queries."""

    coders: list[Coder]
    table: np.ndarray
    held: Coder | None = None  # over several equalities: the combined numbers the keys hold

    def code(self, cols: list[np.ndarray]) -> np.ndarray:
        """The group number of each entry (one array per equality; -1: no group)."""
        out = np.zeros(np.broadcast_shapes(*(np.shape(c) for c in cols)), dtype=np.int64)
        for coder, col in zip(self.coders, cols, strict=True):
            got = coder.code(np.asarray(col))
            out = np.where((out < 0) | (got < 0), -1, out * coder.size + got)
        return out if self.held is None else np.where(out < 0, -1, self.held.code(out))

    def look(self, queries: list[Val], qmask: Val | None) -> Val:
        """Each query's group value (0 when it has no group or fails the query conditions)."""
        shape, qh = conform([*queries, *([qmask] if qmask is not None else [])])
        zero = self.table.dtype.type(0)

        def read(cols: list[np.ndarray], mask: Any) -> np.ndarray:
            code = self.code(cols)
            got = np.where(code >= 0, self.table[np.maximum(code, 0)], zero)
            return got if mask is None else np.where(mask, got, zero)

        tail = read([np.asarray(x.tail) for x in queries], None if qmask is None else np.asarray(qmask.tail))[()]
        if not shape:
            return Val.const(tail)
        head = read(qh[: len(queries)], qh[-1] if qmask is not None else None)
        return Val(head.reshape(head.shape if head.ndim == len(shape) else (1,) * len(shape)), shape, tail)


def groups(keys: list[Val], kmask: Val | None, values: Val | None, score: Val | None, L: int) -> Groups:
    """The allowed keys grouped by their equality values (none: one group), each group's mean of
    ``values`` (None: its count; with ``score``, over its keys of maximal score; NaN when a NaN
    score leaves none maximal), reduced over the frame axes no key side varies on."""
    opt = [x for x in (kmask, values, score) if x is not None]
    shape, heads = conform([*keys, *opt])
    k = len(shape)
    kh, rest, tails = heads[: len(keys)], iter(heads[len(keys) :]), iter([np.asarray(x.tail) for x in opt])
    every = kmask is None
    mh, mt = (next(rest), next(tails)) if not every else (np.ones((1,) * k, dtype=bool), np.bool_(True))
    vh, vt = (next(rest), next(tails)) if values is not None else (np.zeros((1,) * k), np.float64(0))
    sh, st = (next(rest), next(tails)) if score is not None else (np.zeros((1,) * k), np.float64(0))
    pure = [a for a in range(k) if all(h.shape[a] == 1 for h in kh)]
    cell = np.broadcast_shapes(*(h.shape for h in kh), (1,) * k)
    w = L - (int(np.prod(shape)) if shape else 0)  # the positions after the frame: one more entry

    def entries(x: Any, op: str, t: Any) -> np.ndarray:
        """One number per key entry: ``x`` folded over the pure axes, then the tail's (weighted)."""
        head = np.broadcast_to(_fold(np.asarray(x), pure, shape, op), cell).reshape(-1) if shape else np.zeros(0)
        last = (np.where(t, t, 0) * w if w else 0) if op == "sum" else (t if w else -np.inf)
        return np.append(head, last)

    cols = [entries(h, "key", np.asarray(x.tail)) for h, x in zip(kh, keys, strict=True)]
    g = Groups([Coder.of(c) for c in cols], np.zeros(0))
    if math.prod(c.size for c in g.coders) >= 1 << 62:
        raise OverflowError("too many key combinations to number")  # the dense path takes the head
    code = g.code(cols) if keys else np.zeros(len(entries(mh, "key", 0)), dtype=np.int64)
    if len(keys) > 1:  # number the combinations the keys hold
        g.held = Coder.of(code[code >= 0])
        code = np.where(code < 0, -1, g.held.code(code))
    size = g.held.size if g.held is not None else math.prod(c.size for c in g.coders)
    code = np.where(code < 0, size, code)  # a key of no group (NaN): an extra bin no query reads
    top, top_t = mh, mt
    with np.errstate(all="ignore"):
        if score is not None:
            gmax = np.full(size + 1, -np.inf)
            np.maximum.at(gmax, code, entries(np.where(mh, sh, -np.inf), "max", np.where(mt, st, -np.inf)))
            gcell = gmax[code[:-1]].reshape(cell) if shape else np.zeros(cell)
            top, top_t, every = mh & (sh == gcell), mt & (st == gmax[code[-1]]), False
        counts = np.bincount(code, weights=entries(top, "sum", top_t), minlength=size + 1)
        if values is None:
            g.table = counts.astype(np.int64)
            return g
        terms = entries(vh if every else np.where(top, vh, 0.0), "sum", np.where(top_t, vt, 0.0))
        sums = np.bincount(code, weights=terms, minlength=size + 1)
        g.table = np.where(counts > 0, sums / np.where(counts > 0, counts, 1), 0.0)
        if score is not None:
            allowed = np.bincount(code, weights=entries(mh, "sum", mt), minlength=size + 1)
            g.table = np.where((counts == 0) & (allowed > 0), np.nan, g.table)
    return g
