"""The lemma obligations that `attnsim verify` runs (sizes chosen per the lemma issue)."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable

from attnsim.lemmas.base import intent_obligations, layout_obligation, standard_obligations
from attnsim.lemmas.matmul import PAPER_REF as MATMUL_REF
from attnsim.lemmas.matmul import matmul
from attnsim.lemmas.transpose import PAPER_REF as TRANSPOSE_REF
from attnsim.lemmas.transpose import transpose
from attnsim.proofs.allsizes import spec_obligation
from attnsim.proofs.obligation import Obligation
from attnsim.proofs.registry import provider, register_construction
from attnsim.rasp import core as C

register_construction("transpose", TRANSPOSE_REF, lambda: transpose(2, 3))
register_construction("matmul", MATMUL_REF, lambda: matmul(2, 3, 2))


@provider
def transpose_obligations() -> Iterable[Obligation]:
    ref = TRANSPOSE_REF
    rows, cols, heads = C.Size("rows"), C.Size("cols"), C.Size("heads")
    yield spec_obligation(
        "transpose",
        ref,
        [lambda: transpose(rows, cols), lambda: transpose(rows, cols, heads=heads)],
        statement="program == spec out[h, i, j] = A[h, j, i], for every rows, cols (and heads), every entry",
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
    rows, inner, cols, heads = C.Size("rows"), C.Size("inner"), C.Size("cols"), C.Size("heads")
    yield spec_obligation(
        "matmul",
        ref,
        [lambda: matmul(rows, inner, cols), lambda: matmul(rows, inner, cols, heads=heads)],
        statement="program == spec out[h, i, j] = sum_{l < inner} A[h, i, l] B[h, l, j], every size and entry",
    )
    yield from intent_obligations("matmul", ref, lambda: matmul(2, 3, 2, heads=2))
    yield layout_obligation("matmul", ref, lambda: matmul(2, 3, 2, heads=2))
    for r, k, c in itertools.product((1, 2, 3), repeat=3):
        yield from standard_obligations("matmul", ref, functools.partial(matmul, r, k, c))
    yield from standard_obligations("matmul", ref, lambda: matmul(4, 4, 4), exact=False, numeric_tol=None)
    yield from standard_obligations("matmul", ref, lambda: matmul(64, 64, 64), sympy_sizes=False, exact=False)
    # multi-head instance with rows mod cols != 0: head-index errors in the A or B source change the output
    yield from standard_obligations("matmul", ref, lambda: matmul(3, 2, 2, heads=2))
