"""The steps of det(n) and inverse(n) by Faddeev-LeVerrier: the cases of its specification check.

:mod:`attnsim.verify.spec_check` runs them.  Each :class:`~attnsim.constructions.spec_case.SpecCase`
names a spec of ``spec.py``, its textbook formula in ``reference.py``, how to make its operands, the
largest size of each kind worth trying and the symbolic builds proved against the spec (their
programs' size constants are tried too).
"""

from __future__ import annotations

from collections.abc import Mapping

from attnsim.constructions.det_n import reference, spec
from attnsim.constructions.det_n import steps as faddeev_steps
from attnsim.constructions.spec_case import SpecCase, ints, scalar_c, stacked
from attnsim.rasp import core as C

S = C.Size
steps_ref, steps = faddeev_steps.STEPS_REF, faddeev_steps.STEPS_ID


def square(sz: Mapping[str, int]) -> tuple[int, int]:
    return (sz["n"], sz["n"])


CASES: tuple[SpecCase, ...] = (
    SpecCase(
        steps,
        steps_ref,
        spec.__name__,
        "TRACE",
        reference.trace,
        stacked(ints, {"A": square}),
        {"n": 128},
        (lambda: faddeev_steps.trace_step(S("n")),),
        extra_ids="-trace",
    ),
    SpecCase(
        steps,
        steps_ref,
        spec.__name__,
        "FROBENIUS",
        reference.frobenius,
        stacked(ints, {"A": lambda sz: (sz["rows"], sz["cols"])}),
        {"rows": 100, "cols": 100},
        (lambda: faddeev_steps.frobenius_step(S("rows"), S("cols")),),
        extra_ids="-frobenius",
    ),
    SpecCase(
        steps,
        steps_ref,
        spec.__name__,
        "FIRST_STEP",
        reference.first_step,
        stacked(ints, {"A": square}),
        {"n": 64},
        (lambda: faddeev_steps.first_step(S("n")),),
        extra_ids="-first-step",
    ),
    SpecCase(
        steps,
        steps_ref,
        spec.__name__,
        "GENERAL_STEP",
        reference.general_step,
        scalar_c(stacked(ints, {"A": square, "M": square})),
        {"n": 24},
        (lambda: faddeev_steps.general_step(S("n")),),
        extra_ids="-general-step",
    ),
    SpecCase(
        steps,
        steps_ref,
        spec.__name__,
        "COEFFICIENT_STEP",
        reference.coefficient_step,
        stacked(ints, {"A": square, "M": square}),
        {"n": 64},
        (lambda: faddeev_steps.coefficient_step(S("n")),),
        extra_ids="-coefficient-step",
    ),
    SpecCase(
        steps,
        steps_ref,
        spec.__name__,
        "ITERATION",
        reference.iteration,
        scalar_c(stacked(ints, {"A": square, "M": square})),
        {"n": 16, "k": 128},
        (lambda: faddeev_steps.iteration_step(S("n"), S("k")),),
        rtol=1e-12,  # one division by k + 1: not an integer
        extra_ids="-iteration",
    ),
)

__all__ = ["CASES"]
