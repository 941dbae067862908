"""The specification checks' cases, in ``verify``'s order: each folder's ``cases.py``, gathered.

A construction folder with a ``spec.py`` lists one
:class:`~attnsim.constructions.spec_case.SpecCase` per spec in its ``cases.py``;
:mod:`attnsim.verify.spec_check` runs them.  A new folder's cases get their line here (the test
checks that no spec is left out).
"""

from __future__ import annotations

from attnsim.constructions.det_n import cases as det_n
from attnsim.constructions.efficient import cases as efficient
from attnsim.constructions.forms import cases as forms
from attnsim.constructions.matmul import cases as matmul
from attnsim.constructions.maxmin import cases as maxmin
from attnsim.constructions.parity import cases as parity
from attnsim.constructions.relu import cases as relu
from attnsim.constructions.softmax import cases as softmax
from attnsim.constructions.spec_case import Sizes, SpecCase
from attnsim.constructions.transpose import cases as transpose
from attnsim.universal import cases as universal

CASES: tuple[SpecCase, ...] = (
    *transpose.CASES,
    *matmul.CASES,
    *forms.CASES,
    *softmax.CASES,
    *relu.CASES,
    *maxmin.CASES,
    *det_n.CASES,
    *efficient.CASES,
    *parity.CASES,
    *universal.CASES,
)

__all__ = ["CASES", "Sizes", "SpecCase"]
