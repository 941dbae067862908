"""The engine's fast paths of issue 29 against the paths they replace, bit for bit.

- A value-scored head over a long (streamed) key side is reduced piece by piece
  (``piece_maxima`` / ``scored_sums``): it must give the general path's numbers exactly,
  ties summed in the same order, NaN scores dropping their group, keys in any order.
- ``where(c, x, y)`` with a condition constant at every position reads only the taken branch.
"""

from __future__ import annotations

import itertools
from unittest.mock import patch

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim.rasp import core as C
from attnsim.rasp import engine, evaluate, stream_plan
from attnsim.rasp import expr as E
from attnsim.rasp.engine import Run, arithmetic
from attnsim.rasp.long_values import tail_of
from attnsim.rasp.numeric import NumpyArith
from attnsim.rasp.selector_plans import piece_maxima, scored_sums

from .test_streamed_values import plain, streamed


def whole(kk: np.ndarray, vv: np.ndarray, ss: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The general path's groups (``Aggregation._group``): one max per key over all entries, the
    entries of maximal score summed by one ``bincount`` in index order."""
    uniq, inv = np.unique(kk, return_inverse=True)
    gmax = np.full(len(uniq), -np.inf)
    np.maximum.at(gmax, inv, ss)
    top = ss == gmax[inv]
    counts = np.bincount(inv[top], minlength=len(uniq)).astype(np.float64)
    return uniq, counts, np.bincount(inv[top], weights=vv[top], minlength=len(uniq))


def by_pieces(kk: np.ndarray, vv: np.ndarray, ss: np.ndarray, cuts: list[int]) -> tuple[np.ndarray, ...]:
    bounds = [0, *sorted(set(c % (len(kk) + 1) for c in cuts)), len(kk)]
    parts = [piece_maxima(kk[a:b], vv[a:b], ss[a:b]) for a, b in itertools.pairwise(bounds)]
    return scored_sums([p[0] for p in parts], [p[1] for p in parts], [p[2] for p in parts])


def same(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> bool:
    return all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b, strict=True))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-3, 3), st.sampled_from([0.1, 0.2, 0.3, 0.7, -1.5, np.nan]), st.integers(0, 2)),
        min_size=1,
        max_size=40,
    ),
    st.lists(st.integers(0, 60), max_size=5),
    st.booleans(),
)
def test_scored_pieces_equal_the_whole(entries: list[tuple[int, float, int]], cuts: list[int], wide: bool) -> None:
    """Ties in score (summed values like 0.1 + 0.2 + 0.3, where the order shows), NaN scores, keys
    in any order, a narrow or a wide key range (bins or a sort per piece), any cut points."""
    kk = np.array([k * (10**6 if wide else 1) for k, _, _ in entries], dtype=np.int64)
    vv = np.array([v for _, v, _ in entries])
    ss = np.array([float(s) if not np.isnan(v) else np.nan for (_, v, s) in entries])
    assert same(by_pieces(kk, vv, ss, cuts), whole(kk, vv, ss))


def test_a_group_summed_per_piece_is_caught() -> None:
    """The mutation the pieces must avoid: summing each piece's tied values, then the partial
    sums, rounds differently from one sum in index order (0.1 + (0.2 + 0.3) != (0.1 + 0.2) + 0.3)."""
    kk, vv, ss = np.zeros(3, dtype=np.int64), np.array([0.1, 0.2, 0.3]), np.zeros(3)
    parts = [whole(kk[:1], vv[:1], ss[:1]), whole(kk[1:], vv[1:], ss[1:])]
    per_piece = (parts[0][0], parts[0][1] + parts[1][1], parts[0][2] + parts[1][2])
    assert not same(per_piece, whole(kk, vv, ss))
    assert same(by_pieces(kk, vv, ss, [1]), whole(kk, vv, ss))


def _scored_program(keys: C.SOp) -> C.SOp:
    ix = C.indices
    sel = C.select(keys, C.imap(lambda p: p % 5, ix), "==") & C.select(C.tokens, C.full(0), ">=")
    score = C.apply("square", C.apply("affine", C.tokens, params=(1, -1)))
    return C.apply("add", C.argmax_aggregate(sel, score, C.tokens), C.tokens)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, 1.0, 2.0, 0.1, 0.2, 0.3, -1.0]), min_size=8, max_size=40),
    st.sampled_from([lambda p: p % 5, lambda p: 4 - p % 5, lambda p: E.if_((p % 3).eq(0), p % 5, -1)]),
    st.integers(1, 6),
)
def test_streamed_scored_head_equals_the_plain_run(toks: list[float], key: object, piece: int) -> None:
    prog = _scored_program(C.imap(key, C.indices))  # type: ignore[arg-type]
    with streamed(2, piece):
        a = evaluate(prog, toks)
    assert np.array_equal(a, plain(prog, toks))


def _flagged(flag_at: int) -> C.SOp:
    """where(flag, x, y) with the flag the token at ``flag_at`` (constant at every position) and
    two streamed branches."""
    ix = C.indices
    flag = C.aggregate(C.select(ix, C.imap(lambda p: flag_at, ix), "=="), C.tokens)  # a head of length 0
    x = C.aggregate(C.select(ix, C.imap(lambda p: (p * 3) % 11, ix), "=="), C.tokens)
    y = C.apply("mul", C.tokens, C.aggregate(C.select(ix, C.imap(lambda p: (p + 1) % 11, ix), "=="), C.tokens))
    return C.apply("add", C.apply("where", flag, C.apply("exp", x), y), C.tokens)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1.0, -2.0, 0.5, np.nan]), min_size=11, max_size=30), st.integers(0, 3))
def test_where_on_a_constant_flag_equals_the_plain_run(toks: list[float], at: int) -> None:
    prog = _flagged(at)
    with streamed(2, 3):
        a = evaluate(prog, toks, allow_nonfinite=True)
    assert np.array_equal(a, plain_nonfinite(prog, toks), equal_nan=True)


def plain_nonfinite(prog: C.SOp, toks: list[float]) -> np.ndarray:
    """The plain run (every value whole), NaN tokens allowed."""
    run = Run([prog], toks, arithmetic("numpy"), allow_nonfinite=True, track=True)
    run.execute()
    return run.value(prog)


def _two_sums() -> tuple[C.SOp, C.SOp, C.SOp]:
    """Two equality sums over one streamed value ``v`` (an exp of a gather): a batch."""
    ix = C.indices
    v = C.apply("exp", C.aggregate(C.select(ix, C.imap(lambda p: (p * 5) % 13, ix), "=="), C.tokens))
    s1 = C.aggregate(C.select(C.imap(lambda p: p % 3, ix), C.imap(lambda p: p % 4, ix), "=="), v)
    s2 = C.aggregate(
        C.select(C.imap(lambda p: p % 5, ix), C.imap(lambda p: p // 3, ix), "=="), C.apply("mul", v, C.tokens)
    )
    return v, s1, C.apply("add", C.apply("scale", s1, params=(3,)), s2)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1.0, -2.0, 0.1, 0.2, 0.3]), min_size=13, max_size=40), st.integers(1, 5))
def test_batched_sums_equal_the_sums_one_by_one(toks: list[float], piece: int) -> None:
    """The sums of a batch, summed in one pass, equal each summed alone bit for bit; the shared
    value is computed once per piece, not once per sum."""
    _, s1, prog = _two_sums()
    batches = stream_plan.key_group_batches(C.topological([prog]))
    assert list(batches) == [id(s1)] and len(batches[id(s1)]) == 1
    exps: list[int] = []
    real = NumpyArith._apply

    def counted(self: NumpyArith, prim: object, params: object, args: object) -> object:
        exps.append(getattr(prim, "name", "") == "exp")
        return real(self, prim, params, args)  # type: ignore[arg-type]

    with streamed(2, piece), patch.object(NumpyArith, "_apply", counted):
        a = evaluate(prog, toks)
        batched = sum(exps)
        exps.clear()
        with patch.object(engine, "key_group_batches", lambda order: {}):
            one_by_one = evaluate(prog, toks)
        alone = sum(exps)
    assert np.array_equal(a, one_by_one)
    # streamed sums add pieces' partial sums: the plain run's terms in another rounding order
    np.testing.assert_allclose(a, plain(prog, toks), rtol=1e-13, atol=1e-13)
    assert batched < alone


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1.0, -2.0, np.nan]), min_size=4, max_size=30), st.integers(1, 5))
def test_a_long_padded_output_is_held_as_tail_of_holds_it(toks: list[float], piece: int) -> None:
    """A long output returned padded is trimmed piece by piece (``RunState._trimmed``): the same
    head and padding as ``tail_of`` of the whole output, NaN last values included."""
    ix = C.indices
    prog = C.apply("add", C.aggregate(C.select(ix, C.imap(lambda p: p + 1, ix), "=="), C.tokens), C.tokens)
    with streamed(2, piece):
        got = evaluate(prog, toks, allow_nonfinite=True, padded_output=True)
    want = tail_of(plain_nonfinite(prog, toks))
    assert np.array_equal(got.head, want.head, equal_nan=True)
    assert np.array_equal(np.array([got.pad]), want.tail, equal_nan=True)
