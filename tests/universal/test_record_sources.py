"""The input map's sources (spec operand coordinates) generate the same <T, X> as T's own arrays
placed grid by grid (the encoding before the sources existed, kept here as the reference)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
import sympy as sp

from attnsim import TransformerLayer
from attnsim.rasp.layout import value_of as _val
from attnsim.universal.masks import attention_mask
from attnsim.universal.record import GATES, InputMap
from attnsim.universal.universal import UniversalSimulator


def _by_arrays(
    im: InputMap, layers: list[TransformerLayer], x: Any, add: Any, blk: Any, total: int, ptr: int, symbolic: bool
) -> np.ndarray:
    """Each grid filled with T's array at its corner (the old getters)."""
    zero: Any = sp.Integer(0) if symbolic else 0.0
    seq = np.full(total, zero, dtype=object if symbolic else np.float64)

    def ffn(T: TransformerLayer, what: str) -> Any:
        v = getattr(T, what)
        return np.zeros((0,) * (2 if what in ("w1", "w2") else 1)) if v is None else v

    def gates(T: TransformerLayer) -> Any:
        acts = [T.activation == "gelu", T.activation == "gelu_tanh"]
        flags = [T.residual, T.norm == "pre", T.norm == "post", *acts, T.w1 is not None]
        return np.array([int(f) for f in flags] + [T.scale, T.eps], dtype=object)

    getters = {
        "gates": gates,
        "wqkv": lambda T: np.stack([T.w_q, T.w_k, T.w_v]),
        "bqkv": lambda T: np.stack([T.b_q, T.b_k, T.b_v]),
        "wo": lambda T: T.w_o.reshape(T.n_heads, T.d_head, T.d_model),
        "bo": lambda T: T.b_o,
        "w1": lambda T: ffn(T, "w1"),
        "b1": lambda T: ffn(T, "b1"),
        "w2": lambda T: ffn(T, "w2"),
        "b2": lambda T: ffn(T, "b2"),
        "g1": lambda T: T.ln1_weight,
        "be1": lambda T: T.ln1_bias,
        "g2": lambda T: T.ln2_weight,
        "be2": lambda T: T.ln2_bias,
    }

    def put(g: Any, arr: Any, shift: int = 0) -> None:
        a = np.asarray(arr, dtype=object if symbolic else None)
        block = np.full(g.shape, zero, dtype=object if symbolic else np.float64)
        if a.size:
            block[tuple(slice(0, s) for s in a.shape)] = a
        start = _val(g.offset) + shift
        seq[start : start + block.size] = block.reshape(-1)

    n, d = np.asarray(x).shape
    put(im.x, x)
    put(im.header, np.array([n, d, ptr], dtype=object))
    put(im.mask_add, add)
    put(im.mask_blocked, np.asarray(blk).astype(np.int64))
    size = _val(im.record_size)
    for li, T in enumerate(layers):
        for g in im.record:
            put(g, getters[g.name](T), li * size)
    return seq


def _layer(rng: np.random.Generator, d: int, h: int, k: int, f: int | None, **kw: Any) -> TransformerLayer:
    r = lambda *s: rng.normal(size=s)
    ffn = {"w1": r(d, f), "b1": r(f), "w2": r(f, d), "b2": r(d)} if f else {}
    return TransformerLayer(
        w_q=r(h, d, k), w_k=r(h, d, k), w_v=r(h, d, k), w_o=r(h * k, d), b_q=r(h, k), b_k=r(h, k), b_v=r(h, k),
        b_o=r(d), ln1_weight=r(d), ln1_bias=r(d), ln2_weight=r(d), ln2_bias=r(d), **ffn, **kw,
    )  # fmt: skip


@pytest.mark.parametrize(
    "residual, norm, act",
    list(itertools.product([False, True], ["none", "pre", "post"], ["relu", "gelu", "gelu_tanh"])),
)
def test_sources_encode_bit_for_bit(residual: bool, norm: str, act: str) -> None:
    rng = np.random.default_rng(7)
    u = UniversalSimulator(4, 4, 3, 3, 4)
    for f, n, d, h, k in itertools.product([None, 2, 4], [1, 3, 4], [1, 4], [1, 3], [1, 3]):
        layers = [_layer(rng, d, h, k, f, residual=residual, norm=norm, activation=act, eps=1e-3) for _ in range(2)]
        x = rng.normal(size=(n, d))
        m = attention_mask(n, src_mask=rng.normal(size=(n, n)), is_causal=True)
        got = u.map.encode(layers, x, m.additive, m.blocked, u.positions(2), 1)
        want = _by_arrays(u.map, layers, x, m.additive, m.blocked, u.positions(2), 1, False)
        assert got.dtype == want.dtype and np.array_equal(got, want), (f, n, d, h, k)


def test_sources_encode_symbolic_identical() -> None:
    u = UniversalSimulator(3, 3, 2, 2, 3)
    rng = np.random.default_rng(3)
    for f in (None, 2):
        T = _layer(rng, 2, 1, 2, f)
        xs = np.array(sp.symbols("x0:4"), dtype=object).reshape(2, 2)
        got = u.map.encode([T], xs, np.zeros((2, 2)), np.zeros((2, 2), bool), u.positions(1), 0, True)
        want = _by_arrays(u.map, [T], xs, np.zeros((2, 2)), np.zeros((2, 2), bool), u.positions(1), 0, True)
        assert all(a == b and type(a) is type(b) for a, b in zip(got, want, strict=True))


def test_every_grid_has_a_source() -> None:
    im = UniversalSimulator(3, 3, 2, 2, 3).map
    assert [g.name for g, _ in im.sources()] == [g.name for g in im.grids]
    assert im.sources()[-13][1].operand == GATES


def test_describe_names_the_entry_encode_writes() -> None:
    """``InputMap.describe`` (the entries a layout counterexample names) agrees with ``encode`` at
    every token of every record grid, at full capacity: the token holds the named operand entry."""
    import re

    from attnsim.universal.record import spec_operands

    u = UniversalSimulator(2, 3, 2, 2, 3)
    T = TransformerLayer.random(3, 2, 2, 3, seed=4)
    x = np.random.default_rng(4).standard_normal((2, 3))
    seq = u.encode(T, x)
    ops, _ = spec_operands(T, x, np.zeros((2, 2)), np.zeros((2, 2)))
    sizes = {"N": 2, "D": 3, "H": 2, "K": 2, "F": 3}
    seen = 0
    for g in u.map.record[1:]:  # every record grid but the gates (one operand per coordinate)
        start = _val(g.offset)
        for p in range(start, start + int(np.prod(g.shape))):
            said = u.map.describe(g.name, p, sizes)
            assert said is not None and said.endswith(")"), (g.name, p)
            m = re.match(r"(\w+)\[(\d+), (\d+), (\d+)\]", said)
            assert m is not None, said
            assert seq[p] == ops[m[1]][int(m[2]), int(m[3]), int(m[4])], (said, seq[p])
            seen += 1
    assert seen == int(_val(u.map.record_size)) - len(GATES)
    assert u.map.describe("nope", 0, sizes) is None
    assert u.map.describe("wqkv", 0, sizes) is None  # position 0 is X, outside wqkv
