"""The state of one program run and how its values are read: as values, integers or comparable keys.

:class:`RunState` holds a run's values by node id (arrays, compact ``Tail`` values, streamed
``Lazy`` values) with the run's options; the engine (:class:`attnsim.rasp.engine.Run`) adds the
walk over the program, :mod:`attnsim.rasp.streaming` the streamed values and
:mod:`attnsim.rasp.aggregation` the selectors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from attnsim.rasp import core as C
from attnsim.rasp import long_values
from attnsim.rasp.arith import Arithmetic, BackendError
from attnsim.rasp.long_values import Lazy, Padded, Tail, tail_of
from attnsim.rasp.numeric import NumpyArith
from attnsim.rasp.stream_plan import node_reads
from attnsim.rasp.structural_memo import RunStats, StructuralMemo


class RunState:
    """State of one program run: values by node id (freed after their last use by the engine),
    held as arrays, ``Tail`` or ``Lazy`` values, and read in the three forms readers need."""

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
            self.tokens = tail_of(tokens) if self.compact else tokens
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
        # the index maps read from the memo in this run, with their kept forms and bounds
        self.kept_maps: dict[int, Lazy] = {}
        # equality sums summed in one pass over the pieces of their shared streamed sources
        # (``stream_plan.key_group_batches``): the groups of those later in a batch wait in
        # ``pending``; the nodes computed before their turn for them are in ``done``
        self.batches: dict[int, list[C.Aggregate]] = {}
        self.pending: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.done: set[int] = set()
        self.padded_output = False  # the outputs are returned padded (``evaluate``)
        self.progress: Callable[[int, int], None] | None = None  # told (nodes done, nodes) (``evaluate``)

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

    def compute(self, node: C.SOp) -> None:
        """Compute one node's values (the engine's walk, :class:`attnsim.rasp.engine.Run`)."""
        raise NotImplementedError

    def compute_early(self, node: C.SOp) -> None:
        """Compute ``node`` (and what it reads) before its turn, for a batched reader; the walk
        skips it at its turn."""
        if id(node) in self.done:
            return
        for x in node_reads(node):
            self.compute_early(x)
        self.compute(node)
        self.done.add(id(node))

    # -- streamed values stored whole ------------------------------------------------------
    def _materialize(self, lz: Lazy) -> Any:
        """A Lazy's values as a Tail (its head evaluated in pieces into one array)."""
        m = lz.m
        if m <= long_values.LAZY_MIN:
            head = np.asarray(lz.fn(0, m, {}))
        else:
            head = np.empty(0)
            for a in range(0, m, long_values.PIECE):
                b = min(m, a + long_values.PIECE)
                p = lz.fn(a, b, {})
                if a == 0:
                    head = np.empty(m, dtype=p.dtype)
                head[a:b] = p
        return head if m >= self.L else Tail(head, lz.tail)

    def _trimmed(self, lz: Lazy) -> Tail:
        """A long output returned padded: its values as ``tail_of`` would hold them (the head up
        to the last position that differs from the last value), evaluated piece by piece and
        never stored whole -- a piece equal to the last value throughout is kept as a note."""
        L, piece = self.L, long_values.PIECE
        last = np.asarray(lz.fn(L - 1, L, {}) if lz.m >= L else lz.tail)[-1:]
        nan = last.dtype.kind == "f" and bool(np.isnan(last[0]))
        parts: list[tuple[int, np.ndarray | None]] = []
        n = 0  # positions before n hold the head
        for a in range(0, lz.m, piece):
            p = np.asarray(lz.fn(a, min(lz.m, a + piece), {}))
            diff = np.flatnonzero(~np.isnan(p) if nan else p != last[0])
            parts.append((len(p), p if diff.size else None))
            if diff.size:
                n = a + int(diff[-1]) + 1
        if lz.m < L and not np.array_equal(lz.tail, last, equal_nan=True):  # pragma: no cover - tail is last
            n = lz.m
        head = np.empty(n, dtype=np.result_type(last, *(p for _, p in parts if p is not None)))
        a = 0
        for size, kept in parts:
            if a >= n:
                break
            head[a : min(n, a + size)] = last[0] if kept is None else kept[: n - a]
            a += size
        return Tail(head, last.copy())

    def _realize(self, node: C.SOp) -> None:
        """Store a streamed node's values (a reader needs them whole)."""
        lz = self.lazy.pop(id(node))
        (self.ints if lz.is_int else self.vals)[id(node)] = self._materialize(lz)
