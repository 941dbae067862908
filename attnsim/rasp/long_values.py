"""Long values of a run (numpy backend): held compactly (``Tail``, ``Padded``) or streamed (``Lazy``).

A value constant after some position keeps only its head (``Tail``); a program's input or output
is held as its head and the padding after it (``Padded``); a long value read only at its own
positions is computed piece by piece where it is read, ``PIECE`` positions at a time (``Lazy``).
The helpers below read an array or a ``Tail`` alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnsim.rasp.arith import BackendError
from attnsim.rasp.kept_values import Chunked

# the two sizes are read as ``long_values.LAZY_MIN`` and ``long_values.PIECE`` by the run's modules
# (one place to set them: tests set them small to stream short values)
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


def tail_of(a: np.ndarray) -> Tail:
    """An array as a Tail: its last run of equal values becomes the tail."""
    if len(a) == 0:
        return Tail(a, a[:0])
    last = a[-1]
    diff = np.flatnonzero(a != last) if not (a.dtype.kind == "f" and np.isnan(last)) else np.flatnonzero(~np.isnan(a))
    n = int(diff[-1]) + 1 if diff.size else 0
    return Tail(a[:n].copy() if n < len(a) else a, a[-1:].copy())


def head_len(x: Any, L: int) -> int:
    return len(x.head) if isinstance(x, Tail) else L


def upto(x: Any, m: int) -> np.ndarray:
    return x.upto(m) if isinstance(x, Tail) else x[:m]


def tail_value(x: Any) -> np.ndarray:
    return x.tail if isinstance(x, Tail) else x[-1:]


def value_at(x: Any, idx: np.ndarray) -> np.ndarray:
    return x.at(idx) if isinstance(x, Tail) else x[idx]


def slice_of(x: Any, a: int, b: int) -> np.ndarray:
    """Positions a..b-1 of an array or a Tail."""
    if not isinstance(x, Tail):
        return x[a:b]
    n = len(x.head)
    if b <= n:
        return x.head[a:b]
    if a >= n:  # the tail value at every position: a read-only view, not b - a copies
        return np.broadcast_to(x.tail, (b - a,))
    return np.concatenate([x.head[a:], np.repeat(x.tail, b - n)])


def dtype_kind(x: Any) -> str:
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
    position_only: bool = False  # read from the structural memo: the same values on every run
    kept: Chunked | None = None  # the kept form it is read from (a kept index map)
    computes: bool = True  # False: its pieces are read (a kept map) or passed on (a taken branch)

    def kept_bounds(self, a: int, b: int) -> tuple[int, int] | None:
        """A kept index map's least and greatest value at positions a..b-1, known without reading
        them: its chunks' bounds, and the tail past the head; None when it is no kept map or
        its chunks keep no bounds."""
        if self.kept is None:
            return None
        t = int(self.tail[0])
        got = self.kept.bounds_over(a, min(b, self.m)) if a < self.m else (t, t)
        if got is None or b <= self.m:
            return got
        return min(got[0], t), max(got[1], t)


@dataclass(eq=False)
class Keyed:
    """An equality head's key side in a run, prepared to be grouped: the sources of its keys,
    values (and score) and key conditions, the head length ``kn`` of the key side, whether it
    is read piece by piece, the tail key (value) when allowed, with weight ``w``, and the
    per-piece ``(keys, counts, sums)`` gathered so far."""

    node: Any
    ksrc: Any
    vsrc: Any
    ssrc: Any
    katoms: list[tuple[Any, str, Any]]
    kn: int
    streamed: bool
    tail: tuple[np.ndarray, np.ndarray] | None
    w: float
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)

    def groups(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(sorted distinct keys, weights, sums) over the pieces and the tail key."""
        parts = list(self.parts)
        if self.tail is not None:
            parts.append((self.tail[0], np.array([self.w]), self.tail[1] * self.w))
        if not parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0)
        if len(parts) == 1:
            return parts[0]
        uniq, inv = np.unique(np.concatenate([p[0] for p in parts]), return_inverse=True)
        counts = np.bincount(inv, weights=np.concatenate([p[1] for p in parts]), minlength=len(uniq))
        return uniq, counts, np.bincount(inv, weights=np.concatenate([p[2] for p in parts]), minlength=len(uniq))
