"""The numeric twin: programs run in NumPy float64, vectorized."""

from attnsim.numeric.arith import NumpyArith

__all__ = ["NumpyArith"]
