"""Shared pieces of the applications: constructions over plain token sequences."""

from __future__ import annotations

from typing import Any

import numpy as np

from attnsim.constructions.construction import ConstructionError, VectorConstruction

SequenceConstruction = VectorConstruction
"""A construction whose input is one 1-D token sequence (stored as a 1 x n block)."""


def check_integers(what: str) -> Any:
    """An input check: every token an integer (a clear ConstructionError otherwise)."""

    def check(x: np.ndarray, backend: str = "numpy") -> None:
        for v in np.asarray(x, dtype=object).reshape(-1):
            try:
                ok = float(v) == int(v)
            except (TypeError, ValueError, OverflowError):
                ok = False
            if not ok:
                raise ConstructionError(f"{what} takes integer tokens, got {v!r}")

    return check
