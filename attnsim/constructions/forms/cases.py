"""The generalized forms U is built from: the cases of its specification check.

:mod:`attnsim.verify.spec_check` runs them.  Each :class:`~attnsim.constructions.spec_case.SpecCase`
names a spec of ``spec.py``, its textbook formula in ``reference.py``, how to make its operands, the
largest size of each kind worth trying and the symbolic builds proved against the spec (their
programs' size constants are tried too).
"""

from __future__ import annotations

from attnsim.constructions.forms import program as forms
from attnsim.constructions.forms import reference, spec
from attnsim.constructions.spec_case import SpecCase, ints, stacked
from attnsim.rasp import core as C

S = C.Size


CASES: tuple[SpecCase, ...] = (
    SpecCase(
        "gathered-permute",
        "Lemma (matmul), Lemma (transpose)",
        spec.__name__,
        "PERMUTE3",
        reference.permute3,
        stacked(ints, {"A": lambda sz: (sz["d0"], sz["d1"], sz["d2"])}),
        {"d0": 64, "d1": 64, "d2": 64},
        (lambda: forms.gathered_permute(S("d0"), S("d1"), S("d2")),),
    ),
    SpecCase(
        "broadcast-gather",
        "Lemma (matmul), Lemma (transpose)",
        spec.__name__,
        "BROADCAST_ROW",
        reference.broadcast_row,
        stacked(ints, {"A": lambda sz: (sz["depth"], sz["cols"])}),
        {"depth": 100, "rows": 100, "cols": 100},
        (lambda: forms.broadcast_gather(S("depth"), S("rows"), S("cols")),),
    ),
    SpecCase(
        "consumer-matmul",
        "Lemma (matmul), Lemma (transpose)",
        spec.__name__,
        "CONSUMER_MATMUL",
        reference.consumer_matmul,
        stacked(ints, {"A": lambda sz: (sz["rows"], sz["inner"]), "B": lambda sz: (sz["inner"], sz["cols"])}),
        {"rows": 40, "inner": 100, "cols": 40, "extra": 40},
        (lambda: forms.consumer_matmul(S("rows"), S("inner"), S("cols"), S("extra")),),
    ),
    SpecCase(
        "two-axis-sum",
        "Lemma (matmul), Lemma (transpose)",
        spec.__name__,
        "TWO_AXIS_SUM",
        reference.two_axis_sum,
        stacked(ints, {"A": lambda sz: (sz["depth"], sz["rows"], sz["width"])}),
        {"depth": 64, "rows": 64, "width": 64, "cols": 64},
        (lambda: forms.two_axis_sum(S("depth"), S("rows"), S("width"), S("cols")),),
    ),
)

__all__ = ["CASES"]
