"""Lemma 3 (softmax): the cases of its specification check.

:mod:`attnsim.verify.spec_check` runs them.  Each :class:`~attnsim.constructions.spec_case.SpecCase`
names a spec of ``spec.py``, its textbook formula in ``reference.py``, how to make its operands, the
largest size of each kind worth trying and the symbolic builds proved against the spec (their
programs' size constants are tried too).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from attnsim.constructions.softmax import reference, spec
from attnsim.constructions.softmax.program import masked_softmax, softmax
from attnsim.constructions.spec_case import SpecCase, reals, stacked
from attnsim.rasp import core as C

S = C.Size


def _heads_rows_cols(sz: Mapping[str, int]) -> tuple[int, int, int]:
    return (sz["heads"], sz["rows"], sz["cols"])


def masked_operands(sz: Mapping[str, int], rng: np.random.Generator, trial: int) -> dict[str, np.ndarray]:
    """A and the operand n: 1, cols and a random value in between, in turn."""
    cols = sz["cols"]
    n = (1, cols, int(rng.integers(1, cols + 1)))[trial % 3]
    return {"A": reals(rng, sz["heads"], sz["rows"], cols), "n": np.array([[float(n)]])}


CASES: tuple[SpecCase, ...] = (
    SpecCase(
        "softmax",
        "Lemma 3 (softmax)",
        spec.__name__,
        "SOFTMAX",
        reference.softmax,
        stacked(reals, {"A": _heads_rows_cols}),
        {"rows": 100, "cols": 128, "heads": 8},
        (
            lambda: softmax(S("rows"), S("cols"), S("heads")),
            lambda: softmax(S("rows"), S("cols"), S("heads"), stable=True),
        ),
        rtol=1e-9,
        atol=1e-12,
    ),
    SpecCase(
        "softmax-masked",
        "Lemma 3 (softmax)",
        spec.__name__,
        "MASKED_SOFTMAX",
        reference.masked_softmax,
        masked_operands,
        {"rows": 100, "cols": 128, "heads": 8},
        (
            lambda: masked_softmax(S("rows"), S("cols"), S("heads")),
            lambda: masked_softmax(S("rows"), S("cols"), S("heads"), stable=True),
        ),
        rtol=1e-9,
        atol=1e-12,
    ),
)

__all__ = ["CASES"]
