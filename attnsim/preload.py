"""Imported by the forkserver of each Dask worker (see :mod:`attnsim.verify.dask_runner`, which names it
by string: it lives above the harness, beside the catalogue it loads).

Importing it builds the obligation registry and the construction catalog once, so that every
slot or mutant child forked from that server starts with them (as the local runner's children,
forked from a parent that built them), instead of rebuilding them per check.
"""

from __future__ import annotations

from attnsim import catalog
from attnsim.proofs import registry

catalog.load()
registry.all_obligations(include_deep=True)
registry.constructions()
