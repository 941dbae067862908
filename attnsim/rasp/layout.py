"""Proposition 1: matrices as token sequences.

A :class:`Block` places a stack of ``stack`` matrices of shape ``rows x cols`` at ``offset``,
flattened row-major: entry (h, i, j) sits at ``offset + (h*rows + i)*cols + j``.  A
:class:`Layout` is a set of named blocks inside a sequence of ``length`` positions.  Offsets
and shapes are index expressions over :class:`~attnsim.rasp.core.Size` symbols, so the same
object encodes/decodes concrete arrays and states selector intents to Z3 in matrix
coordinates.  A :class:`MatRef` is an SOp plus the block where its matrix lives: the unit
that lemma constructions compose.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.guards import sympy_instance


class LayoutError(ValueError):
    """An array does not fit its block, or a block is unknown."""


def value_of(e: E.Expr | int) -> int:
    """The value of a size expression whose sizes are all bound (ProgramError naming an unbound one)."""
    e = E.lift(e)
    return int(e.evaluate(C.size_bindings(e)))


@dataclass(frozen=True, eq=False)
class Block:
    """A stack of row-major matrices at an offset."""

    name: str
    offset: E.Expr
    rows: E.Expr
    cols: E.Expr
    stack: E.Expr = field(default_factory=lambda: E.Const(1))
    channel: str = "tokens"

    @staticmethod
    def of(
        name: str,
        offset: E.Expr | int,
        rows: E.Expr | int,
        cols: E.Expr | int,
        stack: E.Expr | int = 1,
        channel: str = "tokens",
    ) -> Block:
        """A block; ``channel`` names the SOp it lives in (blocks of one channel must not overlap)."""
        blk = Block(name, E.lift(offset), E.lift(rows), E.lift(cols), E.lift(stack), channel)
        hook = C.MUTATION_HOOK.get()
        return blk if hook is None else hook(blk)

    # concrete values ------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        h = value_of(self.stack)
        base = (value_of(self.rows), value_of(self.cols))
        return base if h == 1 and self.is_single else (h, *base)

    @property
    def is_single(self) -> bool:
        return isinstance(self.stack, E.Const) and self.stack.value == 1

    @property
    def start(self) -> int:
        return value_of(self.offset)

    @property
    def size(self) -> int:
        return value_of(self.stack) * value_of(self.rows) * value_of(self.cols)

    @property
    def end(self) -> int:
        return self.start + self.size

    def positions(self) -> np.ndarray:
        """Positions of the entries, shaped like the block's array."""
        return np.arange(self.start, self.end).reshape(self.shape)

    # index expressions ----------------------------------------------------------------------
    def position(self, i: E.Expr | int, j: E.Expr | int, h: E.Expr | int = 0) -> E.Expr:
        """offset + (h*rows + i)*cols + j, as an index expression."""
        return self.offset + (E.lift(h) * self.rows + E.lift(i)) * self.cols + E.lift(j)

    def size_expr(self) -> E.Expr:
        return self.stack * self.rows * self.cols

    def end_expr(self) -> E.Expr:
        return self.offset + self.size_expr()

    def contains(self, p: E.Expr) -> E.Expr:
        """offset <= p < offset + size."""
        return (p >= self.offset) & (p < self.end_expr())

    def coords(self, p: E.Expr) -> tuple[E.Expr, E.Expr, E.Expr]:
        """(h, i, j) of position p (meaningful when p is inside the block)."""
        rel = p - self.offset
        flat_row = rel // self.cols
        return flat_row // self.rows, flat_row % self.rows, rel % self.cols


@dataclass(frozen=True, eq=False)
class Layout:
    """Named blocks in a sequence of ``length`` positions."""

    blocks: tuple[Block, ...]
    length: E.Expr

    @staticmethod
    def of(*blocks: Block, length: E.Expr | int | None = None) -> Layout:
        ln = E.lift(length) if length is not None else _max_end(blocks)
        return Layout(tuple(blocks), ln)

    def __getitem__(self, name: str) -> Block:
        for b in self.blocks:
            if b.name == name:
                return b
        raise LayoutError(f"no block {name!r} in layout (blocks: {[b.name for b in self.blocks]})")

    def __iter__(self) -> Iterator[Block]:
        return iter(self.blocks)

    @property
    def total(self) -> int:
        return value_of(self.length)

    def encode(self, arrays: Mapping[str, Any], fill: Any = 0) -> np.ndarray:
        """Place arrays into one token sequence (dtype object, so that any backend can read it)."""
        seq = np.empty(self.total, dtype=object)
        seq[:] = fill
        for name, arr in arrays.items():
            b = self[name]
            if b.channel != "tokens":
                raise LayoutError(f"block {name} lives in channel {b.channel!r}, not in the input tokens")
            a = as_array(arr)
            if a.shape != b.shape:
                raise LayoutError(f"{name} must have shape {b.shape}, got {a.shape}")
            seq[b.start : b.end] = a.reshape(-1)
        return seq

    def decode(self, seq: np.ndarray, name: str) -> np.ndarray:
        """Read a block back as an array (same dtype as the sequence)."""
        b = self[name]
        if len(seq) < b.end:
            raise LayoutError(f"sequence of length {len(seq)} is too short for block {name} ending at {b.end}")
        return np.asarray(seq)[b.start : b.end].reshape(b.shape)

    def describe(self) -> list[dict[str, Any]]:
        return [
            {"name": b.name, "offset": b.start, "shape": b.shape, "offset_expr": E.render(b.offset)}
            for b in self.blocks
        ]


def _max_end(blocks: tuple[Block, ...]) -> E.Expr:
    """max(0, end of each block), each distinct end once (blocks often share one: keeps proofs small)."""
    out: E.Expr = E.Const(0)
    for end in {E.render(e): e for e in (b.end_expr() for b in blocks)}.values():
        out = E.emax(out, end)
    return out


def as_array(x: Any) -> np.ndarray:
    """NumPy arrays, nested lists and SymPy matrices as NumPy arrays (object dtype kept)."""
    if sympy_instance(x, "MatrixBase"):
        return np.array(x.tolist(), dtype=object)
    return np.asarray(x)


@dataclass(frozen=True, eq=False)
class MatRef:
    """A matrix inside a program: the SOp holding it and the block where it lives."""

    sop: C.SOp
    block: Block
    aux: tuple[Block, ...] = ()

    @property
    def shape(self) -> tuple[int, ...]:
        return self.block.shape


@dataclass(frozen=True, eq=False)
class Grid:
    """A row-major array of any rank at an offset: entry (c0, ..., c_{r-1}) sits at
    ``offset + ((c0 d1 + c1) d2 + ...) + c_{r-1}``.  Its :attr:`block` is the same positions seen
    as a Block (leading axes flattened into the stack), so layouts and proofs read it unchanged."""

    name: str
    axes: tuple[str, ...]
    dims: tuple[E.Expr, ...]
    block: Block

    @staticmethod
    def of(name: str, offset: E.Expr | int, channel: str = "tokens", **dims: E.Expr | int) -> Grid:
        """``Grid.of("P", 0, channel="P", t=3, h=H, i=N)``: axes in the order given."""
        return Grid.from_dims(name, offset, dims, channel)

    @staticmethod
    def from_dims(name: str, offset: E.Expr | int, dims: Mapping[str, E.Expr | int], channel: str = "tokens") -> Grid:
        """A grid with axes ``dims`` (name -> size, in order)."""
        if not dims:
            raise LayoutError(f"grid {name} needs at least one axis")
        ds = tuple(E.lift(v) for v in dims.values())
        full = (E.Const(1), E.Const(1), *ds)
        stack: E.Expr = E.Const(1)
        for d in full[:-2]:
            stack = d if isinstance(stack, E.Const) and stack.value == 1 else stack * d
        blk = Block.of(name, offset, full[-2], full[-1], stack, channel=channel)
        return Grid(name, tuple(dims), ds, blk)

    @property
    def channel(self) -> str:
        return self.block.channel

    @property
    def offset(self) -> E.Expr:
        return self.block.offset

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(value_of(d) for d in self.dims)

    def dim(self, axis: str) -> E.Expr:
        return self.dims[self.axes.index(axis)]

    def end_expr(self) -> E.Expr:
        return self.block.end_expr()

    def contains(self, p: E.Expr) -> E.Expr:
        return self.block.contains(p)

    def position(self, *coords: E.Expr | int, **named: E.Expr | int) -> E.Expr:
        """The position of an entry, by coordinates in axis order or by axis name."""
        cs = list(coords) if coords else [named[a] for a in self.axes]
        if len(cs) != len(self.dims):
            raise LayoutError(f"grid {self.name} has axes {self.axes}, got {len(cs)} coordinates")
        flat: E.Expr = E.lift(cs[0])
        for c, d in zip(cs[1:], self.dims[1:], strict=True):
            flat = flat * d + E.lift(c)
        return self.offset + flat

    def coords(self, p: E.Expr) -> dict[str, E.Expr]:
        """Axis name -> coordinate of position p (meaningful when p is inside the grid)."""
        rel: E.Expr = p - self.offset
        out: dict[str, E.Expr] = {}
        for a, d in zip(reversed(self.axes[1:]), reversed(self.dims[1:]), strict=True):
            out[a] = rel % d
            rel = rel // d
        out[self.axes[0]] = rel
        return {a: out[a] for a in self.axes}

    def positions(self) -> np.ndarray:
        return self.block.positions().reshape(self.shape)


@dataclass(frozen=True, eq=False)
class GridRef:
    """An array inside a program: the SOp holding it and the grid where it lives."""

    sop: C.SOp
    grid: Grid
