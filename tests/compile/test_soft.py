"""Soft attention: the beta derived from each head's score gap keeps it within eta of hard attention."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim.compile import CompileError, classic, soft
from attnsim.compile.compiler import compile_program


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=8), st.sampled_from([1e-3, 1e-6, 1e-9]))
def test_derived_beta_bounds_every_head(xs: list[int], eta: float) -> None:
    ct = compile_program(classic.sort_unique(), max_len=8, vocab=range(4))
    rows = soft.head_check(ct, xs, eta)
    assert rows and all(r["error"] <= eta for r in rows)


def test_a_too_small_beta_breaks_the_bound() -> None:
    """The check is not vacuous: well below the derived beta, the error exceeds eta."""
    ct = compile_program(classic.reverse(), max_len=8, vocab=range(4))
    x = np.array([3, 1, 0, 2, 1, 0, 2, 3], dtype=float)
    _, states = ct.run(x, exact=False, keep=True)
    h = ct.layers[2].heads[0]
    st_in = states[3]
    hard = ct.attend(h, st_in, False)[0]
    beta = soft.beta_for(h, 1e-6, 3.0, 9)
    assert np.max(np.abs(ct.attend(h, st_in, False, beta=beta / 8)[0] - hard)) > 1e-6
    assert np.max(np.abs(ct.attend(h, st_in, False, beta=beta)[0] - hard)) <= 1e-6


def test_error_vs_beta_decreases() -> None:
    series = soft.default_series("histogram", max_len=6)
    errs = [r["max_error"] for r in series]
    assert errs[0] > 1e-2 and errs[-1] < 1e-9
    assert all(b <= a + 1e-15 for a, b in itertools.pairwise(errs))
    assert all(r["head_error"] <= r["head_bound"] for r in series)  # the per-head bound holds at every beta


def test_bad_eta_and_exact_soft_are_errors() -> None:
    ct = compile_program(classic.length(), max_len=4, vocab=range(2))
    with pytest.raises(CompileError, match="eta must be positive"):
        soft.beta_for(ct.layers[1].heads[0], 0.0, 1.0, 3)
    with pytest.raises(CompileError, match="float64 only"):
        ct.forward([0, 1], exact=True, beta=10.0)


def test_observed_score_gaps_meet_the_stated_ones() -> None:
    """Exact scores: every non-maximal key sits at least the stated gap below the row maximum."""
    from fractions import Fraction

    ct = compile_program(classic.sort_unique(), max_len=6, vocab=range(4))
    rows = soft.observed_gaps(ct, [3, 1, 0, 2, 1])
    assert rows and all(r["observed_gap"] >= min(r["stated_gap"], 1) for r in rows)
    agg = next(r for r in rows if r["head"] == "target")
    assert agg["observed_gap"] == Fraction(1, 2)  # BOS at -m/2 against the selected keys at 0
