"""Running a GAHAT-RASP program: ``evaluate`` and ``trace``, in one of three arithmetics.

Float64 runs go to the numeric executor (:mod:`attnsim.numeric`), planned once per program and
length from what the program states; exact (Fraction) and SymPy runs, ``dense_only`` runs and
traces go to the reference interpreter (:mod:`attnsim.rasp.interpreter`), which is
docs/semantics.md read literally.  Both return NumPy arrays of one shape (float64, or dtype
object), so that callers never branch on the backend.

Non-finite values (float64): values outside a construction's result block are unspecified and
may be NaN by design, so only what the caller reads is checked: ``evaluate(..., finite=positions)``
raises :class:`NonFiniteError` when one of those output positions is not finite, naming the node
(label and primitive) where the value first stopped being finite (found by a second run that
keeps every value: error path only).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnsim.numeric import executor
from attnsim.numeric.executor import MemoSummary, RunStats, StructuralMemo
from attnsim.numeric.values import Val, trimmed
from attnsim.rasp import core as C
from attnsim.rasp.arith import Arithmetic, BackendError, NonFiniteError
from attnsim.rasp.exact import ExactArith, SympyArith
from attnsim.rasp.interpreter import ROW_CELLS, Interpreter
from attnsim.rasp.numeric import NumpyArith

BACKENDS = ("numpy", "exact", "sympy")
DENSE_CELLS = ROW_CELLS  # a trace keeps the selector matrices of at most this many cells


def arithmetic(backend: str | Arithmetic) -> Arithmetic:
    """The arithmetic for a backend name."""
    if isinstance(backend, Arithmetic):
        return backend
    table: dict[str, Callable[[], Arithmetic]] = {"numpy": NumpyArith, "exact": ExactArith, "sympy": SympyArith}
    if backend not in table:
        raise BackendError(f"unknown backend {backend!r}; use one of {BACKENDS}")
    return table[backend]()


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
        if len(self.head) == 0:
            return np.full(len(idx), self.pad, dtype=self.head.dtype)
        inside = idx < len(self.head)
        return np.where(inside, self.head[np.where(inside, idx, 0)], self.pad)


def _tokens(inputs: Any, arith: Arithmetic, allow_nonfinite: bool) -> tuple[np.ndarray, Any, int]:
    """(head, pad, length) of the input in the arithmetic (pad None: the head is every token)."""
    if isinstance(inputs, Padded):
        pad = arith.from_input(np.array([inputs.pad], dtype=inputs.head.dtype), allow_nonfinite)[0]
        return arith.from_input(inputs.head, allow_nonfinite), pad, inputs.length
    arr = np.asarray(inputs, dtype=object) if not isinstance(inputs, np.ndarray) else inputs
    if arr.ndim != 1:
        raise BackendError(f"a program's input is a 1-D token sequence; got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise BackendError("a program's input must have at least one token")
    return arith.from_input(inputs, allow_nonfinite), None, int(arr.shape[0])


def _full(head: np.ndarray, pad: Any, L: int) -> np.ndarray:
    return head if pad is None else np.concatenate([head, np.full(L - len(head), pad, dtype=head.dtype)])


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
    ``dense_only`` runs the reference interpreter in float64 too (used to check the executor).

    ``finite``: the output positions the caller reads (an index array, a boolean mask, or True
    for all); with float64 values, a non-finite value at one of them raises
    :class:`NonFiniteError` naming the node and primitive where it first stopped being finite.
    None (the default) checks nothing: positions outside a result block are unspecified.

    ``memo``: the program's plans, kept across its runs (:class:`StructuralMemo`; numpy
    backend).  ``stats``: a :class:`RunStats` the run adds its counts to.  ``padded_output``:
    each output as a :class:`Padded` sequence (its head and the value after it).
    ``progress``: called with (nodes done, nodes) after each node of the program.
    """
    outs = [program] if isinstance(program, C.SOp) else list(program)
    for o in outs:
        if not isinstance(o, C.SOp):
            raise C.ProgramError(f"a program's output must be an SOp, got {o!r}")
    arith = arithmetic(backend)
    head, pad, L = _tokens(inputs, arith, allow_nonfinite)
    stats = stats if stats is not None else RunStats()
    if isinstance(arith, NumpyArith) and not dense_only:
        vals, _ = executor.run(outs, Val.flat(head, pad), L, memo=memo, stats=stats, progress=progress, arith=arith)
    else:
        ref = Interpreter(arith, _full(head, pad, L))
        vals = [Val.flat(v) for v in ref.run(outs, progress)]
        stats.runs, stats.nodes = stats.runs + 1, stats.nodes + len(ref.values)
        stats.head_positions += L * len(ref.values)
    res = _own_memory([Padded(*_trim(v, L)) if padded_output else v.upto(L) for v in vals], inputs)
    if finite is not None and finite is not False:
        for i, r in enumerate(res):
            _check_finite(outs, i, r, Val.flat(head, pad), L, finite, arith)
    return res[0] if isinstance(program, C.SOp) else res


def _trim(v: Val, L: int) -> tuple[np.ndarray, int, Any]:
    head, pad = trimmed(v, L)
    return head, L, pad


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
    outs: list[C.SOp], i: int, value: np.ndarray | Padded, tokens: Val, L: int, finite: Any, arith: Arithmetic
) -> None:
    """Raise NonFiniteError when ``value`` (output i) is not finite at a read position."""
    pos = _positions(finite, L)
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
    head = f"output position {p} is {vp} ({count} read position(s) not finite)"
    org, sources = _provenance(outs, tokens, L, arith)
    o = org.get(id(outs[i]))
    if o is None or o[p] < 0:  # pragma: no cover - the tracking run reproduces the first run
        raise NonFiniteError(head)
    label, what, q, v = sources[int(o[p])]
    why = "overflow" if np.isinf(v) else "invalid operation, e.g. 0/0 or sqrt of a negative"
    if what == "input token":
        raise NonFiniteError(f"{head}: it comes from input token {q} = {v}")
    raise NonFiniteError(f"{head}: it comes from node {label!r} ({what}), which gave {v} at position {q} ({why})")


def _provenance(outs: list[C.SOp], tokens: Val, L: int, arith: Arithmetic) -> tuple[dict[int, np.ndarray], list[Any]]:
    """Where each non-finite value comes from (error path only: a run keeping every value).
    Per node, an index into the sources (-1: finite) at each position: a Map's value comes from
    a non-finite argument at the same position, an Aggregate's from a non-finite value among the
    keys it selected (the earliest source first), else from the node itself (its primitive on
    finite arguments, its own mean, or an input token)."""
    _, ex = executor.run(outs, tokens, L, keep=True, arith=arith if isinstance(arith, NumpyArith) else None)
    origin: dict[int, np.ndarray] = {}
    sources: list[tuple[str, str, int, float]] = []
    for node in ex.plan.order:
        v = ex.vals.get(id(node))
        if v is None or v.kind != "f" or (np.isfinite(v.head).all() and np.isfinite(v.tail)):
            continue
        flat = v.upto(L)
        bad = ~np.isfinite(flat)
        org = np.full(L, -1, dtype=np.int64)
        if isinstance(node, (C.Map, C.SequenceMap)):
            for a in node.args:
                ao = origin.get(id(a))
                if ao is not None:
                    m = bad & (org < 0) & (ao >= 0)
                    org[m] = ao[m]
        elif isinstance(node, C.Aggregate) and id(node.values) in origin:
            vo = origin[id(node.values)]
            for o in np.unique(vo[vo >= 0]):
                hit = ex.head(node, Val.flat((vo == o).astype(np.float64))).upto(L) > 0
                org[bad & (org < 0) & hit] = o
        rest = bad & (org < 0)
        if rest.any():
            p = int(np.flatnonzero(rest)[0])
            if isinstance(node, (C.Map, C.SequenceMap)):
                what = f"primitive {node.fn.fingerprint}"
            elif isinstance(node, C.Aggregate):
                what = "aggregate: the mean of the selected values"
            else:
                what = "input token"
            org[rest] = len(sources)
            sources.append((node.label, what, p, float(flat[p])))
        origin[id(node)] = org
    return origin, sources


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
    """Run a program on the reference interpreter keeping every value and (for L*L <= DENSE_CELLS)
    every selector matrix."""
    outs = [program] if isinstance(program, C.SOp) else list(program)
    arith = arithmetic(backend)
    head, pad, L = _tokens(inputs, arith, allow_nonfinite)
    ref = Interpreter(arith, _full(head, pad, L), keep_matrices=L * L <= DENSE_CELLS)
    ref.run(outs)
    values: dict[str, np.ndarray] = {}
    selectors: dict[str, np.ndarray] = {}
    order: list[str] = []
    seen: set[str] = set()
    for node in C.topological(outs):
        lab = node.label
        if lab in seen:
            lab = f"{lab}#{node._uid}"  # type: ignore[attr-defined]
        seen.add(lab)
        if isinstance(node, C.SOp):
            values[lab] = ref.value(node)
            order.append(lab)
        elif id(node) in ref.matrices:
            selectors[lab] = ref.matrices[id(node)]
            order.append(lab)
    return Trace(values, selectors, order)


__all__ = [
    "BACKENDS",
    "DENSE_CELLS",
    "MemoSummary",
    "Padded",
    "RunStats",
    "StructuralMemo",
    "Trace",
    "arithmetic",
    "evaluate",
    "trace",
]
