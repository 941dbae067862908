"""The specification checks' cases: one per spec of :mod:`attnsim.symbolic.specs`, in order.

Each :class:`SpecCase` names a spec, its textbook NumPy formula (:mod:`attnsim.verify.spec_references`),
how to make its operands (:mod:`attnsim.verify.spec_operands`), the largest size of each kind worth
trying and the symbolic builds proved against it.  :mod:`attnsim.verify.spec_check` runs them;
the table is kept here, one function per group of constructions, so that it reads as a table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnsim.constructions.det_n import steps as faddeev_steps
from attnsim.constructions.efficient import program as efficient
from attnsim.constructions.forms import program as forms
from attnsim.constructions.matmul.program import matmul
from attnsim.constructions.maxmin.program import maxmin
from attnsim.constructions.parity import program as kparity
from attnsim.constructions.relu.program import relu
from attnsim.constructions.softmax.program import masked_softmax, softmax
from attnsim.constructions.transpose.program import transpose
from attnsim.rasp import core as C
from attnsim.symbolic import specs
from attnsim.verify import spec_references as ref
from attnsim.verify.spec_operands import (
    ENCODER_OPTIONS,
    OperandMaker,
    encoder_operands,
    ints,
    masked_operands,
    parity_operands,
    reals,
    scalar_c,
    stacked,
)

Sizes = dict[str, int]


@dataclass(frozen=True)
class SpecCase:
    """One specification, how to make its operands, its textbook reference, and what to try.

    ``large``: per size, the largest value tried (what stays cheap: a spec is evaluated entry by
    entry in Python); ``valid``: the sizes the spec is stated for (MaxMin: an even width);
    ``makers``: the symbolic builds proved against this spec (their programs' size constants)."""

    construction: str
    paper_ref: str
    spec_attr: str  # the name of the spec in attnsim.symbolic.specs, read when the check runs
    reference: Callable[[Mapping[str, np.ndarray], Mapping[str, int]], np.ndarray]
    operands: OperandMaker
    large: Mapping[str, int]
    makers: Sequence[Callable[[], Any]] = ()
    valid: Callable[[Mapping[str, int]], bool] = lambda sz: True
    repair: Callable[[Sizes], Sizes] = lambda sz: sz  # an assignment outside ``valid`` moved into it
    extra_small: int = 0  # further small random assignments (the encoder layer: every option combination)
    rtol: float = 0.0
    atol: float = 0.0
    small: int = 3
    extra_ids: str = ""

    @property
    def spec(self) -> specs.Spec:
        found = getattr(specs, self.spec_attr)
        assert isinstance(found, specs.Spec)
        return found

    @property
    def id(self) -> str:
        return f"{self.construction}/numeric/spec-independent{self.extra_ids}"


# -- the cases -------------------------------------------------------------------------------------
S = C.Size


def _heads_rows_cols(sz: Mapping[str, int]) -> tuple[int, int, int]:
    return (sz["heads"], sz["rows"], sz["cols"])


def _gather_and_sum_cases() -> list[SpecCase]:
    """Lemma (transpose), Lemma (matmul) and the generalized gathers and sums U is built from."""
    return [
        SpecCase(
            "transpose",
            "Lemma (transpose)",
            "TRANSPOSE",
            ref.transpose,
            stacked(ints, {"A": _heads_rows_cols}),
            {"rows": 128, "cols": 128, "heads": 16},
            (
                lambda: transpose(S("rows"), S("cols"), heads=S("heads")),
                lambda: forms.gathered_transpose(S("rows"), S("cols")),
            ),
        ),
        SpecCase(
            "matmul",
            "Lemma (matmul)",
            "MATMUL",
            ref.matmul,
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
        SpecCase(
            "gathered-permute",
            "Lemma (matmul), Lemma (transpose)",
            "PERMUTE3",
            ref.permute3,
            stacked(ints, {"A": lambda sz: (sz["d0"], sz["d1"], sz["d2"])}),
            {"d0": 64, "d1": 64, "d2": 64},
            (lambda: forms.gathered_permute(S("d0"), S("d1"), S("d2")),),
        ),
        SpecCase(
            "broadcast-gather",
            "Lemma (matmul), Lemma (transpose)",
            "BROADCAST_ROW",
            ref.broadcast_row,
            stacked(ints, {"A": lambda sz: (sz["depth"], sz["cols"])}),
            {"depth": 100, "rows": 100, "cols": 100},
            (lambda: forms.broadcast_gather(S("depth"), S("rows"), S("cols")),),
        ),
        SpecCase(
            "consumer-matmul",
            "Lemma (matmul), Lemma (transpose)",
            "CONSUMER_MATMUL",
            ref.consumer_matmul,
            stacked(ints, {"A": lambda sz: (sz["rows"], sz["inner"]), "B": lambda sz: (sz["inner"], sz["cols"])}),
            {"rows": 40, "inner": 100, "cols": 40, "extra": 40},
            (lambda: forms.consumer_matmul(S("rows"), S("inner"), S("cols"), S("extra")),),
        ),
        SpecCase(
            "two-axis-sum",
            "Lemma (matmul), Lemma (transpose)",
            "TWO_AXIS_SUM",
            ref.two_axis_sum,
            stacked(ints, {"A": lambda sz: (sz["depth"], sz["rows"], sz["width"])}),
            {"depth": 64, "rows": 64, "width": 64, "cols": 64},
            (lambda: forms.two_axis_sum(S("depth"), S("rows"), S("width"), S("cols")),),
        ),
    ]


def _softmax_and_activation_cases() -> list[SpecCase]:
    """Lemma 3 (softmax, plain and masked) and the activations ReLU and MaxMin."""
    return [
        SpecCase(
            "softmax",
            "Lemma 3 (softmax)",
            "SOFTMAX",
            ref.softmax,
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
            "MASKED_SOFTMAX",
            ref.masked_softmax,
            masked_operands,
            {"rows": 100, "cols": 128, "heads": 8},
            (
                lambda: masked_softmax(S("rows"), S("cols"), S("heads")),
                lambda: masked_softmax(S("rows"), S("cols"), S("heads"), stable=True),
            ),
            rtol=1e-9,
            atol=1e-12,
        ),
        SpecCase(
            "relu",
            "Activation ReLU",
            "RELU",
            ref.relu,
            stacked(ints, {"A": lambda sz: (sz["rows"], sz["n"])}),
            {"rows": 128, "n": 128},
            (lambda: relu(S("n"), S("rows")),),
        ),
        SpecCase(
            "maxmin",
            "Activation MaxMin (GroupSort, groups of 2)",
            "MAXMIN",
            ref.maxmin,
            stacked(ints, {"A": lambda sz: (sz["rows"], sz["n"])}),
            {"rows": 128, "n": 128},
            (lambda: maxmin(S("n"), S("rows")),),
            valid=lambda sz: sz["n"] % 2 == 0,
            repair=lambda sz: {**sz, "n": sz["n"] + sz["n"] % 2},  # an odd width: the next even one
        ),
    ]


def _faddeev_step_cases() -> list[SpecCase]:
    """The Faddeev-LeVerrier steps det(n) and inverse(n) are built from, one case per step."""
    steps_ref, steps = faddeev_steps.STEPS_REF, faddeev_steps.STEPS_ID
    square = lambda sz: (sz["n"], sz["n"])
    return [
        SpecCase(
            steps,
            steps_ref,
            "TRACE",
            ref.trace,
            stacked(ints, {"A": square}),
            {"n": 128},
            (lambda: faddeev_steps.trace_step(S("n")),),
            extra_ids="-trace",
        ),
        SpecCase(
            steps,
            steps_ref,
            "FROBENIUS",
            ref.frobenius,
            stacked(ints, {"A": lambda sz: (sz["rows"], sz["cols"])}),
            {"rows": 100, "cols": 100},
            (lambda: faddeev_steps.frobenius_step(S("rows"), S("cols")),),
            extra_ids="-frobenius",
        ),
        SpecCase(
            steps,
            steps_ref,
            "FIRST_STEP",
            ref.first_step,
            stacked(ints, {"A": square}),
            {"n": 64},
            (lambda: faddeev_steps.first_step(S("n")),),
            extra_ids="-first-step",
        ),
        SpecCase(
            steps,
            steps_ref,
            "GENERAL_STEP",
            ref.general_step,
            scalar_c(stacked(ints, {"A": square, "M": square})),
            {"n": 24},
            (lambda: faddeev_steps.general_step(S("n")),),
            extra_ids="-general-step",
        ),
        SpecCase(
            steps,
            steps_ref,
            "COEFFICIENT_STEP",
            ref.coefficient_step,
            stacked(ints, {"A": square, "M": square}),
            {"n": 64},
            (lambda: faddeev_steps.coefficient_step(S("n")),),
            extra_ids="-coefficient-step",
        ),
        SpecCase(
            steps,
            steps_ref,
            "ITERATION",
            ref.iteration,
            scalar_c(stacked(ints, {"A": square, "M": square})),
            {"n": 16, "k": 128},
            (lambda: faddeev_steps.iteration_step(S("n"), S("k")),),
            rtol=1e-12,  # one division by k + 1: not an integer
            extra_ids="-iteration",
        ),
    ]


def _application_cases() -> list[SpecCase]:
    """The applications: linear attention, Linformer, k-PARITY."""
    return [
        SpecCase(
            "linear_attention",
            efficient.LINEAR_REF,
            "LINEAR_ATTENTION",
            ref.linear_attention,
            stacked(
                reals,
                {
                    "Q": lambda sz: (sz["n"], sz["d"]),
                    "K": lambda sz: (sz["n"], sz["d"]),
                    "V": lambda sz: (sz["n"], sz["dv"]),
                },
            ),
            {"n": 40, "d": 64, "dv": 64},
            (lambda: efficient.linear_attention(S("n"), S("d"), S("dv")),),
            rtol=1e-9,
            atol=1e-12,
        ),
        SpecCase(
            "linformer",
            efficient.LINFORMER_REF,
            "LINFORMER",
            ref.linformer,
            stacked(
                reals,
                {
                    "Q": lambda sz: (sz["n"], sz["d"]),
                    "K": lambda sz: (sz["n"], sz["d"]),
                    "V": lambda sz: (sz["n"], sz["dv"]),
                    "E": lambda sz: (sz["kp"], sz["n"]),
                    "F": lambda sz: (sz["kp"], sz["n"]),
                },
            ),
            {"n": 24, "d": 24, "dv": 24, "kp": 8},
            (lambda: efficient.linformer(S("n"), S("d"), S("dv"), S("kp")),),
            rtol=1e-9,
            atol=1e-12,
        ),
        SpecCase(
            "parity",
            kparity.PAPER_REF,
            "PARITY",
            ref.parity,
            parity_operands,
            {"length": 128},
            (lambda: kparity.parity(S("length")),),
        ),
    ]


def _simulator_cases() -> list[SpecCase]:
    """Theorem 6: the encoder layer U simulates."""
    return [
        SpecCase(
            "simulator",
            "Theorem 6",
            "ENCODER_LAYER",
            ref.encoder_layer,
            encoder_operands,
            {"n": 16, "d": 16, "hh": 4, "k": 8, "f": 32},
            (),  # U's program over symbolic capacity: its size comparisons are with the capacity, not constants
            rtol=1e-9,
            atol=1e-9,
            extra_small=len(ENCODER_OPTIONS),
            extra_ids="-encoder-layer",
        ),
    ]


def _cases() -> list[SpecCase]:
    """One case per specification of :mod:`attnsim.symbolic.specs` (the test checks none is left out)."""
    return [
        *_gather_and_sum_cases(),
        *_softmax_and_activation_cases(),
        *_faddeev_step_cases(),
        *_application_cases(),
        *_simulator_cases(),
    ]


CASES: tuple[SpecCase, ...] = tuple(_cases())

__all__ = ["CASES", "Sizes", "SpecCase"]
