"""Lemma (matmul): the cases of its specification check.

:mod:`attnsim.verify.spec_check` runs them.  Each :class:`~attnsim.constructions.spec_case.SpecCase`
names a spec of ``spec.py``, its textbook formula in ``reference.py``, how to make its operands, the
largest size of each kind worth trying and the symbolic builds proved against the spec (their
programs' size constants are tried too).
"""

from __future__ import annotations

from attnsim.constructions.matmul import reference, spec
from attnsim.constructions.matmul.program import matmul
from attnsim.constructions.spec_case import SpecCase, ints, stacked
from attnsim.rasp import core as C

S = C.Size


CASES: tuple[SpecCase, ...] = (
    SpecCase(
        "matmul",
        "Lemma (matmul)",
        spec.__name__,
        "MATMUL",
        reference.matmul,
        stacked(
            ints,
            {
                "A": lambda sz: (sz["heads"], sz["rows"], sz["inner"]),
                "B": lambda sz: (sz["heads"], sz["inner"], sz["cols"]),
            },
        ),
        {"rows": 100, "inner": 128, "cols": 100, "heads": 8},
        (lambda: matmul(S("rows"), S("inner"), S("cols"), heads=S("heads")),),
    ),
)

__all__ = ["CASES"]
