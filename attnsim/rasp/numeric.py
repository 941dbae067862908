"""Float64 arithmetic for the engine: fast, vectorized, and never called exact."""

from __future__ import annotations

from typing import Any

import numpy as np

from attnsim.rasp import primitives as P
from attnsim.rasp.arith import Arithmetic, BackendError
from attnsim.rasp.guards import complex_entry


class NumpyArith(Arithmetic):
    """NumPy float64 values."""

    name = "numpy"

    def from_input(self, values: Any, allow_nonfinite: bool) -> np.ndarray:
        bad_complex = complex_entry(values)
        if bad_complex:
            raise BackendError(bad_complex)
        try:
            arr = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise BackendError(f"tokens must be real numbers for backend 'numpy' ({exc})") from None
        if not allow_nonfinite and not np.all(np.isfinite(arr)):
            bad = int(np.flatnonzero(~np.isfinite(arr))[0])
            raise BackendError(f"token {bad} is {arr[bad]}: NaN/inf tokens are rejected (pass allow_nonfinite=True)")
        return arr

    def from_int(self, ints: np.ndarray) -> np.ndarray:
        return np.asarray(ints, dtype=np.float64)

    def to_int(self, values: np.ndarray, what: str) -> np.ndarray:
        if values.dtype.kind in "iu":
            return values.astype(np.int64)
        r = np.rint(values)
        if not np.all(np.isfinite(values)) or np.any(r != values):
            raise BackendError(f"{what}: an index function got non-integer values")
        return r.astype(np.int64)

    def comparable(self, values: np.ndarray, what: str) -> np.ndarray:
        return np.asarray(values, dtype=np.float64) if values.dtype.kind not in "iu" else values

    def const(self, value: Any, n: int) -> np.ndarray:
        return np.full(n, float(value))

    def _apply(self, prim: P.Primitive, params: tuple[Any, ...], args: list[np.ndarray]) -> np.ndarray:
        ps = tuple(float(p) for p in params)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            out = prim.numpy(*args, *ps)
        return np.asarray(out, dtype=np.float64)

    def mean(self, vals: np.ndarray) -> Any:
        with np.errstate(over="ignore", invalid="ignore"):  # inf/nan: reported where read (evaluate's finite)
            return float(np.mean(vals))

    def zeros(self, n: int) -> np.ndarray:
        return np.zeros(n)

    def dense_aggregate(self, sel: np.ndarray, values: np.ndarray) -> np.ndarray:
        counts = sel.sum(axis=1)
        sums = sel.astype(np.float64) @ values
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(counts > 0, sums / np.maximum(counts, 1), 0.0)
