"""The paper's applications as constructions: Match2, k-PARITY, Lipschitz approximation,
linear attention and Linformer.  Importing this package registers their obligations.

``from attnsim import applications; applications.match2(8, 5).run([...])``
"""

from attnsim.applications.efficient import linear_attention, linformer
from attnsim.applications.kparity import parity, sparse_parity
from attnsim.applications.lipschitz import LipschitzNetwork, error_table, lipschitz_approximator, size_formula
from attnsim.applications.match import match2, match2_paper

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
