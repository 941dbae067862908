"""Corollary 6.1 / hierarchy against real torch layers, from committed fixtures (no torch needed)."""

import numpy as np
import pytest

from attnsim.universal.errors import SimulatorError
from attnsim.universal.fixtures import FIXTURES, HEAD_WIDTH_FIXTURES, MASK_FIXTURES, check_fixture, load


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_matches_torch(name: str) -> None:
    """Corollary 6.1 against torch itself: causal, additive (-1e9 included) and key-padding masks,
    batches, logit rows spread over 2000 (> 1418, where an unshifted exp overflows), post-norm
    ReLU and pre-norm GELU: the reference and U (one program) equal torch's float64 output."""
    errs = check_fixture(name)
    # measured over all 14 fixtures: reference <= 1.4e-15, U <= 1.4e-15
    assert errs["reference"] <= 1e-13, errs
    assert errs["U"] <= 1e-13, errs


@pytest.mark.parametrize("name", FIXTURES)
def test_reference_matches_every_fixture(name: str) -> None:
    """The reference T, given the fixture's masks as torch was, equals torch's output."""
    errs = check_fixture(name, simulator=False)
    assert errs["reference"] <= 1e-13, errs  # measured: <= 1.3e-15 over all 14 fixtures


def test_fixture_contents() -> None:
    f = load("encoder_pre_gelu")
    (T,) = f["layers"]
    assert T.norm == "pre" and T.activation == "gelu" and T.residual and T.d_ff == 16
    assert f["masks"] == {} and set(f["state_dicts"][0]) >= {"self_attn.in_proj_weight", "linear1.weight"}
    assert len(load("stack2")["layers"]) == 2
    with pytest.raises(SimulatorError, match="unknown fixture"):
        load("nope")


def test_mask_fixture_contents() -> None:
    """Each mask fixture carries what torch was given: the causal one the explicit -inf mask and is_causal."""
    assert len(MASK_FIXTURES) == 10
    c = load("causal_pre_gelu")
    assert c["masks"]["is_causal"] is True and c["layers"][0].norm == "pre"
    assert np.array_equal(np.isneginf(c["masks"]["src_mask"]), np.triu(np.ones((5, 5), bool), 1))
    a = load("additive_post_relu")["masks"]
    assert set(a) == {"src_mask"} and np.all(np.isfinite(a["src_mask"])) and (a["src_mask"] == -1e9).sum() == 3
    p = load("padding_post_relu")
    assert p["x"].shape == (3, 5, 8) and p["masks"]["src_key_padding_mask"].dtype == bool
    assert len({tuple(r) for r in p["masks"]["src_key_padding_mask"]}) == 3  # different padding per element
    assert load("batch_pre_gelu")["x"].shape == (3, 5, 8)
    w = load("wide_post_relu")
    assert w["meta"]["logit_spread"] > 1418 and np.all(np.isfinite(w["y"]))
    assert np.isnan(load("additive_pre_gelu")["meta"]["fast_path_error"])  # torch's fast path: NaN (#118628)
    assert load("padding_pre_gelu")["meta"]["fast_path_error"] <= 1e-15


@pytest.mark.parametrize("name", HEAD_WIDTH_FIXTURES)
def test_head_width_fixtures_hold_wide_heads_at_the_default_scale(name: str) -> None:
    """The head-width fixtures are what their obligations need: d_head > 8, T at its default
    scale 1/sqrt(d_head) (no scale stored), weights stored as float32 values read exactly."""
    f = load(name)
    (T,) = f["layers"]
    k = int(f["meta"]["d_head"])
    assert k > 8 and T.d_head == k and T.scale == 1 / np.sqrt(k)
    assert all(v.dtype == np.float32 for v in f["state_dicts"][0].values())
    assert check_fixture(name, simulator=False)["reference"] <= 1e-13  # measured <= 1.7e-15
