"""Activation MaxMin (GroupSort with groups of 2): each pair (x[2t], x[2t+1]) -> (max, min).

Pairs are consecutive entries WITHIN A ROW: (A[i, 2t], A[i, 2t+1]); the number of columns must
be even (an odd length is an error naming it).  Because rows are flattened row-major with an
even width, these are also the consecutive pairs of the flattened order.

* layer 1: one gather head brings the partner A[h, i, j xor 1], j xor 1 = j + 1 - 2 (j mod 2);
* MLP: max(x, partner) at even columns, min(x, partner) at odd ones (max/min are relu-exact;
  the parity is a structural 0/1 flag selecting between them with ``where``).

1 layer and 1 head for every length, against the paper's 2 layers (compare, copy the flag to
the partner, swap).  Exact on every backend.  Authors' example:
MaxMin([14, 18, 3, 12, 6, 20, 7, 17, 13, 9]) = [18, 14, 12, 3, 20, 6, 17, 7, 13, 9].
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnsim.constructions.construction import Construction, ConstructionError, VectorConstruction, size_args, sized
from attnsim.constructions.maxmin.spec import MAXMIN
from attnsim.proofs.registry import ConstructionEntry
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.intent import Intent, K, Q
from attnsim.rasp.layout import Block, Layout, MatRef

PAPER_REF = "Activation MaxMin (GroupSort, groups of 2)"


def maxmin_ref(a: MatRef, name: str = "maxmin") -> tuple[MatRef, list[Intent]]:
    """Composable form: MaxMin of every row of ``a`` (pairs (2t, 2t+1) within each row).

    The result lives at ``a``'s positions in a new channel ``name``: entry (h, i, 2t) holds
    max(A[h, i, 2t], A[h, i, 2t+1]) and entry (h, i, 2t+1) the min.  ``a``'s column count must
    be even (ConstructionError otherwise).  Cost: 1 layer, 1 gather head.
    """
    b = a.block
    if not C.unbound_sizes(b.cols) and int(b.cols) % 2:  # bound: refuse now; unbound: a precondition
        raise ConstructionError(f"MaxMin sorts pairs: the row length must be even, got {int(b.cols)}")
    out = Block.of(name, b.offset, b.rows, b.cols, b.stack, channel=name)

    def partner_pos(p: E.Expr) -> E.Expr:
        return p + 1 - 2 * (b.coords(p)[2] % 2)

    partner = C.imap(partner_pos, C.indices).named(f"{name}.partner_pos")
    sel = C.select(C.indices, partner, "==").named(f"{name}.partner")
    y = C.aggregate(sel, a.sop).named(f"{name}.partner_value")
    odd = C.imap(lambda p: b.coords(p)[2] % 2, C.indices).named(f"{name}.odd")
    hi = C.apply("max", a.sop, y).named(f"{name}.max")
    lo = C.apply("min", a.sop, y).named(f"{name}.min")
    res = C.apply("where", odd, lo, hi).named(name)

    q, k = Q, K
    hq, iq, jq = out.coords(q)
    hk, ik, jk = b.coords(k)
    intent = Intent(
        "partner",
        sel,
        b.contains(k) & hk.eq(hq) & ik.eq(iq) & jk.eq(jq + 1 - 2 * (jq % 2)),
        out.contains(q),
        "entry (h, i, j) selects exactly the key holding A[h, i, j xor 1] (its pair partner)",
        assumptions=((b.cols % 2).eq(0),),
    )
    return MatRef(res, out), [intent]


def _reference(a: np.ndarray, backend: str = "numpy") -> Any:
    """Each consecutive pair of every row sorted in decreasing order."""
    pairs = a.reshape(*a.shape[:-1], a.shape[-1] // 2, 2)
    x, y = pairs[..., 0], pairs[..., 1]
    if backend == "numpy":
        hi, lo = np.maximum(x, y), np.minimum(x, y)
    elif backend == "sympy":
        import sympy as sp

        hi = np.vectorize(lambda u, v: sp.Max(u, v), otypes=[object])(x, y)
        lo = np.vectorize(lambda u, v: sp.Min(u, v), otypes=[object])(x, y)
    else:
        hi = np.vectorize(lambda u, v: u if u >= v else v, otypes=[object])(x, y)
        lo = np.vectorize(lambda u, v: v if u >= v else u, otypes=[object])(x, y)
    return np.stack([hi, lo], axis=-1).reshape(a.shape)


def _odd_length(values: dict[str, int]) -> str | None:
    n = values.get("n")
    return f"MaxMin sorts pairs: the length must be even, got {n}" if n is not None and n % 2 else None


@sized(refuse=_odd_length, length="n", rows="rows")
def maxmin(length: int | C.Size, rows: int | C.Size | None = None) -> Construction:
    """MaxMin of a vector of even ``length``, or of each row of a (rows, length) matrix.

    Sizes may be ints or Size symbols; an even length is a precondition of the symbolic build."""
    sym = size_args({"n": "length"}, n=length, rows=rows)
    n = sym["n"]
    r = sym["rows"] if rows is not None else 1
    a_blk = Block.of("A", 0, r, n)
    res, intents = maxmin_ref(MatRef(C.tokens, a_blk), name="out")
    return VectorConstruction(
        "maxmin",
        PAPER_REF,
        res.sop,
        Layout.of(a_blk, res.block),
        ("A",),
        _reference,
        out_shape=(n,) if rows is None else None,
        intents=intents,
        paper_cost={"layers": 2, "heads": [1, 1], "note": "compare with the partner, copy the flag, swap"},
        specification=MAXMIN.at(rows=r, n=n),
        cases=(("o_j", 2),),
    )


#: The constructions this module declares (registered by :mod:`attnsim.catalog`).
CONSTRUCTIONS = (
    ConstructionEntry("maxmin", PAPER_REF, lambda: maxmin(4, rows=3)),
)


__all__ = ["maxmin", "maxmin_ref"]
