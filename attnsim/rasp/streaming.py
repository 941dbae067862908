"""Compact and streamed values in a run (numpy backend): every node described as a ``Lazy``.

A node whose values can be computed piece by piece (``indices``, index maps over the head only,
primitives on compact values, the equality fast paths of aggregates) is described as a ``Lazy``
(:mod:`attnsim.rasp.long_values`); the engine stores it (as a ``Tail`` when constant after its
head) or, when it is long and every reader reads it at its own positions or sums it by groups
(:func:`streamable_nodes`), streams it to its readers.  Position-only index maps are read from the
run's :class:`~attnsim.rasp.structural_memo.StructuralMemo` (:func:`position_only_nodes`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from attnsim.rasp import core as C
from attnsim.rasp import long_values, stream_plan
from attnsim.rasp.arith import BackendError
from attnsim.rasp.compiled_expr import compiled
from attnsim.rasp.expr import constant_from
from attnsim.rasp.kept_values import Chunked
from attnsim.rasp.long_values import (
    Keyed,
    Lazy,
    Tail,
    dtype_kind,
    head_len,
    slice_of,
    tail_value,
    upto,
    value_at,
)
from attnsim.rasp.run_state import RunState
from attnsim.rasp.selector_plans import (
    RegularKeys,
    SelectorPlan,
    bin_sums,
    binned_sums,
    compare,
    exact_scalar,
    group_lookup,
    group_table,
    max_sums,
    piece_maxima,
    plan_selector,
    regular_keys,
    scored_sums,
)

# a fast path's reader: the values at queries q (positions or group values), with the query
# conditions' mask (None: every query reads) and the queries' bounds when known before reading
Look = Callable[[np.ndarray, np.ndarray | None, tuple[int, int] | None], np.ndarray]


class Streaming(RunState):
    """A run's compact (``Tail``) and streamed (``Lazy``) values: described, read piece by piece."""

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
            return slice_of(src, a, b)
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
        return self._convert(src.tail, src, want) if isinstance(src, Lazy) else tail_value(src)

    def _piece(self, lz: Lazy, a: int, b: int, cache: dict[Any, np.ndarray]) -> np.ndarray:
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
            if lz.computes:  # not a read of a kept index map (in memo_positions) nor a pass-through
                self.stats.piece_positions += min(b, m) - min(a, m)
            cache[key] = p
        return p

    def _head_of(self, src: Any) -> int:
        return src.m if isinstance(src, Lazy) else head_len(src, self.L)

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

        kept = form if isinstance(form, Chunked) else None
        return Lazy(form.length, tail, True, node.label, read, position_only=True, kept=kept, computes=False)

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
        taken = self._taken_branch(prim.name, srcs)
        if taken is not None:  # where(c, x, y) on a constant flag: the taken branch's own values
            return self._branch(taken, label)
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

    def _taken_branch(self, prim: str, srcs: list[Any]) -> Any:
        """The source ``where(c, x, y)`` reads at every position when its condition is a constant
        flag (a head of length 0, like U's flags read from the header): ``x`` when ``c != 0``,
        else ``y``; None for any other primitive or condition.  ``np.where(c != 0, x, y)`` then
        copies that branch unchanged, so the branch's values are the node's, and the branch not
        taken is never computed."""
        if prim != "where" or self._head_of(srcs[0]) != 0:
            return None
        return srcs[1] if bool(self._tail_src(srcs[0], "value")[0] != 0) else srcs[2]

    def _branch(self, src: Any, label: str) -> Lazy:
        """A node whose values are those of ``src`` (as float64 values): read from it, not copied."""

        def piece(a: int, b: int, cache: dict[Any, np.ndarray]) -> np.ndarray:
            return self._get(src, "value", a, b, cache)

        tail = np.asarray(self._tail_src(src, "value"), dtype=np.float64).reshape(1)
        return Lazy(self._head_of(src), tail, False, label, piece, computes=False)

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
            kind = ("i" if lz.is_int else "f") if lz is not None else dtype_kind(self.value_t(sop))
            if kind != "f":
                return None
        qsrc = self._src(qsop, "comparable")
        if (("i" if qsrc.is_int else "f") if isinstance(qsrc, Lazy) else dtype_kind(qsrc)) not in "iu":
            return None
        look: Look
        if isinstance(ksop, C.Indices):  # a gather: query q reads position qv[q]
            look, table = self._gather_look(node, plan)
        else:
            groups = self._key_groups(node, plan, ksop)
            if groups is None:
                return None
            uniq, counts, sums = groups
            table = None
            if len(uniq) == 0:

                def none(q: np.ndarray, ok: np.ndarray | None, qb: tuple[int, int] | None) -> np.ndarray:
                    return np.zeros(len(q))

                look = none
            else:
                tab = group_table(uniq, counts, sums)
                table = None if tab is None else (tab[0], tab[1])
                look = group_lookup(uniq, counts, sums, tab)
        qatoms = [(exact_scalar(c), self._src(sop, "comparable"), cmp) for c, sop, cmp in plan.query_atoms]
        m = max([self._head_of(qsrc), *(self._head_of(s) for _, s, _ in qatoms)])

        def qmask(n: int, part: Callable[[Any], np.ndarray]) -> np.ndarray | None:
            """The query conditions' mask; None when there are none (every query reads)."""
            if not qatoms:
                return None
            qm = np.ones(n, dtype=bool)
            for c, s, cmp in qatoms:
                qm &= compare(cmp, c, part(s))
            return qm

        kept = self.kept_maps.get(id(qsop))
        # queries from a kept map, every query reads (no query conditions), a table to read: the
        # kept rows read the table directly (``Chunked.take``), no query array formed
        take = None
        if kept is not None and kept.kept is not None and not qatoms and table is not None:
            take = functools.partial(kept.kept.take, table[1], shift=table[0])

        def piece(a: int, b: int, cache: dict[Any, np.ndarray]) -> np.ndarray:
            got = None if take is None else take(a, b)
            if got is not None:
                return got
            qm = qmask(b - a, lambda s: self._get(s, "comparable", a, b, cache))
            return look(
                self._get(qsrc, "comparable", a, b, cache), qm, None if kept is None else kept.kept_bounds(a, b)
            )

        tail = look(self._tail_src(qsrc, "comparable"), qmask(1, lambda s: self._tail_src(s, "comparable")), None)
        return Lazy(m, tail.reshape(1), False, node.label, piece)

    def _gather_look(self, node: C.Aggregate, plan: SelectorPlan) -> tuple[Look, tuple[int, np.ndarray] | None]:
        """A gather's reader of queries (positions), and the array a take reads at every query
        (offset 0) when every key is allowed (no key conditions)."""
        L = self.L
        values = self.value_t(node.values)
        km: Any = Tail(np.zeros(0, dtype=bool), np.ones(1, dtype=bool))
        for sop, cmp, c in plan.key_atoms:
            km = self._cmp_t(km, self.comparable_t(sop), cmp, exact_scalar(c), key_side=True)
        every_key = not plan.key_atoms
        whole = values.head if isinstance(values, Tail) else values

        def read(qi: np.ndarray, ok: np.ndarray | None, qb: tuple[int, int] | None) -> np.ndarray:
            if ok is None and every_key and qb is not None and qb[0] >= 0 and qb[1] < len(whole):
                return whole[qi]  # known bounds (a kept index map's): every query reads ``whole``
            if ok is None and every_key and qi.size and int(qi.min()) >= 0 and int(qi.max()) < L:
                return value_at(values, qi)  # every query reads a position: no masks
            ok = (qi >= 0) & (qi < L) if ok is None else ok & (qi >= 0) & (qi < L)
            idx = np.where(ok, qi, 0)
            if not every_key:
                ok &= value_at(km, idx)
            return np.where(ok, value_at(values, idx), 0.0)

        return read, ((0, whole) if every_key else None)

    def _key_groups(
        self, node: C.Aggregate, plan: SelectorPlan, ksop: C.SOp
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The allowed keys grouped by value: (sorted group values, weights, sums of values) --
        with a score, over each group's keys of maximal score.  Long or streamed key sides are
        read piece by piece; the sums batched with this one (``key_group_batches``) are summed
        in the same pass over the pieces and kept for their turn."""
        got = self.pending.pop(id(node), None)
        if got is not None:
            return got
        k = self._keyed(node, plan, ksop)
        if k is None:
            return None
        if node.score is not None:
            return self._scored_groups(k, node.score)
        batch = [k]
        for sib in self.batches.get(id(node), []) if k.streamed else []:
            for sop in stream_plan.summed_reads(sib) or []:
                self.compute_early(sop)
            sp = plan_selector(sib.selector)
            kb = None if sp is None or sp.eq is None else self._keyed(sib, sp, sp.eq[0])
            if kb is not None and kb.streamed:
                batch.append(kb)
        n = max(x.kn for x in batch)
        for a in range(0, n, long_values.PIECE if k.streamed else max(n, 1)):
            cache: dict[Any, np.ndarray] = {}
            for x in batch:
                if a < x.kn:
                    b = min(x.kn, a + long_values.PIECE) if x.streamed else x.kn
                    known, reg = self._regular_shape(x, a, b, cache)
                    if reg is not None:
                        x.parts.append((reg.keys, reg.counts, reg.sums(self._get(x.vsrc, "value", a, b, cache))))
                        continue
                    kk = self._get(x.ksrc, "comparable", a, b, cache)
                    vv = self._get(x.vsrc, "value", a, b, cache)
                    if x.katoms:  # without key conditions every key is allowed: no mask, no copy
                        km = np.ones(b - a, dtype=bool)
                        for s, cmp, c in x.katoms:
                            km &= compare(cmp, self._get(s, "comparable", a, b, cache), c)
                        ks = np.flatnonzero(km)
                        kk, vv = kk[ks], vv[ks]
                    x.parts.append(binned_sums(kk, vv) if known else bin_sums(kk, vv))
        for x in batch[1:]:
            self.pending[id(x.node)] = x.groups()
        return k.groups()

    def _regular_shape(self, x: Keyed, a: int, b: int, cache: dict[Any, np.ndarray]) -> tuple[bool, RegularKeys | None]:
        """(known, shape) of keys a..b-1 of ``x`` when its key side is position-only (read from the
        memo, no key condition): the regular shape kept in the memo (found on the first run from
        the keys themselves), so a run reads only the values; None when the side is not regular.
        (False, None) for any other side (not known: ``bin_sums`` checks it)."""
        memo = self.memo
        if memo is None or x.katoms or not (isinstance(x.ksrc, Lazy) and x.ksrc.position_only):
            return False, None
        known, reg = memo.grouping(x.node, self.L, a, b)
        if not known:
            reg = regular_keys(self._get(x.ksrc, "comparable", a, b, cache)) if b - a >= 64 else None
            memo.offer_grouping(x.node, self.L, a, b, reg)
        return True, reg

    def _keyed(self, node: C.Aggregate, plan: SelectorPlan, ksop: C.SOp) -> Keyed | None:
        """An equality head's key side, prepared for ``_key_groups``; None when its key values
        are not integers (the general path)."""
        ksrc = self._src(ksop, "comparable")
        if (("i" if ksrc.is_int else "f") if isinstance(ksrc, Lazy) else dtype_kind(ksrc)) not in "iu":
            return None
        vsrc = self._src(node.values, "value")
        katoms = [(self._src(sop, "comparable"), cmp, exact_scalar(c)) for sop, cmp, c in plan.key_atoms]
        srcs = [ksrc, vsrc, *(s for s, _, _ in katoms)]
        ssrc = None if node.score is None else self._src(node.score, "value")
        kn = max(self._head_of(s) for s in [*srcs, *([] if ssrc is None else [ssrc])])
        streamed = kn > long_values.LAZY_MIN or any(isinstance(s, Lazy) for s in [*srcs, ssrc])
        kt = np.ones(1, dtype=bool)
        for s, cmp, c in katoms:
            kt &= compare(cmp, self._tail_src(s, "comparable"), c)
        tail = None  # the L - kn tail keys, when allowed: one key of weight L - kn
        if kn < self.L and bool(kt[0]):
            tail = (self._tail_src(ksrc, "comparable"), self._tail_src(vsrc, "value"))
        return Keyed(node, ksrc, vsrc, ssrc, katoms, kn, streamed, tail, float(self.L - kn))

    def _scored_groups(self, k: Keyed, score: C.SOp) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """A value-scored head's groups: streamed over a long key side (not with tail keys: the
        general path), else over the whole head."""
        if k.streamed:
            return None if k.tail is not None else self._scored_stream(k.ksrc, k.vsrc, k.ssrc, k.katoms, k.kn)
        hk, hv, hs, hw = self._scored_keys(k.ksrc, k.vsrc, k.ssrc, k.katoms, k.kn)
        if k.tail is not None:
            hk = np.concatenate([hk, k.tail[0]])
            hv = np.concatenate([hv, k.tail[1]])
            hs = np.concatenate([hs, self._tail_src(k.ssrc, "value")])
            hw = np.concatenate([hw, [k.w]])
        return max_sums(hk, hv, hs, hw)

    def _scored_stream(
        self, ksrc: Any, vsrc: Any, ssrc: Any, katoms: list[tuple[Any, str, Any]], kn: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A value-scored head's groups over a long key side, read ``PIECE`` keys at a time: each
        piece's maxima and candidates (``piece_maxima``), then the groups (``scored_sums``)."""
        keys, maxima, cands = [], [], []
        for a in range(0, max(kn, 1), long_values.PIECE):
            b = min(kn, a + long_values.PIECE)
            cache: dict[Any, np.ndarray] = {}
            km = np.ones(b - a, dtype=bool)
            for s, cmp, c in katoms:
                km &= compare(cmp, self._get(s, "comparable", a, b, cache), c)
            ks = np.flatnonzero(km)
            reads = ((ksrc, "comparable"), (vsrc, "value"), (ssrc, "value"))
            kk, vv, ss = (self._get(x, w, a, b, cache)[ks] for x, w in reads)
            uk, mk, cand = piece_maxima(kk, vv, ss)
            keys.append(uk)
            maxima.append(mk)
            cands.append(cand)
        return scored_sums(keys, maxima, cands)

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
        m = max(head_len(mask, L), head_len(v, L))
        if key_side:
            h, t = compare(cmp, upto(v, m), c), compare(cmp, tail_value(v), c)
        else:
            h, t = compare(cmp, c, upto(v, m)), compare(cmp, c, tail_value(v))
        return Tail(upto(mask, m) & h, tail_value(mask) & t)
