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
from attnsim.proofs.obligation import Obligation
from attnsim.proofs.registry import provider, register_construction

register_construction("transpose", TRANSPOSE_REF, lambda: transpose(2, 3))
register_construction("matmul", MATMUL_REF, lambda: matmul(2, 3, 2))


@provider
def transpose_obligations() -> Iterable[Obligation]:
    ref = TRANSPOSE_REF
    yield from intent_obligations("transpose", ref, lambda: transpose(2, 3, heads=2))
    yield layout_obligation("transpose", ref, lambda: transpose(2, 3, heads=2))
    for r, c in itertools.product((1, 2, 3), repeat=2):
        yield from standard_obligations("transpose", ref, functools.partial(transpose, r, c), numeric_tol=0.0)
    yield from standard_obligations(
        "transpose", ref, lambda: transpose(64, 64), sympy_sizes=False, exact=False, numeric_tol=0.0
    )


@provider
def matmul_obligations() -> Iterable[Obligation]:
    ref = MATMUL_REF
    yield from intent_obligations("matmul", ref, lambda: matmul(2, 3, 2, heads=2))
    yield layout_obligation("matmul", ref, lambda: matmul(2, 3, 2, heads=2))
    for r, k, c in itertools.product((1, 2, 3), repeat=3):
        yield from standard_obligations("matmul", ref, functools.partial(matmul, r, k, c))
    yield from standard_obligations("matmul", ref, lambda: matmul(4, 4, 4), exact=False, numeric_tol=None)
    yield from standard_obligations("matmul", ref, lambda: matmul(64, 64, 64), sympy_sizes=False, exact=False)
