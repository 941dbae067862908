"""The paper's constructions, one folder per result, and what they share.

Each folder (``transpose/``, ``matmul/``, ``softmax/`` ...) holds one paper result: its program
(``program.py``, with the catalogue's example in ``CONSTRUCTIONS``), its independent specification
(``spec.py``), the textbook NumPy formula the spec is checked against (``reference.py``), the
spec check's cases (``cases.py``) and its obligations (``obligations.py``); its Coq theory is named
in ``kernel_theorems.py``.  The modules at this level are shared by every construction: the
:class:`~attnsim.constructions.construction.Construction` record, the checks the obligations use,
the kernel route.  A folder's ``__init__`` imports nothing, so that importing one of its modules
runs no other; the public names are re-exported by the facades :mod:`attnsim.lemmas` and
:mod:`attnsim.applications`.
"""
