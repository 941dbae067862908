"""The compiler's one error type, in a module of its own so that the optional torch export can raise it
without importing the compiled model it exports (:mod:`attnsim.compile.torch_module`)."""

from __future__ import annotations


class CompileError(ValueError):
    """A program cannot be compiled (the reason names the node), or a compiled model got bad input."""
