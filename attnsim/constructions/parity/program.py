"""Application (k-PARITY): the parity of the bits at a subset of positions, in one layer.

``sparse_parity(length, subset)`` outputs, at every position, (sum of x_s for s in subset) mod 2
for a binary input x; ``parity(length)`` is the subset of all positions.

Construction: a structural mask m(p) = [p in subset]; one head with the selector
``Select(tokens, 1, ==) & Select(m, 1, ==)`` (two key conditions, no query condition) whose
selector width is the number c of ones in the subset, at every query; the MLP applies the
index function c mod 2.  Cost: 1 layer, 1 head, constant in ``length`` and ``|subset|``.

Why the count and not the paper's idiom "sum = count x AHAT mean": L x (c / L) is not always
an integer in float64 (1/49 x 49 = 0.999...), and mod 2 is an index function on a runtime integer,
which must be integral.  The selector width is an exact integer in every backend.

Parametric argument (every length): (a) the mask selector selects exactly the subset's keys
(Z3, all lengths, :func:`mask_intent`); (b) by the semantics of SelectorWidth the width is
the number of selected keys, i.e. of ones in the subset; (c) the output index function maps
every integer c >= 0 to 1 iff c is odd (Z3, all c).  Exhaustive runs (exact backend, every
binary input up to length 12) check the assembled program.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from attnsim.constructions.construction import Construction, ConstructionError, size_args, sized
from attnsim.constructions.parity.reference import parity_spec
from attnsim.constructions.parity.spec import PARITY
from attnsim.constructions.sequence import SequenceConstruction
from attnsim.constructions.transpose.program import _check_sizes
from attnsim.proofs.registry import ConstructionEntry
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.intent import Enumeration, Intent, K, Q
from attnsim.rasp.layout import Block, Layout

PAPER_REF = "Application (k-PARITY)"


def _membership(subset: tuple[int, ...], blk: Block, everything: bool) -> Any:
    """The mask as an index function of the position: inside the input block, and (sparse) at an
    entry whose column is in the subset.  Written against the block, so it moves with it."""
    if everything:
        return lambda p: E.if_(blk.contains(p), 1, 0)

    def member(p: E.Expr) -> E.Expr:
        cond: E.Expr = E.Const(0).eq(1)
        for s in subset:
            cond = cond | p.eq(blk.position(0, s))
        return E.if_(cond, 1, 0)

    return member


def sparse_parity(length: int, subset: Iterable[int]) -> Construction:
    """k-PARITY: (sum of x_s for s in ``subset``) mod 2 at every position of a binary input."""
    _check_sizes(length=length)
    sub = tuple(sorted(set(int(s) for s in subset)))
    if not sub or sub[0] < 0 or sub[-1] >= length:
        raise ConstructionError(f"subset must be a non-empty set of positions in 0..{length - 1}, got {sub}")
    return _sparse_parity(length, sub)


@sized(length="length")
def _sparse_parity(length: int | C.Size, subset: tuple[int, ...]) -> Construction:
    """The k-PARITY build (subset checked by :func:`sparse_parity`), over an unbound length."""
    return _parity(size_args(length=length)["length"], subset, everything=False)


@sized(length="length")
def parity(length: int | C.Size) -> Construction:
    """PARITY: (sum of all bits) mod 2 at every position (the mask: inside the input block).

    ``length`` may be an int or a Size symbol (an int call is the symbolic build, bound)."""
    sym = size_args(length=length)
    return _parity(sym["length"], (), everything=True)


def _parity(length: int | C.Size, sub: tuple[int, ...], everything: bool) -> Construction:
    n = length
    x_blk = Block.of("x", 0, 1, n)
    layout = Layout.of(x_blk, Block.of("out", 0, 1, n, channel="parity"))
    mask = C.imap(_membership(sub, x_blk, everything), C.indices).named("parity.mask")
    in_subset = C.select(mask, C.full(1), "==").named("parity.in_subset")
    ones = C.select(C.tokens, C.full(1), "==").named("parity.is_one")
    count = C.selector_width((ones & in_subset).named("parity.count_sel")).named("parity.count")
    out = C.imap(lambda c: c % 2, count).named("parity")
    q, k = Q, K
    _, _, col = x_blk.coords(k)
    member: E.Expr = x_blk.contains(k)
    if not everything:
        in_sub: E.Expr = E.Const(0).eq(1)
        for s in sub:
            in_sub = in_sub | col.eq(s)
        member = member & in_sub
    intent = Intent(
        "mask",
        in_subset,
        member,
        (q >= 0) & (q < layout.length),
        "every query selects exactly the keys of the input whose column is in the subset (the count's structural half)",
        keys=Enumeration(key=lambda qp, lv: x_blk.position(0, lv), witness=lambda kp: x_blk.coords(kp)[2], count=n)
        if everything
        else None,
    )

    def reference(x: np.ndarray, backend: str = "numpy") -> Any:
        bits = np.asarray(x, dtype=object).reshape(-1)
        return np.full((1, len(bits)), parity_spec(bits, None if everything else sub), dtype=np.int64)

    name = "parity" if everything else "sparse_parity"
    return SequenceConstruction(
        name,
        PAPER_REF,
        out,
        layout,
        ("x",),
        reference,
        out_shape=(n,),
        intents=[intent],
        paper_cost={"layers": None, "heads": None, "note": "no construction given (claimed deterministic)"},
        specification=PARITY.at(length=n) if everything else None,
        binary=("x",),
    )


def index_fn_of(con: Construction) -> C.IndexFn:
    """The output index function (c -> c mod 2) of a parity construction, for the Z3 algebra step."""
    fn = con.program.fn if isinstance(con.program, C.Map) else None
    if not isinstance(fn, C.IndexFn):
        raise ConstructionError(f"{con.name}: output is not an index map")
    return fn


#: The constructions this module declares (registered by :mod:`attnsim.catalog`).
CONSTRUCTIONS = (
    ConstructionEntry("parity", PAPER_REF, lambda: parity(6)),
    ConstructionEntry("sparse_parity", PAPER_REF, lambda: sparse_parity(7, (0, 3, 5))),
)


__all__ = ["index_fn_of", "parity", "sparse_parity"]
