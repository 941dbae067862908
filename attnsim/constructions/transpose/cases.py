"""Lemma (transpose): the cases of its specification check.

:mod:`attnsim.verify.spec_check` runs them.  Each :class:`~attnsim.constructions.spec_case.SpecCase`
names a spec of ``spec.py``, its textbook formula in ``reference.py``, how to make its operands, the
largest size of each kind worth trying and the symbolic builds proved against the spec (their
programs' size constants are tried too).
"""

from __future__ import annotations

from collections.abc import Mapping

from attnsim.constructions.forms import program as forms
from attnsim.constructions.spec_case import SpecCase, ints, stacked
from attnsim.constructions.transpose import reference, spec
from attnsim.constructions.transpose.program import transpose
from attnsim.rasp import core as C

S = C.Size


def _heads_rows_cols(sz: Mapping[str, int]) -> tuple[int, int, int]:
    return (sz["heads"], sz["rows"], sz["cols"])


CASES: tuple[SpecCase, ...] = (
    SpecCase(
        "transpose",
        "Lemma (transpose)",
        spec.__name__,
        "TRANSPOSE",
        reference.transpose,
        stacked(ints, {"A": _heads_rows_cols}),
        {"rows": 128, "cols": 128, "heads": 16},
        (
            lambda: transpose(S("rows"), S("cols"), heads=S("heads")),
            lambda: forms.gathered_transpose(S("rows"), S("cols")),
        ),
    ),
)

__all__ = ["CASES"]
