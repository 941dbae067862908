"""Exact runs of programs: Fraction arithmetic and SymPy expressions."""

from attnsim.symbolic.arith import ExactArith, SympyArith

__all__ = ["ExactArith", "SympyArith"]
