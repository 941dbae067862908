"""The simulator's one error type: a T or an X that U cannot simulate, named in one line."""

from __future__ import annotations


class SimulatorError(ValueError):
    """Bad layer parameters or inputs (shape, NaN/inf, unknown option, over capacity...)."""

