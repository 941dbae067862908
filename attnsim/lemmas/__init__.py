"""The paper's lemmas as constructions: ``from attnsim import lemmas; lemmas.matmul(3, 2, 4)``.

Each lemma module is short, named after the lemma, and exposes a factory returning a
:class:`~attnsim.lemmas.construction.Construction` and a composable ``*_ref`` form (MatRef -> MatRef).
Their obligations are registered by :mod:`attnsim.catalog` (see ``obligations.py``); importing this
package registers nothing.
"""

from attnsim.lemmas.cofactor import (
    SingularMatrixError,
    adjugate3_ref,
    cofactor3,
    cofactor3_ref,
    det3,
    det3_ref,
    inverse3,
    inverse3_ref,
)
from attnsim.lemmas.construction import Construction, ConstructionError, NonFiniteResultError
from attnsim.lemmas.faddeev import det, det_ref, frobenius_ref, inverse, inverse_ref, trace_ref
from attnsim.lemmas.forms import broadcast_gather, consumer_matmul, gathered_permute, gathered_transpose, two_axis_sum
from attnsim.lemmas.matmul import matmul, matmul_ref
from attnsim.lemmas.maxmin import maxmin, maxmin_ref
from attnsim.lemmas.relu import relu, relu_ref
from attnsim.lemmas.softmax import masked_softmax, masked_softmax_ref, softmax, softmax_ref
from attnsim.lemmas.transpose import transpose, transpose_ref

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
