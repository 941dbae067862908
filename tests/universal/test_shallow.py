"""U with ``variant="shallow"``: at most 6 attention layers (the scores straight from X in one
spread product), equal to the reference and to torch for every option, mask and batch."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim import TransformerLayer, UniversalSimulator
from attnsim.universal.errors import SimulatorError
from attnsim.universal.fixtures import FIXTURES, check_fixture

from .test_universal import _tolerance

CAP = (4, 3, 2, 2, 4)
U = UniversalSimulator(*CAP, variant="shallow")


def test_at_most_six_layers_at_every_capacity_2_to_64() -> None:
    layers = {
        UniversalSimulator(c, c, min(c, 4), max(1, c // 4), c, variant="shallow").cost()["layers"] for c in range(2, 65)
    }
    assert max(layers) <= 6 and layers == {6}
    c = U.cost()
    assert c["variant"] == "shallow" and len(c["heads"]) == c["layers"] == 6


def test_unknown_variant_is_a_one_line_error() -> None:
    with pytest.raises(SimulatorError, match=r"^unknown variant 'deep'; use one of compact, shallow$"):
        UniversalSimulator(*CAP, variant="deep")


def test_each_variant_is_one_program_per_capacity() -> None:
    """A variant's program depends on the capacity only (rebuilt: the same fingerprint); the two
    variants are different programs."""
    fp = {v: UniversalSimulator(5, 4, 2, 3, 6, variant=v).fingerprint for v in ("compact", "shallow")}
    assert fp["compact"] != fp["shallow"]
    assert all(UniversalSimulator(5, 4, 2, 3, 6, variant=v).fingerprint == f for v, f in fp.items())


@settings(max_examples=12, deadline=None)
@given(
    n=st.integers(1, CAP[0]),
    d=st.integers(1, CAP[1]),
    h=st.integers(1, CAP[2]),
    k=st.integers(1, CAP[3]),
    f=st.one_of(st.none(), st.integers(1, CAP[4])),
    residual=st.booleans(),
    norm=st.sampled_from(["none", "post", "pre"]),
    act=st.sampled_from(["relu", "gelu"]),
    causal=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_shallow_equals_the_reference_for_every_option(
    n: int, d: int, h: int, k: int, f: int | None, residual: bool, norm: str, act: str, causal: bool, seed: int
) -> None:
    T = TransformerLayer.random(d, h, k, f, seed=seed, residual=residual, norm=norm, activation=act)
    X = np.random.default_rng(seed).normal(size=(n, d))
    want = T(X, is_causal=causal)
    assert np.max(np.abs(U.run(T, X, is_causal=causal) - want)) <= _tolerance(T, X, want)


def test_masks_and_batches() -> None:
    """src_mask (additive and -inf), is_causal and a key padding mask per batch element."""
    T = TransformerLayer.random(3, 2, 2, 4, seed=5, residual=True, norm="pre", activation="gelu")
    X = np.random.default_rng(1).normal(size=(3, 4, 3))
    m = np.array([[0.0, -1.0, 0.5, -np.inf], [0.0, 0.0, 0.0, 0.0], [2.0, -np.inf, 0.0, 1.0], [0.0, 0.3, 0.0, 0.0]])
    kpm = np.array([[False, False, False, True], [False, True, False, False], [False, False, False, False]])
    for kw in (
        {"src_mask": m},
        {"is_causal": True},
        {"src_key_padding_mask": kpm},
        {"src_mask": m, "src_key_padding_mask": kpm},
    ):
        want = T(X, **kw)
        got = U.run(T, X, **kw)
        assert got.shape == (3, 4, 3)
        assert np.max(np.abs(got - want)) <= 2e-13, kw  # measured <= 2e-15


def test_stack() -> None:
    layers = [
        TransformerLayer.random(3, 2, 2, 4, seed=1, residual=True, norm="post"),
        TransformerLayer.random(3, 1, 1, None, seed=2, residual=True, norm="pre"),
        TransformerLayer.random(3, 2, 2, 3, seed=3, activation="gelu"),
    ]
    X = np.random.default_rng(0).normal(size=(4, 3))
    want = X
    for T in layers:
        want = T(want)
    assert np.max(np.abs(U.run_stack(layers, X) - want)) <= 1e-13  # measured 4.4e-16


def test_a_logit_row_spread_over_2000_is_exact_by_the_row_max() -> None:
    T = TransformerLayer(w_q=[[[1.0], [0.0]]], w_k=[[[1.0], [0.0]]], w_v=[[[1.0], [0.0]]], w_o=[[1.0, 0.0]], scale=1.0)
    u = UniversalSimulator(3, 2, 1, 1, variant="shallow")
    top = 1000.0**0.5  # logits 1000, 0, -1000 in the first row
    X = np.array([[top, 0.0], [0.0, 0.0], [-top, 0.0]])
    want = T(X)
    assert np.all(np.isfinite(want))
    assert np.max(np.abs(u.run(T, X) - want)) <= 1e-12  # measured 0


def test_biases_enter_through_row_d() -> None:
    """Q and K biases only (zero weights): the scores are b_q . b_k, from the appended column."""
    rng = np.random.default_rng(4)
    T = TransformerLayer.random(3, 2, 2, None, seed=4)
    T = T.with_options(w_q=np.zeros_like(T.w_q), b_q=rng.normal(size=T.b_q.shape), b_k=rng.normal(size=T.b_k.shape))
    X = rng.normal(size=(4, 3))
    assert np.max(np.abs(U.run(T, X) - T(X))) <= 1e-13


@pytest.mark.parametrize("name", FIXTURES)
def test_torch_fixtures_on_shallow(name: str) -> None:
    errs = check_fixture(name, variant="shallow")
    assert errs["U"] <= 1e-13, errs  # measured <= 1.8e-15
