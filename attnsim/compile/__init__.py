"""Executable extraction: compile a GAHAT-RASP program to concrete transformer weights.

``attnsim.compile_program(program, max_len=...)`` returns a :class:`CompiledTransformer` whose plain
NumPy forward (exact in ints/Fractions when no irrational primitive is present) equals the
interpreter.  See :mod:`attnsim.compile.compiler` for how each construct compiles.
"""

from attnsim.compile.compiler import compile_program
from attnsim.compile.model import CompiledTransformer, CompileError
from attnsim.rasp.domain import Domain, DomainError, Interval

__all__ = ["CompileError", "CompiledTransformer", "Domain", "DomainError", "Interval", "compile_program"]
