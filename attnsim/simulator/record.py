"""The input map of <T, X>: which token holds which entry of T, of X or of the masks.

One declaration, read by ``encode`` (which generates the token sequence from it) and by the
proofs (which decode a token position into the entry it holds), so that an offset cannot be
written twice.  Every token is 0, a gate, a size, or **one entry** of T's parameters, of X or
of the mask block: no product of T's matrices is computed here (U computes them).

An entry of a grid whose true shape is smaller than the capacity sits at the same coordinates
(zero padding at the far end of every axis).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.layout import Grid
from attnsim.simulator.reference import TransformerLayer

GATES = ("residual", "pre", "post", "gelu", "ffn", "scale", "eps")
HEADER = ("n", "d", "ptr")


def _gates(T: TransformerLayer) -> list[Any]:
    flags = [T.residual, T.norm == "pre", T.norm == "post", T.activation == "gelu", T.w1 is not None]
    return [int(f) for f in flags] + [T.scale, T.eps]


def _ffn(T: TransformerLayer, what: str) -> Any:
    """An FFN parameter, or an empty array when T has no FFN (the grid stays zero)."""
    v = getattr(T, what)
    if v is None:
        return np.zeros((0,) * (2 if what in ("w1", "w2") else 1))
    return v


# name, axes (capacity symbols), the entry of T: (T) -> array whose shape is a prefix-corner of the grid
RECORD: tuple[tuple[str, tuple[tuple[str, str], ...], Callable[[TransformerLayer], Any]], ...] = (
    ("gates", (("g", str(len(GATES))),), lambda T: np.array(_gates(T), dtype=object)),
    ("wqkv", (("t", "3"), ("h", "H"), ("l", "D"), ("c", "K")), lambda T: np.stack([T.w_q, T.w_k, T.w_v])),
    ("bqkv", (("t", "3"), ("h", "H"), ("c", "K")), lambda T: np.stack([T.b_q, T.b_k, T.b_v])),
    ("wo", (("h", "H"), ("c", "K"), ("e", "D")), lambda T: T.w_o.reshape(T.n_heads, T.d_head, T.d_model)),
    ("bo", (("e", "D"),), lambda T: T.b_o),
    ("w1", (("e", "D"), ("f", "F")), lambda T: _ffn(T, "w1")),
    ("b1", (("f", "F"),), lambda T: _ffn(T, "b1")),
    ("w2", (("f", "F"), ("e", "D")), lambda T: _ffn(T, "w2")),
    ("b2", (("e", "D"),), lambda T: _ffn(T, "b2")),
    ("g1", (("e", "D"),), lambda T: T.ln1_weight),
    ("be1", (("e", "D"),), lambda T: T.ln1_bias),
    ("g2", (("e", "D"),), lambda T: T.ln2_weight),
    ("be2", (("e", "D"),), lambda T: T.ln2_bias),
)


@dataclass(frozen=True)
class InputMap:
    """The grids of <T, X> at a capacity: X, header, masks, then one record per layer."""

    x: Grid
    header: Grid
    mask_add: Grid
    mask_blocked: Grid
    record: tuple[Grid, ...]  # layer 0's record (the one a pass reads); layer l sits l * record_size later
    base: E.Expr
    record_size: E.Expr

    @staticmethod
    def of(sizes: dict[str, E.Expr]) -> InputMap:
        """The map for capacity symbols ``sizes`` (N, D, H, K, F: ints or Size symbols)."""
        N, D = sizes["N"], sizes["D"]
        x = Grid.of("X", 0, i=N, l=D)
        header = Grid.of("header", x.end_expr(), s=len(HEADER))
        add = Grid.of("mask_add", header.end_expr(), i=N, j=N)
        blocked = Grid.of("mask_blocked", add.end_expr(), i=N, j=N)
        off: E.Expr = blocked.end_expr()
        base = off
        grids = []
        for name, axes, _ in RECORD:
            dims = {a: (E.lift(int(s)) if s.isdigit() else sizes[s]) for a, s in axes}
            g = Grid.from_dims(name, off, dims)
            grids.append(g)
            off = g.end_expr()
        return InputMap(x, header, add, blocked, tuple(grids), base, off - base)

    def grid(self, name: str) -> Grid:
        for g in self.record:
            if g.name == name:
                return g
        raise KeyError(name)

    def gate_position(self, name: str) -> E.Expr:
        return self.grid("gates").position(GATES.index(name))

    def header_position(self, name: str) -> E.Expr:
        return self.header.position(HEADER.index(name))

    @property
    def grids(self) -> tuple[Grid, ...]:
        return (self.x, self.header, self.mask_add, self.mask_blocked, *self.record)

    # -- encoding, generated from the map ------------------------------------------------------
    def encode(
        self,
        layers: list[TransformerLayer],
        x: np.ndarray,
        additive: np.ndarray,
        blocked: np.ndarray,
        total: int,
        pointer: int = 0,
        symbolic: bool = False,
    ) -> np.ndarray:
        """The token sequence of length ``total``: each grid filled from its declared source."""
        import sympy as sp

        zero: Any = sp.Integer(0) if symbolic else 0.0
        seq = np.full(total, zero, dtype=object if symbolic else np.float64)
        n, d = x.shape

        def put(g: Grid, arr: Any, shift: E.Expr | int = 0) -> None:
            a = np.asarray(arr, dtype=object if symbolic else None)
            block = np.full(g.shape, zero, dtype=object if symbolic else np.float64)
            if a.size:
                block[tuple(slice(0, s) for s in a.shape)] = a
            start = _val(g.offset + shift)
            seq[start : start + block.size] = block.reshape(-1)

        put(self.x, x)
        put(self.header, np.array([n, d, pointer], dtype=object))
        put(self.mask_add, additive)
        put(self.mask_blocked, blocked.astype(np.int64))
        size = _val(self.record_size)
        for li, T in enumerate(layers):
            for g, (_, _, source) in zip(self.record, RECORD, strict=True):
                put(g, source(T), li * size)
        return seq


def _val(e: E.Expr | int) -> int:
    e = E.lift(e)
    return int(e.evaluate(C.size_bindings(e)))
