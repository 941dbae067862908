"""The simulated layer T (Theorem 6 / Corollary 6.1 / Theorem 9): reference semantics and importers."""

import math
import sys

import numpy as np
import pytest
import sympy as sp

from attnsim import TransformerLayer
from attnsim.universal.errors import SimulatorError
from attnsim.universal.layer_arithmetic import layer_norm


def _mha_by_hand(T: TransformerLayer, x: np.ndarray) -> np.ndarray:
    outs = []
    for h in range(T.n_heads):
        q, k, v = x @ T.w_q[h] + T.b_q[h], x @ T.w_k[h] + T.b_k[h], x @ T.w_v[h] + T.b_v[h]
        s = q @ k.T / math.sqrt(T.d_head)
        e = np.exp(s)
        outs.append((e / e.sum(axis=1, keepdims=True)) @ v)
    return np.hstack(outs) @ T.w_o + T.b_o


def _layer_norm_by_hand(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    """torch.nn.LayerNorm: biased variance over the features, eps INSIDE the square root."""
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def test_attention_matches_textbook() -> None:
    """Theorem 6's T: multi-head attention, written out here head by head."""
    T = TransformerLayer.random(d_model=4, n_heads=2, d_head=2, seed=0)
    x = np.random.default_rng(1).normal(size=(3, 4))
    assert np.max(np.abs(T(x) - _mha_by_hand(T, x))) <= 5e-15  # measured 5.6e-17


@pytest.mark.parametrize("eps", [1e-5, 0.3])
def test_post_norm_encoder_layer(eps: float) -> None:
    """Corollary 6.1's T: a post-norm GELU encoder layer, every step written out here; eps is
    large enough that moving it outside the square root changes the output."""
    T = TransformerLayer.random(4, 2, 2, d_ff=8, seed=0, residual=True, norm="post", activation="gelu", eps=eps)
    x = np.random.default_rng(1).normal(size=(3, 4))
    y1 = _layer_norm_by_hand(x + _mha_by_hand(T, x), T.ln1_weight, T.ln1_bias, eps)
    u = y1 @ T.w1 + T.b1
    g = 0.5 * u * (1 + np.vectorize(math.erf)(u / math.sqrt(2)))
    want = _layer_norm_by_hand(y1 + g @ T.w2 + T.b2, T.ln2_weight, T.ln2_bias, eps)
    assert np.max(np.abs(T(x) - want)) <= 1e-14  # measured 2.2e-16 at both eps


@pytest.mark.parametrize("eps", [1e-5, 0.3])
def test_layer_norm_by_hand(eps: float) -> None:
    """layer_norm is torch's LayerNorm with eps inside the root; with eps = 0, zero mean and unit
    biased variance before the affine part."""
    rng = np.random.default_rng(2)
    x, w, b = rng.normal(size=(5, 4)) * 0.1, rng.normal(size=4), rng.normal(size=4)
    assert np.max(np.abs(layer_norm(x, w, b, eps) - _layer_norm_by_hand(x, w, b, eps))) <= 1e-15  # measured 0.0
    z = layer_norm(x, np.ones(4), np.zeros(4), 0.0)
    np.testing.assert_allclose(z.mean(axis=1), 0, rtol=0, atol=1e-14)  # measured 1.1e-16
    np.testing.assert_allclose(z.var(axis=1), 1, rtol=0, atol=1e-14)  # measured 2.2e-16


def test_symbolic_layer() -> None:
    T = TransformerLayer.symbolic(d_model=2, n_heads=1, d_head=2, d_ff=2)
    x = sp.Matrix(2, 2, sp.symbols("x0:4", real=True))
    y = T(x)
    assert y.shape == (2, 2) and y.dtype == object
    assert sp.Symbol("w1_0_0", real=True) in sp.sympify(y[0, 0]).free_symbols


@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        ({"w_q": np.zeros((2, 3))}, "w_q must have shape"),
        ({"w_k": np.zeros((1, 2, 3))}, "w_k must have shape"),
        ({"w_o": np.full((2, 2), np.nan)}, "NaN"),
        ({"norm": "mid"}, "norm must be one of"),
        ({"activation": "tanh"}, "activation must be one of"),
        ({"w1": np.zeros((2, 3))}, "both w1"),
        ({"eps": 0.0}, "eps must be > 0"),
    ],
)
def test_bad_parameters(kw: dict, msg: str) -> None:
    base = {"w_q": np.zeros((1, 2, 2)), "w_k": np.zeros((1, 2, 2)), "w_v": np.zeros((1, 2, 2)), "w_o": np.zeros((2, 2))}
    with pytest.raises(SimulatorError, match=msg):
        TransformerLayer(**(base | kw))


def test_bad_input() -> None:
    T = TransformerLayer.random(4, 1, 2, seed=0)
    with pytest.raises(SimulatorError, match="X must have shape"):
        T(np.zeros((3, 5)))
    with pytest.raises(SimulatorError, match="NaN"):
        T(np.full((3, 4), np.inf))


def test_from_state_dict_mha_convention() -> None:
    """torch stores W (out, in) and computes x W^T; heads are row blocks of in_proj_weight."""
    rng = np.random.default_rng(0)
    d, h = 4, 2
    sd = {
        "in_proj_weight": rng.normal(size=(3 * d, d)),
        "in_proj_bias": rng.normal(size=3 * d),
        "out_proj.weight": rng.normal(size=(d, d)),
        "out_proj.bias": rng.normal(size=d),
    }
    T = TransformerLayer.from_state_dict(sd, n_heads=h)
    x = rng.normal(size=(3, d))
    q = x @ sd["in_proj_weight"][:d].T + sd["in_proj_bias"][:d]
    k = d // h
    for i in range(h):  # head i's W_Q is the transpose of rows i k .. (i + 1) k of in_proj_weight
        assert np.array_equal(T.w_q[i], sd["in_proj_weight"][i * k : (i + 1) * k].T)
        assert np.array_equal(T.w_v[i], sd["in_proj_weight"][2 * d + i * k : 2 * d + (i + 1) * k].T)
    got = np.hstack([x @ T.w_q[i] + T.b_q[i] for i in range(h)])
    np.testing.assert_allclose(got, q, rtol=0, atol=1e-15)  # measured 0.0
    assert T.residual is False and T.norm == "none" and T.d_ff is None
    with pytest.raises(SimulatorError, match="divisor"):
        TransformerLayer.from_state_dict(sd, n_heads=3)
    with pytest.raises(SimulatorError, match="in_proj_weight"):
        TransformerLayer.from_state_dict({"x": np.zeros(2)}, n_heads=1)


def test_from_torch_without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(SimulatorError, match=r"attnsim\[torch\]"):
        TransformerLayer.from_torch(object())


def test_batch_first_call_and_its_shape_errors() -> None:
    """Theorem 6's T on a batch (B, n, d_model), batch first: each element on its own, stacked."""
    T = TransformerLayer.random(4, 2, 2, d_ff=3, seed=0, residual=True, norm="pre")
    X = np.random.default_rng(1).normal(size=(2, 3, 4))
    assert np.array_equal(T(X), np.stack([T(X[0]), T(X[1])]))
    for shape in ((4,), (2, 3, 5), (0, 3, 4), (2, 0, 4), (1, 1, 2, 4)):
        with pytest.raises(
            SimulatorError, match=r"^X must have shape \(n, 4\) or \(B, n, 4\) \(batch first\) with n, B >= 1, got"
        ):
            T(np.zeros(shape))


def test_mask_arguments_are_keyword_only_and_default_to_none() -> None:
    """torch's names, keyword only; with no mask (or is_causal=False) T is the unmasked layer."""
    T = TransformerLayer.random(4, 2, 2, d_ff=3, seed=0, residual=True, norm="post")
    x = np.random.default_rng(1).normal(size=(3, 4))
    with pytest.raises(TypeError, match=r"takes 2 positional arguments but 3 were given"):
        T(x, np.zeros((3, 3), bool))  # type: ignore[misc]
    none = {"src_mask": None, "is_causal": False, "src_key_padding_mask": None}
    assert np.array_equal(T(x, **none), T(x))
    zeros = {"src_mask": np.zeros((3, 3)), "src_key_padding_mask": np.zeros(3, bool)}
    assert np.max(np.abs(T(x, **zeros) - T(x))) <= 1e-15  # measured 0.0 (a zero mask is no mask)
