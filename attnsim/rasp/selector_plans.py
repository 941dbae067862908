"""Selectors on the engine's fast path: a plan (key conditions AND query conditions AND at most one
equality), and the grouped sums and maxima an equality head reads.

An AND of key conditions ``Select(keys, Full(c), cmp)``, query conditions ``Select(Full(c),
queries, cmp)`` and one equality ``Select(k, q, ==)`` is computed as a block mean: keys grouped by
value (a sort, or bins when the range is small), each query reading its group; with ``keys =
indices`` the equality is a gather.  :func:`plan_selector` returns None for any other selector
(the dense path, :mod:`attnsim.rasp.aggregation`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from attnsim.rasp import core as C
from attnsim.rasp.expr import COMPARATORS


def compare(cmp: str, k: Any, q: Any) -> np.ndarray:
    """cmp(key, query), elementwise with broadcasting, as a bool array."""
    if cmp == "TRUE":
        return np.ones(np.broadcast(k, q).shape, dtype=bool)
    if cmp == "FALSE":
        return np.zeros(np.broadcast(k, q).shape, dtype=bool)
    return np.asarray(COMPARATORS[cmp](k, q)).astype(bool)


def exact_scalar(c: Fraction) -> Any:
    """A Fraction as an int when it is one (compared and computed with exactly)."""
    return int(c) if c.denominator == 1 else c


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


REGULAR_WINDOW = 32_768  # how far regular_groups looks for the period and the block


@dataclass(frozen=True)
class RegularKeys:
    """A regular key side (:func:`regular_keys`): its distinct keys in order, each held by m
    positions, the keys of a block cycling with period P."""

    keys: np.ndarray
    m: int
    period: int

    @property
    def counts(self) -> np.ndarray:
        return np.full(len(self.keys), float(self.m))

    def sums(self, vv: np.ndarray) -> np.ndarray:
        """Each key's sum of ``vv``: one reduction over the middle axis of a (blocks, m, P) view
        (NumPy's pairwise or row order, not ``bincount``'s one-by-one, so equal to its sums
        within rounding), without scattering each value into its bin."""
        return vv.reshape(-1, self.m, self.period).sum(axis=1).reshape(-1)


def _block_shape(window: np.ndarray, n: int) -> tuple[int, int] | None:
    """(m, P) of the first block of a key side of length ``n`` starting with ``window``: the period
    P (where the first key recurs) and how many times the first period repeats; None when the
    window does not show them (no recurrence, or the first block fills the window)."""
    again = np.flatnonzero(window[1:] == window[0])
    if not again.size:
        return None
    period = int(again[0]) + 1
    if period == 1:
        other = np.flatnonzero(window != window[0])
        if not other.size:
            return None if len(window) < n else (n, 1)
        return int(other[0]), 1
    reps = len(window) // period
    same = (window[: reps * period].reshape(reps, period) == window[:period]).all(axis=1)
    if bool(same.all()):
        return None if reps * period < n else (reps, period)
    return int(np.argmin(same)), period


def regular_keys(kk: np.ndarray) -> RegularKeys | None:
    """``kk`` as blocks of one period repeated, if it is: reshaped to (blocks, m, P), every row
    of a block equal and the rows' keys increasing along blocks and period (U's sums over a
    contiguous inner axis: P = 1, runs of m equal keys; over an outer axis: P keys cycling m
    times); checked on the whole key side.  None otherwise (or when m < 2)."""
    n = int(kk.size)
    shape = _block_shape(kk[: min(n, REGULAR_WINDOW)], n)
    if shape is None and n > REGULAR_WINDOW:  # a first block longer than the window: look at all
        shape = _block_shape(kk, n)
    if shape is None:
        return None
    m, period = shape
    if m < 2 or n % (m * period):
        return None
    blocks = kk.reshape(-1, m, period)
    keys = blocks[:, 0, :].reshape(-1)
    if not (bool(np.all(keys[1:] > keys[:-1])) and bool((blocks == blocks[:, :1, :]).all())):
        return None
    return RegularKeys(keys.astype(np.int64), m, period)


def regular_groups(kk: np.ndarray, vv: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`bin_sums` by :func:`regular_keys` when the key side is regular (3-15x faster than
    two bincounts at capacity 128); None otherwise."""
    reg = regular_keys(kk)
    return None if reg is None else (reg.keys, reg.counts, reg.sums(vv))


def bin_sums(kk: np.ndarray, vv: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Integer keys ``kk`` with values ``vv``: (sorted distinct keys, counts, sums); by one
    reduction when the keys are regular (:func:`regular_groups`), by bins when the key range is at most 4 x
    the number of keys (the same sums, in key order), else a sort."""
    regular = regular_groups(kk, vv) if kk.size >= 64 else None  # tiny sides: not worth the check
    return regular if regular is not None else binned_sums(kk, vv)


def binned_sums(kk: np.ndarray, vv: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`bin_sums` without the regular-shape check (a side already known not regular)."""
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


def group_max(gmax: np.ndarray, groups: np.ndarray, scores: np.ndarray) -> None:
    """``gmax[g] = max(gmax[g], scores of group g)`` (``np.maximum.at``).  When the groups come
    in runs (U's rows are contiguous), each run's maximum is one ``reduceat``, which NumPy does
    many times faster than the unbuffered ``maximum.at``: the runs' maxima are then put in
    directly when the groups are non-decreasing, else by ``maximum.at`` over the runs alone (runs
    of 4 entries or more on average).  The maxima are equal under ``==`` in any order (NaN
    kept; the sign of a zero maximum may differ, and maxima are only compared with ``==``)."""
    if groups.size > 1:
        starts = np.concatenate([[0], np.flatnonzero(groups[1:] != groups[:-1]) + 1])
        g = groups[starts]
        if bool(np.all(g[1:] > g[:-1])):
            gmax[g] = np.maximum(gmax[g], np.maximum.reduceat(scores, starts))
            return
        if 4 * len(starts) <= groups.size:
            np.maximum.at(gmax, g, np.maximum.reduceat(scores, starts))
            return
    np.maximum.at(gmax, groups, scores)


def group_table(uniq: np.ndarray, counts: np.ndarray, sums: np.ndarray) -> tuple[int, np.ndarray, np.ndarray] | None:
    """The group means indexed by value, when the integer groups ``uniq`` (sorted, non-empty)
    span at most 8 x their number (+ 1024): (least value lo, means by value - lo with 0 where a
    value has no group or an empty one, whether it has a non-empty one); else None."""
    lo, hi = int(uniq[0]), int(uniq[-1])
    if uniq.dtype.kind not in "iu" or hi - lo >= 8 * len(uniq) + 1024:
        return None
    size = hi - lo + 1
    has = np.zeros(size, dtype=bool)
    means = np.zeros(size)
    nz = counts > 0
    has[uniq[nz] - lo] = True
    means[uniq[nz] - lo] = sums[nz] / counts[nz]
    return lo, means, has


def group_lookup(
    uniq: np.ndarray, counts: np.ndarray, sums: np.ndarray, tab: tuple[int, np.ndarray, np.ndarray] | None = None
) -> Callable[[np.ndarray, np.ndarray | None, tuple[int, int] | None], np.ndarray]:
    """Each query's group mean (0 where its group is empty or absent, or ``ok`` is False), from
    the sorted distinct group values ``uniq`` (non-empty) with their weights and sums.  Groups
    with a :func:`group_table` (``tab``, made here when not given) are read from it, one gather
    per query (without a range check when the queries' bounds ``qb``, known before reading
    them, lie in the table); others by a binary search.  The means are the same divisions.
    ``ok`` None: every query reads."""
    tab = group_table(uniq, counts, sums) if tab is None else tab
    if tab is not None:
        lo, means, has = tab
        size = len(means)
        hi = lo + size - 1

        def table(q: np.ndarray, ok: np.ndarray | None, qb: tuple[int, int] | None = None) -> np.ndarray:
            if ok is None and qb is not None and lo <= qb[0] and qb[1] <= hi:
                return means[q - lo] if lo else means[q]  # known bounds: every query in the table
            idx = q - lo
            if ok is None and idx.size and int(idx.min()) >= 0 and int(idx.max()) < size:
                return means[idx]  # 0 where a value has no group: the table holds 0 there
            inside = (idx >= 0) & (idx < size) if ok is None else ok & (idx >= 0) & (idx < size)
            idx = np.where(inside, idx, 0)
            return np.where(inside & has[idx], means[idx], 0.0)

        return table

    def search(q: np.ndarray, ok: np.ndarray | None, qb: tuple[int, int] | None = None) -> np.ndarray:
        pos = np.minimum(np.searchsorted(uniq, q), len(uniq) - 1)
        hit = (uniq[pos] == q) & (counts[pos] > 0)
        if ok is not None:
            hit &= ok
        out = np.zeros(len(q))
        out[hit] = sums[pos[hit]] / counts[pos[hit]]
        return out

    return search


def max_sums(
    kk: np.ndarray, vv: np.ndarray, ss: np.ndarray, w: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sorted distinct keys, weights, weighted sums) over each key's entries of maximal score."""
    uniq, inv = np.unique(kk, return_inverse=True)
    inv = inv.reshape(-1)
    gmax = np.full(len(uniq), -np.inf)
    group_max(gmax, inv, ss)
    top = ss == gmax[inv]
    inv, vv, w = inv[top], vv[top], w[top]
    return uniq, np.bincount(inv, weights=w, minlength=len(uniq)), np.bincount(inv, weights=vv * w, minlength=len(uniq))


def piece_maxima(
    kk: np.ndarray, vv: np.ndarray, ss: np.ndarray
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """One piece of a value-scored head's allowed keys ``kk`` (integers) with values ``vv`` and
    scores ``ss``: (its distinct keys, each one's maximal score in the piece, the candidates
    (key, value, score) whose score is their key's maximum in the piece, in index order).
    An entry of maximal score over all pieces is of maximal score in its piece, so the
    candidates of every piece hold all of them (:func:`scored_sums`)."""
    kk = kk.astype(np.int64)
    if kk.size == 0:
        return kk, ss[:0], (kk, vv[:0], ss[:0])
    lo, hi = int(kk.min()), int(kk.max())
    if hi - lo < 4 * kk.size + 1024:  # bins over the range (a sort when it is wide)
        bins = kk - lo
        gmax = np.full(hi - lo + 1, -np.inf)
        group_max(gmax, bins, ss)
        at = np.flatnonzero(np.bincount(bins, minlength=hi - lo + 1))
        uniq, maxima = at + lo, gmax[at]
    else:
        uniq, inv = np.unique(kk, return_inverse=True)
        bins, gmax = inv.reshape(-1), np.full(len(uniq), -np.inf)
        group_max(gmax, bins, ss)
        maxima = gmax
    cand = ss == gmax[bins]
    return uniq, maxima, (kk[cand], vv[cand], ss[cand])


def scored_sums(
    keys: list[np.ndarray], maxima: list[np.ndarray], cands: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pieces' :func:`piece_maxima` (in index order) combined: (sorted distinct keys, counts,
    sums) over each key's entries of maximal score.  The maximum is exact in any order; the
    entries of maximal score are the candidates whose score is it, in index order, and each
    key's sum adds their values one by one from 0.0 (``bincount``): the general path's numbers."""
    uniq, inv = np.unique(np.concatenate(keys), return_inverse=True)
    gmax = np.full(len(uniq), -np.inf)
    group_max(gmax, inv.reshape(-1), np.concatenate(maxima))
    ck, cv, cs = (np.concatenate([c[i] for c in cands]) for i in range(3))
    g = np.searchsorted(uniq, ck)
    top = cs == gmax[g]
    counts = np.bincount(g[top], minlength=len(uniq)).astype(np.float64)
    return uniq, counts, np.bincount(g[top], weights=cv[top], minlength=len(uniq))
