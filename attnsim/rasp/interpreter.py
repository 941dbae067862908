"""The reference interpreter: docs/semantics.md read literally, in any arithmetic (the oracle).

Every selector is an L x L boolean matrix built row block by row block (``S[q, k] =
cmp(keys[k], queries[q])``; ``&``, ``|``, ``~`` pointwise); ``Aggregate`` is the mean of the
values over the selected keys (0 when none; with a score, over those of maximal score);
``SelectorWidth`` their number.  O(L^2) per selector.  Positions and sizes are int64 arrays in
every arithmetic, converted where they are read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from attnsim.rasp import core as C
from attnsim.rasp.arith import Arithmetic, BackendError
from attnsim.rasp.expr import COMPARATORS

ROW_CELLS = 1 << 22  # selector cells built at once (rows of L keys)


def compare(cmp: str, keys: Any, queries: Any) -> np.ndarray:
    """cmp(key, query), elementwise with broadcasting, as a bool array."""
    if cmp in ("TRUE", "FALSE"):
        return np.full(np.broadcast(keys, queries).shape, cmp == "TRUE")
    return np.asarray(COMPARATORS[cmp](keys, queries)).astype(bool)


class Interpreter:
    """One run of a program on ``tokens`` (already in the arithmetic), node by node.

    ``values`` holds every SOp's value by node id; ``matrices`` each selector's matrix when
    ``keep_matrices`` (for traces)."""

    def __init__(self, arith: Arithmetic, tokens: np.ndarray, keep_matrices: bool = False) -> None:
        self.arith, self.tokens, self.L = arith, tokens, len(tokens)
        self.values: dict[int, np.ndarray] = {}
        self.keep_matrices = keep_matrices
        self.matrices: dict[int, np.ndarray] = {}

    def run(self, outputs: Sequence[C.SOp], progress: Callable[[int, int], None] | None = None) -> list[np.ndarray]:
        """Every node the outputs depend on, dependencies first (``progress`` told (nodes done,
        nodes) after each); the outputs' values."""
        order = C.topological(outputs)
        for i, node in enumerate(order):
            if isinstance(node, C.SOp):
                self.values[id(node)] = self.sop(node)
            elif self.keep_matrices and isinstance(node, C.Selector):
                self.matrices[id(node)] = self.rows(node, np.arange(self.L))
            if progress is not None:
                progress(i + 1, len(order))
        return [self.value(o) for o in outputs]

    # -- reading a value in the form its reader needs ---------------------------------------
    def value(self, node: C.SOp) -> np.ndarray:
        v = self.values[id(node)]
        return self.arith.from_int(v) if v.dtype.kind in "iu" else v

    def integers(self, node: C.SOp) -> np.ndarray:
        v = self.values[id(node)]
        return v if v.dtype.kind in "iu" else self.arith.to_int(v, node.label)

    def comparable(self, node: C.SOp) -> np.ndarray:
        v = self.values[id(node)]
        return v if v.dtype.kind in "iu" else self.arith.comparable(v, f"selector on {node.label}")

    # -- SOps -----------------------------------------------------------------------------
    def sop(self, node: C.SOp) -> np.ndarray:
        L = self.L
        if isinstance(node, C.Tokens):
            return self.tokens
        if isinstance(node, C.Indices):
            return np.arange(L, dtype=np.int64)
        if isinstance(node, C.Length):
            return np.full(L, L, dtype=np.int64)
        if isinstance(node, C.Full):
            v = Fraction(node.value)
            return np.full(L, int(v), dtype=np.int64) if v.denominator == 1 else self.arith.const(v, L)
        if isinstance(node, (C.Map, C.SequenceMap)):
            fn = node.fn
            if isinstance(fn, C.IndexFn):
                args = {n: self.integers(a) for n, a in zip(fn.argnames, node.args, strict=True)}
                env = {**dict(fn.bindings), **args}
                return np.broadcast_to(np.asarray(fn.expr.evaluate(env), dtype=np.int64), (L,)).copy()
            try:
                return self.arith.apply(fn.primitive, fn.params, [self.value(a) for a in node.args])
            except BackendError as exc:
                raise BackendError(f"{node.label}: {exc}") from None
        if isinstance(node, C.Aggregate):
            score = None if node.score is None else self.value(node.score)
            return self.aggregate(node.selector, self.value(node.values), score)
        if isinstance(node, C.SelectorWidth):
            return np.concatenate([self.rows(node.selector, q).sum(axis=1) for q in self.chunks()]).astype(np.int64)
        raise C.ProgramError(f"unknown node type {type(node).__name__}")

    # -- selectors ------------------------------------------------------------------------
    def chunks(self) -> list[np.ndarray]:
        """The queries in blocks of at most ``ROW_CELLS`` selector cells."""
        step = max(1, ROW_CELLS // self.L)
        return [np.arange(a, min(self.L, a + step)) for a in range(0, self.L, step)]

    def rows(self, sel: C.Selector, q: np.ndarray) -> np.ndarray:
        """S[q, k] for the queries ``q`` and every key k."""
        if isinstance(sel, C.Select):
            if sel.cmp in ("TRUE", "FALSE"):
                return np.full((len(q), self.L), sel.cmp == "TRUE")
            return compare(sel.cmp, self.comparable(sel.keys)[None, :], self.comparable(sel.queries)[q][:, None])
        if isinstance(sel, C.SelectAnd):
            return self.rows(sel.a, q) & self.rows(sel.b, q)
        if isinstance(sel, C.SelectOr):
            return self.rows(sel.a, q) | self.rows(sel.b, q)
        if isinstance(sel, C.SelectNot):
            return ~self.rows(sel.a, q)
        raise C.ProgramError(f"not a selector: {sel!r}")

    def aggregate(self, sel: C.Selector, values: np.ndarray, score: np.ndarray | None) -> np.ndarray:
        """Per query, the mean of ``values`` over the selected keys K_q (with ``score``: over the
        keys of K_q whose score is maximal in K_q); 0 when K_q is empty."""
        floats = values.dtype.kind == "f" and (score is None or score.dtype.kind == "f")
        out = []
        for q in self.chunks():
            S = self.rows(sel, q)
            out.append(self._float_means(S, values, score) if floats else self._means(S, values, score))
        return np.concatenate(out)

    @staticmethod
    def _float_means(S: np.ndarray, values: np.ndarray, score: np.ndarray | None) -> np.ndarray:
        """Float64 rows at once; a non-empty K_q without a maximal key (a NaN score) gives NaN."""
        selected = S.any(axis=1)
        with np.errstate(all="ignore"):
            if score is not None:
                S = S & (score[None, :] == np.max(np.where(S, score[None, :], -np.inf), axis=1, keepdims=True))
            count = S.sum(axis=1)
            total = np.where(S, values[None, :], 0.0).sum(axis=1)
            return np.where(count > 0, total / np.maximum(count, 1), np.where(selected, np.nan, 0.0))

    def _means(self, S: np.ndarray, values: np.ndarray, score: np.ndarray | None) -> np.ndarray:
        out = self.arith.zeros(len(S))
        seen: dict[bytes, Any] = {}  # queries that select the same keys have the same mean
        for r in range(len(S)):
            ks = np.flatnonzero(S[r])
            if ks.size == 0:
                continue
            key = S[r].tobytes()
            if key not in seen:
                seen[key] = (
                    self.arith.mean(values[ks])
                    if score is None
                    else self.arith.scored_mean(score[ks], values[ks], values is score)
                )
            out[r] = seen[key]
        return out


__all__ = ["ROW_CELLS", "Interpreter", "compare"]
