"""Build the head-width torch fixtures under attnsim/data/ (run once with torch; outputs committed).

The companion of tools/make_fixtures.py (same layout: the state dict under ``sd:``, options under
``meta:``), for heads wider than the other fixtures' 4 and than capacity 32's 8, where the default
attention scale 1/sqrt(d_head) is checked against torch's own:

* ``head_width_k9``: ``TransformerEncoderLayer(18, 2, 8)``, post-norm ReLU (d_head 9);
* ``head_width_k16``: ``TransformerEncoderLayer(32, 2, 8, norm_first=True, activation="gelu")`` (16);
* ``head_width_k64``: ``MultiheadAttention(64, 1)`` (d_head 64).

float64 modules in eval mode, ``batch_first=True``, n = 5 tokens, torch's documented (slow) path.
The weights are drawn and perturbed in float32 and the module then cast to float64, so they are
stored as float32 arrays (exact; a third of the k64 file), read back into float64 unchanged.

    python tools/make_head_width_fixtures.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from make_fixtures import _meta, _perturb  # tools/ is on sys.path when this script runs

OUT = Path(__file__).resolve().parents[1] / "attnsim" / "data"
N = 5
CASES = (
    ("head_width_k9", "encoder", 18, 2, {"norm_first": False, "activation": "relu"}),
    ("head_width_k16", "encoder", 32, 2, {"norm_first": True, "activation": "gelu"}),
    ("head_width_k64", "mha", 64, 1, {}),
)


def main() -> None:
    gen = torch.Generator().manual_seed(9)
    torch.manual_seed(9)
    torch.backends.mha.set_fastpath_enabled(False)
    for name, kind, d, heads, opts in CASES:
        if kind == "mha":
            module: torch.nn.Module = torch.nn.MultiheadAttention(d, heads, batch_first=True)
        else:
            module = torch.nn.TransformerEncoderLayer(d, heads, 8, dropout=0.0, batch_first=True, **opts)
        _perturb(module, gen)  # in float32
        sd32 = {f"sd:{k}": v.detach().numpy().copy() for k, v in module.state_dict().items()}
        module = module.double().eval()
        x = torch.randn(1, N, d, generator=gen, dtype=torch.float64)
        with torch.no_grad():
            y = module(x, x, x, need_weights=False)[0] if kind == "mha" else module(x)
        meta: dict[str, object] = {"kind": kind, "n_heads": heads, "d_head": d // heads}
        if kind == "encoder":
            meta |= {"norm_first": int(opts["norm_first"]), "activation": opts["activation"], "eps": 1e-5}
        np.savez_compressed(OUT / f"{name}.npz", x=x[0].numpy(), y=y[0].numpy(), **sd32, **_meta(meta))
        print(f"{name}: d_head {d // heads}, {(OUT / f'{name}.npz').stat().st_size} bytes, torch {torch.__version__}")


if __name__ == "__main__":
    main()
