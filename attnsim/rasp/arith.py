"""The arithmetic interface the engine runs a program with.

The engine (``attnsim.rasp.engine``) is written once; an :class:`Arithmetic` supplies the
number type.  Implementations: ``attnsim.rasp.numeric.NumpyArith`` (float64),
``attnsim.rasp.exact.ExactArith`` (Fraction) and ``attnsim.rasp.exact.SympyArith`` (SymPy).
Every arithmetic returns NumPy arrays: float64, or dtype object.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from attnsim.rasp import primitives as P


class BackendError(ValueError):
    """A value cannot be represented or computed in the chosen backend."""


class NonFiniteError(BackendError):
    """A float64 value the caller reads is not finite (exp overflow, 0/0, inf - inf...)."""


class Arithmetic(ABC):
    """Number type used to run a program."""

    name: str = "?"

    @abstractmethod
    def from_input(self, values: Any, allow_nonfinite: bool) -> np.ndarray:
        """Convert the caller's tokens to this arithmetic's 1-D array."""

    @abstractmethod
    def from_int(self, ints: np.ndarray) -> np.ndarray:
        """Convert structural int64 values (positions, sizes) to value arrays."""

    @abstractmethod
    def to_int(self, values: np.ndarray, what: str) -> np.ndarray:
        """Values that must be integers (inputs to an index function) as int64; else fail."""

    @abstractmethod
    def comparable(self, values: np.ndarray, what: str) -> np.ndarray:
        """Values that a selector compares: concrete and totally ordered, else fail."""

    @abstractmethod
    def const(self, value: Any, n: int) -> np.ndarray:
        """A constant array."""

    def apply(self, prim: P.Primitive, params: tuple[Any, ...], args: list[np.ndarray]) -> np.ndarray:
        """Apply a primitive elementwise."""
        return self._apply(prim, params, args)

    @abstractmethod
    def _apply(self, prim: P.Primitive, params: tuple[Any, ...], args: list[np.ndarray]) -> np.ndarray: ...

    @abstractmethod
    def mean(self, vals: np.ndarray) -> Any:
        """The mean of a non-empty 1-D array."""

    @abstractmethod
    def zeros(self, n: int) -> np.ndarray:
        """An array of n zeros."""

    def scored_mean(self, scores: np.ndarray, values: np.ndarray, same: bool) -> Any:
        """The mean of ``values`` over the entries of maximal score (non-empty 1-D arrays);
        ``same``: the values are the scores (a max head)."""
        top = max(scores)
        return self.mean(values[np.asarray([s == top for s in scores], dtype=bool)])

    def dense_aggregate(self, sel: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Row-wise mean of ``values`` over True entries of a (q x k) boolean block; 0 on empty rows."""
        out = self.zeros(sel.shape[0])
        for q in range(sel.shape[0]):
            ks = np.flatnonzero(sel[q])
            if ks.size:
                out[q] = self.mean(values[ks])
        return out
