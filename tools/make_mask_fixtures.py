"""Build the mask / batch / wide-logit torch fixtures under attnsim/data/ (run once with torch; outputs committed).

The companion of tools/make_fixtures.py (same layout: the state dict under ``sd:``, options under
``meta:``), for float64 ``torch.nn.TransformerEncoderLayer(batch_first=True)`` in eval mode, each
case in two variants, post-norm ReLU and pre-norm GELU:

* ``causal_*``: the explicit ``nn.Transformer.generate_square_subsequent_mask`` (-inf above the
  diagonal) with ``is_causal=True``;
* ``additive_*``: a finite additive float ``src_mask`` with some ``-1e9`` entries;
* ``padding_*``: a batch of B = 3 with different bool ``src_key_padding_mask`` rows;
* ``batch_*``: a batch of B = 3 without masks;
* ``wide_*``: head 0's query weights scaled so that a row of its logits spreads over about 2000
  (> 1418, where a softmax without the max shift overflows; torch's output stays finite).

Masks are stored under ``mask:src_mask`` / ``mask:src_key_padding_mask`` (as given to torch) and
``meta:is_causal``.  ``y`` is torch's output on the documented (slow, SDPA) path, with the fast
path disabled: torch 2.13's eval fast path reads a float src_mask as bool (nonzero = masked) and
returns NaN for finite additive masks (pytorch/pytorch#118628).  ``meta:fast_path_error`` records
max |fast - slow| (NaN when the fast path gives NaN), so each fixture says whether the fast path
agrees.

    python tools/make_mask_fixtures.py
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
from make_fixtures import _perturb  # tools/ is on sys.path when this script runs

OUT = Path(__file__).resolve().parents[1] / "attnsim" / "data"
D, HEADS, FF, N, B = 8, 2, 16, 5, 3
VARIANTS = (("post_relu", False, "relu"), ("pre_gelu", True, "gelu"))


def _head0_logits(layer: torch.nn.TransformerEncoderLayer, x: torch.Tensor) -> torch.Tensor:
    """Head 0's scaled logits scale * q k^T on the attention input (norm1(x) when norm_first)."""
    k = D // HEADS
    z = layer.norm1(x) if layer.norm_first else x
    w, b = layer.self_attn.in_proj_weight, layer.self_attn.in_proj_bias
    q = z @ w[:k].T + b[:k]
    kk = z @ w[D : D + k].T + b[D : D + k]
    return q @ kk.transpose(-1, -2) / math.sqrt(k)


def _widen(layer: torch.nn.TransformerEncoderLayer, x: torch.Tensor, spread: float = 2000.0) -> float:
    """Scale head 0's query rows (weight and bias) so that its widest logit row spreads by ``spread``."""
    k = D // HEADS
    with torch.no_grad():
        s = _head0_logits(layer, x)
        factor = spread / float((s.amax(-1) - s.amin(-1)).max())
        layer.self_attn.in_proj_weight[:k] *= factor
        layer.self_attn.in_proj_bias[:k] *= factor
        s = _head0_logits(layer, x)
        return float((s.amax(-1) - s.amin(-1)).max())


def _cases(gen: torch.Generator) -> dict[str, dict[str, Any]]:
    additive = torch.randn(N, N, generator=gen, dtype=torch.float64) * 2
    additive[0, 3] = additive[2, 0] = additive[4, 4] = -1e9
    padding = torch.tensor(
        [[False] * N, [False, False, False, True, True], [False, True, False, True, False]], dtype=torch.bool
    )
    causal = torch.nn.Transformer.generate_square_subsequent_mask(N, dtype=torch.float64)
    return {
        "causal": {"batch": 1, "kw": {"src_mask": causal, "is_causal": True}},
        "additive": {"batch": 1, "kw": {"src_mask": additive}},
        "padding": {"batch": B, "kw": {"src_key_padding_mask": padding}},
        "batch": {"batch": B, "kw": {}},
        "wide": {"batch": 1, "kw": {}},
    }


def _run(layer: torch.nn.Module, x: torch.Tensor, kw: dict[str, Any], fast: bool) -> torch.Tensor:
    torch.backends.mha.set_fastpath_enabled(fast)
    try:
        with torch.no_grad():
            return layer(x, **kw)
    finally:
        torch.backends.mha.set_fastpath_enabled(True)


def main() -> None:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    OUT.mkdir(parents=True, exist_ok=True)
    for case, spec in _cases(gen).items():
        for variant, norm_first, act in VARIANTS:
            layer = torch.nn.TransformerEncoderLayer(
                D, HEADS, FF, dropout=0.0, activation=act, batch_first=True, norm_first=norm_first, dtype=torch.float64
            ).eval()
            _perturb(layer, gen)
            x = torch.randn(spec["batch"], N, D, generator=gen, dtype=torch.float64)
            meta: dict[str, Any] = {
                "kind": "encoder",
                "n_heads": HEADS,
                "norm_first": int(norm_first),
                "activation": act,
                "eps": 1e-5,
                "is_causal": int(bool(spec["kw"].get("is_causal", False))),
            }
            if case == "wide":
                meta["logit_spread"] = _widen(layer, x)
                assert meta["logit_spread"] > 1418, meta
            y = _run(layer, x, spec["kw"], fast=False)
            assert torch.isfinite(y).all(), (case, variant)
            fast = _run(layer, x, spec["kw"], fast=True)
            meta["fast_path_error"] = float((fast - y).abs().max()) if torch.isfinite(fast).all() else math.nan
            squeeze = spec["batch"] == 1  # one sequence is stored as (n, d), as the older fixtures
            arrays = {
                "x": (x[0] if squeeze else x).numpy(),
                "y": (y[0] if squeeze else y).numpy(),
                **{f"sd:{k}": v.detach().numpy() for k, v in layer.state_dict().items()},
                **{f"mask:{k}": v.numpy() for k, v in spec["kw"].items() if isinstance(v, torch.Tensor)},
                **{f"meta:{k}": np.asarray(v) for k, v in meta.items()},
            }
            name = f"{case}_{variant}"
            np.savez_compressed(OUT / f"{name}.npz", **arrays)
            print(f"{name}: fast path error {meta['fast_path_error']:.2g}", meta.get("logit_spread", ""))
    print(f"torch {torch.__version__}")


if __name__ == "__main__":
    main()
