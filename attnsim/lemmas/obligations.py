"""The lemma obligations that `attnsim verify` runs (sizes chosen per the lemma issue)."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable

import sympy as sp

from attnsim.lemmas.base import intent_obligations, layout_obligation, standard_obligations
from attnsim.lemmas.matmul import PAPER_REF as MATMUL_REF
from attnsim.lemmas.matmul import matmul
from attnsim.lemmas.transpose import PAPER_REF as TRANSPOSE_REF
from attnsim.lemmas.transpose import transpose
from attnsim.proofs.allsizes import all_sizes_obligation, both, count_mean, single_gather
from attnsim.proofs.obligation import Obligation, Outcome
from attnsim.proofs.registry import provider, register_construction
from attnsim.rasp import core as C

register_construction("transpose", TRANSPOSE_REF, lambda: transpose(2, 3))
register_construction("matmul", MATMUL_REF, lambda: matmul(2, 3, 2))


def _transpose_wiring(timeout: float) -> Outcome:
    """The output is the gather head's mean over the input tokens (what the algebra assumes)."""
    con = transpose(2, 3, heads=2)
    sel = next(i.selector for i in con.intents if i.name == "gather")
    p = con.program
    if isinstance(p, C.Aggregate) and p.selector is sel and isinstance(p.values, C.Tokens):
        return Outcome.good("out = mean of the tokens over the gather selector")
    return Outcome.bad(f"transpose output is not Aggregate(gather, tokens): {p!r}")


def _matmul_wiring(timeout: float) -> Outcome:
    """out = inner x mean over the sum selector of (gather_a mean) * (gather_b mean)."""
    for rows, inner, cols in ((2, 3, 2), (1, 4, 3)):
        con = matmul(rows, inner, cols, heads=2)
        sels = {i.name: i.selector for i in con.intents}
        p = con.program
        ok = (
            isinstance(p, C.Map)
            and isinstance(p.fn, C.Prim)
            and p.fn.name == "scale"
            and p.fn.params == (inner,)
            and isinstance(p.inner, C.Aggregate)
            and p.inner.selector is sels["sum"]
        )
        prod = p.inner.values if ok and isinstance(p, C.Map) and isinstance(p.inner, C.Aggregate) else None
        ok = ok and isinstance(prod, C.SequenceMap) and isinstance(prod.fn, C.Prim) and prod.fn.name == "mul"
        if ok and isinstance(prod, C.SequenceMap) and len(prod.args) == 2:
            a, b = prod.args
            ok = (
                isinstance(a, C.Aggregate)
                and isinstance(b, C.Aggregate)
                and a.selector is sels["gather_a"]
                and b.selector is sels["gather_b"]
            )
        if not ok:
            return Outcome.bad(f"matmul({rows}, {inner}, {cols}) is not inner x mean_sum(mean_a * mean_b)")
    return Outcome.good("out = inner x mean over the sum selector of gathered A * gathered B (scale constant = inner)")


def _matmul_algebra() -> tuple[sp.Expr, sp.Symbol, sp.Symbol]:
    """Term A[h, i, l] B[h, l, j], summation index l, count k (the inner size), all symbolic."""
    a, b = sp.IndexedBase("A"), sp.IndexedBase("B")
    h, i, j, m = sp.symbols("h i j l", integer=True)
    k = sp.Symbol("k", integer=True, positive=True)
    return (a[h, i, m] * b[h, m, j], m, k)


@provider
def transpose_obligations() -> Iterable[Obligation]:
    ref = TRANSPOSE_REF
    yield all_sizes_obligation(
        "transpose",
        ref,
        lambda: transpose(2, 3, heads=2),
        both(_transpose_wiring, single_gather(what="out[h, i, j] = A[h, j, i]")),
        statement="for every heads, rows, cols: output (h, i, j) is A[h, j, i]",
    )
    yield from intent_obligations("transpose", ref, lambda: transpose(2, 3, heads=2))
    yield layout_obligation("transpose", ref, lambda: transpose(2, 3, heads=2))
    for r, c in itertools.product((1, 2, 3), repeat=2):
        yield from standard_obligations("transpose", ref, functools.partial(transpose, r, c), numeric_tol=0.0)
    yield from standard_obligations(
        "transpose", ref, lambda: transpose(64, 64), sympy_sizes=False, exact=False, numeric_tol=0.0
    )
    # multi-head instance: a head-index error (h -> h+1, a swapped head term) changes the output here
    yield from standard_obligations("transpose", ref, lambda: transpose(2, 3, heads=2), numeric_tol=0.0)


@provider
def matmul_obligations() -> Iterable[Obligation]:
    ref = MATMUL_REF
    term, idx, count = _matmul_algebra()
    yield all_sizes_obligation(
        "matmul",
        ref,
        lambda: matmul(2, 3, 2, heads=2),
        both(_matmul_wiring, count_mean(term, idx, count, "out[h, i, j]")),
        statement="for every heads, rows, inner, cols: output (h, i, j) is Sum_l A[h, i, l] B[h, l, j]",
    )
    yield from intent_obligations("matmul", ref, lambda: matmul(2, 3, 2, heads=2))
    yield layout_obligation("matmul", ref, lambda: matmul(2, 3, 2, heads=2))
    for r, k, c in itertools.product((1, 2, 3), repeat=3):
        yield from standard_obligations("matmul", ref, functools.partial(matmul, r, k, c))
    yield from standard_obligations("matmul", ref, lambda: matmul(4, 4, 4), exact=False, numeric_tol=None)
    yield from standard_obligations("matmul", ref, lambda: matmul(64, 64, 64), sympy_sizes=False, exact=False)
    # multi-head instance with rows mod cols != 0: head-index errors in the A or B source change the output
    yield from standard_obligations("matmul", ref, lambda: matmul(3, 2, 2, heads=2))
