"""Independent specifications: each construction's textbook statement, in matrix coordinates, by name.

A specification says what entry (h, i, j) of the result is, from the operands' entries and the
sizes, the way a textbook does (out[h, i, j] = A[h, j, i]; sum_{l < k} A[h, i, l] B[h, l, j]; ...),
importing nothing from :mod:`attnsim.rasp` nor any layout.  The all-sizes proof compares a program
with its specification at a symbolic entry and symbolic sizes (:mod:`attnsim.symbolic.execute`);
:meth:`BoundSpec.evaluate` runs the very same definition on concrete operands, and the tests
compare that with the NumPy reference, so a wrong spec fails on its own.

The specifications are written in :mod:`attnsim.symbolic.spec_language` (``Spec``, ``BoundSpec``,
the symbolic and the concrete algebra) and defined by concern: the lemmas' and the generalized
forms' in :mod:`attnsim.symbolic.lemma_specs`, the applications' in
:mod:`attnsim.symbolic.application_specs`, one whole encoder layer T(X) (:data:`ENCODER_LAYER`,
with its intermediate quantities) in :mod:`attnsim.symbolic.encoder_layer_spec`.  This module
names them all, each by its constant and in :data:`SPECS`: the spec-independent checks
(:mod:`attnsim.verify.spec_check`) look a specification up here by name when they run.
"""

from __future__ import annotations

from attnsim.symbolic.application_specs import LINEAR_ATTENTION, LINFORMER, PARITY
from attnsim.symbolic.encoder_layer_spec import (
    ENCODER_LAYER,
    ENCODER_LAYER_NAMES,
    PART_NAMES,
    encoder_layer_parts,
    given_parts,
)
from attnsim.symbolic.lemma_specs import (
    BROADCAST_ROW,
    COEFFICIENT_STEP,
    CONSUMER_MATMUL,
    FIRST_STEP,
    FROBENIUS,
    GENERAL_STEP,
    ITERATION,
    MASKED_SOFTMAX,
    MATMUL,
    MAXMIN,
    PERMUTE3,
    RELU,
    SOFTMAX,
    TRACE,
    TRANSPOSE,
    TWO_AXIS_SUM,
)
from attnsim.symbolic.spec_language import BoundSpec, ConcreteAlg, Spec, SpecError, SymbolicAlg

SPECS: dict[str, Spec] = {
    s.name: s
    for s in (
        TRANSPOSE,
        MATMUL,
        SOFTMAX,
        MASKED_SOFTMAX,
        RELU,
        MAXMIN,
        TRACE,
        FROBENIUS,
        FIRST_STEP,
        GENERAL_STEP,
        COEFFICIENT_STEP,
        ITERATION,
        LINEAR_ATTENTION,
        LINFORMER,
        PARITY,
        ENCODER_LAYER,
    )
}

__all__ = [
    "BROADCAST_ROW",
    "COEFFICIENT_STEP",
    "CONSUMER_MATMUL",
    "ENCODER_LAYER",
    "ENCODER_LAYER_NAMES",
    "FIRST_STEP",
    "FROBENIUS",
    "GENERAL_STEP",
    "ITERATION",
    "LINEAR_ATTENTION",
    "LINFORMER",
    "MASKED_SOFTMAX",
    "MATMUL",
    "MAXMIN",
    "PARITY",
    "PART_NAMES",
    "PERMUTE3",
    "RELU",
    "SOFTMAX",
    "SPECS",
    "TRACE",
    "TRANSPOSE",
    "TWO_AXIS_SUM",
    "BoundSpec",
    "ConcreteAlg",
    "Spec",
    "SpecError",
    "SymbolicAlg",
    "encoder_layer_parts",
    "given_parts",
]
