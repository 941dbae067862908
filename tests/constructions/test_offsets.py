"""Proposition 1 and the lemmas' composable forms (transpose, matmul, Lemma 3 softmax, ReLU,
MaxMin): an operand anywhere in a longer sequence, i.e. at a NON-ZERO block offset, with junk
at every other position, gives the textbook result written out here.

U composes these forms at offsets far from 0, while each lemma's own construction puts its
operand at offset 0, where an index map that forgets the offset (p div c instead of
(p - offset) div c) is still right.  Exact results are compared with ``==`` (Fractions);
float64 softmax against NumPy within a stated, measured tolerance.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from attnsim import lemmas
from attnsim.rasp import core as C
from attnsim.rasp.engine import evaluate
from attnsim.rasp.layout import Block, MatRef

# float64 softmax at offsets against np_softmax: max error measured 4.4e-16 over 2,000 random
# draws of this file's strategies (entries N(0, 2^2)); the bound is ~20x that
SOFTMAX_TOL = 1e-14


def np_softmax(a: np.ndarray) -> np.ndarray:
    z = np.exp(a - a.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def _frac(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Random rationals in [-9, 9] with denominators up to 4, as an object array."""
    num, den = rng.integers(-9, 10, size=shape), rng.integers(1, 5, size=shape)
    out = np.empty(shape, dtype=object)
    for ix in np.ndindex(*shape):
        out[ix] = Fraction(int(num[ix]), int(den[ix]))
    return out


def _junk_sequence(rng: np.random.Generator, length: int, exact: bool) -> np.ndarray:
    """Every position holds junk until an operand is written over it (never 0: junk must show)."""
    if exact:
        return _frac(rng, (length,)) + 100
    return rng.normal(size=length) * 2 + 7


def _place(seq: np.ndarray, blk: Block, a: np.ndarray) -> None:
    seq[blk.start : blk.end] = a.reshape(-1)


def _read(out: np.ndarray, blk: Block) -> np.ndarray:
    return np.asarray(out)[blk.start : blk.end].reshape(blk.shape)


shapes = st.tuples(st.integers(1, 4), st.integers(1, 5), st.sampled_from([1, 2, 3]))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 13), st.integers(0, 5), shapes, st.booleans(), st.integers(0, 10**6))
@example(offset=4, pad=0, shape=(2, 3, 1), stable=False, seed=0)  # offset not a multiple of cols
def test_softmax_at_an_offset(offset: int, pad: int, shape: tuple[int, int, int], stable: bool, seed: int) -> None:
    """Lemma 3: row-wise softmax of a block at any offset; the junk around it is never read."""
    r, c, h = shape
    rng = np.random.default_rng(seed)
    blk = Block.of("A", offset, r, c, h)
    res, _ = lemmas.softmax_ref(MatRef(C.tokens, blk), name="p", stable=stable)
    seq = _junk_sequence(rng, offset + blk.size + pad, exact=False)
    a = rng.normal(size=blk.shape) * 2
    _place(seq, blk, a)
    assert res.block.start == offset
    got = _read(evaluate(res.sop, seq), res.block)
    assert np.max(np.abs(got - np_softmax(a))) <= SOFTMAX_TOL


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 13), st.integers(0, 5), shapes, st.integers(1, 5), st.booleans(), st.integers(0, 10**6))
@example(offset=4, pad=0, shape=(2, 3, 1), n=2, stable=False, seed=0)  # offset not a multiple of cols
def test_masked_softmax_at_an_offset(
    offset: int, pad: int, shape: tuple[int, int, int], n: int, stable: bool, seed: int
) -> None:
    """Lemma 3, masked (U's attention): columns j >= n are 0 and out of the sum, at any offset;
    n is a runtime value, read from a token after the block by one head."""
    r, c, h = shape
    n = min(n, c)
    rng = np.random.default_rng(seed)
    blk = Block.of("A", offset, r, c, h)
    n_pos = offset + blk.size + pad
    n_head = C.aggregate(C.select(C.indices, C.full(n_pos), "=="), C.tokens)
    res, _ = lemmas.softmax_ref(MatRef(C.tokens, blk), name="p", valid_cols=n_head, stable=stable)
    seq = _junk_sequence(rng, n_pos + 1, exact=False)
    seq[n_pos] = n
    a = rng.normal(size=blk.shape) * 2
    _place(seq, blk, a)
    got = _read(evaluate(res.sop, seq), res.block)
    assert np.all(got[..., n:] == 0)
    assert np.max(np.abs(got[..., :n] - np_softmax(a[..., :n]))) <= SOFTMAX_TOL


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 9), st.integers(1, 9), st.integers(0, 4), shapes, st.integers(0, 10**6))
@example(a_offset=0, gap=4, pad=0, shape=(2, 3, 1), seed=0)
def test_matmul_at_offsets(a_offset: int, gap: int, pad: int, shape: tuple[int, int, int], seed: int) -> None:
    """Lemma (matmul): A and B anywhere in the sequence (B at least one position after A's end),
    junk between and around them; A @ B exactly, per head."""
    r, k, h = shape
    c = 1 + seed % 3
    rng = np.random.default_rng(seed)
    a_blk = Block.of("A", a_offset, r, k, h)
    b_blk = Block.of("B", a_blk.end + gap, k, c, h)
    res, _ = lemmas.matmul_ref(MatRef(C.tokens, a_blk), MatRef(C.tokens, b_blk), name="m")
    length = max(b_blk.end + pad, *(x.end for x in (*res.aux, res.block)))
    seq = _junk_sequence(rng, length, exact=True)
    a, b = _frac(rng, a_blk.shape), _frac(rng, b_blk.shape)
    _place(seq, a_blk, a)
    _place(seq, b_blk, b)
    got = _read(evaluate(res.sop, seq, "exact"), res.block)
    want = np.einsum("...il,...lj->...ij", a, b) if h > 1 else a.dot(b)
    assert got.shape == want.shape and (got == want).all()


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 9), st.integers(0, 9), st.integers(0, 4), shapes, st.integers(0, 10**6))
@example(a_offset=4, out_offset=0, pad=0, shape=(2, 3, 1), seed=0)
def test_transpose_at_offsets(a_offset: int, out_offset: int, pad: int, shape: tuple[int, int, int], seed: int) -> None:
    """Lemma (transpose): A at a non-zero offset, the result at another offset (its own channel)."""
    r, c, h = shape
    rng = np.random.default_rng(seed)
    a_blk = Block.of("A", a_offset, r, c, h)
    res, _ = lemmas.transpose_ref(MatRef(C.tokens, a_blk), offset=out_offset, name="t")
    seq = _junk_sequence(rng, max(a_blk.end, res.block.end) + pad, exact=True)
    a = _frac(rng, a_blk.shape)
    _place(seq, a_blk, a)
    got = _read(evaluate(res.sop, seq, "exact"), res.block)
    assert (got == np.swapaxes(a, -1, -2)).all()


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 9), st.integers(0, 4), st.integers(1, 4), st.integers(1, 3), st.integers(0, 10**6))
@example(offset=3, pad=0, rows=2, pairs=2, seed=0)
def test_maxmin_and_relu_at_an_offset(offset: int, pad: int, rows: int, pairs: int, seed: int) -> None:
    """MaxMin (Lipschitz application) and ReLU: each pair (2t, 2t+1) of a row sorted descending;
    max(x, 0) entry-wise; the operand at an odd or even non-zero offset."""
    rng = np.random.default_rng(seed)
    blk = Block.of("A", offset, rows, 2 * pairs)
    mm, _ = lemmas.maxmin_ref(MatRef(C.tokens, blk), name="mm")
    rl, _ = lemmas.relu_ref(MatRef(C.tokens, blk), name="rl")
    seq = _junk_sequence(rng, blk.end + pad, exact=True)
    a = _frac(rng, blk.shape)
    _place(seq, blk, a)
    got_mm, got_rl = (_read(v, blk) for v in evaluate([mm.sop, rl.sop], seq, "exact"))
    pairs_of = a.reshape(rows, pairs, 2)
    hi = np.maximum(pairs_of[..., 0], pairs_of[..., 1])
    lo = np.minimum(pairs_of[..., 0], pairs_of[..., 1])
    assert (got_mm == np.stack([hi, lo], axis=-1).reshape(rows, 2 * pairs)).all()
    assert (got_rl == np.where(a > 0, a, 0)).all()
