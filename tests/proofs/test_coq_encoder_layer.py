"""coq/EncoderLayer.v is the layer torch runs: Coq accepts it, its line-for-line Python
transcription (attnsim.proofs.coq_encoder_layer) covers every Definition, and the transcription,
at a capacity above the layer's sizes with noise in every padding, equals torch's
nn.TransformerEncoderLayer (slow path, float64) on the torch sweep's configurations."""

from __future__ import annotations

import re
import shutil
from typing import Any

import numpy as np
import pytest

from attnsim.constructions.kernel import COQ_BUDGET, FORBIDDEN, coq_sources
from attnsim.proofs import coq_build as B
from attnsim.proofs import coq_encoder_layer as T

try:
    import torch
except ImportError:  # collected and skipped, not hidden
    torch = None  # type: ignore[assignment]

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed (pip install '.[test]')")
needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed")

D, H, F, n = 8, 2, 12, 4  # the torch sweep's layer (tests/universal/test_torch_compare.py)
CAP = (6, 10, 3, 5, 14)  # N, D, H, K, F: every size above the layer's, padding filled with noise
OPTIONS = ("post-relu", "pre-gelu", "no-bias-eps", "no-affine", "tanh-gelu")
MASKS = ("none", "bool", "additive", "padding", "causal")


def _source() -> str:
    return (coq_sources() / "EncoderLayer.v").read_text()


def test_every_coq_definition_is_transcribed() -> None:
    defs = re.findall(r"^Definition (\w+)", _source(), re.M)
    assert sorted(defs) == sorted(T.TRANSCRIBED)
    assert not FORBIDDEN.search(_source())


@needs_coq
def test_coq_accepts_the_encoder_layer() -> None:
    tools = B.CoqTools.find()
    assert tools is not None
    built = B.build([B.CoqFile("EncoderLayer", _source())], tools, COQ_BUDGET)
    assert built.failed is None, built.failed.output[-500:]


def _module(option: str) -> Any:
    torch.manual_seed(0)
    kw: dict[str, Any] = {"dropout": 0.0, "batch_first": True, "dtype": torch.float64}
    extra: dict[str, Any] = {
        "post-relu": {},
        "pre-gelu": {"norm_first": True, "activation": "gelu"},
        "no-bias-eps": {"bias": False, "layer_norm_eps": 1e-6},
        "no-affine": {},
        "tanh-gelu": {"activation": torch.nn.GELU(approximate="tanh")},
    }[option]
    m = torch.nn.TransformerEncoderLayer(D, H, F, **(kw | extra))
    if option == "no-affine":
        m.norm1 = torch.nn.LayerNorm(D, elementwise_affine=False, dtype=torch.float64)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.2)
    return m.eval()


def _masks(kind: str) -> dict[str, Any]:
    rng = np.random.default_rng(2)
    if kind == "bool":
        m = rng.random((n, n)) < 0.3
        np.fill_diagonal(m, False)
        return {"src_mask": m}
    if kind == "additive":
        return {"src_mask": rng.normal(size=(n, n))}
    if kind == "padding":
        return {"pad": np.array([False, False, True, True])}
    if kind == "causal":
        return {"is_causal": True}
    return {}


def _torch(module: Any, x: np.ndarray, masks: dict[str, Any]) -> np.ndarray:
    kw: dict[str, Any] = {}
    if "src_mask" in masks:
        kw["src_mask"] = torch.from_numpy(masks["src_mask"])
    if "pad" in masks:
        kw["src_key_padding_mask"] = torch.from_numpy(masks["pad"][None, :])
    if masks.get("is_causal"):
        kw["src_mask"] = torch.nn.Transformer.generate_square_subsequent_mask(n, dtype=torch.float64)
        kw["is_causal"] = True
    torch.backends.mha.set_fastpath_enabled(False)  # the documented slow path
    try:
        return module(torch.from_numpy(x[None]), **kw)[0].detach().numpy()
    finally:
        torch.backends.mha.set_fastpath_enabled(True)


def _transcription(module: Any, x: np.ndarray, masks: dict[str, Any], **override: Any) -> np.ndarray:
    N, Dc, Hc, Kc, Fc = CAP
    P = T.params_from_torch(module, CAP)
    M = T.mask_from_torch(N, n, masks.get("src_mask"), masks.get("is_causal", False), masks.get("pad"))
    layer = T.with_params(T.Layer(np.exp, np.sqrt, N, Dc, Hc, Kc, Fc, P, M, n), **override)
    y = layer.encoder_layer(T.embed(x, N, Dc))
    assert not np.any(y[n:, :]) and not np.any(y[:, D:])  # zero padding
    return y[:n, :D]


@needs_torch
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("option", OPTIONS)
@pytest.mark.parametrize("mask", MASKS)
def test_the_transcription_equals_torch(option: str, mask: str) -> None:
    x = np.random.default_rng(3).normal(size=(n, D))
    module, masks = _module(option), _masks(mask)
    P = T.params_from_torch(module, CAP)
    assert T.is_torch_layer(P)
    diff = np.max(np.abs(_transcription(module, x, masks) - _torch(module, x, masks)))
    assert diff <= 1e-12, diff  # measured <= 1.1e-15 over the 25 cases


@needs_torch
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    ("option", "override"),
    [
        ("post-relu", {"eps": 1e-1}),  # a wrong LayerNorm eps
        ("pre-gelu", {"activation": T.gelu_tanh}),  # the other GELU form
        ("post-relu", {"scale": 1.0}),  # scores not scaled by 1 / sqrt(d_head)
        ("pre-gelu", {"norm": "PostNorm"}),  # the norm in the wrong place
    ],
)
def test_a_changed_layer_disagrees_with_torch(option: str, override: dict[str, Any]) -> None:
    """The comparison can fail: the same transcription with one field of the record changed."""
    x = np.random.default_rng(3).normal(size=(n, D))
    module = _module(option)
    diff = np.max(np.abs(_transcription(module, x, {}, **override) - _torch(module, x, {})))
    assert diff > 1e-4, diff
