"""Running a GAHAT-RASP program: ``evaluate`` and ``trace``, in one of three arithmetics.

Float64 runs go to the numeric executor (:mod:`attnsim.numeric`); exact (Fraction) and SymPy
runs, ``dense_only`` runs and traces to the reference interpreter (:mod:`attnsim.rasp.interpreter`).
Both return NumPy arrays of one shape (float64, or dtype object).  ``evaluate(...,
finite=positions)`` raises :class:`NonFiniteError` when a read output position is not finite,
naming the node (label and primitive) where the value first stopped being finite.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnsim.numeric import executor
from attnsim.numeric.executor import MemoSummary, RunStats, StructuralMemo
from attnsim.numeric.values import Val
from attnsim.rasp import core as C
from attnsim.rasp.arith import Arithmetic, BackendError, NonFiniteError
from attnsim.rasp.interpreter import ROW_CELLS, Interpreter
from attnsim.rasp.numeric import NumpyArith

BACKENDS = ("numpy", "exact", "sympy")


def arithmetic(backend: str | Arithmetic) -> Arithmetic:
    """The arithmetic for a backend name (the exact and SymPy ones, and SymPy, imported when asked for)."""
    if isinstance(backend, Arithmetic):
        return backend
    if backend not in BACKENDS:
        raise BackendError(f"unknown backend {backend!r}; use one of {BACKENDS}")
    if backend == "numpy":
        return NumpyArith()
    from attnsim.rasp.exact import ExactArith, SympyArith

    return ExactArith() if backend == "exact" else SympyArith()


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
    stats, tokens = stats if stats is not None else RunStats(), Val.flat(head, pad)
    if isinstance(arith, NumpyArith) and not dense_only:
        vals, _ = executor.run(outs, tokens, L, memo=memo, stats=stats, progress=progress, arith=arith)
    else:
        ref = Interpreter(arith, tokens.upto(L))
        vals = [Val.flat(v) for v in ref.run(outs, progress)]
        stats.runs, stats.nodes = stats.runs + 1, stats.nodes + len(ref.values)
        stats.head_positions += L * len(ref.values)
    if finite is not None and finite is not False:
        for i, v in enumerate(vals):
            _check_finite(outs, i, v, tokens, L, finite, arith)
    res = _own_memory([_padded(v, L) if padded_output else v.upto(L) for v in vals], inputs)
    return res[0] if isinstance(program, C.SOp) else res


def _padded(v: Val, L: int) -> Padded:
    """``v`` over L positions with the run of values equal to the last one after its head (NaN
    equal to NaN) held as the padding."""
    last = np.asarray(v.tail if v.m < L else v.dense().reshape(-1)[-1])[()]
    head = v.dense().reshape(-1)[: min(v.m, L)]
    same = np.isnan(head) if head.dtype.kind == "f" and np.isnan(last) else head == last
    differ = np.flatnonzero(~same)
    return Padded(np.array(head[: int(differ[-1]) + 1 if differ.size else 0]), L, last)


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


def _check_finite(outs: list[C.SOp], i: int, v: Val, tokens: Val, L: int, finite: Any, arith: Arithmetic) -> None:
    """Raise NonFiniteError when ``v`` (output i) is not finite at a read position."""
    pos = None if finite is True else _positions(finite, L)
    if v.kind != "f":
        return
    if pos is None:  # every position: the head, then the tail
        bad = np.flatnonzero(~np.isfinite(v.dense().reshape(-1)[:L]))
        count = bad.size + (L - v.m if v.m < L and not np.isfinite(v.tail) else 0)
        bad = bad if bad.size or count == 0 else np.array([v.m])
    else:
        bad = pos[~np.isfinite(v.at(pos))]
        count = bad.size
    if bad.size == 0:
        return
    p = int(bad[0])
    vp = v.at(np.array([p]))[0]
    head = f"output position {p} is {vp} ({count} read position(s) not finite)"
    label, what, q, x = _source(outs, outs[i], p, tokens, L, arith)
    why = "overflow" if np.isinf(x) else "invalid operation, e.g. 0/0 or sqrt of a negative"
    if what == "input token":
        raise NonFiniteError(f"{head}: it comes from input token {q} = {x}")
    raise NonFiniteError(f"{head}: it comes from node {label!r} ({what}), which gave {x} at position {q} ({why})")


def _source(outs: list[C.SOp], node: C.SOp, p: int, tokens: Val, L: int, arith: Arithmetic) -> tuple[Any, ...]:
    """(label, what, position, value): where ``node``'s non-finite value at ``p`` comes from
    (error path: a run keeping every value), followed back through a Map's first non-finite
    argument at p and an Aggregate's first selected key (of maximal score) whose value is not
    finite; where that stops is the origin (a primitive on finite arguments, a mean, a token)."""
    _, ex = executor.run(outs, tokens, L, keep=True, arith=arith if isinstance(arith, NumpyArith) else None)

    def bad(x: C.SOp) -> np.ndarray:
        v = ex.vals.get(id(x))
        return np.zeros(L, dtype=bool) if v is None or v.kind != "f" else ~np.isfinite(v.upto(L))

    while True:
        what, nxt = "input token", None
        if isinstance(node, (C.Map, C.SequenceMap)):
            what, nxt = f"primitive {node.fn.fingerprint}", next((a for a in node.args if bad(a)[p]), None)
        elif isinstance(node, C.Aggregate):
            ref = Interpreter(ex.arith, tokens.upto(L))
            for x in C.selector_leaves(node.selector):
                ref.values[id(x)] = ex.vals[id(x)].upto(L) if id(x) in ex.vals else ref.sop(x)
            sel = ref.rows(node.selector, np.array([p]))[0]
            if node.score is not None:
                score = ex.vals[id(node.score)].upto(L)
                with np.errstate(invalid="ignore"):
                    sel &= score == np.max(np.where(sel, score, -np.inf))
            keys = np.flatnonzero(sel & bad(node.values))
            what, nxt = "aggregate: the mean of the selected values", node.values if keys.size else None
            p = int(keys[0]) if keys.size else p
        if nxt is None:
            return node.label, what, p, float(ex.vals[id(node)].upto(p + 1)[p])
        node = nxt


@dataclass
class Trace:
    """Every SOp's values and every selector's matrix, by (unique) label."""

    values: dict[str, np.ndarray]
    selectors: dict[str, np.ndarray]
    order: list[str]

    def __getitem__(self, label: str) -> np.ndarray:
        return self.values[label] if label in self.values else self.selectors[label]

    def __contains__(self, label: str) -> bool:
        return label in self.values or label in self.selectors


def trace(
    program: C.SOp | Sequence[C.SOp], inputs: Any, backend: str | Arithmetic = "numpy", *, allow_nonfinite: bool = False
) -> Trace:
    """Run a program on the reference interpreter keeping every value and (for L*L <= ROW_CELLS)
    every selector matrix."""
    outs = [program] if isinstance(program, C.SOp) else list(program)
    arith = arithmetic(backend)
    head, pad, L = _tokens(inputs, arith, allow_nonfinite)
    ref = Interpreter(arith, Val.flat(head, pad).upto(L), keep_matrices=L * L <= ROW_CELLS)
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
    "MemoSummary",
    "Padded",
    "RunStats",
    "StructuralMemo",
    "Trace",
    "arithmetic",
    "evaluate",
    "trace",
]
