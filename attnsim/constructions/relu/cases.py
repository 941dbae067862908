"""Activation ReLU: the cases of its specification check.

:mod:`attnsim.verify.spec_check` runs them.  Each :class:`~attnsim.constructions.spec_case.SpecCase`
names a spec of ``spec.py``, its textbook formula in ``reference.py``, how to make its operands, the
largest size of each kind worth trying and the symbolic builds proved against the spec (their
programs' size constants are tried too).
"""

from __future__ import annotations

from attnsim.constructions.relu import reference, spec
from attnsim.constructions.relu.program import relu
from attnsim.constructions.spec_case import SpecCase, ints, stacked
from attnsim.rasp import core as C

S = C.Size


CASES: tuple[SpecCase, ...] = (
    SpecCase(
        "relu",
        "Activation ReLU",
        spec.__name__,
        "RELU",
        reference.relu,
        stacked(ints, {"A": lambda sz: (sz["rows"], sz["n"])}),
        {"rows": 128, "n": 128},
        (lambda: relu(S("n"), S("rows")),),
    ),
)

__all__ = ["CASES"]
