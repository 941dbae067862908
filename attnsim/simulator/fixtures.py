"""Committed torch fixtures (attnsim/data/*.npz): load them and check reference and U against torch."""

from __future__ import annotations

from importlib import resources
from typing import Any

import numpy as np

from attnsim.simulator.reference import SimulatorError, TransformerLayer
from attnsim.simulator.universal import UniversalSimulator

FIXTURES = ("encoder_post_relu", "encoder_pre_gelu", "mha", "stack2")


def load(name: str) -> dict[str, Any]:
    """The fixture's arrays: ``x``, ``y`` (torch's output), ``layers`` (TransformerLayer list), ``meta``."""
    if name not in FIXTURES:
        raise SimulatorError(f"unknown fixture {name!r}; known: {', '.join(FIXTURES)}")
    path = resources.files("attnsim") / "data" / f"{name}.npz"
    with resources.as_file(path) as p, np.load(p) as z:
        data = {k: z[k] for k in z.files}
    meta = {k[5:]: data[k].item() for k in data if k.startswith("meta:")}
    kw: dict[str, Any] = {}
    if meta["kind"] != "mha":
        kw = {"norm_first": bool(meta["norm_first"]), "activation": str(meta["activation"]), "eps": float(meta["eps"])}
    n_layers = int(meta.get("layers", 1))
    layers = []
    for i in range(n_layers):
        pre = f"layer{i}/sd:" if meta["kind"] == "stack" else "sd:"
        sd = {k[len(pre) :]: v for k, v in data.items() if k.startswith(pre)}
        layers.append(TransformerLayer.from_state_dict(sd, n_heads=int(meta["n_heads"]), **kw))
    return {"x": data["x"], "y": data["y"], "layers": layers, "meta": meta}


def check_fixture(name: str, capacity: tuple[int, int, int, int, int] = (8, 8, 2, 4, 16)) -> dict[str, float]:
    """Max abs errors vs torch's output: the reference and U (the same U for every fixture)."""
    f = load(name)
    x, y, layers = f["x"], f["y"], f["layers"]
    ref = x
    for T in layers:
        ref = T(ref)
    u = UniversalSimulator(*capacity)
    got = u.run_stack(layers, x) if len(layers) > 1 else u.run(layers[0], x)
    return {"reference": float(np.max(np.abs(ref - y))), "U": float(np.max(np.abs(got - y)))}
