"""det(n) and inverse(n) in float64: the stated accuracy, checked on every run.

Faddeev-LeVerrier and Csanky's power sums are unstable in float64 (:mod:`attnsim.constructions.det_n.program`,
"Stated float64 accuracy"): a float64 ``run`` of ``det(n)`` or ``inverse(n)`` measures its residual
and returns the result only within ``float_tolerance`` (default :data:`FLOAT_TOL`), else raises
:class:`InaccurateResultError` (or warns, :class:`AccuracyWarning`).  ``program.py`` builds the
programs; this module checks their float64 runs.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from attnsim.constructions.construction import Construction, ConstructionError, to_backend
from attnsim.constructions.det3.program import DividingConstruction

FLOAT_TOL = 1e-6


class InaccurateResultError(ConstructionError):
    """A float64 det / inverse misses its stated accuracy; the message has the measured residual.

    ``result`` is the rejected float64 array, ``residual`` the measured value (for figures that
    plot the error honestly instead of dropping the point).
    """

    def __init__(self, message: str, result: np.ndarray, residual: float) -> None:
        super().__init__(message)
        self.result = result
        self.residual = residual


class AccuracyWarning(UserWarning):
    """A float64 det / inverse missed its stated accuracy (``on_inaccurate = "warn"``)."""


def float_residual(what: str, a: np.ndarray, out: np.ndarray) -> tuple[float, str]:
    """The measured accuracy of a float64 result: max |A X - I| (inverse) or the det's relative
    difference from NumPy's LU determinant (the Hadamard bound scales it when det_LU = 0)."""
    if what == "inverse":
        return float(np.max(np.abs(a @ out - np.eye(a.shape[0])))), "max |A X - I|"
    ref = float(np.linalg.det(a))
    scale = abs(ref) or float(np.prod(np.linalg.norm(a, axis=1))) or 1.0
    return abs(float(out) - ref) / scale, "|det - det_LU| / |det_LU|"


def _checked(con: _FloatChecked, what: str, operands: tuple[Any, ...], out: np.ndarray) -> np.ndarray:
    a = to_backend(operands[0], "numpy", "A")
    r, label = float_residual(what, a, out)
    if r <= con.float_tolerance:
        return out
    msg = (
        f"{con.name}({a.shape[0]}): float64 result misses its stated accuracy: {label} = {r:.2e} > "
        f"{con.float_tolerance:g} (cond(A) = {np.linalg.cond(a):.3g}; Faddeev-LeVerrier is unstable in float64); "
        "use backend='exact' for the exact result"
    )
    if con.on_inaccurate == "warn":
        warnings.warn(msg, AccuracyWarning, stacklevel=3)
        return out
    raise InaccurateResultError(msg, out, r)


class _FloatChecked:
    """A float64 run meets ``float_tolerance`` (see the module docstring) or raises (or warns)."""

    checked_as: ClassVar[str] = ""
    name: str
    float_tolerance: float
    on_inaccurate: str

    def run(self, *operands: Any, backend: str = "numpy") -> np.ndarray:
        out = super().run(*operands, backend=backend)  # type: ignore[misc]
        return _checked(self, self.checked_as, operands, out) if backend == "numpy" else out


@dataclass
class CheckedDet(_FloatChecked, Construction):
    """det(n), float64-checked."""

    checked_as: ClassVar[str] = "det"
    float_tolerance: float = FLOAT_TOL
    on_inaccurate: str = "raise"


@dataclass
class CheckedInverse(_FloatChecked, DividingConstruction):
    """inverse(n), float64-checked."""

    checked_as: ClassVar[str] = "inverse"
    float_tolerance: float = FLOAT_TOL
    on_inaccurate: str = "raise"
