"""Activation MaxMin: the obligations `attnsim verify` runs (registered by :mod:`attnsim.catalog`)."""

from __future__ import annotations

import functools
from collections.abc import Iterable

from attnsim.constructions.checks import (
    embedded_obligations,
    intent_obligations,
    layout_obligation,
    standard_obligations,
)
from attnsim.constructions.maxmin.program import PAPER_REF, maxmin, maxmin_ref
from attnsim.proofs.obligation import Obligation
from attnsim.rasp import core as C
from attnsim.symbolic.program_equals_spec import all_sizes_obligations


# -- all sizes: program == spec (attnsim.symbolic.execute), the output column split by parity ---------
def maxmin_all_sizes() -> tuple[Obligation, Obligation]:
    """``all-sizes``: the program over unbound (n, rows), n even (a precondition), equals the spec at
    every entry; the output column is split into j = 2t and j = 2t + 1."""
    n, rows = C.Size("n"), C.Size("rows")
    return all_sizes_obligations(
        "maxmin",
        PAPER_REF,
        [lambda: maxmin(n), lambda: maxmin(n, rows)],
        statement="program == spec for every even n and rows: (i, 2t) -> max, (i, 2t+1) -> min of the pair",
    )


def maxmin_obligations() -> Iterable[Obligation]:
    """Z3 partner intent (all sizes, even width), layout, sympy/exact/numeric (bit-exact)."""
    yield from maxmin_all_sizes()
    yield from intent_obligations("maxmin", PAPER_REF, lambda: maxmin(4, rows=3))
    yield layout_obligation("maxmin", PAPER_REF, lambda: maxmin(4, rows=3))
    yield from embedded_obligations("maxmin", PAPER_REF, maxmin_ref, stacked=False)
    for n in (2, 4, 6):
        for r in (None, 2, 3):
            yield from standard_obligations("maxmin", PAPER_REF, functools.partial(maxmin, n, r), numeric_tol=0.0)
    yield from standard_obligations(
        "maxmin", PAPER_REF, lambda: maxmin(64, rows=64), sympy_sizes=False, exact=False, numeric_tol=0.0
    )


__all__ = ["maxmin_all_sizes", "maxmin_obligations"]
