"""Lemma (transpose): the obligations `attnsim verify` runs (registered by :mod:`attnsim.catalog`)."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable

from attnsim.constructions.checks import (
    intent_obligations,
    layout_obligation,
    standard_obligations,
)
from attnsim.constructions.transpose.program import PAPER_REF as TRANSPOSE_REF
from attnsim.constructions.transpose.program import transpose
from attnsim.proofs.obligation import Obligation
from attnsim.rasp import core as C
from attnsim.symbolic.program_equals_spec import all_sizes_obligations


def transpose_obligations() -> Iterable[Obligation]:
    ref = TRANSPOSE_REF
    rows, cols, heads = C.Size("rows"), C.Size("cols"), C.Size("heads")
    yield from all_sizes_obligations(
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


__all__ = ["transpose_obligations"]
