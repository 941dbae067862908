"""Application (Match2): output 1 at position i iff some j has x_i + x_j = 0 (mod p).

Semantics (ours, stated because the paper does not): tokens are integers (any sign; residues
are floor-mod p, in 0..p-1); by default ``j = i`` is allowed, as in Sanford, Hsu & Telgarsky
(2023), so a token with 2 x_i = 0 (mod p) matches itself; ``include_self=False`` requires
``j != i``.

Construction: residue r_j = x_j mod p on the keys, wanted residue (-x_i) mod p on the queries,
one equality head ``Select(r, want, ==)``.
* ``include_self=True``: aggregate the constant 1 -- the AHAT mean of 1s is 1 when some key is
  selected and the default 0 when none is: exactly the indicator, no averaging of values.
* ``include_self=False``: the head's selector width w_i, minus 1 when i matches itself.
Cost: 1 layer, 1 head (an MLP computes the residues before it).

The authors' one-head version (:func:`match2_paper`) compares r_j with p - r_i (never a residue
when r_i = 0, so residue 0 never matches) and averages the *values* x_j of the partners, testing
the mean for non-zero (partners whose values average to 0 are missed, e.g. x_j = 0, or x_j = 2 and
-2 for p = 4).  Both defects are exhibited by tests and fixed here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnsim.constructions.construction import Construction
from attnsim.constructions.match2.reference import match2_spec
from attnsim.constructions.sequence import SequenceConstruction, check_integers
from attnsim.constructions.transpose.program import _check_sizes
from attnsim.proofs.registry import ConstructionEntry
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.layout import Block, Layout

PAPER_REF = "Application (Match2)"


def match2(length: int, p: int, include_self: bool = True) -> Construction:
    """Match2 mod ``p`` on ``length`` integer tokens (input block ``x`` of shape (length,))."""
    _check_sizes(length=length, p=p)
    n, pp = C.Size("length", length), C.Size("p", p)
    x_blk = Block.of("x", 0, 1, n)
    out_blk = Block.of("out", 0, 1, n, channel="match2")
    r = C.imap(lambda x: x % pp, C.tokens).named("match2.residue")
    want = C.imap(lambda x: (0 - x) % pp, C.tokens).named("match2.wanted")
    sel = C.select(r, want, "==").named("match2.partner")
    if include_self:
        out = C.aggregate(sel, C.full(1)).named("match2")
    else:
        width = C.selector_width(sel).named("match2.width")
        out = C.imap(lambda w, x: E.if_(w - E.if_(((x + x) % pp).eq(0), 1, 0) > 0, 1, 0), width, C.tokens).named(
            "match2"
        )
    layout = Layout.of(x_blk, out_blk)

    def reference(x: np.ndarray, backend: str = "numpy") -> Any:
        return match2_spec(x, p, include_self).reshape(1, -1)

    return SequenceConstruction(
        "match2",
        PAPER_REF,
        out,
        layout,
        ("x",),
        reference,
        out_shape=(length,),
        intents=[],
        paper_cost={"layers": 1, "heads": [1], "note": "one head, averaging values (misses matches)"},
        check_inputs=check_integers("Match2"),
    )


def match2_paper(length: int, p: int) -> Construction:
    """The authors' version, kept to exhibit its two defects: Select(r, p - r, ==) and mean of x != 0."""
    _check_sizes(length=length, p=p)
    n, pp = C.Size("length", length), C.Size("p", p)
    x_blk = Block.of("x", 0, 1, n)
    r = C.imap(lambda x: x % pp, C.tokens).named("paper.residue")
    want = C.imap(lambda x: pp - x % pp, C.tokens).named("paper.wanted")
    mean = C.aggregate(C.select(r, want, "=="), C.tokens).named("paper.mean")
    out = C.apply("lt", C.full(0), C.apply("abs", mean)).named("paper.match2")

    def reference(x: np.ndarray, backend: str = "numpy") -> Any:
        return match2_spec(x, p, True).reshape(1, -1)

    return SequenceConstruction(
        "match2-paper",
        PAPER_REF,
        out,
        Layout.of(x_blk, Block.of("out", 0, 1, n, channel="paper")),
        ("x",),
        reference,
        out_shape=(length,),
        check_inputs=check_integers("Match2"),
    )


#: The constructions this module declares (registered by :mod:`attnsim.catalog`).
CONSTRUCTIONS = (
    ConstructionEntry("match2", PAPER_REF, lambda: match2(6, 4)),
)


__all__ = ["match2", "match2_paper"]
