"""Build the torch fixtures under attnsim/data/ (run once, with torch installed; the outputs are committed).

Real ``torch.nn`` modules in float64 eval mode: TransformerEncoderLayer (post-norm ReLU,
pre-norm GELU), MultiheadAttention, and a 2-layer TransformerEncoder.  Each .npz holds the
state dict (keys prefixed ``sd:`` or ``layer<i>/sd:``), the input ``x`` (n, d), torch's output
``y`` and the options needed by ``TransformerLayer.from_state_dict``.

    python tools/make_fixtures.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

OUT = Path(__file__).resolve().parents[1] / "attnsim" / "data"
D, HEADS, FF, N = 8, 2, 16, 5


def _sd(module: torch.nn.Module, prefix: str = "") -> dict[str, np.ndarray]:
    return {f"{prefix}sd:{k}": v.detach().numpy() for k, v in module.state_dict().items()}


def _perturb(module: torch.nn.Module, gen: torch.Generator) -> None:
    """Non-trivial biases and LayerNorm affine parameters (torch initializes them to 0 / 1)."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * 0.2)
            elif "norm" in name:
                p.copy_(1 + torch.randn(p.shape, generator=gen, dtype=p.dtype) * 0.2)
            else:
                p.copy_(p + torch.randn(p.shape, generator=gen, dtype=p.dtype) * 0.1)


def main() -> None:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    OUT.mkdir(parents=True, exist_ok=True)
    x = torch.randn(1, N, D, generator=gen, dtype=torch.float64)
    for name, norm_first, act in (("encoder_post_relu", False, "relu"), ("encoder_pre_gelu", True, "gelu")):
        layer = torch.nn.TransformerEncoderLayer(
            D, HEADS, FF, dropout=0.0, activation=act, batch_first=True, norm_first=norm_first, dtype=torch.float64
        ).eval()
        _perturb(layer, gen)
        with torch.no_grad():
            y = layer(x)
        meta = {"kind": "encoder", "n_heads": HEADS, "norm_first": int(norm_first), "activation": act, "eps": 1e-5}
        np.savez_compressed(OUT / f"{name}.npz", x=x[0].numpy(), y=y[0].numpy(), **_sd(layer), **_meta(meta))
    mha = torch.nn.MultiheadAttention(D, HEADS, batch_first=True, dtype=torch.float64).eval()
    _perturb(mha, gen)
    with torch.no_grad():
        y = mha(x, x, x, need_weights=False)[0]
    np.savez_compressed(
        OUT / "mha.npz", x=x[0].numpy(), y=y[0].numpy(), **_sd(mha), **_meta({"kind": "mha", "n_heads": HEADS})
    )
    base = torch.nn.TransformerEncoderLayer(
        D, HEADS, FF, dropout=0.0, activation="relu", batch_first=True, dtype=torch.float64
    )
    enc = torch.nn.TransformerEncoder(base, num_layers=2, enable_nested_tensor=False).eval()
    for lyr in enc.layers:
        _perturb(lyr, gen)
    with torch.no_grad():
        y = enc(x)
    arrays = {k: v for i, lyr in enumerate(enc.layers) for k, v in _sd(lyr, f"layer{i}/").items()}
    meta = {"kind": "stack", "layers": 2, "n_heads": HEADS, "norm_first": 0, "activation": "relu", "eps": 1e-5}
    np.savez_compressed(OUT / "stack2.npz", x=x[0].numpy(), y=y[0].numpy(), **arrays, **_meta(meta))
    total = sum(p.stat().st_size for p in OUT.glob("*.npz"))
    print(f"wrote {len(list(OUT.glob('*.npz')))} fixtures, {total} bytes, torch {torch.__version__}")


def _meta(meta: dict[str, object]) -> dict[str, np.ndarray]:
    return {f"meta:{k}": np.asarray(v) for k, v in meta.items()}


if __name__ == "__main__":
    main()
