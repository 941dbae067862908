"""Corollary 6.1 / Theorem 9 against torch across its options (issue 30): ~60 configurations of
nn.TransformerEncoderLayer / nn.TransformerEncoder / nn.MultiheadAttention (options x masks x
batch sizes x float64/float32), each run by U and by torch's documented slow path through
compare_torch: within 1e-12 in float64, or refused in one line naming the option."""

from __future__ import annotations

import itertools
import re
from typing import Any

import numpy as np
import pytest

from attnsim.universal.errors import SimulatorError

try:
    import torch

    from attnsim.universal.torch_compare import compare_torch
except ImportError:  # collected and skipped, not hidden: the paper map cites these tests
    torch = None  # type: ignore[assignment]

pytestmark = pytest.mark.skipif(torch is None, reason="torch is not installed (pip install '.[test]')")

D, H, F = 8, 2, 12


def _perturbed(m: Any, seed: int) -> Any:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.2)
    return m.eval()


def _module(option: str, dtype: Any) -> Any:
    torch.manual_seed(0)
    kw: dict[str, Any] = {"dropout": 0.0, "batch_first": True, "dtype": dtype}
    layer = lambda **extra: torch.nn.TransformerEncoderLayer(D, H, F, **(kw | extra))
    if option == "mha":
        return _perturbed(torch.nn.MultiheadAttention(D, H, batch_first=True, dtype=dtype), 1)
    if option == "encoder+norm":
        return _perturbed(torch.nn.TransformerEncoder(layer(), 2, norm=torch.nn.LayerNorm(D, dtype=dtype)), 1)
    if option == "encoder":
        return _perturbed(torch.nn.TransformerEncoder(layer(norm_first=True), 2, enable_nested_tensor=False), 1)
    if option == "no-affine":
        m = layer()
        m.norm1 = torch.nn.LayerNorm(D, elementwise_affine=False, dtype=dtype)
        return _perturbed(m, 1)
    extra: dict[str, Any] = {
        "post-relu": {},
        "pre-gelu": {"norm_first": True, "activation": "gelu"},
        "no-bias-eps": {"bias": False, "layer_norm_eps": 1e-6},
        "tanh-gelu": {"activation": torch.nn.GELU(approximate="tanh")},
    }
    return _perturbed(layer(**extra[option]), 1)


OPTIONS = ("post-relu", "pre-gelu", "no-bias-eps", "no-affine", "mha", "encoder", "encoder+norm", "tanh-gelu")
MASKS = ("none", "bool", "additive", "padding")
CASES = [(o, m, 2 if m == "padding" else b) for o, m, b in itertools.product(OPTIONS, MASKS, (1, 2))]
CASES = list(dict.fromkeys(CASES))  # padding runs with B = 2 only: 8 x (3 x 2 + 1) = 56 float64 cases


def _masks(kind: str, b: int, n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(2)
    if kind == "bool":
        m = rng.random((n, n)) < 0.3
        np.fill_diagonal(m, False)  # every query keeps a key
        return {"src_mask": m}
    if kind == "additive":
        return {"src_mask": rng.normal(size=(n, n))}
    if kind == "padding":
        pad = np.zeros((b, n), dtype=bool)
        pad[0, -2:] = True
        return {"src_key_padding_mask": pad}
    return {}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(("option", "mask", "batch"), CASES)
def test_u_equals_torch_slow_path_float64(option: str, mask: str, batch: int) -> None:
    x = np.random.default_rng(3).normal(size=(batch, 4, D))
    c = compare_torch(_module(option, torch.float64), x, **_masks(mask, batch, 4))  # type: ignore[arg-type]
    assert c.slow.output is not None, c.slow.refused
    # 1e-12 is the bar; measured <= 1.8e-15 over the 56 U runs (tanh-GELU: 1.8e-15)
    assert c.u_vs_slow is not None and c.u_vs_slow <= 1e-12, (c.u.refused, c.u_vs_slow)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("option", OPTIONS)
def test_u_on_float32_modules(option: str) -> None:
    """float32 modules: U reads the weights exactly and computes in float64, torch in float32; the
    difference is torch's float32 rounding (measured <= 4.6e-7), not U's."""
    x = np.random.default_rng(3).normal(size=(2, 4, D)).astype(np.float32).astype(np.float64)
    c = compare_torch(_module(option, torch.float32), x)
    assert c.u_vs_slow is not None and c.u_vs_slow <= 5e-5  # ~100x the measured 4.6e-7


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("kind", ["layer", "mha", "encoder"])
def test_a_sequence_first_module_is_fed_sequence_first(kind: str) -> None:
    """torch's default batch_first=False reads (n, B, d): compare_torch transposes X in and the
    output out (fed batch first, torch would run 4 sequences of 2 tokens: off by 1.4 to 1.9)."""
    kw: dict[str, Any] = {"dtype": torch.float64}
    layer = lambda: torch.nn.TransformerEncoderLayer(D, H, F, dropout=0.0, **kw)
    if kind == "mha":
        module = _perturbed(torch.nn.MultiheadAttention(D, H, **kw), 1)
    else:
        module = _perturbed(layer() if kind == "layer" else torch.nn.TransformerEncoder(layer(), 2), 1)
    x = np.random.default_rng(3).normal(size=(2, 4, D))
    c = compare_torch(module, x)
    assert c.u_vs_slow is not None and c.u_vs_slow <= 1e-13, (c.u.refused, c.u_vs_slow)  # measured <= 1.3e-15
    xt = torch.from_numpy(x)
    as_batch_first = module(xt, xt, xt)[0] if kind == "mha" else module(xt)  # the transposes left out
    assert c.slow.output is not None and np.max(np.abs(as_batch_first.detach().numpy() - c.slow.output)) > 1e-2


def test_compare_refuses_a_bad_input_in_one_line() -> None:
    with pytest.raises(SimulatorError, match=r"^X must have shape \(B, n, d_model\), batch first, got \(4, 8\)$"):
        compare_torch(_module("post-relu", torch.float64), np.zeros((4, 8)))


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16"])
def test_the_verdict_compares_u_with_the_slow_path_in_float64(dtype: str) -> None:
    """Corollary 6.1: U reads a module's weights exactly and computes in float64, so the verdict
    compares it with torch's slow path on a float64 copy of the module: within the tolerance at
    every dtype, though U is 1e-7 (float32) or 1e-2 (bfloat16) from the module's own slow path."""
    module = _module("post-relu", getattr(torch, dtype))
    x = np.random.default_rng(3).normal(size=(2, 4, D))
    c = compare_torch(module, x)
    assert (c.slow64 is None) == (dtype == "float64")
    assert c.agrees and c.u_vs_slow64 is not None and c.u_vs_slow64 <= 1e-13  # measured <= 1.3e-15
    own = {"float64": 1e-13, "float32": 1e-5, "bfloat16": 1e-1}[dtype]  # measured 1.3e-15, 3.1e-7, 1.2e-2
    assert c.u_vs_slow is not None and c.u_vs_slow <= own
    assert c.tolerance is not None and 1e-10 <= c.tolerance <= 1e-10 * np.max(np.abs(c.reference.output))
    assert "<= the tolerance" in c.lines()[-1]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_u_off_by_more_than_the_tolerance_is_not_agreeing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A check that can fail: U off by 1e-8 (about 35 times the tolerance here) is a disagreement."""
    from attnsim.universal import torch_compare

    real = torch_compare.UniversalSimulator.run
    monkeypatch.setattr(torch_compare.UniversalSimulator, "run", lambda *a, **kw: real(*a, **kw) + 1e-8)
    c = compare_torch(_module("pre-gelu", torch.float32), np.random.default_rng(3).normal(size=(1, 4, D)))
    assert not c.agrees
    assert re.fullmatch(
        r"U vs torch slow float64: 1e-08, beyond the tolerance 2\.9e-10: U does not simulate this module", c.verdict()
    )
