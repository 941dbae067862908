"""The paper's constructions, one folder per result, and what they share.

Each folder (``transpose/``, ``matmul/``, ``softmax/`` ...) holds one paper result: its program
(``program.py``), and, as they are split out of the layers, its specification, NumPy reference,
spec cases, obligations and a short page.  The modules at this level are shared by every
construction: the :class:`~attnsim.constructions.construction.Construction` record, the checks
every lemma's obligations use, the kernel route.  A folder's ``__init__`` imports nothing, so
that importing one of its modules runs no other; the public names are re-exported by the
facades :mod:`attnsim.lemmas` and :mod:`attnsim.applications`.
"""
