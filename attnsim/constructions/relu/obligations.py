"""Activation ReLU: the obligations `attnsim verify` runs (registered by :mod:`attnsim.catalog`)."""

from __future__ import annotations

import functools
from collections.abc import Iterable

from attnsim.constructions.checks import layout_obligation, standard_obligations
from attnsim.constructions.relu.program import PAPER_REF, relu
from attnsim.proofs.obligation import Obligation
from attnsim.rasp import core as C
from attnsim.symbolic.program_equals_spec import all_sizes_obligations


# -- all sizes: program == spec (attnsim.symbolic.execute) -------------------------------------------
def relu_all_sizes() -> tuple[Obligation, Obligation]:
    """``all-sizes``: the program over unbound (n, rows) equals the spec max(A[i, j], 0) at every entry."""
    n, rows = C.Size("n"), C.Size("rows")
    return all_sizes_obligations(
        "relu",
        PAPER_REF,
        [lambda: relu(n), lambda: relu(n, rows)],
        statement="program == spec out[i, j] = max(A[i, j], 0) for every n and rows (no attention)",
    )


def relu_obligations() -> Iterable[Obligation]:
    """sympy/exact/numeric (bit-exact) for every dimension <= 3, numeric at 64; layout."""
    yield from relu_all_sizes()
    yield layout_obligation("relu", PAPER_REF, lambda: relu(3, rows=2))
    for n in (1, 2, 3):
        for r in (None, 2, 3):
            yield from standard_obligations("relu", PAPER_REF, functools.partial(relu, n, r), numeric_tol=0.0)
    yield from standard_obligations(
        "relu", PAPER_REF, lambda: relu(64, rows=64), sympy_sizes=False, exact=False, numeric_tol=0.0
    )


__all__ = ["relu_all_sizes", "relu_obligations"]
