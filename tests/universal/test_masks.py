"""Attention masks in the reference layer T, with torch's meaning (attnsim.universal.masks)."""

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attnsim import TransformerLayer
from attnsim.universal.errors import SimulatorError
from attnsim.universal.masks import AttentionMask, attention_mask, causal, split_key_padding

NEG = -math.inf


def test_bool_src_mask_blocks_where_true() -> None:
    m = np.array([[False, True, False], [False, False, True], [True, False, False]])
    mask = attention_mask(3, src_mask=m)
    assert np.array_equal(mask.blocked, m) and np.array_equal(mask.additive, np.zeros((3, 3)))


def test_float_src_mask_minus_inf_blocks_finite_entries_add() -> None:
    """-inf becomes a flag; every finite entry, -1e9 included, stays additive (finite)."""
    m = np.array([[0.0, NEG, 0.5], [-1e9, 0.0, NEG], [1.5, -2.0, 0.0]])
    mask = attention_mask(3, src_mask=m)
    assert np.array_equal(mask.blocked, np.isneginf(m))
    assert np.array_equal(mask.additive, np.where(np.isneginf(m), 0.0, m))
    assert np.all(np.isfinite(mask.additive)) and mask.additive[1, 0] == -1e9


def test_is_causal_alone_and_with_src_mask() -> None:
    """is_causal blocks key j > query i (torch's documentation); with src_mask both apply."""
    assert np.array_equal(attention_mask(4, is_causal=True).blocked, np.triu(np.ones((4, 4), bool), 1))
    m = np.zeros((4, 4))
    m[3, 0] = NEG
    m[2, 1] = 0.25
    both = attention_mask(4, src_mask=m, is_causal=True)
    assert np.array_equal(both.blocked, causal(4) | np.isneginf(m))
    assert both.additive[2, 1] == 0.25


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_key_padding_blocks_a_key_for_every_query(kind: str) -> None:
    pad = np.array([False, True, False])
    m = pad if kind == "bool" else np.where(pad, NEG, 0.0)
    mask = attention_mask(3, src_key_padding_mask=m)
    assert np.array_equal(mask.blocked, np.tile(pad, (3, 1)))
    add = attention_mask(3, src_key_padding_mask=np.array([0.5, 0.0, -1.0]))
    assert np.array_equal(add.additive, np.tile([0.5, 0.0, -1.0], (3, 1))) and not add.blocked.any()


def test_split_key_padding() -> None:
    pads = split_key_padding(np.array([[True, False], [False, False]]), 2, 2)
    assert [p.tolist() for p in pads] == [[True, False], [False, False]]  # type: ignore[union-attr]
    assert split_key_padding(None, 3, 2) == [None, None, None]


BAD = [
    ({"src_mask": np.zeros((3, 2))}, r"^src_mask must have shape \(3, 3\), got \(3, 2\)$"),
    ({"src_mask": np.zeros((2, 3, 3))}, r"^src_mask of shape \(2, 3, 3\): 3-D per-head masks .* not supported"),
    ({"src_mask": np.full((3, 3), math.inf)}, r"^src_mask contains \+inf"),
    ({"src_mask": np.full((3, 3), math.nan)}, r"^src_mask contains NaN$"),
    ({"src_mask": np.zeros((3, 3), dtype=int)}, r"^src_mask must be a bool or float array \(as torch\), got dtype int"),
    (
        {"src_mask": np.array([[sp.Symbol("a")] * 3] * 3)},
        r"^src_mask must be a bool or float array .* got dtype object",
    ),
    (
        {"src_key_padding_mask": np.zeros((1, 3), bool)},
        r"^src_key_padding_mask must have shape \(3,\) for one sequence",
    ),
    ({"src_key_padding_mask": np.array([0.0, math.nan, 0.0])}, r"^src_key_padding_mask contains NaN$"),
    ({"src_key_padding_mask": np.array([0.0, math.inf, 0.0])}, r"^src_key_padding_mask contains \+inf"),
    ({"is_causal": 1}, r"^is_causal must be a bool, got 1$"),
    ({"src_mask": np.full((3, 3), -1e308), "src_key_padding_mask": np.full(3, -1e308)}, "overflows float64"),
]


@pytest.mark.parametrize(("kw", "msg"), BAD)
def test_bad_mask_inputs_are_one_line_errors(kw: dict, msg: str) -> None:
    with pytest.raises(SimulatorError, match=msg) as err:
        attention_mask(3, **kw)
    assert "\n" not in str(err.value)
    T = TransformerLayer.random(4, 2, 2, seed=0)
    with pytest.raises(SimulatorError, match=msg):  # the same error through T
        T(np.zeros((3, 4)), **kw)


@pytest.mark.parametrize(
    "kw",
    [
        {"src_mask": np.array([[False, False, False], [True, True, True], [False, False, False]])},
        {"src_mask": np.array([[0.0, 0.0, 0.0], [NEG, NEG, NEG], [0.0, 0.0, 0.0]])},
        {"is_causal": True, "src_key_padding_mask": np.array([True, False, False])},  # query 0 sees only key 0
        {"src_mask": causal(3).T, "is_causal": True},  # anti-causal + causal: only the diagonal stays
        {"src_mask": causal(3).T | np.eye(3, dtype=bool), "is_causal": True},
    ],
)
def test_fully_masked_row_raises_never_nan(kw: dict) -> None:
    T = TransformerLayer.random(4, 2, 2, d_ff=3, seed=0, residual=True, norm="post")
    try:
        mask = attention_mask(3, **kw)
    except SimulatorError as exc:
        assert str(exc).startswith("query ") and "has every key masked" in str(exc)
        with pytest.raises(SimulatorError, match=r"^query \d has every key masked"):
            T(np.ones((3, 4)), **kw)
    else:  # the diagonal case: every query keeps its own key
        assert not mask.blocked.all(axis=1).any()
        assert np.all(np.isfinite(T(np.ones((3, 4)), **kw)))


def test_batch_fully_masked_row_names_the_element() -> None:
    T = TransformerLayer.random(4, 1, 2, seed=0)
    pad = np.array([[False, False], [True, True]])
    with pytest.raises(SimulatorError, match=r"^batch element 1: query 0 has every key masked"):
        T(np.zeros((2, 2, 4)), src_key_padding_mask=pad)
    with pytest.raises(SimulatorError, match=r"^src_key_padding_mask must have shape \(2, 2\) for a batch, got \(2,\)"):
        T(np.zeros((2, 2, 4)), src_key_padding_mask=np.array([False, True]))


def test_attention_mask_object_checks() -> None:
    with pytest.raises(SimulatorError, match="must both have shape"):
        AttentionMask(np.zeros((2, 2)), np.zeros((2, 3), bool))
    with pytest.raises(SimulatorError, match="additive mask must be finite"):
        AttentionMask(np.array([[0.0, NEG], [0.0, 0.0]]), np.zeros((2, 2), bool))
    mask = attention_mask(2, is_causal=True)
    with pytest.raises(SimulatorError, match=r"logits must have shape \(2, 2\)"):
        mask.apply(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="read-only"):
        mask.blocked[0, 1] = False
    with pytest.raises(SimulatorError, match="n must be a positive int"):
        attention_mask(0)
    T = TransformerLayer.random(4, 1, 2, seed=0)
    with pytest.raises(SimulatorError, match="mask is for 2 tokens, the input has 3"):
        T.attention(np.zeros((3, 4)), mask)


def _naive(s: np.ndarray, mask: AttentionMask) -> np.ndarray:
    e = np.where(mask.blocked, 0.0, np.exp(s + mask.additive))
    return e / e.sum(axis=1, keepdims=True)


masks_and_logits = st.integers(1, 5).flatmap(
    lambda n: st.tuples(
        hnp.arrays(np.float64, (n, n), elements=st.floats(-30, 30)),
        hnp.arrays(np.bool_, (n, n)),
        hnp.arrays(np.float64, (n, n), elements=st.floats(-5, 5)),
    )
)


@settings(max_examples=200, deadline=None)
@given(masks_and_logits, st.floats(-1e4, 1e4))
def test_masked_softmax_properties(data: tuple, shift: float) -> None:
    """apply = exp over the unblocked keys of (logit + additive), normalized: 0 at blocked keys,
    rows sum to 1, the naive formula where it does not overflow, and invariant to a row shift."""
    s, blocked, additive = data
    n = s.shape[0]
    blocked[np.arange(n), np.arange(n)] = False  # keep each query's own key
    mask = AttentionMask(additive, blocked)
    p = mask.apply(s)
    assert np.all(p[blocked] == 0) and np.all(p >= 0)
    np.testing.assert_allclose(p.sum(axis=1), 1, rtol=0, atol=1e-14)
    np.testing.assert_allclose(p, _naive(s, mask), rtol=0, atol=1e-14)
    np.testing.assert_allclose(mask.apply(s + shift), p, rtol=0, atol=1e-12)


def test_masked_softmax_is_stable_for_wide_rows() -> None:
    """A logit row spread over 2000 (> 1418: no fixed shift keeps every exp finite): still exact."""
    s = np.array([[1000.0, 0.0, -1000.0], [-1000.0, 0.0, 1000.0], [800.0, 801.0, 0.0]])
    mask = attention_mask(3, src_mask=np.array([[0.0, 0.0, 0.0], [0.0, 0.0, NEG], [0.0, 0.0, 0.0]]))
    with np.errstate(over="raise", invalid="raise", divide="raise"):  # underflow to 0 is exact enough
        p = mask.apply(s)
    want = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1 / (1 + math.e), 1 / (1 + 1 / math.e), 0.0]])
    np.testing.assert_allclose(p, want, rtol=0, atol=1e-15)


def test_bool_and_minus_inf_masks_give_the_same_output() -> None:
    rng = np.random.default_rng(0)
    T = TransformerLayer.random(6, 3, 2, d_ff=5, seed=1, residual=True, norm="pre", activation="gelu")
    x = rng.normal(size=(2, 4, 6))
    b = rng.random((4, 4)) < 0.4
    b[np.arange(4), np.arange(4)] = False
    pad = np.array([[False, False, True, False], [False, True, True, False]])
    got_bool = T(x, src_mask=b, src_key_padding_mask=pad)
    got_float = T(x, src_mask=np.where(b, NEG, 0.0), src_key_padding_mask=np.where(pad, NEG, 0.0))
    assert np.array_equal(got_bool, got_float)
    assert np.max(np.abs(got_bool - T(x))) > 1e-3  # the mask does something


def test_masked_layer_by_hand() -> None:
    """T with a mask: each head's softmax over the unblocked keys of scale q.k + additive."""
    rng = np.random.default_rng(3)
    T = TransformerLayer.random(4, 2, 3, seed=2)
    x = rng.normal(size=(4, 4))
    m = rng.normal(size=(4, 4))
    m[0, 1] = -1e9
    mask = attention_mask(4, src_mask=m, is_causal=True)
    heads = []
    for h in range(2):
        q, k, v = x @ T.w_q[h] + T.b_q[h], x @ T.w_k[h] + T.b_k[h], x @ T.w_v[h] + T.b_v[h]
        s = q @ k.T / math.sqrt(3) + m
        e = np.where(np.triu(np.ones((4, 4)), 1) > 0, 0.0, np.exp(s))
        heads.append(e / e.sum(axis=1, keepdims=True) @ v)
    want = np.hstack(heads) @ T.w_o + T.b_o
    assert np.max(np.abs(T(x, src_mask=m, is_causal=True) - want)) <= 1e-14
    assert np.array_equal(T(x, src_mask=m, is_causal=True), T.attention(x, mask))


def test_batch_padding_is_per_element() -> None:
    T = TransformerLayer.random(4, 2, 2, d_ff=3, seed=0, residual=True, norm="post")
    x = np.random.default_rng(1).normal(size=(3, 3, 4))
    pad = np.array([[False, False, False], [False, False, True], [True, False, True]])
    got = T(x, src_key_padding_mask=pad, is_causal=False)
    for b in range(3):
        assert np.array_equal(got[b], T(x[b], src_key_padding_mask=pad[b]))
    assert np.array_equal(got[0], T(x[0]))  # no padding: the unmasked layer


def test_symbolic_input_with_a_numeric_mask() -> None:
    """Masks are numeric; SymPy inputs and weights still run (plain exp / sum over unblocked keys)."""
    T = TransformerLayer.symbolic(d_model=2, n_heads=1, d_head=1)
    x = sp.Matrix(2, 2, sp.symbols("x0:4", real=True))
    y = T(x, is_causal=True)
    assert y.dtype == object
    # query 0 sees key 0 only: its output is v_0 W_o + b_o, free of token 1
    assert not {sp.Symbol("x2", real=True), sp.Symbol("x3", real=True)} & sp.sympify(y[0, 0]).free_symbols
    unmasked = T(x)
    assert {sp.Symbol("x2", real=True)} <= sp.sympify(unmasked[0, 0]).free_symbols
