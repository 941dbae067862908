"""Application (Match2): 1 at i iff some j has x_i + x_j = 0 (mod p); the paper's one-head version fixed."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim import applications
from attnsim.constructions.application_checks import exhaustive_check
from attnsim.constructions.construction import ConstructionError
from attnsim.constructions.match2.reference import match2_spec


def test_match2_public_api_and_cost() -> None:
    con = applications.match2(6, 5)
    x = [3, 7, 10, 6, 11, 8]
    assert list(con.run(x)) == [1, 1, 1, 0, 0, 1]  # 3+7, 10+10 (self), 8+7; 6 and 11 have no partner
    assert list(con.run(x, backend="exact")) == [1, 1, 1, 0, 0, 1]
    c = con.cost()
    assert c.layers == 1 and c.heads == [1]
    assert con.paper_ref.startswith("Application (Match2)")


def test_paper_version_misses_two_kinds_of_match() -> None:
    """The authors' Select(r, p - r, ==) + mean of values: residue 0 never matches; a zero mean hides a match."""
    paper = applications.match2_paper(2, 5)
    assert list(paper.run([0, 5])) == [0, 0] and list(match2_spec([0, 5], 5)) == [1, 1]
    paper4 = applications.match2_paper(2, 4)
    assert list(paper4.run([2, -2])) == [0, 0] and list(match2_spec([2, -2], 4)) == [1, 1]
    assert list(applications.match2(2, 5).run([0, 5])) == [1, 1]
    assert list(applications.match2(2, 4).run([2, -2])) == [1, 1]


def test_self_match_semantics() -> None:
    """j = i allowed by default (Sanford et al. 2023); include_self=False needs a partner j != i."""
    assert list(applications.match2(2, 4).run([2, 5])) == [1, 0]
    assert list(applications.match2(2, 4, include_self=False).run([2, 5])) == [0, 0]
    assert list(applications.match2(3, 4, include_self=False).run([2, 5, 6])) == [1, 0, 1]
    assert applications.match2(5, 3, include_self=False).cost().layers == 1


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(-1000, 1000), min_size=1, max_size=40),
    st.integers(2, 11),
    st.booleans(),
)
def test_match2_random(x: list[int], p: int, include_self: bool) -> None:
    con = applications.match2(len(x), p, include_self)
    assert np.array_equal(con.run(x), match2_spec(x, p, include_self))


def test_exhaustive_small_exact() -> None:
    for p, inc in itertools.product((2, 3), (True, False)):
        out = exhaustive_check(
            lambda p=p, inc=inc: applications.match2(4, p, inc),
            range(p),
            lambda x, p=p, inc=inc: match2_spec(x, p, inc),
        )(10.0)
        assert out.ok is True


def test_exhaustive_check_catches_the_paper_version() -> None:
    out = exhaustive_check(lambda: applications.match2_paper(3, 4), range(4), lambda x: match2_spec(x, 4))(10.0)
    assert out.ok is False and "x = " in out.detail


def test_long_input_and_spec_paths_agree() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(-(10**6), 10**6, 3000)
    for inc in (True, False):
        brute = ((x[:, None] + x[None, :]) % 13 == 0) & ~(np.eye(3000, dtype=bool) & (not inc))
        want = match2_spec(x, 13, inc)
        assert np.array_equal(brute.any(axis=1).astype(np.int64), want)
        assert np.array_equal(applications.match2(3000, 13, inc).run(x), want)


def test_bad_inputs() -> None:
    con = applications.match2(3, 5)
    with pytest.raises(ConstructionError, match="integer"):
        con.run([1.5, 2, 3])
    with pytest.raises(ConstructionError, match="length 3"):
        con.run([1, 2])
    with pytest.raises(ConstructionError, match="NaN"):
        con.run([np.nan, 2, 3])
    with pytest.raises(ConstructionError, match="p must be"):
        applications.match2(3, 0)
