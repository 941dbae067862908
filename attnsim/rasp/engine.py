"""One engine, three arithmetics: run a GAHAT-RASP program on a token sequence.

The engine walks the program in topological order.  Values that depend only on positions and
sizes (``structural``) are computed as NumPy int64 arrays whatever the backend; everything else
is held in the chosen arithmetic.  Each value is freed after its last use.

Selectors are never materialized as L x L matrices when their shape allows a fast path:

* an AND of *key conditions* (``Select(keys, Full(c), cmp)``), *query conditions*
  (``Select(Full(c), queries, cmp)``) and at most one *equality* ``Select(k, q, ==)`` is
  computed as a block mean: keys grouped by value, O(L log L); with ``keys = indices`` the
  equality is a gather, O(L);
* any other selector is evaluated densely, in chunks of queries so that no block exceeds
  ``DENSE_CELLS`` cells.

Both paths implement the same semantics (docs/semantics.md); the language obligations
``rasp/exact/fastpath-*`` check them against each other exhaustively on small cases.

Long values (numpy backend): a value constant after some position keeps only its head
(``Tail``); a value whose head is longer than ``LAZY_MIN`` and whose every reader reads it at its
own positions (a Map's argument, an equality head's queries) or sums it by groups (an equality
sum's key side) is *streamed* (``Lazy``): computed piece by piece, ``PIECE`` positions at a time,
where it is read, and never stored whole.  Other long values are evaluated in pieces into one
array.  tests/rasp/test_streamed_values.py checks streamed runs against plain and dense ones.

Non-finite values (float64): values outside a construction's result block are unspecified and
may be NaN by design, so the engine checks only what the caller reads: ``evaluate(...,
finite=positions)`` raises :class:`NonFiniteError` when one of those output positions is not
finite, naming the node (label and primitive) where the value first stopped being finite.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from attnsim.rasp import core as C
from attnsim.rasp.arith import Arithmetic, BackendError, NonFiniteError
from attnsim.rasp.compiled_expr import compiled
from attnsim.rasp.exact import ExactArith, SympyArith
from attnsim.rasp.expr import COMPARATORS, constant_from
from attnsim.rasp.kept_values import AffinePieces, Chunked, KeptForm, NarrowArray, kept_form
from attnsim.rasp.numeric import NumpyArith

DENSE_CELLS = 1 << 22
BACKENDS = ("numpy", "exact", "sympy")


def arithmetic(backend: str | Arithmetic) -> Arithmetic:
    """The arithmetic for a backend name."""
    if isinstance(backend, Arithmetic):
        return backend
    table: dict[str, Callable[[], Arithmetic]] = {"numpy": NumpyArith, "exact": ExactArith, "sympy": SympyArith}
    if backend not in table:
        raise BackendError(f"unknown backend {backend!r}; use one of {BACKENDS}")
    return table[backend]()


def compare(cmp: str, k: Any, q: Any) -> np.ndarray:
    """cmp(key, query), elementwise with broadcasting, as a bool array."""
    if cmp == "TRUE":
        return np.ones(np.broadcast(k, q).shape, dtype=bool)
    if cmp == "FALSE":
        return np.zeros(np.broadcast(k, q).shape, dtype=bool)
    return np.asarray(COMPARATORS[cmp](k, q)).astype(bool)


def _scalar(c: Fraction) -> Any:
    return int(c) if c.denominator == 1 else c


# ---------------------------------------------------------------------------------------------
LAZY_MIN = 1 << 20  # values with longer heads are streamed (``Lazy``) or evaluated in pieces
PIECE = 1 << 17  # positions per piece of a streamed evaluation


@dataclass(frozen=True)
class Tail:
    """A length-L value held compactly: ``head`` at positions 0..len(head)-1, then ``tail[0]`` at
    every later position (numpy backend only; see ``Run.compact``)."""

    head: np.ndarray
    tail: np.ndarray  # shape (1,)

    def full(self, L: int) -> np.ndarray:
        out = np.empty(L, dtype=np.result_type(self.head, self.tail))
        out[: len(self.head)] = self.head
        out[len(self.head) :] = self.tail[0]
        return out

    def upto(self, m: int) -> np.ndarray:
        """Positions 0..m-1 (m >= len(head))."""
        if m == len(self.head):
            return self.head
        return np.concatenate([self.head, np.repeat(self.tail, m - len(self.head))])

    def at(self, idx: np.ndarray) -> np.ndarray:
        """The values at positions ``idx`` (all in [0, L))."""
        n = len(self.head)
        if n == 0:
            return np.repeat(self.tail, len(idx))
        if idx.size and int(idx.max()) < n:
            return self.head[idx]
        inside = idx < n
        return np.where(inside, self.head[np.where(inside, idx, 0)], self.tail[0])


@dataclass(frozen=True)
class Padded:
    """A sequence of ``length`` positions held as its ``head`` followed by ``pad`` at every later
    position: a program's input or output not materialized where it is padding (U's encoded
    input past its records, its output past what it writes)."""

    head: np.ndarray
    length: int
    pad: Any = 0.0

    def __post_init__(self) -> None:
        if self.head.ndim != 1:
            raise BackendError(f"a program's input is a 1-D token sequence; got shape {self.head.shape}")
        if not 1 <= self.length or len(self.head) > self.length:
            raise BackendError(f"a padded sequence needs 1 <= len(head) <= length, got {len(self.head)}, {self.length}")

    def full(self) -> np.ndarray:
        """All ``length`` positions."""
        return self.upto(self.length)

    def upto(self, m: int) -> np.ndarray:
        """Positions 0..m-1."""
        out = np.full(m, self.pad, dtype=self.head.dtype)
        k = min(m, len(self.head))
        out[:k] = self.head[:k]
        return out

    def at(self, idx: np.ndarray) -> np.ndarray:
        """The values at positions ``idx`` (all in [0, length))."""
        inside = idx < len(self.head)
        if len(self.head) == 0:
            return np.full(len(idx), self.pad, dtype=self.head.dtype)
        return np.where(inside, self.head[np.where(inside, idx, 0)], self.pad)


def _tail_of(a: np.ndarray) -> Tail:
    """An array as a Tail: its last run of equal values becomes the tail."""
    if len(a) == 0:
        return Tail(a, a[:0])
    last = a[-1]
    diff = np.flatnonzero(a != last) if not (a.dtype.kind == "f" and np.isnan(last)) else np.flatnonzero(~np.isnan(a))
    n = int(diff[-1]) + 1 if diff.size else 0
    return Tail(a[:n].copy() if n < len(a) else a, a[-1:].copy())


def _head_len(x: Any, L: int) -> int:
    return len(x.head) if isinstance(x, Tail) else L


def _upto(x: Any, m: int) -> np.ndarray:
    return x.upto(m) if isinstance(x, Tail) else x[:m]


def _tailv(x: Any) -> np.ndarray:
    return x.tail if isinstance(x, Tail) else x[-1:]


def _at(x: Any, idx: np.ndarray) -> np.ndarray:
    return x.at(idx) if isinstance(x, Tail) else x[idx]


def _slice(x: Any, a: int, b: int) -> np.ndarray:
    """Positions a..b-1 of an array or a Tail."""
    if not isinstance(x, Tail):
        return x[a:b]
    n = len(x.head)
    if b <= n:
        return x.head[a:b]
    if a >= n:
        return np.repeat(x.tail, b - a)
    return np.concatenate([x.head[a:], np.repeat(x.tail, b - n)])


def _kind(x: Any) -> str:
    return str((x.head if isinstance(x, Tail) else x).dtype.kind)


@dataclass(eq=False)
class Lazy:
    """A value not stored whole (numpy backend, compact runs): ``fn(a, b, cache)`` gives
    positions a..b-1 (b <= m), ``tail[0]`` is the value at every position >= m.  ``cache`` holds
    the pieces computed for one range of positions, so a shared argument is computed once."""

    m: int
    tail: np.ndarray  # shape (1,)
    is_int: bool
    label: str
    fn: Callable[[int, int, dict[Any, np.ndarray]], np.ndarray]


def _bin_sums(kk: np.ndarray, vv: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Integer keys ``kk`` with values ``vv``: (sorted distinct keys, counts, sums); by bins when
    the key range is at most 4 x the number of keys (the same sums, in key order), else a sort."""
    if kk.size == 0:
        return kk.astype(np.int64), np.zeros(0), np.zeros(0)
    lo, hi = int(kk.min()), int(kk.max())
    if hi - lo < 4 * kk.size:
        bins = kk - lo
        counts = np.bincount(bins, minlength=hi - lo + 1)
        sums = np.bincount(bins, weights=vv, minlength=hi - lo + 1)
        nz = np.flatnonzero(counts)
        return (nz + lo).astype(np.int64), counts[nz].astype(np.float64), sums[nz]
    uniq, inv = np.unique(kk, return_inverse=True)
    inv = inv.reshape(-1)
    return (
        uniq,
        np.bincount(inv, minlength=len(uniq)).astype(np.float64),
        np.bincount(inv, weights=vv, minlength=len(uniq)),
    )


def _group_max(gmax: np.ndarray, groups: np.ndarray, scores: np.ndarray) -> None:
    """``gmax[g] = max(gmax[g], scores of group g)`` (``np.maximum.at``); when the groups come
    in non-decreasing order (U's rows are contiguous) by one ``reduceat`` over the runs, which
    NumPy does many times faster than the unbuffered ``maximum.at``."""
    if groups.size > 1 and bool(np.all(groups[1:] >= groups[:-1])):
        starts = np.concatenate([[0], np.flatnonzero(groups[1:] != groups[:-1]) + 1])
        g = groups[starts]
        gmax[g] = np.maximum(gmax[g], np.maximum.reduceat(scores, starts))
        return
    np.maximum.at(gmax, groups, scores)


def _group_lookup(
    uniq: np.ndarray, counts: np.ndarray, sums: np.ndarray
) -> Callable[[np.ndarray, np.ndarray | None], np.ndarray]:
    """Each query's group mean (0 where its group is empty or absent, or ``ok`` is False), from
    the sorted distinct group values ``uniq`` (non-empty) with their weights and sums.  Integer
    groups in a range at most 8 x their number (+ 1024) are read from a table indexed by value,
    one gather per query; others by a binary search.  The means are the same divisions.
    ``ok`` None: every query reads."""
    lo, hi = int(uniq[0]), int(uniq[-1])
    if uniq.dtype.kind in "iu" and hi - lo < 8 * len(uniq) + 1024:
        size = hi - lo + 1
        has = np.zeros(size, dtype=bool)
        means = np.zeros(size)
        nz = counts > 0
        has[uniq[nz] - lo] = True
        means[uniq[nz] - lo] = sums[nz] / counts[nz]

        def table(q: np.ndarray, ok: np.ndarray | None) -> np.ndarray:
            idx = q - lo
            if ok is None and idx.size and int(idx.min()) >= 0 and int(idx.max()) < size:
                return means[idx]  # 0 where a value has no group: the table holds 0 there
            inside = (idx >= 0) & (idx < size) if ok is None else ok & (idx >= 0) & (idx < size)
            idx = np.where(inside, idx, 0)
            return np.where(inside & has[idx], means[idx], 0.0)

        return table

    def search(q: np.ndarray, ok: np.ndarray | None) -> np.ndarray:
        pos = np.minimum(np.searchsorted(uniq, q), len(uniq) - 1)
        hit = (uniq[pos] == q) & (counts[pos] > 0)
        if ok is not None:
            hit &= ok
        out = np.zeros(len(q))
        out[hit] = sums[pos[hit]] / counts[pos[hit]]
        return out

    return search


def _max_sums(
    kk: np.ndarray, vv: np.ndarray, ss: np.ndarray, w: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sorted distinct keys, weights, weighted sums) over each key's entries of maximal score."""
    uniq, inv = np.unique(kk, return_inverse=True)
    inv = inv.reshape(-1)
    gmax = np.full(len(uniq), -np.inf)
    _group_max(gmax, inv, ss)
    top = ss == gmax[inv]
    inv, vv, w = inv[top], vv[top], w[top]
    return uniq, np.bincount(inv, weights=w, minlength=len(uniq)), np.bincount(inv, weights=vv * w, minlength=len(uniq))


def _streamable(order: Sequence[C.RASPExpr], outputs: Sequence[C.SOp]) -> dict[int, bool]:
    """Per node: every reader reads it at its own positions (a Map's argument, an equality head's
    queries and query conditions) or sums it by groups (the key side of an equality sum, no score),
    and it is no output: such a value can be streamed (``Lazy``)."""
    ok: dict[int, bool] = {}

    def mark(x: C.SOp, good: bool) -> None:
        ok[id(x)] = ok.get(id(x), True) and good

    for node in order:
        if isinstance(node, (C.Map, C.SequenceMap)):
            for a in node.args:
                mark(a, True)
        elif isinstance(node, (C.Aggregate, C.SelectorWidth)):
            leaves = selector_leaves(node.selector)
            plan = plan_selector(node.selector) if isinstance(node, C.Aggregate) else None
            if plan is None or plan.eq is None or plan.empty or not isinstance(node, C.Aggregate):
                for x in [*leaves, *(node.reads() if isinstance(node, C.Aggregate) else [])]:
                    mark(x, False)
                continue
            ksop, qsop = plan.eq
            gather = isinstance(ksop, C.Indices)
            summed = not gather and node.score is None
            roles: list[tuple[C.SOp, bool]] = [(qsop, True), (ksop, gather or summed), (node.values, summed)]
            roles += [(s, True) for _, s, _ in plan.query_atoms] + [(s, summed) for s, _, _ in plan.key_atoms]
            if node.score is not None:
                roles.append((node.score, False))
            for x, good in roles:
                mark(x, good)
            covered = {id(x) for x, _ in roles}
            for x in leaves:
                if id(x) not in covered:
                    mark(x, False)
    for o in outputs:
        mark(o, False)
    return ok


def _position_only(order: Sequence[C.RASPExpr]) -> dict[int, bool]:
    """Per node: its value depends only on positions and sizes (``indices``, or an index map
    whose every argument is such a value), so it is the same on every run at one length."""
    out: dict[int, bool] = {}
    for node in order:
        if isinstance(node, C.Indices):
            out[id(node)] = True
        elif isinstance(node, (C.Map, C.SequenceMap)) and isinstance(node.fn, C.IndexFn):
            out[id(node)] = all(out.get(id(a), False) for a in node.args)
    return out


@dataclass
class SelectorPlan:
    """A selector as key mask AND query mask AND (optionally) one equality k-value == q-value."""

    key_atoms: list[tuple[C.SOp, str, Fraction]] = field(default_factory=list)
    query_atoms: list[tuple[Fraction, C.SOp, str]] = field(default_factory=list)
    eq: tuple[C.SOp, C.SOp] | None = None
    empty: bool = False


def plan_selector(sel: C.Selector) -> SelectorPlan | None:
    """Decompose a selector for the fast path; None when only the dense path applies."""
    plan = SelectorPlan()
    stack: list[C.Selector] = [sel]
    while stack:
        s = stack.pop()
        if isinstance(s, C.SelectAnd):
            stack += [s.a, s.b]
            continue
        if not isinstance(s, C.Select):
            return None
        if s.cmp == "TRUE":
            continue
        if s.cmp == "FALSE":
            plan.empty = True
            continue
        kc, qc = isinstance(s.keys, C.Full), isinstance(s.queries, C.Full)
        if kc and qc:
            if not bool(compare(s.cmp, s.keys.value, s.queries.value)):  # type: ignore[attr-defined]
                plan.empty = True
        elif qc:
            plan.key_atoms.append((s.keys, s.cmp, Fraction(s.queries.value)))  # type: ignore[attr-defined]
        elif kc:
            plan.query_atoms.append((Fraction(s.keys.value), s.queries, s.cmp))  # type: ignore[attr-defined]
        elif s.cmp == "==" and plan.eq is None:
            plan.eq = (s.keys, s.queries)
        else:
            return None
    return plan


def selector_leaves(sel: C.Selector) -> list[C.SOp]:
    """The SOps a selector reads (keys and queries of its Select atoms)."""
    out: list[C.SOp] = []
    stack: list[C.RASPExpr] = [sel]
    while stack:
        s = stack.pop()
        if isinstance(s, C.Select):
            out += [s.keys, s.queries]
        else:
            stack += list(s.children())
    return out


@dataclass
class RunStats:
    """What runs computed (numpy backend): SOp nodes, and the positions of their values that a
    run had to produce (``head_positions``: a compact value's head, else the whole length; the
    position-only index maps read from a memo are counted apart, in ``memo_positions``).
    Accumulates over the runs it is given to."""

    runs: int = 0
    nodes: int = 0
    head_positions: int = 0
    memo_positions: int = 0


@dataclass(frozen=True)
class MemoSummary:
    """What a :class:`StructuralMemo` holds: kept values, their bytes, its budget, refused
    values (computed on every run), and reads (hits) and offers (misses) so far."""

    kept: int
    bytes: int
    budget_bytes: int
    refused: int
    hits: int
    misses: int


@dataclass
class StructuralMemo:
    """Values that depend only on positions and sizes (index maps over ``indices``, index maps
    of such maps), kept across runs of one program (U keeps one): a run reads them instead of
    computing them again.  Each head is kept in the smaller of two exact forms
    (:func:`attnsim.rasp.kept_values.kept_form`: affine pieces or a narrow array); a value whose
    form would take the kept total past ``budget_bytes`` is not kept (it is computed on every
    run, as without a memo) and is not offered again."""

    budget_bytes: int = 256 << 20
    stored: dict[tuple[int, int], tuple[C.SOp, KeptForm, np.ndarray]] = field(default_factory=dict)
    refused: set[tuple[int, int]] = field(default_factory=set)
    used_bytes: int = 0
    hits: int = 0
    misses: int = 0

    def get(self, node: C.SOp, L: int) -> tuple[KeptForm, np.ndarray] | None:
        """(kept head, tail) of ``node`` at length L, if kept."""
        hit = self.stored.get((id(node), L))
        if hit is None:
            return None
        self.hits += 1
        return hit[1], hit[2]

    def offer(self, node: C.SOp, L: int, lz: Lazy) -> tuple[KeptForm, np.ndarray] | None:
        """Keep ``node``'s values (``lz``, read PIECE positions at a time, each piece kept in its
        smaller form) if they fit the budget: (kept form, tail); None when refused (the pieces
        computed so far are dropped)."""
        self.misses += 1
        room = self.budget_bytes - self.used_bytes
        parts: list[NarrowArray | AffinePieces] = []
        size = 0
        for a in range(0, lz.m, PIECE):
            b = min(lz.m, a + PIECE)
            piece = np.broadcast_to(np.asarray(lz.fn(a, b, {}), dtype=np.int64), (b - a,))
            form = kept_form(piece)
            size += form.nbytes
            if size > room:
                self.refused.add((id(node), L))
                return None
            parts.append(form)
        kept = Chunked(PIECE, tuple(parts))
        self.stored[(id(node), L)] = (node, kept, np.asarray(lz.tail, dtype=np.int64).reshape(1))
        self.used_bytes += size
        return kept, self.stored[(id(node), L)][2]

    def tried(self, node: C.SOp, L: int) -> bool:
        """The node was refused before: do not compute it whole again to offer it."""
        return (id(node), L) in self.refused

    def summary(self) -> MemoSummary:
        kept, refused = len(self.stored), len(self.refused)
        return MemoSummary(kept, self.used_bytes, self.budget_bytes, refused, self.hits, self.misses)


# ---------------------------------------------------------------------------------------------
class Run:
    """State of one program run: values by node id, freed after their last use."""

    def __init__(
        self,
        outputs: Sequence[C.SOp],
        inputs: Any,
        arith: Arithmetic,
        allow_nonfinite: bool = False,
        keep_all: bool = False,
        dense_only: bool = False,
        track: bool = False,
        memo: StructuralMemo | None = None,
        stats: RunStats | None = None,
    ) -> None:
        self.arith = arith
        self.stats = stats if stats is not None else RunStats()
        self.outputs = list(outputs)
        self.keep_all = keep_all
        self.dense_only = dense_only
        # provenance of non-finite float64 values (track=True): per node, the index into
        # ``sources`` of the node where each non-finite position's value first stopped being finite
        self.track = track
        self.origin: dict[int, np.ndarray] = {}
        self.sources: list[tuple[str, str, int, float]] = []
        # compact values (``Tail``): a value constant after some position keeps only its head
        # (numpy backend, fast paths); every reader that needs the whole array materializes it
        self.compact = isinstance(arith, NumpyArith) and not keep_all and not dense_only and not track
        if isinstance(inputs, Padded) and not self.compact:
            inputs = inputs.full()
        if isinstance(inputs, Padded):
            self.L = inputs.length
            self.tokens: Any = Tail(
                arith.from_input(inputs.head, allow_nonfinite),
                arith.from_input(np.array([inputs.pad], dtype=inputs.head.dtype), allow_nonfinite),
            )
        else:
            arr = np.asarray(inputs, dtype=object) if not isinstance(inputs, np.ndarray) else inputs
            if arr.ndim != 1:
                raise BackendError(f"a program's input is a 1-D token sequence; got shape {arr.shape}")
            if arr.shape[0] == 0:
                raise BackendError("a program's input must have at least one token")
            self.L = int(arr.shape[0])
            tokens = arith.from_input(inputs, allow_nonfinite)
            self.tokens = _tail_of(tokens) if self.compact else tokens
            del tokens
        self.ints: dict[int, Any] = {}
        self.vals: dict[int, Any] = {}
        self.order = C.topological(self.outputs)
        self.structural: dict[int, bool] = {}
        self.selectors: dict[int, np.ndarray] = {}
        # streamed values (``Lazy``, compact runs): a long value whose every reader reads it at its
        # own positions (or sums it by groups) is computed piece by piece where it is read
        self.lazy: dict[int, Lazy] = {}
        self.streamable: dict[int, bool] = {}
        # values that depend only on positions and sizes, kept across runs (compact runs only)
        self.memo = memo if self.compact else None
        self.position_only: dict[int, bool] = {}

    # -- access ---------------------------------------------------------------------------
    def _full(self, x: Any) -> Any:
        return x.full(self.L) if isinstance(x, Tail) else x

    def value_t(self, node: C.SOp) -> Any:
        """The node's values in the run's arithmetic (an array or a ``Tail``)."""
        key = id(node)
        if key in self.lazy:
            self._realize(node)
        if key not in self.vals:
            iv = self.ints[key]
            if isinstance(iv, Tail):
                self.vals[key] = Tail(self.arith.from_int(iv.head), self.arith.from_int(iv.tail))
            else:
                self.vals[key] = self.arith.from_int(iv)
        return self.vals[key]

    def value(self, node: C.SOp) -> np.ndarray:
        """The node's values in the run's arithmetic."""
        return self._full(self.value_t(node))

    def integers_t(self, node: C.SOp) -> Any:
        key = id(node)
        if key in self.lazy:
            self._realize(node)
        if key not in self.ints:
            v = self.vals[key]
            if isinstance(v, Tail):
                what = f"{node.label}"
                self.ints[key] = Tail(self.arith.to_int(v.head, what), self.arith.to_int(v.tail, what))
            else:
                self.ints[key] = self.arith.to_int(v, f"{node.label}")
        return self.ints[key]

    def integers(self, node: C.SOp) -> np.ndarray:
        """The node's values as int64 (fails clearly when they are not integers)."""
        return self._full(self.integers_t(node))

    def comparable_t(self, node: C.SOp) -> Any:
        if id(node) in self.lazy:
            self._realize(node)
        if id(node) in self.ints:
            return self.ints[id(node)]
        v = self.vals[id(node)]
        what = f"selector on {node.label}"
        if isinstance(v, Tail):
            return Tail(self.arith.comparable(v.head, what), self.arith.comparable(v.tail, what))
        return self.arith.comparable(v, what)

    def comparable(self, node: C.SOp) -> np.ndarray:
        return self._full(self.comparable_t(node))

    # -- main loop ------------------------------------------------------------------------
    def execute(self) -> None:
        reads: dict[int, list[C.SOp]] = {}
        refs: dict[int, int] = {}
        for node in self.order:
            if isinstance(node, (C.Map, C.SequenceMap)):
                r = list(node.args)
            elif isinstance(node, C.Aggregate):
                r = [*node.reads(), *selector_leaves(node.selector)]
            elif isinstance(node, C.SelectorWidth):
                r = selector_leaves(node.selector)
            else:
                r = []
            reads[id(node)] = r
            for x in r:
                refs[id(x)] = refs.get(id(x), 0) + 1
        for o in self.outputs:
            refs[id(o)] = refs.get(id(o), 0) + 1
        if self.compact:
            self.streamable = _streamable(self.order, self.outputs)
        if self.memo is not None:
            self.position_only = _position_only(self.order)
        for node in self.order:
            if isinstance(node, C.SOp):
                self.compute(node)
            if self.keep_all:
                continue
            for x in reads.get(id(node), []):
                refs[id(x)] -= 1
                if refs[id(x)] == 0:
                    self.ints.pop(id(x), None)
                    self.vals.pop(id(x), None)
                    self.lazy.pop(id(x), None)
                    self.origin.pop(id(x), None)

    def compute(self, node: C.SOp) -> None:
        L, key = self.L, id(node)
        if self.compact and isinstance(node, (C.Indices, C.Map, C.SequenceMap, C.Aggregate)):
            memoize = self.position_only.get(key, False) and not isinstance(node, C.Indices)
            lz = self._memoized(node) if memoize else self._describe(node)
            if lz is not None:
                self.stats.nodes += 1
                if memoize and self.memo is not None and not self.memo.tried(node, L):
                    self.stats.memo_positions += lz.m
                else:
                    self.stats.head_positions += lz.m
                if lz.m > LAZY_MIN and self.streamable.get(key, False):
                    self.lazy[key] = lz  # read piece by piece by its readers, never stored whole
                else:
                    (self.ints if lz.is_int else self.vals)[key] = self._materialize(lz)
                return
        self.stats.nodes += 1
        self.stats.head_positions += L
        if isinstance(node, C.Tokens):
            self.vals[key] = self.tokens
        elif isinstance(node, C.Indices):
            self.ints[key] = np.arange(L, dtype=np.int64)
        elif isinstance(node, C.Length):
            self.ints[key] = np.full(L, L, dtype=np.int64)
        elif isinstance(node, C.Full):
            v = Fraction(node.value)
            if v.denominator == 1:
                ci = np.full(1 if self.compact else L, int(v), dtype=np.int64)
                self.ints[key] = Tail(ci[:0], ci) if self.compact else ci
            else:
                cv = self.arith.const(v, 1 if self.compact else L)
                self.vals[key] = Tail(cv[:0], cv) if self.compact else cv
        elif isinstance(node, (C.Map, C.SequenceMap)):
            fn = node.fn
            if isinstance(fn, C.IndexFn):
                args = [self.integers(a) for a in node.args]
                out = compiled(fn)(*args)
                self.ints[key] = np.broadcast_to(np.asarray(out, dtype=np.int64), (L,)).copy()
            else:
                try:
                    args_v = [self.value(a) for a in node.args]
                    self.vals[key] = self.arith.apply(fn.primitive, fn.params, args_v)
                except BackendError as exc:
                    raise BackendError(f"{node.label}: {exc}") from None
        elif isinstance(node, C.Aggregate):
            score = None if node.score is None else self.value(node.score)
            self.vals[key] = self.reduce(node.selector, self.value(node.values), score)
        elif isinstance(node, C.SelectorWidth):
            self.ints[key] = self.reduce(node.selector, None)
        else:
            raise C.ProgramError(f"unknown node type {type(node).__name__}")
        if self.track:
            self._track(node)

    # -- compact values (Tail) and streamed values (Lazy) --------------------------------------
    def _src(self, node: C.SOp, want: str) -> Any:
        """What a streamed computation reads for ``node``: its Lazy, or its stored value in the
        domain ``want`` ("value", "integers", "comparable")."""
        lz = self.lazy.get(id(node))
        if lz is not None:
            return lz
        if want == "value":
            return self.value_t(node)
        if want == "integers":
            return self.integers_t(node)
        return self.comparable_t(node)

    def _get(self, src: Any, want: str, a: int, b: int, cache: dict[Any, np.ndarray]) -> np.ndarray:
        """Positions a..b-1 of a source (see ``_src``)."""
        if not isinstance(src, Lazy):
            return _slice(src, a, b)
        p = self._piece(src, a, b, cache)
        return self._convert(p, src, want)

    def _convert(self, p: np.ndarray, lz: Lazy, want: str) -> np.ndarray:
        if want == "value":
            return self.arith.from_int(p) if lz.is_int else p
        if lz.is_int:
            return p
        if want == "integers":
            return self.arith.to_int(p, lz.label)
        return self.arith.comparable(p, f"selector on {lz.label}")

    def _tail_src(self, src: Any, want: str) -> np.ndarray:
        return self._convert(src.tail, src, want) if isinstance(src, Lazy) else _tailv(src)

    @staticmethod
    def _piece(lz: Lazy, a: int, b: int, cache: dict[Any, np.ndarray]) -> np.ndarray:
        key = (id(lz), a, b)
        p = cache.get(key)
        if p is None:
            m = lz.m
            if a >= m:
                p = np.repeat(lz.tail, b - a)
            elif b <= m:
                p = lz.fn(a, b, cache)
            else:
                p = np.concatenate([lz.fn(a, m, cache), np.repeat(lz.tail, b - m)])
            cache[key] = p
        return p

    def _head_of(self, src: Any) -> int:
        return src.m if isinstance(src, Lazy) else _head_len(src, self.L)

    def _materialize(self, lz: Lazy) -> Any:
        """A Lazy's values as a Tail (its head evaluated in pieces into one array)."""
        m = lz.m
        if m <= LAZY_MIN:
            head = np.asarray(lz.fn(0, m, {}))
        else:
            head = np.empty(0)
            for a in range(0, m, PIECE):
                b = min(m, a + PIECE)
                p = lz.fn(a, b, {})
                if a == 0:
                    head = np.empty(m, dtype=p.dtype)
                head[a:b] = p
        return head if m >= self.L else Tail(head, lz.tail)

    def _realize(self, node: C.SOp) -> None:
        """Store a streamed node's values (a reader needs them whole)."""
        lz = self.lazy.pop(id(node))
        (self.ints if lz.is_int else self.vals)[id(node)] = self._materialize(lz)

    def _memoized(self, node: C.SOp) -> Lazy | None:
        """A position-only index map read from the memo (computed whole and offered to it on
        the first run); the plain description when the memo refused it."""
        memo, L = self.memo, self.L
        assert memo is not None
        if memo.tried(node, L):
            return self._describe(node)
        got = memo.get(node, L)
        if got is None:
            lz = self._describe(node)
            if lz is None:  # pragma: no cover - index maps always have a description
                return None
            got = memo.offer(node, L, lz)
            if got is None:
                return lz
        form, tail = got

        def read(a: int, b: int, cache: dict[Any, np.ndarray]) -> np.ndarray:
            return form.slice(a, b)

        return Lazy(form.length, tail, True, node.label, read)

    def _describe(self, node: C.SOp) -> Lazy | None:
        """The node as a Lazy (its values computable piece by piece); None: the general path."""
        L = self.L
        if isinstance(node, C.Indices):

            def idx(a: int, b: int, cache: dict[Any, np.ndarray]) -> np.ndarray:
                return np.arange(a, b, dtype=np.int64)

            return Lazy(L, np.array([L - 1], dtype=np.int64), True, node.label, idx)
        if isinstance(node, (C.Map, C.SequenceMap)) and isinstance(node.fn, C.IndexFn):
            return self._describe_index_map(node.fn, node.args, node.label)
        if isinstance(node, (C.Map, C.SequenceMap)):
            return self._describe_map(node)
        if isinstance(node, C.Aggregate):
            return self._describe_aggregate(node)
        return None

    def _describe_index_map(self, fn: C.IndexFn, args: Sequence[C.SOp], label: str) -> Lazy:
        """An index map over the head only: over ``indices`` alone the head ends where the
        expression is provably constant (``E.constant_from``); over other values it ends where
        their heads do."""
        L = self.L
        code = compiled(fn)

        def ev(xs: list[np.ndarray], n: int) -> np.ndarray:
            return np.array(np.broadcast_to(np.asarray(code(*xs), dtype=np.int64), (n,)))

        if len(args) == 1 and isinstance(args[0], C.Indices):
            start = constant_from(fn.expr, fn.argnames[0], dict(fn.bindings))
            m = L if start is None else min(L, start)

            def over_indices(a: int, b: int, cache: dict[Any, np.ndarray]) -> np.ndarray:
                return ev([np.arange(a, b, dtype=np.int64)], b - a)

            tail = np.asarray(code(np.array([L - 1], dtype=np.int64)), dtype=np.int64).reshape(-1)[:1]
            if tail.size == 0:
                tail = np.zeros(1, dtype=np.int64)
            return Lazy(m, np.broadcast_to(tail, (1,)).copy(), True, label, over_indices)
        srcs = [None if isinstance(x, C.Indices) else self._src(x, "integers") for x in args]
        m = max([L if s is None else self._head_of(s) for s in srcs], default=0)

        def over_values(a: int, b: int, cache: dict[Any, np.ndarray]) -> np.ndarray:
            xs = [np.arange(a, b, dtype=np.int64) if s is None else self._get(s, "integers", a, b, cache) for s in srcs]
            return ev(xs, b - a)

        tails = [np.array([L - 1], dtype=np.int64) if s is None else self._tail_src(s, "integers") for s in srcs]
        tail = np.broadcast_to(np.asarray(code(*tails), dtype=np.int64).reshape(-1)[:1], (1,)).copy()
        return Lazy(m, tail, True, label, over_values)

    def _describe_map(self, node: C.Map | C.SequenceMap) -> Lazy:
        """A primitive on compact values: on the longest head, and once on the tails."""
        prim, params, label = node.fn.primitive, node.fn.params, node.label  # type: ignore[union-attr]
        srcs = [self._src(x, "value") for x in node.args]
        m = max((self._head_of(s) for s in srcs), default=self.L)

        def apply(xs: list[np.ndarray]) -> np.ndarray:
            try:
                with np.errstate(all="ignore"):
                    return np.asarray(self.arith.apply(prim, params, xs))
            except BackendError as exc:
                raise BackendError(f"{label}: {exc}") from None

        def piece(a: int, b: int, cache: dict[Any, np.ndarray]) -> np.ndarray:
            return apply([self._get(s, "value", a, b, cache) for s in srcs])

        tail = apply([self._tail_src(s, "value") for s in srcs]).reshape(1)
        return Lazy(m, tail, False, label, piece)

    def _describe_aggregate(self, node: C.Aggregate) -> Lazy | None:
        """The equality fast paths on compact values (a gather, a group mean, a group max), read
        piece by piece at the queries; None when the selector or the values need the general path."""
        plan = plan_selector(node.selector)
        if plan is None or plan.eq is None or plan.empty:
            return None
        ksop, qsop = plan.eq
        for sop in (node.values, node.score):
            if sop is None:
                continue
            lz = self.lazy.get(id(sop))
            kind = ("i" if lz.is_int else "f") if lz is not None else _kind(self.value_t(sop))
            if kind != "f":
                return None
        qsrc = self._src(qsop, "comparable")
        if (("i" if qsrc.is_int else "f") if isinstance(qsrc, Lazy) else _kind(qsrc)) not in "iu":
            return None
        L = self.L
        look: Callable[[np.ndarray, np.ndarray | None], np.ndarray]
        if isinstance(ksop, C.Indices):  # a gather: query q reads position qv[q]
            values = self.value_t(node.values)
            km: Any = Tail(np.zeros(0, dtype=bool), np.ones(1, dtype=bool))
            for sop, cmp, c in plan.key_atoms:
                km = self._cmp_t(km, self.comparable_t(sop), cmp, _scalar(c), key_side=True)

            every_key = not plan.key_atoms

            def read(qi: np.ndarray, ok: np.ndarray | None) -> np.ndarray:
                if ok is None and every_key and qi.size and int(qi.min()) >= 0 and int(qi.max()) < L:
                    return _at(values, qi)  # every query reads a position: no masks
                ok = (qi >= 0) & (qi < L) if ok is None else ok & (qi >= 0) & (qi < L)
                idx = np.where(ok, qi, 0)
                if not every_key:
                    ok &= _at(km, idx)
                return np.where(ok, _at(values, idx), 0.0)

            look = read
        else:
            groups = self._key_groups(node, plan, ksop)
            if groups is None:
                return None
            uniq, counts, sums = groups
            if len(uniq) == 0:

                def none(q: np.ndarray, ok: np.ndarray | None) -> np.ndarray:
                    return np.zeros(len(q))

                look = none
            else:

                look = _group_lookup(uniq, counts, sums)
        qatoms = [(_scalar(c), self._src(sop, "comparable"), cmp) for c, sop, cmp in plan.query_atoms]
        m = max([self._head_of(qsrc), *(self._head_of(s) for _, s, _ in qatoms)])

        def qmask(n: int, part: Callable[[Any], np.ndarray]) -> np.ndarray | None:
            """The query conditions' mask; None when there are none (every query reads)."""
            if not qatoms:
                return None
            qm = np.ones(n, dtype=bool)
            for c, s, cmp in qatoms:
                qm &= compare(cmp, c, part(s))
            return qm

        def piece(a: int, b: int, cache: dict[Any, np.ndarray]) -> np.ndarray:
            qm = qmask(b - a, lambda s: self._get(s, "comparable", a, b, cache))
            return look(self._get(qsrc, "comparable", a, b, cache), qm)

        tail = look(self._tail_src(qsrc, "comparable"), qmask(1, lambda s: self._tail_src(s, "comparable")))
        return Lazy(m, tail.reshape(1), False, node.label, piece)

    def _key_groups(
        self, node: C.Aggregate, plan: SelectorPlan, ksop: C.SOp
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The allowed keys grouped by value: (sorted group values, weights, sums of values) --
        with a score, over each group's keys of maximal score.  Long or streamed key sides are
        read piece by piece (without a score)."""
        L = self.L
        ksrc = self._src(ksop, "comparable")
        if (("i" if ksrc.is_int else "f") if isinstance(ksrc, Lazy) else _kind(ksrc)) not in "iu":
            return None
        vsrc = self._src(node.values, "value")
        katoms = [(self._src(sop, "comparable"), cmp, _scalar(c)) for sop, cmp, c in plan.key_atoms]
        srcs = [ksrc, vsrc, *(s for s, _, _ in katoms)]
        if node.score is not None:
            srcs.append(self._src(node.score, "value"))
        kn = max(self._head_of(s) for s in srcs)
        streamed = kn > LAZY_MIN or any(isinstance(s, Lazy) for s in srcs)
        if node.score is not None and streamed:
            return None  # a max over a long key side: the general path
        kt = np.ones(1, dtype=bool)
        for s, cmp, c in katoms:
            kt &= compare(cmp, self._tail_src(s, "comparable"), c)
        tail_keys = kn < L and bool(kt[0])  # the L - kn tail keys: one key of weight L - kn
        w = float(L - kn)
        if node.score is not None:
            hk, hv, hs, hw = self._scored_keys(ksrc, vsrc, srcs[-1], katoms, kn)
            if tail_keys:
                hk = np.concatenate([hk, self._tail_src(ksrc, "comparable")])
                hv = np.concatenate([hv, self._tail_src(vsrc, "value")])
                hs = np.concatenate([hs, self._tail_src(srcs[-1], "value")])
                hw = np.concatenate([hw, [w]])
            return _max_sums(hk, hv, hs, hw)
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        step = PIECE if streamed else max(kn, 1)
        for a in range(0, kn, step):
            b = min(kn, a + step)
            cache: dict[Any, np.ndarray] = {}
            km = np.ones(b - a, dtype=bool)
            for s, cmp, c in katoms:
                km &= compare(cmp, self._get(s, "comparable", a, b, cache), c)
            ks = np.flatnonzero(km)
            kk = self._get(ksrc, "comparable", a, b, cache)[ks]
            vv = self._get(vsrc, "value", a, b, cache)[ks]
            parts.append(_bin_sums(kk, vv))
        if tail_keys:
            parts.append((self._tail_src(ksrc, "comparable"), np.array([w]), self._tail_src(vsrc, "value") * w))
        if not parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0)
        if len(parts) == 1:
            return parts[0]
        uk = np.concatenate([p[0] for p in parts])
        uniq, inv = np.unique(uk, return_inverse=True)
        counts = np.bincount(inv, weights=np.concatenate([p[1] for p in parts]), minlength=len(uniq))
        sums = np.bincount(inv, weights=np.concatenate([p[2] for p in parts]), minlength=len(uniq))
        return uniq, counts, sums

    def _scored_keys(
        self, ksrc: Any, vsrc: Any, ssrc: Any, katoms: list[tuple[Any, str, Any]], kn: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        cache: dict[Any, np.ndarray] = {}
        km = np.ones(kn, dtype=bool)
        for s, cmp, c in katoms:
            km &= compare(cmp, self._get(s, "comparable", 0, kn, cache), c)
        ks = np.flatnonzero(km)
        return (
            self._get(ksrc, "comparable", 0, kn, cache)[ks],
            self._get(vsrc, "value", 0, kn, cache)[ks],
            self._get(ssrc, "value", 0, kn, cache)[ks],
            np.ones(len(ks)),
        )

    def _cmp_t(self, mask: Any, v: Any, cmp: str, c: Any, key_side: bool) -> Tail:
        L = self.L
        m = max(_head_len(mask, L), _head_len(v, L))
        if key_side:
            h, t = compare(cmp, _upto(v, m), c), compare(cmp, _tailv(v), c)
        else:
            h, t = compare(cmp, c, _upto(v, m)), compare(cmp, c, _tailv(v))
        return Tail(_upto(mask, m) & h, _tailv(mask) & t)

    # -- provenance of non-finite values ---------------------------------------------------
    def _track(self, node: C.SOp) -> None:
        """Record where each non-finite value of ``node`` comes from: an argument's (or a read
        key's) non-finite value, else ``node`` itself (its primitive on finite arguments)."""
        v = self.vals.get(id(node))
        if v is None or v.dtype.kind != "f":
            return
        bad = ~np.isfinite(v)
        if not bad.any():
            return
        org = np.full(self.L, -1, dtype=np.int64)
        if isinstance(node, (C.Map, C.SequenceMap)):
            for a in node.args:
                ao = self.origin.get(id(a))
                if ao is not None:
                    m = bad & (org < 0) & (ao >= 0)
                    org[m] = ao[m]
        elif isinstance(node, C.Aggregate):
            vo = self.origin.get(id(node.values))
            if vo is not None:
                for o in np.unique(vo[vo >= 0]):  # earliest source first
                    sc = None if node.score is None else self.value(node.score)
                    hit = np.asarray(self.reduce(node.selector, (vo == o).astype(np.float64), sc)) > 0
                    m = bad & (org < 0) & hit
                    org[m] = o
        rest = bad & (org < 0)
        if rest.any():
            p = int(np.flatnonzero(rest)[0])
            if isinstance(node, (C.Map, C.SequenceMap)):
                what = f"primitive {node.fn.fingerprint}"
            elif isinstance(node, C.Aggregate):
                what = "aggregate: the mean of the selected values"
            else:
                what = "input token"
            org[rest] = len(self.sources)
            self.sources.append((node.label, what, p, float(v[p])))
        self.origin[id(node)] = org

    # -- selectors ------------------------------------------------------------------------
    def dense_block(self, sel: C.Selector, q: np.ndarray) -> np.ndarray:
        """S[q, k] for the queries ``q`` and all keys."""
        if isinstance(sel, C.Select):
            if sel.cmp in ("TRUE", "FALSE"):
                return np.full((len(q), self.L), sel.cmp == "TRUE")
            kv = self.comparable(sel.keys)
            qv = self.comparable(sel.queries)
            return compare(sel.cmp, kv[None, :], qv[q][:, None])
        if isinstance(sel, C.SelectAnd):
            return self.dense_block(sel.a, q) & self.dense_block(sel.b, q)
        if isinstance(sel, C.SelectOr):
            return self.dense_block(sel.a, q) | self.dense_block(sel.b, q)
        if isinstance(sel, C.SelectNot):
            return ~self.dense_block(sel.a, q)
        raise C.ProgramError(f"not a selector: {sel!r}")

    def dense_matrix(self, sel: C.Selector) -> np.ndarray:
        """The full L x L selector matrix (for traces and checks)."""
        return self.dense_block(sel, np.arange(self.L))

    def reduce(self, sel: C.Selector, values: np.ndarray | None, score: np.ndarray | None = None) -> np.ndarray:
        """Aggregate (mean of ``values``) or SelectorWidth (``values`` None) over the selector;
        with ``score`` (a value-scored head) the mean is over the selected keys of maximal score."""
        if self.keep_all and self.L * self.L <= DENSE_CELLS:
            self.selectors[id(sel)] = self.dense_matrix(sel)
        plan = None if self.dense_only else plan_selector(sel)
        if plan is None:
            return self._reduce_dense(sel, values, score)
        return self._reduce_plan(plan, values, score)

    def _scored(self, ks: np.ndarray, values: np.ndarray, score: np.ndarray) -> Any:
        """The value-scored mean over the keys ``ks`` (non-empty)."""
        return self.arith.scored_mean(score[ks], values[ks], values is score)

    def _reduce_dense(self, sel: C.Selector, values: np.ndarray | None, score: np.ndarray | None) -> np.ndarray:
        L = self.L
        chunk = max(1, DENSE_CELLS // L)
        parts = []
        for start in range(0, L, chunk):
            q = np.arange(start, min(L, start + chunk))
            block = self.dense_block(sel, q)
            if values is None:
                parts.append(block.sum(axis=1).astype(np.int64))
            elif score is None:
                parts.append(self.arith.dense_aggregate(block, values))
            elif score.dtype.kind == "f" and values.dtype.kind == "f":
                masked = np.where(block, score[None, :], -np.inf)
                top = block & (score[None, :] == masked.max(axis=1, initial=-np.inf)[:, None])
                cnt = top.sum(axis=1)
                sums = np.where(top, values[None, :], 0.0).sum(axis=1)
                parts.append(np.divide(sums, cnt, out=np.zeros(len(q)), where=cnt > 0))
            else:
                out = self.arith.zeros(len(q))
                for r in range(len(q)):
                    ks = np.flatnonzero(block[r])
                    if ks.size:
                        out[r] = self._scored(ks, values, score)
                parts.append(out)
        return np.concatenate(parts)

    def _reduce_plan(self, plan: SelectorPlan, values: np.ndarray | None, score: np.ndarray | None) -> np.ndarray:
        L = self.L
        counting = values is None
        zero = np.zeros(L, dtype=np.int64) if counting else self.arith.zeros(L)
        if plan.empty:
            return zero
        km = np.ones(L, dtype=bool)
        for sop, cmp, c in plan.key_atoms:
            km &= compare(cmp, self.comparable(sop), _scalar(c))
        qm = np.ones(L, dtype=bool)
        for c, sop, cmp in plan.query_atoms:
            qm &= compare(cmp, _scalar(c), self.comparable(sop))
        if plan.eq is None:
            ks = np.flatnonzero(km)
            if ks.size == 0:
                return zero
            if counting:
                return np.where(qm, ks.size, 0).astype(np.int64)
            assert values is not None
            m = self.arith.mean(values[ks]) if score is None else self._scored(ks, values, score)
            out = zero.copy()
            out[qm] = m
            return out
        ksop, qsop = plan.eq
        qv = self.comparable(qsop)
        if isinstance(ksop, C.Indices):
            return self._gather(km, qm, qv, values)  # one key at most: the score changes nothing
        kv = self.comparable(ksop)
        return self._group(km, qm, kv, qv, values, score)

    def _gather(self, km: np.ndarray, qm: np.ndarray, qv: np.ndarray, values: np.ndarray | None) -> np.ndarray:
        """keys = indices, cmp ==: query q reads position qv[q] (if in range and key-allowed)."""
        L = self.L
        if qv.dtype.kind in "iu":
            qi = qv.astype(np.int64)
            ok = np.ones(L, dtype=bool)
        elif qv.dtype.kind == "f":
            ok = np.isfinite(qv) & (np.rint(qv) == qv)
            qi = np.where(ok, np.rint(qv), -1).astype(np.int64)
        else:
            ok = np.array([Fraction(x).denominator == 1 for x in qv], dtype=bool)
            qi = np.array([int(Fraction(x)) if o else -1 for x, o in zip(qv, ok, strict=True)], dtype=np.int64)
        ok &= qm & (qi >= 0) & (qi < L)
        ok[ok] &= km[qi[ok]]
        if values is None:
            return ok.astype(np.int64)
        out = self.arith.zeros(L)
        out[ok] = values[qi[ok]]
        return out

    def _group_by_count(
        self,
        ks: np.ndarray,
        qm: np.ndarray,
        kv: np.ndarray,
        qv: np.ndarray,
        values: np.ndarray | None,
        score: np.ndarray | None,
    ) -> np.ndarray | None:
        """``_group`` for integer key values in a range of at most 4 L: bins instead of a sort
        (the same sums and counts, in O(L)); None when the range is wider."""
        L = self.L
        kk = kv[ks]
        lo, hi = int(kk.min()), int(kk.max())
        if hi - lo >= 4 * L:
            return None
        bins = kk - lo
        size = hi - lo + 1
        if score is not None:
            sk = score[ks]
            gmax = np.full(size, -np.inf)
            _group_max(gmax, bins, sk)
            top = sk == gmax[bins]
            ks, bins = ks[top], bins[top]
        counts = np.bincount(bins, minlength=size)
        qb = qv.astype(np.int64) - lo
        ok = qm & (qb >= 0) & (qb < size)
        qb = np.where(ok, qb, 0)
        found = ok & (counts[qb] > 0)
        if values is None:
            return np.where(found, counts[qb], 0).astype(np.int64)
        sums = np.bincount(bins, weights=values[ks], minlength=size)
        out = np.zeros(L)
        out[found] = sums[qb[found]] / counts[qb[found]]
        return out

    def _group(
        self,
        km: np.ndarray,
        qm: np.ndarray,
        kv: np.ndarray,
        qv: np.ndarray,
        values: np.ndarray | None,
        score: np.ndarray | None = None,
    ) -> np.ndarray:
        """Equality selector: group the allowed keys by value; each query reads its group (with a
        score: the group's keys of maximal score)."""
        L = self.L
        ks = np.flatnonzero(km)
        numeric = kv.dtype.kind in "iuf" and qv.dtype.kind in "iuf"
        floats = values is None or (values.dtype.kind == "f" and (score is None or score.dtype.kind == "f"))
        if numeric and floats and kv.dtype.kind in "iu" and qv.dtype.kind in "iu" and ks.size:
            dense = self._group_by_count(ks, qm, kv, qv, values, score)
            if dense is not None:
                return dense
        if numeric and floats:
            uniq, inv = np.unique(kv[ks], return_inverse=True)
            if score is not None:
                sk = score[ks]
                gmax = np.full(len(uniq), -np.inf)
                _group_max(gmax, inv, sk)
                top = sk == gmax[inv]
                ks, inv = ks[top], inv[top]
            counts = np.bincount(inv, minlength=len(uniq))
            pos = np.searchsorted(uniq, qv)
            posc = np.minimum(pos, max(len(uniq) - 1, 0))
            found = qm & (pos < len(uniq)) & (uniq[posc] == qv) if len(uniq) else np.zeros(L, dtype=bool)
            if values is None:
                return np.where(found, counts[posc] if len(uniq) else 0, 0).astype(np.int64)
            sums = np.bincount(inv, weights=values[ks], minlength=len(uniq))
            out = np.zeros(L)
            out[found] = sums[posc[found]] / counts[posc[found]]
            return out
        groups: dict[Any, list[int]] = {}
        for k in ks:
            groups.setdefault(kv[k], []).append(int(k))
        zero = np.zeros(L, dtype=np.int64) if values is None else self.arith.zeros(L)
        cache: dict[Any, Any] = {}
        for q in np.flatnonzero(qm):
            g = groups.get(qv[q])
            if g is None:
                continue
            if values is None:
                zero[q] = len(g)
            else:
                if qv[q] not in cache:
                    ga = np.asarray(g)
                    cache[qv[q]] = self.arith.mean(values[ga]) if score is None else self._scored(ga, values, score)
                zero[q] = cache[qv[q]]
        return zero


# ---------------------------------------------------------------------------------------------
def evaluate(
    program: C.SOp | Sequence[C.SOp],
    inputs: Any,
    backend: str | Arithmetic = "numpy",
    *,
    allow_nonfinite: bool = False,
    dense_only: bool = False,
    finite: Any = None,
    memo: StructuralMemo | None = None,
    stats: RunStats | None = None,
    padded_output: bool = False,
) -> Any:
    """Run a program on a 1-D token sequence (an array, or a :class:`Padded` sequence).

    Returns a 1-D NumPy array (float64 for "numpy", dtype object of Fractions for "exact", of
    SymPy expressions for "sympy"); a list of them when ``program`` is a sequence of SOps.
    ``dense_only`` disables the fast paths (used to check them).

    ``finite``: the output positions the caller reads (an index array, a boolean mask, or True
    for all); with float64 values, a non-finite value at one of them raises
    :class:`NonFiniteError` naming the node and primitive where it first stopped being finite.
    None (the default) checks nothing: positions outside a result block are unspecified.

    ``memo``: values that depend only on positions and sizes, kept across runs of the same
    program (see :class:`StructuralMemo`); numpy backend only, the values are the same.
    ``stats``: a :class:`RunStats` the run adds its counts to.  ``padded_output``: each output
    as a :class:`Padded` sequence (its head and the value after it), not materialized whole.
    """
    outs = [program] if isinstance(program, C.SOp) else list(program)
    for o in outs:
        if not isinstance(o, C.SOp):
            raise C.ProgramError(f"a program's output must be an SOp, got {o!r}")
    arith = arithmetic(backend)
    run = Run(outs, inputs, arith, allow_nonfinite=allow_nonfinite, dense_only=dense_only, memo=memo, stats=stats)
    run.execute()
    run.stats.runs += 1
    res: list[Any] = [_padded(run.value_t(o), run.L) if padded_output else run.value(o) for o in outs]
    if finite is not None and finite is not False:
        for i, r in enumerate(res):
            _check_finite(outs, i, r, inputs, arith, allow_nonfinite, dense_only, finite)
    return res[0] if isinstance(program, C.SOp) else res


def _padded(v: Any, L: int) -> Padded:
    """A run's value (an array or a ``Tail``) as a Padded sequence of length L: the last run of
    equal values becomes the padding, so a value written only near the start is held short."""
    t = v if isinstance(v, Tail) else _tail_of(v)
    return Padded(t.head, L, t.tail[0])


def _positions(finite: Any, L: int) -> np.ndarray:
    """``finite`` (True, a boolean mask or an index array) as sorted int64 positions in [0, L)."""
    if finite is True:
        return np.arange(L, dtype=np.int64)
    f = np.asarray(finite)
    if f.dtype == bool:
        if f.shape != (L,):
            raise BackendError(f"finite: a boolean mask needs shape ({L},), got {f.shape}")
        return np.flatnonzero(f)
    if f.dtype.kind not in "iu" or f.ndim != 1:
        raise BackendError(f"finite: give True, a boolean mask or a 1-D array of positions, got {finite!r}")
    if f.size and (f.min() < 0 or f.max() >= L):
        raise BackendError(f"finite: positions must lie in [0, {L}), got {int(f.min())}..{int(f.max())}")
    return np.unique(f.astype(np.int64))


def _check_finite(
    outs: list[C.SOp],
    i: int,
    value: np.ndarray | Padded,
    inputs: Any,
    arith: Arithmetic,
    allow_nonfinite: bool,
    dense_only: bool,
    finite: Any,
) -> None:
    """Raise NonFiniteError when ``value`` (output i) is not finite at a read position."""
    pos = _positions(finite, value.length if isinstance(value, Padded) else len(value))
    if (value.head if isinstance(value, Padded) else value).dtype.kind != "f":
        return
    if isinstance(value, Padded) and finite is True:  # every position: the head, then the padding
        bad = np.flatnonzero(~np.isfinite(value.head))
        count = bad.size
        if len(value.head) < value.length and not np.isfinite(value.pad):
            count += value.length - len(value.head)
            if bad.size == 0:
                bad = np.array([len(value.head)])
    else:
        at = value.at(pos) if isinstance(value, Padded) else value[pos]
        bad = pos[~np.isfinite(at)]
        count = bad.size
    if bad.size == 0:
        return
    p = int(bad[0])
    vp = value.at(np.array([p]))[0] if isinstance(value, Padded) else value[p]
    # the error path only: run again, tracking where non-finite values come from
    run = Run(outs, inputs, arith, allow_nonfinite=allow_nonfinite, dense_only=dense_only, track=True)
    run.execute()
    org = run.origin.get(id(outs[i]))
    head = f"output position {p} is {vp} ({count} read position(s) not finite)"
    if org is None or org[p] < 0:  # pragma: no cover - the tracking run reproduces the first run
        raise NonFiniteError(head)
    label, what, q, v = run.sources[int(org[p])]
    why = "overflow" if np.isinf(v) else "invalid operation, e.g. 0/0 or sqrt of a negative"
    if what == "input token":
        raise NonFiniteError(f"{head}: it comes from input token {q} = {v}")
    raise NonFiniteError(f"{head}: it comes from node {label!r} ({what}), which gave {v} at position {q} ({why})")


@dataclass
class Trace:
    """Every SOp's values and every selector's matrix, by (unique) label."""

    values: dict[str, np.ndarray]
    selectors: dict[str, np.ndarray]
    order: list[str]

    def __getitem__(self, label: str) -> np.ndarray:
        if label in self.values:
            return self.values[label]
        return self.selectors[label]

    def __contains__(self, label: str) -> bool:
        return label in self.values or label in self.selectors


def trace(
    program: C.SOp | Sequence[C.SOp], inputs: Any, backend: str | Arithmetic = "numpy", *, allow_nonfinite: bool = False
) -> Trace:
    """Run a program keeping every intermediate value and (for L*L <= DENSE_CELLS) selector matrix."""
    outs = [program] if isinstance(program, C.SOp) else list(program)
    run = Run(outs, inputs, arithmetic(backend), allow_nonfinite=allow_nonfinite, keep_all=True)
    run.execute()
    values: dict[str, np.ndarray] = {}
    selectors: dict[str, np.ndarray] = {}
    order: list[str] = []
    seen: set[str] = set()
    for node in run.order:
        lab = node.label
        if lab in seen:
            lab = f"{lab}#{node._uid}"  # type: ignore[attr-defined]
        seen.add(lab)
        if isinstance(node, C.SOp):
            values[lab] = run.value(node)
            order.append(lab)
        elif isinstance(node, C.Selector):
            if id(node) not in run.selectors and run.L * run.L <= DENSE_CELLS:
                run.selectors[id(node)] = run.dense_matrix(node)
            if id(node) in run.selectors:
                selectors[lab] = run.selectors[id(node)]
                order.append(lab)
    return Trace(values, selectors, order)
