"""The numeric executor's values (attnsim/numeric/values.py): reading positions of a framed value."""

from __future__ import annotations

import numpy as np
import pytest

from attnsim.numeric.values import Lin, Val


def _at_by_hand(v: Val, pos: np.ndarray) -> np.ndarray:
    flat = v.dense().reshape(-1)
    return np.where(pos < v.m, flat[np.minimum(pos, max(v.m - 1, 0))], v.tail)


@pytest.mark.parametrize(
    ("head_shape", "shape", "pos_shape"),
    [
        ((148_747,), (148_747,), (128, 128, 1)),  # U's gather at capacity 128 (a trailing axis of 1)
        ((5, 1, 7), (5, 3, 7), (12, 10, 1)),
        ((4, 6), (4, 6), (9000, 1)),
        ((1, 300), (40, 300), (3, 5000)),
    ],
)
def test_at_reads_the_positions_of_the_dense_value(
    head_shape: tuple[int, ...], shape: tuple[int, ...], pos_shape: tuple[int, ...]
) -> None:
    """Positions past the head read the tail; positions inside it the frame's row-major entry.
    NumPy 2.4's ``unravel_index`` misreads index arrays of more than 8,192 entries with a
    trailing axis of extent 1 (positions past 8,192 come back as 8,192): ``at`` must not."""
    rng = np.random.default_rng(0)
    v = Val(rng.normal(size=head_shape), shape, np.float64(-7.0))
    pos = rng.integers(0, v.m + 50, size=pos_shape)
    assert np.array_equal(v.at(pos), _at_by_hand(v, pos))


def test_at_on_an_affine_index_value() -> None:
    lin = Lin(0, (128, 1, 0))
    q = Val(None, (128, 128, 4), np.int64(-1), lin)
    values = Val.flat(np.arange(148_747, dtype=np.float64), 0.0)
    assert np.array_equal(values.at(q.head), q.head.astype(np.float64))


def test_a_head_of_fewer_dimensions_than_its_frame_is_read_by_position() -> None:
    """A 0-d result (a map that ignores its arguments; transpose at 1 x 1 gathered one) is a head
    of extent 1 on every axis of the frame, so reading it by position works."""
    v = Val(np.zeros((2, 3)), (2, 3), np.float64(0.0)).map(lambda x: np.float64(2.5))
    assert v.head.shape == (1, 1) and v.at(np.array([0, 5, 9])).tolist() == [2.5, 2.5, 2.5]
    assert Val(np.array(7.0), (1,), np.float64(0.0)).at(np.array([0, 1])).tolist() == [7.0, 0.0]
