"""Lemma (matmul): AB for A (r x k) and B (k x c) by selecting and aggregating tokens.

Spread layout (ours): product position (h, i, j, l) = ((h r + i) c + j) k + l.
* layer 1: two gather heads bring A[h, i, l] and B[h, l, j] to that position; the MLP
  multiplies them;
* layer 2: one head per output position (h, i, j) averages the k products of its group
  (keys p with p div k = (h r + i) c + j); the MLP multiplies the mean by k.
So a **sum is count x AHAT mean**, as in the paper, but with 2 layers and 2 + 1 heads for
every shape instead of 3 layers and 1 / r+C / r*C heads; positions grow to h r c k.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnsim.constructions.construction import Construction, size_args, sized
from attnsim.constructions.matmul.spec import MATMUL
from attnsim.proofs.registry import ConstructionEntry
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.intent import Enumeration, Intent, K, Q
from attnsim.rasp.layout import Block, Layout, MatRef

PAPER_REF = "Lemma (matmul)"


def matmul_ref(a: MatRef, b: MatRef, name: str = "matmul") -> tuple[MatRef, list[Intent]]:
    """Composable form: A @ B (per head for stacks), result in a new channel at offset 0."""
    ab, bb = a.block, b.block
    r, k, c, h = ab.rows, ab.cols, bb.cols, ab.stack
    prod = Block.of(f"{name}.products", 0, r * c, k, h, channel=f"{name}.products")
    out = Block.of(name, 0, r, c, h, channel=name)

    def decode(p: E.Expr) -> tuple[E.Expr, E.Expr, E.Expr, E.Expr]:
        hp, row, lp = prod.coords(p)
        return hp, row // c, row % c, lp

    def a_src(p: E.Expr) -> E.Expr:
        hp, ip, _, lp = decode(p)
        return ab.position(ip, lp, hp)

    def b_src(p: E.Expr) -> E.Expr:
        hp, _, jp, lp = decode(p)
        return bb.position(lp, jp, hp)

    sel_a = C.select(C.indices, C.imap(a_src, C.indices).named(f"{name}.a_src"), "==").named(f"{name}.gather_a")
    sel_b = C.select(C.indices, C.imap(b_src, C.indices).named(f"{name}.b_src"), "==").named(f"{name}.gather_b")
    ga = C.aggregate(sel_a, a.sop).named(f"{name}.a")
    gb = C.aggregate(sel_b, b.sop).named(f"{name}.b")
    products = C.apply("mul", ga, gb).named(f"{name}.products")
    group = C.imap(lambda p: p // k, C.indices).named(f"{name}.group")
    sel_sum = C.select(group, C.indices, "==").named(f"{name}.sum")
    mean = C.aggregate(sel_sum, products).named(f"{name}.mean")
    y = C.apply("scale", mean, params=(k,)).named(name)  # sum = k x mean, k a size expression

    q, key = Q, K
    hq, iq, jq, lq = decode(q)
    hka, ika, jka = ab.coords(key)
    hkb, ikb, jkb = bb.coords(key)
    ho, io, jo = out.coords(q)
    hp, rowp, _ = prod.coords(key)
    intents = [
        Intent(
            "gather_a",
            sel_a,
            ab.contains(key) & hka.eq(hq) & ika.eq(iq) & jka.eq(lq),
            prod.contains(q),
            "product (h, i, j, l) selects exactly the key holding A[h, i, l]",
        ),
        Intent(
            "gather_b",
            sel_b,
            bb.contains(key) & hkb.eq(hq) & ikb.eq(lq) & jkb.eq(jq),
            prod.contains(q),
            "product (h, i, j, l) selects exactly the key holding B[h, l, j]",
        ),
        Intent(
            "sum",
            sel_sum,
            prod.contains(key) & hp.eq(ho) & rowp.eq(io * c + jo),
            out.contains(q),
            "output (h, i, j) selects exactly the k products (h, i, j, l), l < k",
            keys=Enumeration(
                key=lambda qp, lp: prod.position(out.coords(qp)[1] * c + out.coords(qp)[2], lp, out.coords(qp)[0]),
                witness=lambda kp: prod.coords(kp)[2],
                count=k,
            ),
        ),
    ]
    return MatRef(y, out, aux=(prod,)), intents


@sized(rows="rows", inner="inner", cols="cols", heads="heads")
def matmul(
    rows: int | C.Size, inner: int | C.Size, cols: int | C.Size, heads: int | C.Size | None = None
) -> Construction:
    """A @ B for A (rows, inner), B (inner, cols); stacks (heads, ., .) multiply per head.

    Sizes may be ints or :class:`~attnsim.rasp.core.Size` symbols; an int call is the symbolic
    build bound to those ints."""
    sym = size_args(rows=rows, inner=inner, cols=cols, heads=heads)
    r, k, c = sym["rows"], sym["inner"], sym["cols"]
    h = sym["heads"] if heads is not None else 1
    a_blk = Block.of("A", 0, r, k, h)
    b_blk = Block.of("B", a_blk.end_expr(), k, c, h)
    res, intents = matmul_ref(MatRef(C.tokens, a_blk), MatRef(C.tokens, b_blk), name="out")
    layout = Layout.of(a_blk, b_blk, *res.aux, res.block)

    def reference(a: np.ndarray, b: np.ndarray, backend: str = "numpy") -> Any:
        return np.matmul(a, b)

    return Construction(
        "matmul",
        PAPER_REF,
        res.sop,
        layout,
        ("A", "B"),
        reference,
        intents=intents,
        paper_cost={"layers": 3, "heads": _paper_heads(r, c), "note": "length; r+C gathers; r*C sums"},
        specification=MATMUL.at(rows=r, inner=k, cols=c, heads=h),
    )


def _paper_heads(rows: C.Size, cols: C.Size) -> list[Any]:
    """The paper's heads per layer (1 / r+C / r*C), as size expressions: numbers once bound."""
    return [1, E.lift(rows) + cols, E.lift(rows) * cols]


#: The constructions this module declares (registered by :mod:`attnsim.catalog`).
CONSTRUCTIONS = (
    ConstructionEntry("matmul", PAPER_REF, lambda: matmul(2, 3, 2)),
)
