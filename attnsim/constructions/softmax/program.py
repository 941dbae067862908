"""Lemma 3 (softmax): row-wise softmax with average hard attention plus an element-wise exp.

For an r x c matrix (or a stack (h, r, c) in per-head blocks), flattened row-major:

* MLP (layer 0): e = exp(x), the TRUE exp (primitive ``exp``, realization ``generalized``);
* layer 1: ONE block-mean head for all rows at once, keys and queries in the same flattened
  row: ``Select(row, row, ==)`` with row(p) = (p - offset) div c (positions outside the block
  have rows < 0 or >= h r, so no key outside the block is ever selected: proven for all sizes,
  at any offset, in any longer sequence); the MLP forms the row sum
  as c x mean (the paper's "sum = count x AHAT mean") and divides.

So softmax costs 1 layer and 1 head for every shape and stack, against the paper's 2 layers
with one head per row (3 rows hard-coded) and +1 layer for multi-head.  ``stable=True``
subtracts the TRUE ROW MAX first, as NumPy and torch do: one max head (``C.maximum``, a
value-scored head: the row's selected keys scored by their own values, docs/semantics.md) on the
same row selector, one more layer (2 layers, like the paper).  Every exp argument is then <= 0 and
the row max's is 0, so any finite float64 row (``[1000, 0, -1000]``, ``[1e5, -1e5]``) gives a
finite output; exact in SymPy because softmax is invariant under a per-row shift (the all-sizes
proof cancels the opaque max, :mod:`attnsim.symbolic.maxover`).  (The row-mean shift this
replaced refused spreads above 709.)

The masked form (``valid_cols``) serves the universal simulator, where the true number of
columns n <= c is a runtime value: padded columns get weight 0 and stay out of the sum.

Exact only in SymPy: the exact (Fraction) backend raises a clear error (exp is irrational).
The obligations of both forms are in :mod:`attnsim.constructions.softmax.obligations`.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from attnsim.constructions.construction import Construction, ConstructionError, size_args, sized
from attnsim.constructions.softmax.spec import MASKED_SOFTMAX, SOFTMAX
from attnsim.proofs.registry import ConstructionEntry
from attnsim.rasp import core as C
from attnsim.rasp.intent import Enumeration, Intent, K, Q
from attnsim.rasp.layout import Block, Layout, MatRef

PAPER_REF = "Lemma 3 (softmax)"


def _int(e: Any) -> int:
    return int(e.evaluate(C.size_bindings(e)))


def softmax_ref(
    a: MatRef,
    name: str = "softmax",
    *,
    valid_cols: C.SOp | None = None,
    stable: bool = False,
) -> tuple[MatRef, list[Intent]]:
    """Composable form: row-wise softmax of ``a`` (per row of every stacked matrix).

    The result lives at the same positions as ``a``, in a new channel ``name``.

    ``valid_cols``: an SOp holding, at every position of ``a``'s block, the true number of
    columns n (a runtime value, 1 <= n <= c).  Columns j >= n then get weight exactly 0 and do
    not enter the denominator: out[.., i, j] = exp(x_ij) / sum_{l < n} exp(x_il) for j < n,
    0 for j >= n.  The mask is computed in the MLP (``lt(j, n)``), never by a value-dependent
    selector, so the one block-mean head keeps its O(L log L) fast path; sum = c x mean still
    holds because the padded entries are 0.  n = 0 leaves a row 0/0 (NaN in float64, refused where
    read: see "Non-finite values" in docs/semantics.md).  n must be
    at the block's positions before this layer (e.g. broadcast by one earlier head); it adds no
    layer of its own.

    ``stable``: subtract the row max (of the valid entries) before exp: one max head on the row
    selector, +1 layer.  Masked: the padded columns are first filled with the row's column-0
    entry (valid, as n >= 1; read by one gather head, in the layer of the mask), so the max over
    the filled row is the max over the valid columns, and no exp argument exceeds 0 anywhere in
    the block.

    Values at positions outside ``a``'s block are unspecified (possibly NaN: 0/0 where a
    masked "row" there is empty); only the result block is meaningful.

    Returns the result and the Z3 intent of the row-sum head.
    """
    b = a.block
    cols = b.cols  # a size expression: the row sum is cols x the row mean for every size
    out = Block.of(name, b.offset, b.rows, b.cols, b.stack, channel=name)
    row = C.imap(lambda p: (p - b.offset) // b.cols, C.indices).named(f"{name}.row")
    sel = C.select(row, row, "==").named(f"{name}.rowsum")
    x = a.sop
    mask: C.SOp | None = None
    if valid_cols is not None:
        col = C.imap(lambda p: (p - b.offset) % b.cols, C.indices).named(f"{name}.col")
        mask = C.apply("lt", col, valid_cols).named(f"{name}.mask")
        x = C.apply("gate", mask, x).named(f"{name}.masked")
    if stable:
        filled = x
        if mask is not None:  # padded columns take column 0's entry (valid: n >= 1), so the row max is the valid max
            start = C.imap(lambda p: b.offset + (p - b.offset) // b.cols * b.cols, C.indices).named(f"{name}.rowstart")
            first = C.aggregate(C.select(C.indices, start, "=="), a.sop).named(f"{name}.first")
            pad = C.apply("affine", mask, params=(-1, 1)).named(f"{name}.pad")
            filled = C.apply("add", x, C.apply("gate", pad, first)).named(f"{name}.filled")
        m = C.maximum(sel, filled).named(f"{name}.rowmax")
        x = C.apply("sub", filled, m).named(f"{name}.shifted")  # <= 0 at every position of the block
    e = C.apply("exp", x).named(f"{name}.exp")
    if mask is not None:
        e = C.apply("gate", mask, e).named(f"{name}.exp_masked")
    mean = C.aggregate(sel, e).named(f"{name}.mean")
    denom = C.apply("scale", mean, params=(cols,)).named(f"{name}.sum")
    y = C.apply("div", e, denom).named(name)

    q, k = Q, K
    hq, iq, _ = out.coords(q)
    hk, ik, _ = b.coords(k)
    intent = Intent(
        "rowsum",
        sel,
        b.contains(k) & hk.eq(hq) & ik.eq(iq),
        out.contains(q),
        "the row-sum head of entry (h, i, j) selects exactly the c keys of row (h, i) of the operand",
        keys=Enumeration(
            key=lambda qp, lp: b.position(out.coords(qp)[1], lp, out.coords(qp)[0]),
            witness=lambda kp: b.coords(kp)[2],
            count=b.cols,
        ),
    )
    return MatRef(y, out), [intent]


def masked_softmax_ref(
    a: MatRef, valid_cols: C.SOp, name: str = "softmax", *, stable: bool = False
) -> tuple[MatRef, list[Intent]]:
    """``softmax_ref(a, name, valid_cols=valid_cols, stable=stable)``: see there."""
    return softmax_ref(a, name, valid_cols=valid_cols, stable=stable)


def _paper_cost(rows: int | C.Size, heads: int | C.Size | None) -> dict[str, Any]:
    return {
        "layers": 2 + (1 if heads is not None else 0),
        "heads": [rows],  # a size: bound with the program (an int once bound)
        "note": "2 layers; exp FFN then one block-mean head per row (3 rows hard-coded); multi-head +1 layer",
    }


def _reference(a: np.ndarray, backend: str = "numpy") -> Any:
    """Textbook softmax along the last axis (NumPy: max-shifted; SymPy: exp(x)/sum exp)."""
    if backend == "numpy":
        z = np.exp(a - a.max(axis=-1, keepdims=True))
        return z / z.sum(axis=-1, keepdims=True)
    if backend == "sympy":
        import sympy as sp

        out = np.empty(a.shape, dtype=object)
        for ix in np.ndindex(*a.shape[:-1]):
            es = [sp.exp(v) for v in a[ix]]
            tot = sp.Add(*es)
            for j, ej in enumerate(es):
                out[(*ix, j)] = ej / tot
        return out
    raise ConstructionError("softmax has no exact (rational) reference: exp is irrational; use backend='sympy'")


EXP_MAX = 709.0  # exp(x) overflows float64 above ~709.78 and loses precision (subnormal) below ~-708


def float_range_check(a: np.ndarray, stable: bool, what: str = "softmax") -> None:
    """Refuse float64 inputs whose exps overflow/underflow, instead of returning NaN silently.

    Plain: every row max must lie in [-708, 709].  Max-shifted (``stable``): nothing to refuse for
    finite entries (every exp argument is <= 0 and the row max's is 0, so each term is in [0, 1]
    and the denominator in [1, cols]); non-finite entries are refused by the input check.
    """
    if a.size == 0 or stable:
        return
    top = a.max(axis=-1)
    hi, lo = float(np.max(top)), float(np.min(top))
    if hi > EXP_MAX:
        raise ConstructionError(f"{what}: entry {hi:.4g} > 709 overflows exp in float64; use stable=True")
    if lo < -EXP_MAX + 1:
        raise ConstructionError(f"{what}: a row's max {lo:.4g} < -708 underflows exp in float64; use stable=True")


@sized(rows="rows", cols="cols", heads="heads")
def softmax(
    rows: int | C.Size, cols: int | C.Size, heads: int | C.Size | None = None, *, stable: bool = False
) -> Construction:
    """Row-wise softmax of A (rows, cols), or of a stack (heads, rows, cols) per head.

    Sizes may be ints or Size symbols; an int call is the symbolic build bound to those ints."""
    sym = size_args(rows=rows, cols=cols, heads=heads)
    r, c = sym["rows"], sym["cols"]
    h = sym["heads"] if heads is not None else 1
    a_blk = Block.of("A", 0, r, c, h)
    res, intents = softmax_ref(MatRef(C.tokens, a_blk), name="out", stable=stable)
    return Construction(
        "softmax",
        PAPER_REF,
        res.sop,
        Layout.of(a_blk, res.block),
        ("A",),
        _reference,
        intents=intents,
        paper_cost=_paper_cost(rows, heads),
        exact=False,
        check_inputs=functools.partial(_check_plain, stable=stable),
        specification=SOFTMAX.at(rows=r, cols=c, heads=h),  # the shift cancels: the same spec
    )


def _check_plain(a: np.ndarray, backend: str = "numpy", stable: bool = False) -> None:
    if backend == "numpy":
        float_range_check(a, stable)


@sized(rows="rows", cols="cols", heads="heads")
def masked_softmax(
    rows: int | C.Size, cols: int | C.Size, heads: int | C.Size | None = None, *, stable: bool = False
) -> Construction:
    """Softmax over the first n of ``cols`` columns; n is a runtime operand: ``run(A, [[n]])``.

    A harness for :func:`softmax_ref` with ``valid_cols``: n sits in a 1 x 1 block after A and
    one gather head broadcasts it to every position (that head is the harness's, +1 layer; a
    caller that already holds n everywhere pays nothing).  Columns j >= n of the result are 0.
    Sizes may be ints or Size symbols (an int call is the symbolic build, bound).
    """
    sym = size_args(rows=rows, cols=cols, heads=heads)
    r, c = sym["rows"], sym["cols"]
    h = sym["heads"] if heads is not None else 1
    a_blk = Block.of("A", 0, r, c, h)
    n_blk = Block.of("n", a_blk.end_expr(), 1, 1)
    n_src = C.imap(lambda p: n_blk.position(0, 0), C.indices).named("n.source")
    bsel = C.select(C.indices, n_src, "==").named("n.broadcast")
    n_all = C.aggregate(bsel, C.tokens).named("n.everywhere")
    res, intents = softmax_ref(MatRef(C.tokens, a_blk), name="out", valid_cols=n_all, stable=stable)
    q, k = Q, K
    intents.append(
        Intent(
            "broadcast_n",
            bsel,
            k.eq(n_blk.position(0, 0)),
            res.block.contains(q),
            "every entry of A selects exactly the key holding n",
        )
    )

    def reference(a: np.ndarray, n: np.ndarray, backend: str = "numpy") -> Any:
        nn = int(n.reshape(-1)[0])
        if backend == "numpy":
            out = np.zeros(a.shape)
        else:  # the exact and SymPy readings: SymPy's 0
            import sympy as sp

            out = np.full(a.shape, sp.Integer(0), dtype=object)
        out[..., :nn] = _reference(a[..., :nn], backend)
        return out

    def check(a: np.ndarray, n: np.ndarray, backend: str = "numpy") -> None:
        # n is an integer in 1..cols here: the declared scalar domain (scalars=) is enforced first
        if backend == "numpy":
            float_range_check(a[..., : int(n.reshape(-1)[0])], stable, "masked softmax")

    return Construction(
        "softmax-masked",
        PAPER_REF,
        res.sop,
        Layout.of(a_blk, n_blk, res.block),
        ("A", "n"),
        reference,
        intents=intents,
        paper_cost=_paper_cost(rows, heads),
        exact=False,
        check_inputs=check,
        specification=MASKED_SOFTMAX.at(rows=r, cols=c, heads=h),  # the valid-max shift cancels
        scalars=(("n", 1, c, "o_j"),),
    )


#: The constructions this module declares (registered by :mod:`attnsim.catalog`).
CONSTRUCTIONS = (
    ConstructionEntry("softmax", PAPER_REF, lambda: softmax(2, 3, heads=2)),
    ConstructionEntry("softmax-masked", PAPER_REF, lambda: masked_softmax(2, 3, heads=2, stable=True)),
)


__all__ = [
    "masked_softmax",
    "masked_softmax_ref",
    "softmax",
    "softmax_ref",
]
