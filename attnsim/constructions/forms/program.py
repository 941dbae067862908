"""Lemma (transpose) and Lemma (matmul) in the generalized forms U is built from, as lemmas.

Each construction below is a program made only of :func:`~attnsim.constructions.forms.contraction.gather_onto`
and :func:`~attnsim.constructions.forms.contraction.contract` (and one product), built over unbound sizes,
with an independent specification in matrix coordinates (``spec.py``):

* :func:`gathered_transpose`: A^T placed onto a grid by one gather (Lemma (transpose));
* :func:`gathered_permute`: out[a, b, c] = A[c, a, b], a 3-axis permutation folded into one gather;
* :func:`broadcast_gather`: out[i, j] = A[0, j], a gather with a constant coordinate (a broadcast);
* :func:`consumer_matmul`: out[i, j, m] = sum_l A[i, l] B[l, j] for every m: products formed by two
  gathers, the sums read by ``contract`` at every position of a consumer grid larger than AB
  (Lemma (matmul), in the shape U uses);
* :func:`two_axis_sum`: out[i, j] = sum_{e, w} A[e, i, w], one ``contract`` over two axes at once
  that are not adjacent in the grid (U's LayerNorm sums over (e, h)).

Sizes may be ints or :class:`~attnsim.rasp.core.Size` symbols; an int call is the symbolic build
bound to those ints.  Every grid lives in its own channel at offset 0, as in U.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from attnsim.constructions.construction import Construction, size_args, sized
from attnsim.constructions.forms import spec as specs
from attnsim.constructions.forms.contraction import contract, gather_onto
from attnsim.constructions.transpose.spec import TRANSPOSE
from attnsim.proofs.registry import ConstructionEntry
from attnsim.rasp import core as C
from attnsim.rasp.intent import Intent
from attnsim.rasp.layout import Grid, GridRef, Layout

TRANSPOSE_REF = "Lemma (transpose)"
MATMUL_REF = "Lemma (matmul)"
Size = int | C.Size


def _named(it: Intent, name: str) -> Intent:
    return dataclasses.replace(it, name=name)


def _gather_lemma(
    cid: str, spec: Any, a: Grid, out: Grid, coords: Any, reference: Any
) -> Construction:
    sop, it = gather_onto(GridRef(C.tokens, a), out, coords, "out")
    return Construction(
        cid,
        TRANSPOSE_REF,
        sop,
        Layout.of(a.block, out.block),
        ("A",),
        reference,
        intents=[it],
        specification=spec,
    )


@sized(rows="rows", cols="cols")
def gathered_transpose(rows: Size, cols: Size) -> Construction:
    """A^T for A (rows, cols): entry (i, j) of a (cols, rows) grid gathers A[j, i]."""
    sym = size_args(rows=rows, cols=cols)
    r, c = sym["rows"], sym["cols"]
    a = Grid.of("A", 0, i=r, j=c)
    out = Grid.of("out", 0, channel="out", i=c, j=r)

    def reference(x: np.ndarray, backend: str = "numpy") -> Any:
        return np.swapaxes(x, -1, -2)

    spec = TRANSPOSE.at(rows=r, cols=c, heads=1)
    return _gather_lemma("gathered-transpose", spec, a, out, lambda x: {"i": x["j"], "j": x["i"]}, reference)


@sized(d0="d0", d1="d1", d2="d2")
def gathered_permute(d0: Size, d1: Size, d2: Size) -> Construction:
    """out[a, b, c] = A[c, a, b] for A (d0, d1, d2): one gather onto a (d1, d2, d0) grid."""
    sym = size_args(d0=d0, d1=d1, d2=d2)
    a = Grid.of("A", 0, c=sym["d0"], a=sym["d1"], b=sym["d2"])
    out = Grid.of("out", 0, channel="out", a=sym["d1"], b=sym["d2"], c=sym["d0"])

    def reference(x: np.ndarray, backend: str = "numpy") -> Any:
        return np.transpose(x, (1, 2, 0))

    spec = specs.PERMUTE3.at(d0=sym["d0"], d1=sym["d1"], d2=sym["d2"])
    return _gather_lemma("gathered-permute", spec, a, out, lambda x: dict(x), reference)


@sized(depth="depth", rows="rows", cols="cols")
def broadcast_gather(depth: Size, rows: Size, cols: Size) -> Construction:
    """out[i, j] = A[0, j] for A (depth, cols), out (rows, cols): row 0 broadcast by a constant coordinate."""
    sym = size_args(depth=depth, rows=rows, cols=cols)
    a = Grid.of("A", 0, r=sym["depth"], j=sym["cols"])
    out = Grid.of("out", 0, channel="out", i=sym["rows"], j=sym["cols"])

    def reference(x: np.ndarray, backend: str = "numpy", sizes: Any = None) -> Any:
        return np.repeat(x[:1, :], sizes["rows"], axis=0)

    spec = specs.BROADCAST_ROW.at(depth=sym["depth"], rows=sym["rows"], cols=sym["cols"])
    return _gather_lemma("broadcast-gather", spec, a, out, lambda x: {"r": 0, "j": x["j"]}, reference)


@sized(rows="rows", inner="inner", cols="cols", extra="extra")
def consumer_matmul(rows: Size, inner: Size, cols: Size, extra: Size) -> Construction:
    """out[i, j, m] = (AB)[i, j] for every m < extra: AB read at the positions of a larger consumer grid.

    Layer 1: two gathers place A[i, l] and B[l, j] at product (i, j, l), the MLP multiplies;
    layer 2: ``contract`` over l onto the consumer grid (i, j, m), count x mean."""
    sym = size_args(rows=rows, inner=inner, cols=cols, extra=extra)
    r, k, c, x = sym["rows"], sym["inner"], sym["cols"], sym["extra"]
    a = Grid.of("A", 0, i=r, l=k)
    b = Grid.of("B", a.end_expr(), l=k, j=c)
    prod = Grid.of("P", 0, channel="P", i=r, j=c, l=k)
    out = Grid.of("out", 0, channel="out", i=r, j=c, m=x)
    ga, ia = gather_onto(GridRef(C.tokens, a), prod, lambda p: {"i": p["i"], "l": p["l"]}, "P.a")
    gb, ib = gather_onto(GridRef(C.tokens, b), prod, lambda p: {"l": p["l"], "j": p["j"]}, "P.b")
    products = C.apply("mul", ga, gb).named("P")
    sop, isum = contract(GridRef(products, prod), ("l",), out, lambda o: {"i": o["i"], "j": o["j"]}, "out")

    def reference(av: np.ndarray, bv: np.ndarray, backend: str = "numpy", sizes: Any = None) -> Any:
        ab = np.matmul(av, bv)
        return np.repeat(ab[:, :, None], sizes["extra"], axis=2)

    return Construction(
        "consumer-matmul",
        MATMUL_REF,
        sop,
        Layout.of(a.block, b.block, prod.block, out.block),
        ("A", "B"),
        reference,
        intents=[_named(ia, "gather_a"), _named(ib, "gather_b"), isum],
        specification=specs.CONSUMER_MATMUL.at(rows=r, inner=k, cols=c, extra=x),
    )


@sized(depth="depth", rows="rows", width="width", cols="cols")
def two_axis_sum(depth: Size, rows: Size, width: Size, cols: Size) -> Construction:
    """out[i, j] = sum_{e < depth} sum_{w < width} A[e, i, w] for every j < cols: one contract over (e, w)."""
    sym = size_args(depth=depth, rows=rows, width=width, cols=cols)
    a = Grid.of("A", 0, e=sym["depth"], i=sym["rows"], w=sym["width"])
    out = Grid.of("out", 0, channel="out", i=sym["rows"], j=sym["cols"])
    sop, it = contract(GridRef(C.tokens, a), ("e", "w"), out, lambda o: {"i": o["i"]}, "out")

    def reference(av: np.ndarray, backend: str = "numpy", sizes: Any = None) -> Any:
        s = av.sum(axis=(0, 2)) if backend == "numpy" else np.sum(np.sum(av, axis=0), axis=1)
        return np.repeat(np.asarray(s).reshape(-1, 1), sizes["cols"], axis=1)

    return Construction(
        "two-axis-sum",
        MATMUL_REF,
        sop,
        Layout.of(a.block, out.block),
        ("A",),
        reference,
        intents=[it],
        specification=specs.TWO_AXIS_SUM.at(
            depth=sym["depth"], rows=sym["rows"], width=sym["width"], cols=sym["cols"]
        ),
    )


#: The constructions this module declares (registered by :mod:`attnsim.catalog`).
CONSTRUCTIONS = (
    ConstructionEntry("gathered-transpose", TRANSPOSE_REF, lambda: gathered_transpose(2, 3)),
    ConstructionEntry("gathered-permute", TRANSPOSE_REF, lambda: gathered_permute(2, 3, 4)),
    ConstructionEntry("broadcast-gather", TRANSPOSE_REF, lambda: broadcast_gather(2, 3, 4)),
    ConstructionEntry("consumer-matmul", MATMUL_REF, lambda: consumer_matmul(2, 3, 4, 2)),
    ConstructionEntry("two-axis-sum", MATMUL_REF, lambda: two_axis_sum(2, 3, 4, 2)),
)
