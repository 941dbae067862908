"""Lemma (inverse, determinant: 3 x 3 fixed order): the obligations of cofactor3, det3 and inverse3
(registered by :mod:`attnsim.catalog`; the checks they share with det_n in
:mod:`attnsim.constructions.det_checks`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import sympy as sp

from attnsim.constructions.checks import intent_obligations, layout_obligation
from attnsim.constructions.det3.program import PAPER_REF as COFACTOR_REF
from attnsim.constructions.det3.program import (
    cofactor3,
    det3,
    inverse3,
)
from attnsim.constructions.det_checks import (
    AUTHORS_EXAMPLE,
    accuracy_check,
    algebra_obligations,
    example_check,
    singular_check,
    sympy_inverse,
)
from attnsim.proofs.obligation import Obligation

NUMERIC_TOL_3x3 = 1e-14  # measured worst 1.5e-15 (inverse3/det3, 5 normal inputs)
SINGULAR_3x3 = ((1, 2, 3), (2, 4, 6), (1, 1, 1))


def cofactor_obligations() -> Iterable[Obligation]:
    """Z3 intents and layout, SymPy identity, exact, float64 accuracy, the authors' example, singular."""
    a = sp.Matrix(AUTHORS_EXAMPLE)
    examples = {
        "cofactor3": np.array(a.adjugate().T.tolist(), dtype=object),
        "det3": np.array(a.det(), dtype=object),
        "inverse3": sympy_inverse(AUTHORS_EXAMPLE),
    }
    for cid, make in (("cofactor3", cofactor3), ("det3", det3), ("inverse3", inverse3)):
        yield from intent_obligations(cid, COFACTOR_REF, make)
        yield layout_obligation(cid, COFACTOR_REF, make)
        yield from algebra_obligations(cid, COFACTOR_REF, make, "n3", exact_trials=5)
        yield Obligation(
            f"{cid}/numeric/n3",
            cid,
            COFACTOR_REF,
            "numeric",
            accuracy_check(make, NUMERIC_TOL_3x3),
            f"float64 within {NUMERIC_TOL_3x3:g} relative of the exact result",
        )
        yield Obligation(
            f"{cid}/exact/authors-example",
            cid,
            COFACTOR_REF,
            "exact",
            example_check(make, AUTHORS_EXAMPLE, examples[cid]),
            "the authors' example [[7,8,12],[10,11,9],[2,4,21]] (det 45) equals SymPy's result with ==",
        )
    yield Obligation(
        "inverse3/exact/singular",
        "inverse3",
        COFACTOR_REF,
        "exact",
        singular_check(inverse3, SINGULAR_3x3),
        "a singular matrix is a SingularMatrixError (exact and NumPy), never a number",
    )


__all__ = ["cofactor_obligations"]
