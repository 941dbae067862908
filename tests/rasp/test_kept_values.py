"""Kept forms of position-only values (attnsim/rasp/kept_values.py) give every range of
positions back exactly; they back U's runs (Theorem 6) reading its index maps from its memo."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim.rasp.kept_values import AffinePieces, Chunked, NarrowArray, affine_pieces, kept_form, narrowest


@st.composite
def _piecewise(draw: st.DrawFn) -> np.ndarray:
    """Concatenated affine runs (as U's index maps are), with random lengths, values, slopes."""
    parts = draw(st.lists(st.tuples(st.integers(1, 30), st.integers(-(10**6), 10**6), st.integers(-3, 3)), max_size=8))
    out = [v + s * np.arange(n, dtype=np.int64) for n, v, s in parts]
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


@settings(max_examples=200, deadline=None)
@given(_piecewise(), st.data())
def test_every_range_comes_back_exactly(head: np.ndarray, data: st.DataObject) -> None:
    n = len(head)
    a = data.draw(st.integers(0, n))
    b = data.draw(st.integers(a, n))
    chunk = data.draw(st.integers(1, 40))
    chunked = Chunked(chunk, tuple(kept_form(head[i : i + chunk]) for i in range(0, n, chunk)))
    for form in (affine_pieces(head), NarrowArray(narrowest(head)), kept_form(head), chunked):
        got = form.slice(a, b)
        assert got.dtype == np.int64 and got.tolist() == head[a:b].tolist()
        assert form.length == n


def test_affine_runs_are_kept_small() -> None:
    p = np.arange(10_000, dtype=np.int64)
    staircase = (p // 64) * 1000 + p % 64  # a grid decoding: slope 1 in a row, a jump per row
    form = kept_form(staircase)
    assert isinstance(form, AffinePieces) and form.nbytes < staircase.nbytes // 10
    assert form.slice(0, len(p)).tolist() == staircase.tolist()


def test_a_wrong_piece_is_caught() -> None:
    """Mutation: a piece with a wrong slope no longer gives the values back."""
    head = np.concatenate([np.arange(10), np.full(5, 3)]).astype(np.int64)
    good = affine_pieces(head)
    bad = AffinePieces(good.starts, good.values, good.slopes + 1, good.length)
    assert good.slice(0, 15).tolist() == head.tolist()
    assert bad.slice(0, 15).tolist() != head.tolist()


@settings(max_examples=200, deadline=None)
@given(_piecewise(), st.data())
def test_chunk_bounds_are_the_least_and_greatest_value_over_a_range(head: np.ndarray, data: st.DataObject) -> None:
    """``Chunked.bounds_over`` (what lets a gather or group lookup skip its range checks) holds
    every value of the range: the chunks' own least and greatest values, exact on whole chunks."""
    n = len(head)
    if n == 0:
        return
    chunk = data.draw(st.integers(1, 40))
    starts = range(0, n, chunk)
    parts = tuple(kept_form(head[i : i + chunk]) for i in starts)
    bounds = tuple((int(head[i : i + chunk].min()), int(head[i : i + chunk].max())) for i in starts)
    form = Chunked(chunk, parts, bounds)
    a = data.draw(st.integers(0, n - 1))
    b = data.draw(st.integers(a + 1, n))
    got = form.bounds_over(a, b)
    assert got is not None and got[0] <= head[a:b].min() and head[a:b].max() <= got[1]
    if a % chunk == 0 and (b % chunk == 0 or b == n):
        assert got == (head[a:b].min(), head[a:b].max())
    assert Chunked(chunk, parts).bounds_over(a, b) is None


@st.composite
def _staircase(draw: st.DrawFn) -> tuple[np.ndarray, int]:
    """A grid decoding as U's index maps have them: rows of r >= 3 positions, each row a start
    value (a jump from the last, or the last row's end: rows that meet end to end) and one
    slope along it (0 on a broadcast axis)."""
    r = draw(st.integers(3, 20))
    rows = draw(st.integers(1, 12))
    slope = draw(st.sampled_from([0, 1, 2, -1, 128]))
    jumps = draw(st.lists(st.one_of(st.integers(-1000, 1000), st.none()), min_size=rows, max_size=rows))
    starts = []  # None: the row goes on from the last one's end (the two are one affine piece)
    for k, j in enumerate(jumps):
        starts.append(starts[-1] + r * slope if j is None and k else (j or 0))
    last = draw(st.integers(1, r))  # the last row maybe shorter
    out = np.add.outer(np.array(starts, dtype=np.int64), slope * np.arange(r, dtype=np.int64)).ravel()
    return out[: (rows - 1) * r + last], rows


@settings(max_examples=300, deadline=None)
@given(_staircase(), st.data())
def test_a_staircase_is_kept_row_by_row_and_read_back_exactly(
    stairs: tuple[np.ndarray, int], data: st.DataObject
) -> None:
    """Issue 29: a jump into a row does not leave its first position a piece of its own (the
    rows are the pieces, at most one per row), and ranges over rows of one length and slope are
    read in one pass (``AffinePieces._rows``); every range comes back exactly."""
    head, rows = stairs
    form = affine_pieces(head)
    assert len(form.starts) <= rows
    n = len(head)
    a = data.draw(st.integers(0, n - 1))
    b = data.draw(st.integers(a + 1, n))
    got = form.slice(a, b)
    assert got.dtype == np.int64 and got.tolist() == head[a:b].tolist()


@settings(max_examples=300, deadline=None)
@given(_staircase(), st.data())
def test_a_take_through_kept_rows_is_the_gather_it_replaces(
    stairs: tuple[np.ndarray, int], data: st.DataObject
) -> None:
    """Issue 29: ``take`` reads ``arr[v - shift]`` row by row (a repeat for slope 0, a copy of a
    run of ``arr`` for slope 1) and equals the gather through the values; it declines (None)
    where an index would leave ``arr``, and for other slopes."""
    head, _ = stairs
    n = len(head)
    a = data.draw(st.integers(0, n - 1))
    b = data.draw(st.integers(a + 1, n))
    shift = data.draw(st.integers(-1100, 1100))
    arr = np.random.default_rng(n).normal(size=data.draw(st.integers(1, 3000)))
    chunk = data.draw(st.integers(1, 40))
    forms = [affine_pieces(head), Chunked(chunk, tuple(affine_pieces(head[i : i + chunk]) for i in range(0, n, chunk)))]
    for form in forms:
        got = form.take(arr, a, b, shift)
        idx = head[a:b] - shift
        if got is not None:
            assert idx.min() >= 0 and idx.max() < len(arr) and got.tolist() == arr[idx].tolist()


@pytest.mark.parametrize("slope", [0, 1, 128])
def test_u_shaped_rows_are_taken_without_forming_the_queries(slope: int) -> None:
    """Rows of 128 (some meeting end to end, so one piece of 256), kept in chunks of 1,000 that
    cut rows: every read of a range is a take (never declined) equal to the gather, and a read
    reaching an index out of the array is declined."""
    rng = np.random.default_rng(slope)
    starts = rng.integers(0, 5000, size=40)
    starts[7] = starts[6] + 128 * slope  # row 7 goes on from row 6
    head = np.add.outer(starts, slope * np.arange(128)).ravel()
    arr = rng.normal(size=int(head.max()) + 1)
    form = Chunked(1000, tuple(affine_pieces(head[i : i + 1000]) for i in range(0, len(head), 1000)))
    for a, b in [(0, len(head)), (5, 4093), (999, 1001), (700, 701), (1000, 2000)]:
        got = form.take(arr, a, b)
        assert got is not None and got.tolist() == arr[head[a:b]].tolist()
    assert form.take(arr[:-1], 0, len(head)) is None
