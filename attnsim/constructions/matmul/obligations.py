"""Lemma (matmul): the obligations `attnsim verify` runs (registered by :mod:`attnsim.catalog`)."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable

from attnsim.constructions.checks import (
    intent_obligations,
    layout_obligation,
    standard_obligations,
)
from attnsim.constructions.matmul.program import PAPER_REF as MATMUL_REF
from attnsim.constructions.matmul.program import matmul
from attnsim.proofs.obligation import Obligation
from attnsim.rasp import core as C
from attnsim.symbolic.program_equals_spec import all_sizes_obligations


def matmul_obligations() -> Iterable[Obligation]:
    ref = MATMUL_REF
    rows, inner, cols, heads = C.Size("rows"), C.Size("inner"), C.Size("cols"), C.Size("heads")
    yield from all_sizes_obligations(
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


__all__ = ["matmul_obligations"]
