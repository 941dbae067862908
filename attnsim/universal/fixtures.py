"""Committed torch fixtures (attnsim/data/*.npz): load them and check reference and U against torch.

tools/make_fixtures.py made the first four (one sequence, no masks); tools/make_mask_fixtures.py
the mask, batch and wide-logit ones (``MASK_FIXTURES``), whose ``x`` may be a batch (B, n, d) and
which carry torch's mask arguments (``mask:src_mask``, ``mask:src_key_padding_mask``,
``meta:is_causal``); tools/make_head_width_fixtures.py the ``HEAD_WIDTH_FIXTURES``, heads of
width 9, 16 and 64 (``meta:d_head``), where torch's default attention scale 1/sqrt(d_head) is
checked against the reference's (their weights are stored as the float32 values they are).
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import numpy as np

from attnsim.universal.errors import SimulatorError
from attnsim.universal.layer import TransformerLayer
from attnsim.universal.universal import UniversalSimulator

MASK_FIXTURES = tuple(
    f"{case}_{variant}"
    for case in ("causal", "additive", "padding", "batch", "wide")
    for variant in ("post_relu", "pre_gelu")
)
FIXTURES = ("encoder_post_relu", "encoder_pre_gelu", "mha", "stack2", *MASK_FIXTURES)
HEAD_WIDTH_FIXTURES = ("head_width_k9", "head_width_k16", "head_width_k64")  # d_head > 8, torch's default scale


def load(name: str) -> dict[str, Any]:
    """The fixture's arrays: ``x``, ``y`` (torch's output), ``layers`` (TransformerLayer list),
    ``state_dicts`` (torch's parameters, one dict per layer), ``meta``, and ``masks``: the keyword
    arguments of ``TransformerLayer.__call__`` torch was given (``src_mask``, ``is_causal``,
    ``src_key_padding_mask``; empty for a fixture without masks)."""
    if name not in (*FIXTURES, *HEAD_WIDTH_FIXTURES):
        raise SimulatorError(f"unknown fixture {name!r}; known: {', '.join((*FIXTURES, *HEAD_WIDTH_FIXTURES))}")
    path = resources.files("attnsim") / "data" / f"{name}.npz"
    with resources.as_file(path) as p, np.load(p) as z:
        data = {k: z[k] for k in z.files}
    meta = {k[5:]: data[k].item() for k in data if k.startswith("meta:")}
    kw: dict[str, Any] = {}
    if meta["kind"] != "mha":
        kw = {"norm_first": bool(meta["norm_first"]), "activation": str(meta["activation"]), "eps": float(meta["eps"])}
    n_layers = int(meta.get("layers", 1))
    layers, sds = [], []
    for i in range(n_layers):
        pre = f"layer{i}/sd:" if meta["kind"] == "stack" else "sd:"
        sd = {k[len(pre) :]: v for k, v in data.items() if k.startswith(pre)}
        sds.append(sd)
        layers.append(TransformerLayer.from_state_dict(sd, n_heads=int(meta["n_heads"]), **kw))
    masks: dict[str, Any] = {k[5:]: data[k] for k in data if k.startswith("mask:")}
    if meta.get("is_causal"):
        masks["is_causal"] = True
    return {"x": data["x"], "y": data["y"], "layers": layers, "state_dicts": sds, "meta": meta, "masks": masks}


def check_fixture(
    name: str,
    capacity: tuple[int, int, int, int, int] = (8, 8, 2, 4, 16),
    *,
    simulator: bool = True,
    variant: str = "compact",
) -> dict[str, float]:
    """Max abs errors vs torch's output: the reference and (``simulator=True``) U (of ``variant``),
    the same U for every fixture.  A fixture's masks go to both, as keywords: ``T(x, **masks)`` and
    ``u.run(T, x, **masks)`` (a stack gets the same masks at every layer, as torch's encoder)."""
    f = load(name)
    x, y, layers, masks = f["x"], f["y"], f["layers"], f["masks"]
    ref = x
    for T in layers:
        ref = T(ref, **masks)
    errs = {"reference": float(np.max(np.abs(ref - y)))}
    if simulator:
        u = UniversalSimulator(*capacity, variant=variant)
        if len(layers) > 1:
            got = u.run_stack(layers, x, **masks)
        else:
            got = u.run(layers[0], x, **masks)
        errs["U"] = float(np.max(np.abs(got - y)))
    return errs
