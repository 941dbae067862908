"""The paper's applications as constructions: Match2, k-PARITY, Lipschitz approximation,
linear attention and Linformer.

A facade: each application lives in its folder of :mod:`attnsim.constructions`; this package
re-exports the public factories.  Importing it registers nothing (:mod:`attnsim.catalog` does).

``from attnsim import applications; applications.match2(8, 5).run([...])``
"""

from attnsim.constructions.efficient.program import linear_attention, linformer
from attnsim.constructions.lipschitz.program import LipschitzNetwork, error_table, lipschitz_approximator, size_formula
from attnsim.constructions.match2.program import match2, match2_paper
from attnsim.constructions.parity.program import parity, sparse_parity

__all__ = [
    "LipschitzNetwork",
    "error_table",
    "linear_attention",
    "linformer",
    "lipschitz_approximator",
    "match2",
    "match2_paper",
    "parity",
    "size_formula",
    "sparse_parity",
]
