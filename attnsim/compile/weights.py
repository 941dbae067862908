"""The compiled model's weight records: one :class:`Head` per attention head, the MLP stages
(:class:`ReluStage`, :class:`FnNode`) and the :class:`Layer` that holds them, with the
object-array helpers the weights are built with (:func:`obj`, :func:`as_number`).

Plain data, apart from the model (:mod:`attnsim.compile.model`) that runs them, because three
readers share them: the assembler writes them, the forward passes (float64 in ``model``, exact in
:mod:`attnsim.compile.exact_forward`) and the file format (:mod:`attnsim.compile.model_file`) read
them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from attnsim.compile.errors import CompileError


def obj(shape: tuple[int, ...]) -> np.ndarray:
    """An object array of Python int zeros."""
    out = np.empty(shape, dtype=object)
    out.fill(0)
    return out


def as_number(x: Fraction | int) -> Fraction | int:
    """Python int when integral (much faster in object arithmetic), else the Fraction."""
    f = Fraction(x)
    return int(f) if f.denominator == 1 else f


@dataclass
class ScoreBound:
    """A value-scored head's declared score range: every key's score ``x @ W`` must lie in
    [lo, hi], where the compiled max is exact (checked by ``forward``, which refuses other inputs)."""

    W: np.ndarray  # (d,): the score as a form over the residual dimensions
    lo: Fraction
    hi: Fraction
    label: str

    def check(self, head: str, x: np.ndarray) -> None:
        """Raise a one-line :class:`CompileError` if a token's score (rows 1.., not BOS) is outside."""
        s = x[:, 1:, :] @ self.W
        bad = ~((s >= self.lo) & (s <= self.hi)) if s.dtype == object else ~(
            (s >= float(self.lo)) & (s <= float(self.hi))
        )
        if bad.any():
            b, p = (int(i) for i in np.argwhere(bad)[0])
            v = s[b, p]
            raise CompileError(
                f"head {head}: score {self.label} = {float(v):.6g} at position {p} is outside [{self.lo}, {self.hi}], "
                f"where the compiled max is exact; compile with domains={{{self.label!r}: Interval(lo, hi)}} wider"
            )


@dataclass
class Head:
    """One attention head: score = (x W_Q).(x W_K); ``gap`` separates maximal from other scores."""

    name: str
    kind: str  # "aggregate" (BOS below the selected keys) or "width" (BOS tied with them)
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    margin: Fraction
    gap: Fraction
    forms: list[str] = field(default_factory=list)
    bound: ScoreBound | None = None


@dataclass
class ReluStage:
    """X += relu(X W1) W2 (W1: d x h, W2: h x d)."""

    W1: np.ndarray
    W2: np.ndarray
    notes: list[str] = field(default_factory=list)


@dataclass
class FnNode:
    """A generalized position-wise function: X[:, out] = prim(X W_in) on token rows, 0 on BOS."""

    prim: str
    params: tuple[Fraction, ...]
    W_in: np.ndarray
    out: int
    note: str = ""


@dataclass
class Stage:
    relu: ReluStage | None
    fns: list[FnNode]


@dataclass
class Layer:
    heads: list[Head]
    mlp: list[Stage]


def _rows(w: np.ndarray) -> np.ndarray:
    return (
        np.flatnonzero(np.array([any(v != 0 for v in row) for row in w], dtype=bool)) if w.size else np.array([], int)
    )
