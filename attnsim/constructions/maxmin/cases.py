"""Activation MaxMin: the cases of its specification check.

:mod:`attnsim.verify.spec_check` runs them.  Each :class:`~attnsim.constructions.spec_case.SpecCase`
names a spec of ``spec.py``, its textbook formula in ``reference.py``, how to make its operands, the
largest size of each kind worth trying and the symbolic builds proved against the spec (their
programs' size constants are tried too).
"""

from __future__ import annotations

from attnsim.constructions.maxmin import reference, spec
from attnsim.constructions.maxmin.program import maxmin
from attnsim.constructions.spec_case import SpecCase, ints, stacked
from attnsim.rasp import core as C

S = C.Size


CASES: tuple[SpecCase, ...] = (
    SpecCase(
        "maxmin",
        "Activation MaxMin (GroupSort, groups of 2)",
        spec.__name__,
        "MAXMIN",
        reference.maxmin,
        stacked(ints, {"A": lambda sz: (sz["rows"], sz["n"])}),
        {"rows": 128, "n": 128},
        (lambda: maxmin(S("n"), S("rows")),),
        valid=lambda sz: sz["n"] % 2 == 0,
        repair=lambda sz: {**sz, "n": sz["n"] + sz["n"] % 2},  # an odd width: the next even one
    ),
)

__all__ = ["CASES"]
