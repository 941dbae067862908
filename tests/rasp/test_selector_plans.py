"""Grouped sums of an equality head (issue 29's fast path): ``bin_sums`` and ``regular_groups``
give each distinct key, its count and its sum; the keys and counts exactly, the sums within
rounding of the one-by-one sums ``bincount`` adds (a reduction sums in another order)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim.rasp import selector_plans
from attnsim.rasp.selector_plans import bin_sums, regular_groups


def reference(kk: np.ndarray, vv: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    uniq, inv = np.unique(kk, return_inverse=True)
    inv = inv.reshape(-1)
    return uniq, np.bincount(inv).astype(np.float64), np.bincount(inv, weights=vv)


def agrees(got: tuple[np.ndarray, ...], kk: np.ndarray, vv: np.ndarray) -> bool:
    keys, counts, sums = reference(kk, vv)
    scale = 1e-12 * (1.0 + float(np.sum(np.abs(vv))))
    return (
        np.array_equal(got[0], keys)
        and np.array_equal(got[1], counts)
        and bool(np.all(np.abs(got[2] - sums) <= scale))
    )


values = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(2, 6),
    st.integers(1, 5),
    st.lists(st.integers(1, 4), min_size=20, max_size=20),
    st.lists(values, min_size=120, max_size=120),
)
def test_regular_keys_are_grouped_by_one_reduction(
    blocks: int, m: int, period: int, gaps: list[int], vals: list[float]
) -> None:
    """Keys in blocks of a period repeated m times (runs of m equal keys when the period is 1),
    increasing along blocks and period, as U's sums over an inner or an outer axis read them."""
    keys = np.cumsum(gaps[: blocks * period]).reshape(blocks, 1, period) - 3
    kk = np.broadcast_to(keys, (blocks, m, period)).reshape(-1).copy()
    vv = np.array(vals[: kk.size])
    got = regular_groups(kk, vv)
    assert got is not None and agrees(got, kk, vv)
    assert agrees(bin_sums(np.tile(kk, 1), vv), kk, vv)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-5, 40), min_size=1, max_size=200), st.data())
def test_any_integer_keys_are_grouped_exactly(keys: list[int], data: st.DataObject) -> None:
    kk = np.array(keys, dtype=np.int64)
    vv = np.array(data.draw(st.lists(values, min_size=len(keys), max_size=len(keys))))
    got = regular_groups(kk, vv)
    assert got is None or agrees(got, kk, vv)
    assert agrees(bin_sums(kk, vv), kk, vv)


def test_a_near_regular_key_side_is_not_taken_for_regular() -> None:
    """One key changed in the middle of a block (or a run one short) must not pass the check on
    the first period alone: the grouping would then be wrong."""
    kk = np.repeat(np.arange(40), 32)
    vv = np.arange(kk.size, dtype=np.float64)
    assert regular_groups(kk, vv) is not None
    for changed in (kk.copy(), np.tile(np.arange(16), 80)):
        changed[700] += 1
        assert regular_groups(changed, vv[: changed.size]) is None
        assert agrees(bin_sums(changed, vv[: changed.size]), changed, vv[: changed.size])
    short = np.delete(kk, 100)
    assert regular_groups(short, vv[:-1]) is None
    assert agrees(bin_sums(short, vv[:-1]), short, vv[:-1])


@pytest.mark.parametrize("window", [4, 7, 64])
def test_a_first_block_longer_than_the_window_is_still_regular(monkeypatch: pytest.MonkeyPatch, window: int) -> None:
    """Runs or blocks longer than the window the period is looked for in (at capacity 256: runs of
    32,768 keys and more) are found by looking at the whole side."""
    monkeypatch.setattr(selector_plans, "REGULAR_WINDOW", window)
    rng = np.random.default_rng(3)
    for kk in (np.repeat(np.arange(4), 100), np.tile(np.arange(9), 50), np.repeat(np.arange(3) * 5, 2)):
        vv = rng.normal(size=kk.size)
        got = regular_groups(kk, vv)
        assert got is not None and agrees(got, kk, vv)
    changed = np.repeat(np.arange(4), 100)
    changed[250] = 0
    assert regular_groups(changed, np.ones(changed.size)) is None
