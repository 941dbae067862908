"""Corollary 6.1 / hierarchy against real torch layers, from committed fixtures (no torch needed)."""

import pytest

from attnsim.simulator.fixtures import FIXTURES, check_fixture, load
from attnsim.simulator.reference import SimulatorError


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_matches_torch(name: str) -> None:
    errs = check_fixture(name)
    # measured over the four fixtures: reference <= 1.3e-15, U <= 8.9e-16
    assert errs["reference"] <= 1e-13, errs
    assert errs["U"] <= 1e-13, errs


def test_fixture_contents() -> None:
    f = load("encoder_pre_gelu")
    (T,) = f["layers"]
    assert T.norm == "pre" and T.activation == "gelu" and T.residual and T.d_ff == 16
    assert len(load("stack2")["layers"]) == 2
    with pytest.raises(SimulatorError, match="unknown fixture"):
        load("nope")
