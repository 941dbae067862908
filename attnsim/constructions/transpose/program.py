"""Lemma (transpose): a transformer reorders tokens to transpose an r x c matrix.

Output position (h, i, j) of the c x r result reads input entry (h, j, i): one gather head,
``Select(indices, source, ==)`` with source = position of (h, j, i) in the input block.
The paper's version is square (reflected(p) = (p mod n) n + p div n) and spends a layer on
``length``; ours is 1 layer, 1 head, for every r x c and a stack of h heads.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnsim.constructions.construction import Construction, ConstructionError, size_args, sized
from attnsim.constructions.transpose.spec import TRANSPOSE
from attnsim.proofs.registry import ConstructionEntry
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.intent import Intent, K, Q
from attnsim.rasp.layout import Block, Layout, MatRef

PAPER_REF = "Lemma (transpose)"


def transpose_ref(a: MatRef, offset: E.Expr | int = 0, name: str = "transpose") -> tuple[MatRef, list[Intent]]:
    """Composable form: the transpose of ``a``, in a new channel at ``offset``."""
    b = a.block
    out = Block.of(name, offset, b.cols, b.rows, b.stack, channel=name)

    def source(p: Any) -> Any:
        hp, ip, jp = out.coords(p)
        return b.position(jp, ip, hp)

    src = C.imap(source, C.indices).named(f"{name}.source")
    sel = C.select(C.indices, src, "==").named(f"{name}.gather")
    y = C.aggregate(sel, a.sop).named(name)
    q, k = Q, K
    hq, iq, jq = out.coords(q)
    hk, ik, jk = b.coords(k)
    intent = Intent(
        name="gather",
        selector=sel,
        intent=b.contains(k) & hk.eq(hq) & ik.eq(jq) & jk.eq(iq),
        queries=out.contains(q),
        statement="query (h, i, j) of the result selects exactly the key holding A[h, j, i]",
    )
    return MatRef(y, out), [intent]


@sized(rows="rows", cols="cols", heads="heads")
def transpose(rows: int | C.Size, cols: int | C.Size, heads: int | C.Size | None = None) -> Construction:
    """A^T for A of shape (rows, cols), or a stack (heads, rows, cols) transposed per head.

    Sizes may be ints or :class:`~attnsim.rasp.core.Size` symbols; an int call is the symbolic
    build bound to those ints."""
    sym = size_args(rows=rows, cols=cols, heads=heads)
    r, c = sym["rows"], sym["cols"]
    h = sym["heads"] if heads is not None else 1
    a_blk = Block.of("A", 0, r, c, h)
    res, intents = transpose_ref(MatRef(C.tokens, a_blk), name="out")
    layout = Layout.of(a_blk, res.block)

    def reference(a: np.ndarray, backend: str = "numpy") -> Any:
        return np.swapaxes(a, -1, -2)

    return Construction(
        "transpose",
        PAPER_REF,
        res.sop,
        layout,
        ("A",),
        reference,
        output="out",
        intents=intents,
        paper_cost={"layers": 2, "heads": [1, 1], "note": "length + 1 gather head (square n x n)"},
        specification=TRANSPOSE.at(rows=r, cols=c, heads=h),
    )


def _check_sizes(**kw: int) -> None:
    for k, v in kw.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ConstructionError(f"{k} must be a positive int, got {v!r}")


#: The constructions this module declares (registered by :mod:`attnsim.catalog`).
CONSTRUCTIONS = (
    ConstructionEntry("transpose", PAPER_REF, lambda: transpose(2, 3)),
)
