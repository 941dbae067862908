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
own positions (a Map's argument, an equality head's queries) or reads it by groups in key order
(an equality head's key side, value-scored or not; an equality sum's values) is *streamed*
(``Lazy``): computed piece by piece, ``PIECE`` positions at a time,
where it is read, and never stored whole.  Other long values are evaluated in pieces into one
array.  tests/rasp/test_streamed_values.py checks streamed runs against plain and dense ones.

Non-finite values (float64): values outside a construction's result block are unspecified and
may be NaN by design, so the engine checks only what the caller reads: ``evaluate(...,
finite=positions)`` raises :class:`NonFiniteError` when one of those output positions is not
finite, naming the node (label and primitive) where the value first stopped being finite.

One module per concern: :class:`Run` here walks the program; its values and how they are read
are :mod:`attnsim.rasp.run_state`, the compact and streamed values :mod:`attnsim.rasp.streaming`
(held as in :mod:`attnsim.rasp.long_values`), the selectors :mod:`attnsim.rasp.aggregation` (with
the fast-path plans of :mod:`attnsim.rasp.selector_plans`), and the run counts and the values
kept across runs :mod:`attnsim.rasp.structural_memo`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from attnsim.rasp import core as C
from attnsim.rasp import long_values
from attnsim.rasp.aggregation import DENSE_CELLS, Aggregation
from attnsim.rasp.arith import Arithmetic, BackendError, NonFiniteError
from attnsim.rasp.compiled_expr import compiled
from attnsim.rasp.exact import ExactArith, SympyArith
from attnsim.rasp.heap import kept_heap
from attnsim.rasp.long_values import Lazy, Padded, Tail, tail_of
from attnsim.rasp.numeric import NumpyArith
from attnsim.rasp.selector_plans import selector_leaves
from attnsim.rasp.stream_plan import key_group_batches, node_reads, position_only_nodes, streamable_nodes
from attnsim.rasp.streaming import Streaming
from attnsim.rasp.structural_memo import MemoSummary, RunStats, StructuralMemo

BACKENDS = ("numpy", "exact", "sympy")


def arithmetic(backend: str | Arithmetic) -> Arithmetic:
    """The arithmetic for a backend name."""
    if isinstance(backend, Arithmetic):
        return backend
    table: dict[str, Callable[[], Arithmetic]] = {"numpy": NumpyArith, "exact": ExactArith, "sympy": SympyArith}
    if backend not in table:
        raise BackendError(f"unknown backend {backend!r}; use one of {BACKENDS}")
    return table[backend]()


class Run(Streaming, Aggregation):
    """One program run: the walk over the program in topological order (values freed after their
    last use), each node computed on the fast paths or the general path."""

    # -- main loop ------------------------------------------------------------------------
    def execute(self) -> None:
        reads: dict[int, list[C.SOp]] = {}
        refs: dict[int, int] = {}
        for node in self.order:
            r = selector_leaves(node.selector) if isinstance(node, C.SelectorWidth) else node_reads(node)
            reads[id(node)] = r
            for x in r:
                refs[id(x)] = refs.get(id(x), 0) + 1
        for o in self.outputs:
            refs[id(o)] = refs.get(id(o), 0) + 1
        if self.compact:
            self.streamable = streamable_nodes(self.order, self.outputs)
            self.batches = key_group_batches(self.order)
        if self.memo is not None:
            self.position_only = position_only_nodes(self.order)
        for i, node in enumerate(self.order):
            if isinstance(node, C.SOp) and id(node) not in self.done:
                self.compute(node)
                self.done.add(id(node))
            if self.progress is not None:
                self.progress(i + 1, len(self.order))
            if self.keep_all:
                continue
            for x in reads.get(id(node), []):
                refs[id(x)] -= 1
                if refs[id(x)] == 0:
                    self.ints.pop(id(x), None)
                    self.kept_maps.pop(id(x), None)
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
                if lz.kept is not None:
                    self.kept_maps[key] = lz
                if memoize and self.memo is not None and not self.memo.tried(node, L):
                    self.stats.memo_positions += lz.m
                else:
                    self.stats.head_positions += lz.m
                if lz.m > long_values.LAZY_MIN and self.streamable.get(key, False):
                    self.lazy[key] = lz  # read piece by piece by its readers, never stored whole
                elif lz.m > long_values.LAZY_MIN and self.padded_output and any(node is o for o in self.outputs):
                    (self.ints if lz.is_int else self.vals)[key] = self._trimmed(lz)
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
    progress: Callable[[int, int], None] | None = None,
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
    ``progress``: called with (nodes done, nodes) after each node of the program is computed.
    """
    outs = [program] if isinstance(program, C.SOp) else list(program)
    for o in outs:
        if not isinstance(o, C.SOp):
            raise C.ProgramError(f"a program's output must be an SOp, got {o!r}")
    arith = arithmetic(backend)
    run = Run(outs, inputs, arith, allow_nonfinite=allow_nonfinite, dense_only=dense_only, memo=memo, stats=stats)
    run.padded_output = padded_output  # a long output is then held as tail_of would hold it
    run.progress = progress
    with kept_heap() if run.L >= long_values.PIECE else contextlib.nullcontext():  # arrays of 1 MiB and more: reused
        run.execute()
        res: list[Any] = [_padded(run.value_t(o), run.L) if padded_output else run.value(o) for o in outs]
    run.stats.runs += 1
    res = _own_memory(res, inputs)
    if finite is not None and finite is not False:
        for i, r in enumerate(res):
            _check_finite(outs, i, r, inputs, arith, allow_nonfinite, dense_only, finite)
    return res[0] if isinstance(program, C.SOp) else res


def _own_memory(res: list[Any], inputs: Any) -> list[Any]:
    """The outputs, each in memory of its own: an output that may share memory with the input
    or an earlier output (a value passed on unchanged, like the taken branch of a ``where``
    on a constant flag, is the array it reads) is copied, so writing one never changes another."""
    seen = [inputs.head if isinstance(inputs, Padded) else inputs]
    out = []
    for r in res:
        arr = r.head if isinstance(r, Padded) else r
        if isinstance(arr, np.ndarray) and any(isinstance(x, np.ndarray) and np.may_share_memory(arr, x) for x in seen):
            arr = arr.copy()
            r = Padded(arr, r.length, r.pad) if isinstance(r, Padded) else arr
        seen.append(arr)
        out.append(r)
    return out


def _padded(v: Any, L: int) -> Padded:
    """A run's value (an array or a ``Tail``) as a Padded sequence of length L: the last run of
    equal values becomes the padding, so a value written only near the start is held short."""
    t = v if isinstance(v, Tail) else tail_of(v)
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


__all__ = [
    "BACKENDS",
    "DENSE_CELLS",
    "Lazy",
    "MemoSummary",
    "Padded",
    "Run",
    "RunStats",
    "StructuralMemo",
    "Tail",
    "Trace",
    "arithmetic",
    "evaluate",
    "selector_leaves",
    "trace",
]
