"""The paper's lemmas as constructions: ``from attnsim import lemmas; lemmas.matmul(3, 2, 4)``.

Each lemma module is short, named after the lemma, and exposes a factory returning a
:class:`~attnsim.lemmas.base.Construction` and a composable ``*_ref`` form (MatRef -> MatRef).
Importing this package registers every lemma's obligations (see ``obligations.py``).
"""

from attnsim.lemmas import obligations as _obligations  # noqa: F401  (registers providers)
from attnsim.lemmas.base import Construction, ConstructionError
from attnsim.lemmas.matmul import matmul, matmul_ref
from attnsim.lemmas.transpose import transpose, transpose_ref

__all__ = ["Construction", "ConstructionError", "matmul", "matmul_ref", "transpose", "transpose_ref"]
