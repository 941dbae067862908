"""The input map of <T, X>: which token holds which entry of T, of X or of the masks.

One declaration, read by ``encode`` (which generates the token sequence from it) and by the
proofs (which decode a token position into the entry it holds), so that an offset cannot be
written twice.  Every token is 0, a gate, a size, or **one entry** of T's parameters, of X or
of the mask block: no product of T's matrices is computed here (U computes them).

An entry of a grid whose true shape is smaller than the capacity sits at the same coordinates
(zero padding at the far end of every axis).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.layout import Grid, value_of
from attnsim.universal.layer import TransformerLayer

GATES = ("residual", "pre", "post", "gelu", "gelu_tanh", "ffn", "scale", "eps")
HEADER = ("n", "d", "ptr")


TRUE = ("n", "d", "hh", "k", "f")  # the simulated layer's true sizes, one per capacity symbol N, D, H, K, F
CAPACITY = dict(zip(TRUE, "NDHKF", strict=True))


@dataclass(frozen=True)
class Source:
    """Where a grid's entries come from, in the coordinates of the specification's operands
    (:data:`attnsim.universal.spec.ENCODER_LAYER`: torch's layout, a matrix operand indexed
    ``[0, row, col]``, a vector ``[0, 0, entry]``, a scalar ``[0, 0, 0]``).

    ``operand``: the operand's name, or one name per coordinate of the grid's first axis (the
    header and the gates); ``index(cs, sz)``: the operand entry of grid coordinates ``cs`` at true
    sizes ``sz`` (plain arithmetic: it runs on ints, numpy index arrays and SymPy symbols alike);
    ``true``: per axis, the name of the true size bounding it (``TRUE``) or None (the full axis).
    An entry with some coordinate at or past its true size is 0 (padding)."""

    operand: str | tuple[str, ...]
    index: Callable[[Mapping[str, Any], Mapping[str, Any]], tuple[Any, Any, Any]]
    true: tuple[str | None, ...]


def _row(part: Any, cs: Mapping[str, Any], sz: Mapping[str, Any]) -> Any:
    """The in_proj row of part t (0, 1, 2: q, k, v), head h, coordinate c: t hh k + h k + c."""
    return part * sz["hh"] * sz["k"] + cs["h"] * sz["k"] + cs["c"]


X_SOURCE = Source("X", lambda cs, sz: (0, cs["i"], cs["l"]), ("n", "d"))
HEADER_SOURCE = Source(HEADER, lambda cs, sz: (0, 0, 0), (None,))
MASK_SOURCES = (
    Source("additive", lambda cs, sz: (0, cs["i"], cs["j"]), ("n", "n")),
    Source("blocked", lambda cs, sz: (0, cs["i"], cs["j"]), ("n", "n")),
)

# name, axes (axis, capacity symbol or a number), the source of its entries
RECORD: tuple[tuple[str, tuple[tuple[str, str], ...], Source], ...] = (
    ("gates", (("g", str(len(GATES))),), Source(GATES, lambda cs, sz: (0, 0, 0), (None,))),
    (
        "wqkv",
        (("t", "3"), ("h", "H"), ("l", "D"), ("c", "K")),
        Source("in_proj_weight", lambda cs, sz: (0, _row(cs["t"], cs, sz), cs["l"]), (None, "hh", "d", "k")),
    ),
    (
        "bqkv",
        (("t", "3"), ("h", "H"), ("c", "K")),
        Source("in_proj_bias", lambda cs, sz: (0, 0, _row(cs["t"], cs, sz)), (None, "hh", "k")),
    ),
    (
        "wo",
        (("h", "H"), ("c", "K"), ("e", "D")),
        Source("out_proj_weight", lambda cs, sz: (0, cs["e"], cs["h"] * sz["k"] + cs["c"]), ("hh", "k", "d")),
    ),
    ("bo", (("e", "D"),), Source("out_proj_bias", lambda cs, sz: (0, 0, cs["e"]), ("d",))),
    ("w1", (("e", "D"), ("f", "F")), Source("linear1_weight", lambda cs, sz: (0, cs["f"], cs["e"]), ("d", "f"))),
    ("b1", (("f", "F"),), Source("linear1_bias", lambda cs, sz: (0, 0, cs["f"]), ("f",))),
    ("w2", (("f", "F"), ("e", "D")), Source("linear2_weight", lambda cs, sz: (0, cs["e"], cs["f"]), ("f", "d"))),
    ("b2", (("e", "D"),), Source("linear2_bias", lambda cs, sz: (0, 0, cs["e"]), ("d",))),
    ("g1", (("e", "D"),), Source("norm1_weight", lambda cs, sz: (0, 0, cs["e"]), ("d",))),
    ("be1", (("e", "D"),), Source("norm1_bias", lambda cs, sz: (0, 0, cs["e"]), ("d",))),
    ("g2", (("e", "D"),), Source("norm2_weight", lambda cs, sz: (0, 0, cs["e"]), ("d",))),
    ("be2", (("e", "D"),), Source("norm2_bias", lambda cs, sz: (0, 0, cs["e"]), ("d",))),
)


def _zero(symbolic: bool) -> Any:
    """An entry 0: SymPy's for a symbolic encoding (SymPy imported then only), else float64's."""
    if not symbolic:
        return 0.0
    import sympy as sp

    return sp.Integer(0)


def spec_operands(
    T: TransformerLayer, x: Any, additive: Any, blocked: Any, symbolic: bool = False
) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """T, X and the mask as the specification's operands (each a (1, rows, cols) array) and sizes.

    A layer without FFN has f = 1 and zero FFN operands (its grids stay zero)."""
    dt: Any = object if symbolic else np.float64
    hh, d, k = T.w_q.shape
    f = T.d_ff
    n = np.asarray(x).shape[0]
    rows = lambda w: np.concatenate([w[h].T for h in range(hh)])  # (hh, d, k) -> (hh k, d)
    vec = lambda v: np.asarray(v, dtype=dt).reshape(1, 1, -1)
    mat = lambda m: np.asarray(m, dtype=dt).reshape(1, *np.asarray(m).shape)
    one = lambda v: np.full((1, 1, 1), v, dtype=dt)
    none = lambda *shape: np.full(shape, _zero(symbolic), dtype=dt)  # no FFN: stays zero
    flags = {
        "residual": T.residual,
        "pre": T.norm == "pre",
        "post": T.norm == "post",
        "gelu": T.activation == "gelu",
        "gelu_tanh": T.activation == "gelu_tanh",
        "ffn": f is not None,
    }
    ops = {
        "X": mat(x),
        "in_proj_weight": mat(np.concatenate([rows(T.w_q), rows(T.w_k), rows(T.w_v)])),
        "in_proj_bias": vec(np.concatenate([T.b_q.ravel(), T.b_k.ravel(), T.b_v.ravel()])),
        "out_proj_weight": mat(T.w_o.T),
        "out_proj_bias": vec(T.b_o),
        "linear1_weight": mat(T.w1.T) if f else none(1, 1, d),
        "linear1_bias": vec(T.b1) if f else none(1, 1, 1),
        "linear2_weight": mat(T.w2.T) if f else none(1, d, 1),
        "linear2_bias": vec(T.b2) if f else none(1, 1, d),
        "norm1_weight": vec(T.ln1_weight),
        "norm1_bias": vec(T.ln1_bias),
        "norm2_weight": vec(T.ln2_weight),
        "norm2_bias": vec(T.ln2_bias),
        "additive": mat(additive),
        "blocked": mat(np.asarray(blocked).astype(np.int64)),
        **{nm: one(int(v)) for nm, v in flags.items()},
        "scale": one(T.scale),
        "eps": one(T.eps),
    }
    return ops, {"n": n, "d": d, "hh": hh, "k": k, "f": f or 1}


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

    def sources(self) -> tuple[tuple[Grid, Source], ...]:
        """Every grid of <T, X> (layer 0's record) with the source of its entries."""
        fixed = ((self.x, X_SOURCE), (self.header, HEADER_SOURCE))
        masks = tuple(zip((self.mask_add, self.mask_blocked), MASK_SOURCES, strict=True))
        return fixed + masks + tuple((g, src) for g, (_, _, src) in zip(self.record, RECORD, strict=True))

    def describe(self, grid: str, position: int, sizes: Mapping[str, int]) -> str | None:
        """The entry of T, X or the masks that ``position`` holds in ``grid`` at capacity ``sizes``
        (N, D, H, K, F; each true size taken at its capacity), e.g. ``in_proj_weight[0, 5, 1]``;
        None when ``grid`` is not a grid of the map or the position lies outside it."""
        found = next(((g, src) for g, src in self.sources() if g.name == grid), None)
        if found is None:
            return None
        g, src = found
        env = dict(sizes)
        rel = position - int(g.offset.evaluate(env))
        dims = [int(d.evaluate(env)) for d in g.dims]
        if not 0 <= rel < int(np.prod(dims)):
            return None
        cs = dict(zip(g.axes, (int(c) for c in np.unravel_index(rel, dims)), strict=True))
        sz = {t: env.get(c, 1) for t, c in CAPACITY.items()}
        h, i, j = src.index(cs, sz)
        name = src.operand[cs[g.axes[0]]] if isinstance(src.operand, tuple) else src.operand
        at = ", ".join(f"{a}={v}" for a, v in cs.items())
        return f"{name}[{h}, {i}, {j}] ({g.name} at {at})"

    def stacking(self, records: E.Expr | int) -> Stacking:
        """Where <T1..T_records, X> takes each token: before ``base`` from layer 0's one-layer
        encoding at the same place, at ``base + l S + r`` from layer l's at ``base + r``; the
        stack's base case proves this for every capacity and record count."""
        at, base, size = STACKED_AT, self.base, self.record_size
        past = at >= base
        return Stacking(
            E.if_(past, (at - base) // size, 0), E.if_(past, base + (at - base) % size, at), base + records * size
        )

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
        """The token sequence of length ``total``: token p below the stacking's end is its layer's
        one-layer encoding (each grid filled from its declared source; X, header and masks in layer
        0's only) at its slot; the rest 0."""
        zero = _zero(symbolic)
        dtype = object if symbolic else np.float64
        one = np.full((len(layers), value_of(self.base + self.record_size)), zero, dtype=dtype)

        def put(row: np.ndarray, g: Grid, src: Source, ops: dict[str, np.ndarray], sz: dict[str, int]) -> None:
            block = np.full(g.shape, zero, dtype=dtype)
            true = tuple(full if t is None else sz[t] for t, full in zip(src.true, g.shape, strict=True))
            cs = dict(zip(g.axes, np.indices(true), strict=True))
            corner = tuple(slice(0, t) for t in true)
            if isinstance(src.operand, tuple):  # one operand per coordinate of the first axis
                for c in range(true[0]):
                    h, i, j = src.index({a: v[c] for a, v in cs.items()}, sz)
                    block[c] = ops[src.operand[c]][h, i, j]
            else:
                idx = np.broadcast_arrays(*src.index(cs, sz), cs[g.axes[0]])[:3]
                block[corner] = ops[src.operand][idx[0], idx[1], idx[2]]
            start = value_of(g.offset)
            row[start : start + block.size] = block.reshape(-1)

        for li, T in enumerate(layers):
            ops, sz = spec_operands(T, x, additive, blocked, symbolic)
            for nm, v in (("n", sz["n"]), ("d", sz["d"]), ("ptr", pointer)):
                ops[nm] = np.full((1, 1, 1), int(v), dtype=object)
            # X, header and masks only in layer 0's row: the stacking reads them from layer 0 alone
            for g, src in self.sources() if li == 0 else self.sources()[-len(self.record) :]:
                put(one[li], g, src, ops, sz)
        place = self.stacking(len(layers))
        end = value_of(place.end)
        if end > total:
            raise ValueError(f"encode: {len(layers)} records need {end} tokens, the sequence has {total}")
        seq = np.full(total, zero, dtype=dtype)
        env = {**C.size_bindings(place.end), STACKED_AT.name: np.arange(end, dtype=np.int64)}
        seq[:end] = one[place.layer.evaluate(env), place.slot.evaluate(env)]
        return seq


STACKED_AT = E.Var("at!")  # a token's position in <T1..TM, X>


@dataclass(frozen=True)
class Stacking:
    """Where <T1..TM, X> takes token ``at`` (:data:`STACKED_AT`) below ``end``: from layer
    ``layer``'s one-layer encoding at ``slot``; from ``end`` on it is 0.  One declaration,
    evaluated by :meth:`InputMap.encode` and read by the stack's base case."""

    layer: E.Expr
    slot: E.Expr
    end: E.Expr
