"""Premises from one declaration (issue 26 item 3): what an all-sizes proof assumes of an operand is
what the run refuses otherwise.

Backs Lemma 3 (masked softmax: n an integer in 1..cols, the premise of softmax-masked/all-sizes/*)
and k-PARITY (binary tokens).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim import lemmas
from attnsim.cli.main import main
from attnsim.constructions import construction  # where Construction's input check looks _is_integer up
from attnsim.constructions.construction import ConstructionError
from attnsim.constructions.parity import program as kparity
from attnsim.proofs import registry


@settings(max_examples=60, deadline=None)
@given(
    cols=st.integers(1, 9),
    n=st.one_of(st.integers(-3, 12), st.floats(-5, 15), st.sampled_from([math.nan, math.inf, -math.inf])),
)
def test_masked_softmax_refuses_exactly_what_its_premise_excludes(cols: int, n: float) -> None:
    con = lemmas.masked_softmax(2, cols)
    inside = isinstance(n, int) or (math.isfinite(n) and n == math.floor(n))
    inside = inside and 1 <= n <= cols
    a = np.zeros((2, cols))
    if inside:
        con.run(a, [[n]])
    else:
        # NaN and inf are refused before the domain, by the finite-input guard every operand has
        with pytest.raises(ConstructionError, match=rf"operand n must be an integer in 1\.\.{cols}|NaN or inf"):
            con.run(a, [[n]])


@pytest.mark.parametrize("token", [2, -1, 0.5, math.nan])
def test_parity_refuses_a_non_binary_token(token: float) -> None:
    x = np.zeros((1, 4))
    x[0, 1] = token
    with pytest.raises(ConstructionError, match=r"takes binary tokens|NaN or inf"):
        kparity.parity(4).run(x)


def test_an_input_check_that_stops_requiring_an_integer_fails_verify(monkeypatch: pytest.MonkeyPatch) -> None:
    """n = 1.5 accepted: softmax-masked/exact/input-domain fails, naming the value, and verify exits 1."""
    monkeypatch.setattr(construction, "_is_integer", lambda v: math.isfinite(float(v)))
    out = registry.by_id("softmax-masked/exact/input-domain").check(60.0)
    assert out.ok is False and "accepts n = 1.5" in out.detail
    assert main(["verify", "--only", "softmax-masked/exact/input-domain", "-j", "1"]) == 1


def test_every_declared_domain_has_its_probe() -> None:
    ids = {o.id for o in registry.all_obligations()}
    for name, (_, example) in registry.constructions().items():
        con = example()
        if getattr(con, "scalars", ()) or getattr(con, "binary", ()):
            assert f"{name}/exact/input-domain" in ids


def test_an_exact_path_that_stops_requiring_an_integer_fails_verify(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 26 review: the probes run in the exact backend (Fractions) too: an input check that accepts
    n = 3/2 as a Fraction only (the float64 path still refusing 1.5) fails the input-domain obligation."""
    from fractions import Fraction

    real = construction._is_integer
    monkeypatch.setattr(construction, "_is_integer", lambda v: isinstance(v, Fraction) or real(v))
    with pytest.raises(ConstructionError):  # the float64 path is unchanged
        lemmas.masked_softmax(2, 3).run(np.zeros((2, 3)), [[1.5]])
    out = registry.by_id("softmax-masked/exact/input-domain").check(60.0)
    assert out.ok is False and "accepts n = 3/2 (exact backend)" in out.detail
