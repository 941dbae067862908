"""Compact stored forms of integer values that depend only on positions (U's index maps).

An index map of U is a source position, a group key or a coordinate of a grid position: along
the positions it is affine on long stretches (slope 1 inside a row, 0 along a broadcast axis)
with a jump at each row end.  :class:`AffinePieces` keeps it as maximal affine pieces (start,
value, slope), which at capacity 64 are 35x fewer than the positions; :class:`NarrowArray`
keeps it as an array in its narrowest integer dtype.  :func:`kept_form` picks the smaller of the
two; both give any range of positions back as int64, exactly.  :class:`Chunked` keeps a long
value chunk by chunk, each chunk in its own smaller form, so that it is built piece by piece.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided


def narrowest(a: np.ndarray) -> np.ndarray:
    """An integer array in the narrowest signed dtype holding its values (int8 .. int64)."""
    if a.size == 0:
        return a.astype(np.int8)
    lo, hi = int(a.min()), int(a.max())
    for dt in (np.int8, np.int16, np.int32):
        info = np.iinfo(dt)
        if info.min <= lo and hi <= info.max:
            return a.astype(dt)
    return a.astype(np.int64)


@dataclass(frozen=True)
class NarrowArray:
    """The values themselves, in their narrowest integer dtype."""

    values: np.ndarray

    @property
    def length(self) -> int:
        return len(self.values)

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes)

    def slice(self, a: int, b: int) -> np.ndarray:
        """Positions a..b-1 as int64."""
        return self.values[a:b].astype(np.int64)


@dataclass(frozen=True)
class AffinePieces:
    """Values affine on pieces: on positions starts[k] .. starts[k+1]-1 the value at p is
    ``values[k] + slopes[k] * (p - starts[k])``."""

    starts: np.ndarray  # int64, starts[0] == 0, increasing
    values: np.ndarray  # int64
    slopes: np.ndarray  # int64
    length: int
    # what ``_rows`` found for pieces (k0, k1): the same on every read of a kept map
    _row_memo: dict[tuple[int, int], Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def nbytes(self) -> int:
        return int(self.starts.nbytes + self.values.nbytes + self.slopes.nbytes)

    def slice(self, a: int, b: int) -> np.ndarray:
        """Positions a..b-1 as int64."""
        if b <= a:
            return np.zeros(0, dtype=np.int64)
        k0, k1 = self._met(a, b)
        rows = self._rows(k0, k1)
        if rows is not None:  # one pass: a repeat of each row's start, or an outer sum with the ramp
            vals, r, s, base = rows
            whole = np.repeat(vals, r) if s == 0 else np.add.outer(vals, np.arange(0, r * s, s, dtype=np.int64)).ravel()
            return whole[a - base : b - base]
        st = self.starts[k0:k1]
        lens = np.diff(np.concatenate([np.maximum(st[:1], a), st[1:], [b]]))
        slope = self.slopes[k0:k1]
        offset = np.repeat(self.values[k0:k1] - slope * st, lens)
        if not slope.any():
            return offset
        ramp = np.arange(a, b, dtype=np.int64)
        if bool((slope == slope[0]).all()):  # one slope over the range (most reads): no second repeat
            if slope[0] != 1:
                ramp *= slope[0]
        else:
            ramp *= np.repeat(slope, lens)
        offset += ramp
        return offset

    def take(self, arr: np.ndarray, a: int, b: int, shift: int = 0) -> np.ndarray | None:
        """``arr[v - shift]`` for the values v at positions a..b-1 without forming them, when the
        pieces they meet are rows of one length and one slope s >= 0 (or one piece) whose every
        index lies in ``arr``: a repeat of each row's entry (s = 0), or a copy of each row's
        stride-s run of ``arr``; else None."""
        if b <= a:
            return None
        k0, k1 = self._met(a, b)
        if k1 - k0 == 1:  # one piece: a stride-s slice of arr
            v = int(self.values[k0]) + int(self.slopes[k0]) * (a - int(self.starts[k0])) - shift
            s = int(self.slopes[k0]) if b - a > 1 else 0  # one position: any stride
            if s < 0 or v < 0 or v + s * (b - a - 1) >= len(arr):
                return None
            return np.full(b - a, arr[v]) if s == 0 else arr[v : v + s * (b - a - 1) + 1 : s].copy()
        rows = self._rows(k0, k1)
        if rows is None or rows[2] < 0:
            return None
        vals, r, s, base = rows
        first = vals - shift
        if int(first.min()) < 0 or int(first.max()) + (r - 1) * s >= len(arr):
            return None
        if s == 0:
            whole = np.repeat(arr[first], r)
        else:  # row k of the view: arr[k], arr[k + s], .., arr[k + (r - 1) s]
            step = arr.strides[0]
            view = as_strided(arr, shape=(len(arr) - (r - 1) * s, r), strides=(step, s * step), writeable=False)
            whole = view[first].ravel()
        return whole[a - base : b - base]

    def _met(self, a: int, b: int) -> tuple[int, int]:
        """The pieces k0..k1-1 that positions a..b-1 meet."""
        return int(np.searchsorted(self.starts, a, side="right")) - 1, int(np.searchsorted(self.starts, b, side="left"))

    def _rows(self, k0: int, k1: int) -> tuple[np.ndarray, int, int, int] | None:
        """(row start values, row length r, slope, first row's position) when pieces k0..k1-1
        (two or more) are rows of one length r and one slope (see ``_find_rows``); else None.
        What the pieces are is found once per range and kept (a few numbers, and the rows per
        piece where rows meet end to end), the start values formed on each read."""
        if k1 - k0 < 2:
            return None
        shape = self._row_memo.get((k0, k1))
        if shape is None:
            shape = self._find_rows(k0, k1)
            self._row_memo[(k0, k1)] = shape
        if not shape:
            return None
        r, s, short, counts = shape
        first = self.values[k0:k1].copy()
        first[0] -= s * short
        if counts is not None:
            within = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
            first = np.repeat(first, counts) + s * r * within
        return first, r, s, int(self.starts[k0]) - short

    def _find_rows(self, k0: int, k1: int) -> tuple[int, int, int, np.ndarray | None] | tuple[()]:
        """Pieces k0..k1-1 as rows: one slope s (a piece of one position takes any), the inner
        pieces r positions long or a multiple (rows that meet end to end are one piece), r >= 8;
        the first piece is extended back by ``short`` positions to whole rows (a row cut by the
        start of a chunk), the last may end inside a row.  (r, s, short, rows per piece when
        some piece holds more than one row, else None); () when they are not such rows."""
        nxt = self.starts[k0 + 1 : k1 + 1]
        ends = nxt if k1 < len(self.starts) else np.append(nxt, self.length)
        lens = ends - self.starts[k0:k1]
        slope = self.slopes[k0:k1][lens > 1]
        if slope.size == 0 or not (slope == slope[0]).all():
            return ()
        s = int(slope[0])
        mid = lens[1:-1]
        r = int(np.gcd.reduce(mid)) if mid.size else int(lens.max())
        if r < 8 or bool((mid % r).any()):
            return ()
        short = (-int(lens[0])) % r
        full = lens.copy()
        full[0] += short
        counts = -(-full // r)  # rows per piece, the last maybe ending inside its row
        return r, s, short, None if bool((counts == 1).all()) else counts


def affine_pieces(head: np.ndarray) -> AffinePieces:
    """``head`` (integers) as maximal affine pieces: a piece ends where the step to the next
    position changes."""
    h = head.astype(np.int64)
    n = len(h)
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return AffinePieces(z, z, z, 0)
    d = np.diff(h)
    # a new piece at p + 1 when the step p -> p + 1 differs from the step p - 1 -> p
    starts = np.concatenate([[0], np.flatnonzero(d[1:] != d[:-1]) + 2]).astype(np.int64)
    starts = starts[starts < n]
    # ... but after a jump to p (a piece of p alone, the next at p + 1) p starts the next piece
    # when the step p -> p + 1 is that piece's slope (or p + 1 is the last position): the rows
    # of a staircase (3 positions or more each) are whole pieces.  Never are both p and p + 1
    # dropped: p + 1 starts a piece when the steps into and out of p differ, p is dropped only
    # when they are equal.
    alone = np.flatnonzero(starts[1:] == starts[:-1] + 1)
    s = starts[alone]
    join = s + 1 == n - 1
    join[~join] = d[s[~join]] == d[s[~join] + 1]
    starts = np.delete(starts, alone[join] + 1)
    slopes = np.zeros(len(starts), dtype=np.int64)
    inner = starts < n - 1
    slopes[inner] = d[starts[inner]]
    return AffinePieces(starts, h[starts], slopes, n)


@dataclass(frozen=True)
class Chunked:
    """A long value kept chunk by chunk (``chunk`` positions each, the last maybe shorter), each
    chunk in its own smaller form: built from pieces without ever holding the value whole."""

    chunk: int
    parts: tuple[NarrowArray | AffinePieces, ...]
    part_bounds: tuple[tuple[int, int], ...] | None = None  # each chunk's least and greatest value

    def bounds_over(self, a: int, b: int) -> tuple[int, int] | None:
        """The least and greatest value at positions a..b-1 (a < b <= length), from the chunks
        they cover; None when the chunks' bounds are not kept."""
        if self.part_bounds is None:
            return None
        got = self.part_bounds[a // self.chunk : (b - 1) // self.chunk + 1]
        return min(lo for lo, _ in got), max(hi for _, hi in got)

    @property
    def length(self) -> int:
        return sum(p.length for p in self.parts)

    @property
    def nbytes(self) -> int:
        return sum(p.nbytes for p in self.parts)

    def take(self, arr: np.ndarray, a: int, b: int, shift: int = 0) -> np.ndarray | None:
        """``arr[v - shift]`` for the values v at positions a..b-1, read by each chunk's rows
        (:meth:`AffinePieces.take`); None when a chunk cannot."""
        out = []
        for part, x, y in self._spans(a, b):
            got = part.take(arr, x, y, shift) if isinstance(part, AffinePieces) else None
            if got is None:
                return None
            out.append(got)
        if not out:
            return None
        return out[0] if len(out) == 1 else np.concatenate(out)

    def slice(self, a: int, b: int) -> np.ndarray:
        """Positions a..b-1 as int64."""
        out = [part.slice(x, y) for part, x, y in self._spans(a, b)]
        if not out:
            return np.zeros(0, dtype=np.int64)
        return out[0] if len(out) == 1 else np.concatenate(out)

    def _spans(self, a: int, b: int) -> list[tuple[NarrowArray | AffinePieces, int, int]]:
        """The chunks positions a..b-1 meet, each with the range it holds of them (its own
        positions); none when b <= a."""
        if b <= a:
            return []
        out = []
        for k in range(a // self.chunk, (b - 1) // self.chunk + 1):
            base = k * self.chunk
            out.append((self.parts[k], max(a, base) - base, min(b, base + self.chunk) - base))
        return out


KeptForm = NarrowArray | AffinePieces | Chunked


def kept_form(head: np.ndarray) -> NarrowArray | AffinePieces:
    """The form of ``head`` to keep (checked to give ``head`` back exactly): affine pieces when
    they take under half the bytes of the narrow array, else the narrow array, which is read
    faster (one cast instead of two repeats)."""
    narrow = NarrowArray(narrowest(head))
    pieces = affine_pieces(head)
    if 2 * pieces.nbytes >= narrow.nbytes:
        return narrow
    if not np.array_equal(pieces.slice(0, len(head)), head):  # pragma: no cover - a bug in affine_pieces
        raise AssertionError("affine pieces do not reproduce the values")
    return pieces


__all__ = ["AffinePieces", "Chunked", "KeptForm", "NarrowArray", "affine_pieces", "kept_form", "narrowest"]
