"""Reproduce torch's inference fast-path finding (docs/torch.md, issue 30 item 8).

torch 2.x's ``nn.TransformerEncoderLayer`` in eval + no_grad (batch_first, float64) takes its
fast path; with a float ``src_mask`` that path disagrees with its own documented slow path (grad
enabled) and with an independent NumPy formula of the layer, while U and the slow path agree.

    python benchmarks/torch_fastpath.py

prints, per mask, the max-abs differences: slow vs an independent formula, fast vs slow, U vs slow.
"""

from __future__ import annotations

import numpy as np
import torch

from attnsim.universal.torch_compare import compare_torch


def independent(layer: torch.nn.TransformerEncoderLayer, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Post-norm encoder layer, ReLU, written from torch's documentation alone (not attnsim's code)."""
    sd = {k: v.detach().numpy() for k, v in layer.state_dict().items()}
    d, h = x.shape[-1], layer.self_attn.num_heads
    k = d // h
    qkv = x @ sd["self_attn.in_proj_weight"].T + sd["self_attn.in_proj_bias"]
    q, kk, v = qkv[..., :d], qkv[..., d : 2 * d], qkv[..., 2 * d :]
    heads = []
    for i in range(h):
        s = q[..., i * k : (i + 1) * k] @ np.swapaxes(kk[..., i * k : (i + 1) * k], -1, -2) / np.sqrt(k) + mask
        a = np.exp(s - s.max(-1, keepdims=True))
        heads.append((a / a.sum(-1, keepdims=True)) @ v[..., i * k : (i + 1) * k])
    att = np.concatenate(heads, -1) @ sd["self_attn.out_proj.weight"].T + sd["self_attn.out_proj.bias"]

    def ln(z: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        mu = z.mean(-1, keepdims=True)
        return (z - mu) / np.sqrt(((z - mu) ** 2).mean(-1, keepdims=True) + layer.norm1.eps) * w + b

    y = ln(x + att, sd["norm1.weight"], sd["norm1.bias"])
    f = np.maximum(y @ sd["linear1.weight"].T + sd["linear1.bias"], 0) @ sd["linear2.weight"].T + sd["linear2.bias"]
    return ln(y + f, sd["norm2.weight"], sd["norm2.bias"])


def main() -> None:
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(
        8, 2, 16, dropout=0.0, batch_first=True, dtype=torch.float64
    ).eval()  # 2 heads: torch's fast path runs
    x = torch.randn(2, 5, 8, dtype=torch.float64).numpy()
    rng = np.random.default_rng(1)
    plus = np.zeros((5, 5))
    plus[1, 2] = 1000.0
    masks = {"random additive": rng.normal(size=(5, 5)), "one +1000 entry": plus, "zeros": np.zeros((5, 5))}
    print(f"torch {torch.__version__}")
    for name, m in masks.items():
        c = compare_torch(layer, x, src_mask=m)
        assert c.slow.output is not None
        ind = float(np.max(np.abs(c.slow.output - independent(layer, x, m))))
        fast_vs_slow = "NaN" if c.fast.output is not None and np.isnan(c.fast.output).all() else f"{c.slow_vs_fast:.3g}"
        print(f"{name:>16}: slow vs formula {ind:.2g}, fast vs slow {fast_vs_slow}, U vs slow {c.u_vs_slow:.2g}")


if __name__ == "__main__":
    main()
