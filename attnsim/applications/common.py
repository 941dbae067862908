"""Shared pieces of the applications: constructions over plain token sequences."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnsim.lemmas.base import Construction, ConstructionError
from attnsim.rasp.layout import as_array


@dataclass
class SequenceConstruction(Construction):
    """A construction whose input is one 1-D token sequence (stored as a 1 x n block)."""

    def _operands(self, operands: Sequence[Any], backend: str) -> list[np.ndarray]:
        if len(operands) != len(self.inputs):
            raise ConstructionError(f"{self.name} takes {len(self.inputs)} operand(s), got {len(operands)}")
        fixed = []
        for nm, x in zip(self.inputs, operands, strict=True):
            a = as_array(x)
            want = self.layout[nm].shape
            if a.ndim == 1 and len(want) == 2 and want[0] == 1:
                if a.shape[0] != want[1]:
                    raise ConstructionError(f"{self.name}: operand {nm} must have length {want[1]}, got {a.shape[0]}")
                a = a.reshape(1, -1)
            fixed.append(a)
        return super()._operands(fixed, backend)


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
