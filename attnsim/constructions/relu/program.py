"""Activation ReLU: max(x, 0) element-wise, no attention (0 layers, one MLP primitive).

The paper lists ReLU beside MaxMin as the activations its simulator supports; it needs no
attention at all.  ``relu(length)`` acts on a vector, ``relu(length, rows=r)`` on an r x length
matrix; :func:`relu_ref` on any matrix block.  Exact on every backend (relu-exact primitive).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnsim.constructions.construction import Construction, VectorConstruction, size_args, sized
from attnsim.constructions.relu.spec import RELU
from attnsim.proofs.registry import ConstructionEntry
from attnsim.rasp import core as C
from attnsim.rasp.intent import Intent
from attnsim.rasp.layout import Block, Layout, MatRef

PAPER_REF = "Activation ReLU"


def relu_ref(a: MatRef, name: str = "relu") -> tuple[MatRef, list[Intent]]:
    """Composable form: max(A, 0) entry-wise, at A's positions in a new channel (no selectors)."""
    b = a.block
    out = Block.of(name, b.offset, b.rows, b.cols, b.stack, channel=name)
    return MatRef(C.apply("relu", a.sop).named(name), out), []


def _reference(a: np.ndarray, backend: str = "numpy") -> Any:
    if backend == "numpy":
        return np.maximum(a, 0.0)
    if backend == "sympy":
        import sympy as sp

        return np.vectorize(lambda v: sp.Max(v, 0), otypes=[object])(a)
    return np.vectorize(lambda v: max(v, 0 * v), otypes=[object])(a)


@sized(length="n", rows="rows")
def relu(length: int | C.Size, rows: int | C.Size | None = None) -> Construction:
    """ReLU of a vector of ``length`` entries, or of a (rows, length) matrix (ints or Size symbols)."""
    sym = size_args({"n": "length"}, n=length, rows=rows)
    n = sym["n"]
    r = sym["rows"] if rows is not None else 1
    a_blk = Block.of("A", 0, r, n)
    res, intents = relu_ref(MatRef(C.tokens, a_blk), name="out")
    return VectorConstruction(
        "relu",
        PAPER_REF,
        res.sop,
        Layout.of(a_blk, res.block),
        ("A",),
        _reference,
        out_shape=(n,) if rows is None else None,
        intents=intents,
        paper_cost={"layers": 0, "heads": [], "note": "element-wise, no attention"},
        specification=RELU.at(rows=r, n=n),
    )


#: The constructions this module declares (registered by :mod:`attnsim.catalog`).
CONSTRUCTIONS = (
    ConstructionEntry("relu", PAPER_REF, lambda: relu(4, rows=3)),
)


__all__ = ["VectorConstruction", "relu", "relu_ref"]
