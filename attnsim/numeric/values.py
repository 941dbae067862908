"""A value of the numeric executor: positions ``0 .. m-1`` as a head over a row-major *frame*
(product m; stored broadcastable, extent 1 along an axis it does not vary on), then one ``tail``
value for every later position.  Values of different frames meet on a common refinement of their
frames, else on a flat one.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Lin:
    """``c + sum_j coef[j] x_j`` over the coordinates ``x_j`` of a frame."""

    c: int
    coef: tuple[int, ...]

    def span(self, shape: tuple[int, ...]) -> tuple[int, int]:
        """The least and greatest value over the frame ``shape``."""
        lo = self.c + sum(min(0, a * (n - 1)) for a, n in zip(self.coef, shape, strict=True))
        hi = self.c + sum(max(0, a * (n - 1)) for a, n in zip(self.coef, shape, strict=True))
        return lo, hi

    def array(self, shape: tuple[int, ...]) -> np.ndarray:
        """The values as an int64 array over the axes they vary on (extent 1 elsewhere)."""
        k = len(shape)
        out: np.ndarray = np.full((1,) * k, self.c, dtype=np.int64)
        for j, (a, n) in enumerate(zip(self.coef, shape, strict=True)):
            if a:
                out = out + (a * np.arange(n, dtype=np.int64)).reshape((1,) * j + (n,) + (1,) * (k - j - 1))
        return out


@dataclass(frozen=True)
class Val:
    """Positions ``0 .. prod(shape) - 1`` as ``head`` (broadcastable to ``shape``), then ``tail``.
    A constant has the frame ``()`` and no head positions (``m == 0``).  An index value planned
    as affine in the frame's coordinates keeps that form (``lin``); its head is formed from it
    when read."""

    data: np.ndarray | None
    shape: tuple[int, ...]
    tail: Any  # a NumPy scalar
    lin: Lin | None = None

    @cached_property
    def head(self) -> np.ndarray:
        """The head over the frame's axes (``data`` of fewer dimensions gains leading axes of 1)."""
        h = self.data if self.data is not None else self.lin.array(self.shape)  # type: ignore[union-attr]
        return h.reshape((1,) * (len(self.shape) - h.ndim) + h.shape)

    @property
    def m(self) -> int:
        return math.prod(self.shape) if self.shape else 0

    @property
    def kind(self) -> str:
        return str(np.asarray(self.tail).dtype.kind)

    @staticmethod
    def const(x: Any) -> Val:
        t = np.asarray(x)[()]
        return Val(np.asarray(t).reshape(()), (), t)

    @staticmethod
    def flat(head: np.ndarray, tail: Any = None) -> Val:
        """A head of ``len(head)`` positions on a flat frame (its last value as tail by default)."""
        if len(head) == 0:
            return Val.const(tail)
        return Val(head, (len(head),), head[-1] if tail is None else np.asarray(tail, dtype=head.dtype)[()])

    def dense(self) -> np.ndarray:
        """The head over its frame, every axis at full extent (a read-only broadcast view)."""
        return np.broadcast_to(self.head, self.shape)

    def upto(self, n: int) -> np.ndarray:
        """Positions ``0 .. n-1`` as a new 1-D array."""
        m = self.m
        dtype = np.result_type(self.head, np.asarray(self.tail))
        out = np.empty(n, dtype=dtype)
        k = min(n, m)
        if k:
            out[:k] = self.dense().reshape(-1)[:k]
        out[k:] = self.tail
        return out

    def at(self, pos: np.ndarray) -> np.ndarray:
        """The values at positions ``pos`` (any shape, every entry >= 0)."""
        m = self.m
        if m == 0:
            return np.full(pos.shape, self.tail)
        inside = pos < m
        rest, coords = np.where(inside, pos, 0), []
        for n, stride in zip(self.shape, axis_bounds(self.shape)[-2::-1], strict=True):
            coords.append((rest // stride) % n)  # not np.unravel_index: NumPy 2.4 errs on some shapes
        got = self.head[tuple(c if n > 1 else 0 for c, n in zip(coords, self.head.shape, strict=True))]
        return got if bool(inside.all()) else np.where(inside, got, self.tail)

    def map(self, fn: Any, *others: Val) -> Val:
        """``fn`` applied to the heads (broadcast over a common frame) and to the tails."""
        shape, heads = conform([self, *others])
        tail = np.asarray(fn(*(np.asarray(v.tail) for v in (self, *others))))[()]
        if not shape:
            return Val.const(tail)
        return Val(np.asarray(fn(*heads)), shape, tail)


def axis_bounds(shape: Sequence[int]) -> list[int]:
    """The suffix products of a frame, innermost first, 1 included: where its axes begin."""
    out = [1]
    for n in reversed(shape):
        out.append(out[-1] * n)
    return out


def refinement(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...] | None:
    """The coarsest frame that splits every one of ``shapes`` (all of one size) at its axis
    boundaries; None when their boundaries do not nest (no frame refines them all)."""
    cuts = sorted({b for s in shapes for b in axis_bounds(s)})
    if any(b % a for a, b in itertools.pairwise(cuts)):
        return None
    return tuple(b // a for a, b in reversed(list(itertools.pairwise(cuts)))) or (1,)


def refine(v: Val, shape: tuple[int, ...]) -> np.ndarray:
    """``v``'s head over ``shape``, a refinement of its frame: each axis split into the axes of
    ``shape`` between its boundaries, kept at extent 1 where the head is."""
    cuts = axis_bounds(shape)
    new: list[int] = []
    for n, lo, hi in zip(reversed(v.head.shape), axis_bounds(v.shape), axis_bounds(v.shape)[1:], strict=False):
        part = [shape[len(shape) - 1 - i] for i in reversed(range(len(shape))) if lo <= cuts[i] < hi]
        new[:0] = part if n > 1 else [1] * len(part)
    return v.head.reshape(new or [1] * len(shape))


def conform(vals: Sequence[Val]) -> tuple[tuple[int, ...], list[np.ndarray]]:
    """A common frame of ``vals`` and each head over it (broadcastable).  Values of one length
    whose frames nest share their refinement; otherwise every head is flattened up to the longest
    (shorter ones followed by their tails).  The frame is () when every value is constant."""
    m = max((v.m for v in vals), default=0)
    if m == 0:
        return (), [np.asarray(v.tail) for v in vals]
    framed = [v for v in vals if v.m]
    shape = refinement([v.shape for v in framed]) if all(v.m == m for v in framed) else None
    if shape is None:
        return (m,), [v.upto(m) if v.m else np.asarray(v.tail).reshape(1) for v in vals]
    k = len(shape)
    return shape, [refine(v, shape) if v.m else np.asarray(v.tail).reshape((1,) * k) for v in vals]


__all__ = ["Val", "axis_bounds", "conform", "refine", "refinement"]
