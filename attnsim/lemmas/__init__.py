"""The paper's lemmas as constructions: ``from attnsim import lemmas; lemmas.matmul(3, 2, 4)``.

A facade: each lemma lives in its folder of :mod:`attnsim.constructions` (``program.py``: a
factory returning a :class:`~attnsim.constructions.construction.Construction` and a composable
``*_ref`` form, MatRef -> MatRef); this package re-exports them under their public names.  Their
obligations are registered by :mod:`attnsim.catalog`; importing this package registers nothing.
"""

from attnsim.constructions.construction import Construction, ConstructionError, NonFiniteResultError
from attnsim.constructions.det3.program import (
    SingularMatrixError,
    adjugate3_ref,
    cofactor3,
    cofactor3_ref,
    det3,
    det3_ref,
    inverse3,
    inverse3_ref,
)
from attnsim.constructions.det_n.program import det, det_ref, frobenius_ref, inverse, inverse_ref, trace_ref
from attnsim.constructions.forms.program import (
    broadcast_gather,
    consumer_matmul,
    gathered_permute,
    gathered_transpose,
    two_axis_sum,
)
from attnsim.constructions.matmul.program import matmul, matmul_ref
from attnsim.constructions.maxmin.program import maxmin, maxmin_ref
from attnsim.constructions.relu.program import relu, relu_ref
from attnsim.constructions.softmax.program import masked_softmax, masked_softmax_ref, softmax, softmax_ref
from attnsim.constructions.transpose.program import transpose, transpose_ref

__all__ = [
    "Construction",
    "ConstructionError",
    "NonFiniteResultError",
    "SingularMatrixError",
    "adjugate3_ref",
    "broadcast_gather",
    "cofactor3",
    "cofactor3_ref",
    "consumer_matmul",
    "det",
    "det3",
    "det3_ref",
    "det_ref",
    "frobenius_ref",
    "gathered_permute",
    "gathered_transpose",
    "inverse",
    "inverse3",
    "inverse3_ref",
    "inverse_ref",
    "masked_softmax",
    "masked_softmax_ref",
    "matmul",
    "matmul_ref",
    "maxmin",
    "maxmin_ref",
    "relu",
    "relu_ref",
    "softmax",
    "softmax_ref",
    "trace_ref",
    "transpose",
    "transpose_ref",
    "two_axis_sum",
]
