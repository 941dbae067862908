"""Selectors in a run: aggregates and selector widths, by a fast-path plan or densely in chunks.

A selector whose plan exists (:func:`attnsim.rasp.selector_plans.plan_selector`) is reduced as a
masked mean, a gather or a group mean (with a score: over each group's keys of maximal score);
any other selector densely, in chunks of queries so that no block exceeds ``DENSE_CELLS`` cells.
Both paths implement the same semantics (docs/semantics.md).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from attnsim.rasp import core as C
from attnsim.rasp.run_state import RunState
from attnsim.rasp.selector_plans import SelectorPlan, compare, exact_scalar, group_max, plan_selector

DENSE_CELLS = 1 << 22


class Aggregation(RunState):
    """Selector reductions (``reduce``) and dense selector matrices (``dense_matrix``)."""

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
            km &= compare(cmp, self.comparable(sop), exact_scalar(c))
        qm = np.ones(L, dtype=bool)
        for c, sop, cmp in plan.query_atoms:
            qm &= compare(cmp, exact_scalar(c), self.comparable(sop))
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
            group_max(gmax, bins, sk)
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
                group_max(gmax, inv, sk)
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
