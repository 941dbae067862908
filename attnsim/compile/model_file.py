"""The compiled model's file: an .npz of float64 weights by name, their exact sparse
(row, col, value) copies and a JSON description of the layout (format ``attnsim-compiled-1``).

Apart from the model (:mod:`attnsim.compile.model`) because the format is its own concern: the
model's ``save`` and ``load`` call :func:`write` and :func:`read` here, and nothing else reads the
file.  :func:`read` gives the model's constructor arguments (:data:`Parts`), so that this module
needs the model's type only, never the model module itself.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from attnsim.compile.errors import CompileError
from attnsim.compile.weights import FnNode, Head, Layer, ReluStage, ScoreBound, Stage, as_number, obj

if TYPE_CHECKING:  # the model calls write(); the type only, so no import circle
    from attnsim.compile.model import CompiledTransformer

Parts = tuple[
    list[str], int, np.ndarray, np.ndarray, list[Layer], np.ndarray, tuple[Fraction, ...] | None, dict[str, Any], str
]
"""``CompiledTransformer(*parts)``: dims, max_len, pos_embed, tok_embed, layers, readout, vocab, notes, name."""


def write(model: CompiledTransformer, path: str | Path) -> Path:
    """Write ``model`` as an .npz: float64 weights by name, exact sparse (row, col, value) copies, and the layout."""
    path = Path(path)
    arrays: dict[str, np.ndarray] = {}
    meta: dict[str, Any] = {
        "format": "attnsim-compiled-1",
        "name": model.name,
        "dims": model.dims,
        "max_len": model.max_len,
        "vocab": None if model.vocab is None else [str(v) for v in model.vocab],
        "notes": model.notes,
        "layers": [],
    }
    bounds = [  # the scored heads' range checks: saved beside the weights, not counted among them
        (f"L{li}.H{hi}.bound", h.bound.W)
        for li, lyr in enumerate(model.layers)
        for hi, h in enumerate(lyr.heads)
        if h.bound is not None
    ]
    for nm, m in [*model.matrices(), *bounds]:
        arrays[nm] = m.astype(np.float64)
        m2 = m.reshape(m.shape[0], -1) if m.ndim == 2 else m.reshape(1, -1)
        r, c = np.nonzero(np.array([[v != 0 for v in row] for row in m2], dtype=bool).reshape(m2.shape))
        arrays[nm + ".exact_rc"] = np.stack([r, c]).astype(np.int64)
        arrays[nm + ".exact_v"] = np.array([str(Fraction(m2[i, j])) for i, j in zip(r, c, strict=True)], dtype=str)
    for lyr in model.layers:
        meta["layers"].append(
            {
                "heads": [
                    {
                        "name": h.name,
                        "kind": h.kind,
                        "margin": str(h.margin),
                        "gap": str(h.gap),
                        "forms": h.forms,
                        "bound": None
                        if h.bound is None
                        else {"lo": str(h.bound.lo), "hi": str(h.bound.hi), "label": h.bound.label},
                    }
                    for h in lyr.heads
                ],
                "mlp": [
                    {
                        "relu": None if st.relu is None else {"notes": st.relu.notes},
                        "fns": [
                            {"prim": f.prim, "params": [str(p) for p in f.params], "out": f.out, "note": f.note}
                            for f in st.fns
                        ],
                    }
                    for st in lyr.mlp
                ],
            }
        )
    arrays["meta"] = np.array(json.dumps(meta))
    with open(path, "wb") as fh:
        np.savez_compressed(fh, **arrays)  # type: ignore[arg-type]
    return path


def read(path: str | Path) -> Parts:
    """The constructor's arguments of a model written by :func:`write` (weights restored exactly)."""
    try:
        z = np.load(Path(path), allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise CompileError(f"cannot read compiled model {path}: {exc}") from None
    meta = json.loads(str(z["meta"]))
    if meta.get("format") != "attnsim-compiled-1":
        raise CompileError(f"{path} is not an attnsim compiled model")

    def mat(nm: str) -> np.ndarray:
        shape = z[nm].shape
        out = obj(shape if len(shape) == 2 else (1, shape[0]))
        rc, vals = z[nm + ".exact_rc"], z[nm + ".exact_v"]
        for (i, j), v in zip(rc.T, vals, strict=True):
            out[i, j] = as_number(Fraction(str(v)))
        return out if len(shape) == 2 else out[0]

    layers = []
    for li, lm in enumerate(meta["layers"]):
        heads = [
            Head(
                hm["name"],
                hm["kind"],
                mat(f"L{li}.H{hi}.W_Q"),
                mat(f"L{li}.H{hi}.W_K"),
                mat(f"L{li}.H{hi}.W_V"),
                mat(f"L{li}.H{hi}.W_O"),
                margin=Fraction(hm["margin"]),
                gap=Fraction(hm["gap"]),
                forms=hm["forms"],
                bound=None
                if hm.get("bound") is None
                else ScoreBound(
                    mat(f"L{li}.H{hi}.bound"),
                    Fraction(hm["bound"]["lo"]),
                    Fraction(hm["bound"]["hi"]),
                    hm["bound"]["label"],
                ),
            )
            for hi, hm in enumerate(lm["heads"])
        ]
        stages = []
        for si, sm in enumerate(lm["mlp"]):
            relu = None
            if sm["relu"] is not None:
                relu = ReluStage(mat(f"L{li}.S{si}.W1"), mat(f"L{li}.S{si}.W2"), sm["relu"]["notes"])
            fns = [
                FnNode(
                    f["prim"],
                    tuple(Fraction(p) for p in f["params"]),
                    mat(f"L{li}.S{si}.F{fi}.W_in"),
                    f["out"],
                    f["note"],
                )
                for fi, f in enumerate(sm["fns"])
            ]
            stages.append(Stage(relu, fns))
        layers.append(Layer(heads, stages))
    vocab = None if meta["vocab"] is None else tuple(Fraction(v) for v in meta["vocab"])
    return (
        meta["dims"],
        int(meta["max_len"]),
        mat("pos_embed"),
        mat("tok_embed"),
        layers,
        mat("readout"),
        vocab,
        meta["notes"],
        meta["name"],
    )
