"""The language the specifications are written in: a named entry formula (:class:`Spec`), bound to
the caller's sizes (:class:`BoundSpec`), read symbolically or concretely.

A definition is a function ``entry(alg, ops, h, i, j, sz)``: ``ops[name][h, i, j]`` reads an
operand (stack index first, 0 for a single matrix), ``sz[name]`` a size, and ``alg`` supplies
the operations whose meaning differs between the symbolic and the concrete reading (a sum over
``l < upper``, exp, max, min, erf, tanh, sqrt, and ``if_true`` for a 0/1 option operand: an ``Ite``
symbolically, a Python branch concretely).  :class:`~attnsim.symbolic.spec_symbolic.SymbolicAlg`
(its own module, with SymPy) is the reading the all-sizes proof compares a program with
(:meth:`BoundSpec.symbolic`); :class:`ConcreteAlg` runs the very same definition on concrete
operands (:meth:`BoundSpec.evaluate`), which the tests compare with the NumPy reference, so a
wrong spec fails on its own.  Like every specification, this imports
nothing from :mod:`attnsim.rasp` nor any layout.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class SpecError(ValueError):
    """A specification was evaluated on something it is not defined for."""


def _sympy() -> Any:
    """SymPy, imported when a SymPy reading asks for it (a float64 reading never loads it)."""
    import sympy

    return sympy


@dataclass
class ConcreteAlg:
    """Sums as Python sums over ``range(upper)``; exp per backend (numpy float, SymPy; none exact)."""

    backend: str

    def sum(self, body: Callable[[int], Any], upper: Any) -> Any:
        terms = [body(v) for v in range(int(upper))]
        return sum(terms[1:], terms[0]) if terms else 0

    def exp(self, x: Any) -> Any:
        if self.backend == "numpy":
            try:
                return math.exp(x)
            except OverflowError:  # IEEE float64, as np.exp: e^x > max float is inf (1 / inf = 0)
                return math.inf
        if self.backend == "sympy":
            return _sympy().exp(x)
        raise SpecError("exp has no exact (Fraction) value; use backend='sympy' or 'numpy'")

    def max(self, a: Any, b: Any) -> Any:
        return _sympy().Max(a, b) if self.backend == "sympy" else max(a, b)

    def min(self, a: Any, b: Any) -> Any:
        return _sympy().Min(a, b) if self.backend == "sympy" else min(a, b)

    def if_even(self, j: int, even: Callable[[], Any], odd: Callable[[], Any]) -> Any:
        return even() if j % 2 == 0 else odd()

    def if_less(self, a: Any, b: Any, then: Callable[[], Any], other: Callable[[], Any]) -> Any:
        return then() if a < b else other()

    def delta(self, i: int, j: int) -> int:
        return 1 if i == j else 0

    def elu1(self, x: Any) -> Any:
        if self.backend == "sympy":
            return x + 1 if x > 0 else _sympy().exp(x)
        return x + 1 if x > 0 else self.exp(x)

    def sqrt(self, x: Any) -> Any:
        return _sympy().sqrt(x) if self.backend == "sympy" else math.sqrt(x)

    def mod(self, x: Any, m: int) -> Any:
        return x % m

    def if_true(self, flag: Any, then: Callable[[], Any], other: Callable[[], Any]) -> Any:
        if flag == 1:
            return then()
        if flag == 0:
            return other()
        raise SpecError(f"a 0/1 option operand is {flag}, not 0 or 1")

    def erf(self, x: Any) -> Any:
        return _sympy().erf(x) if self.backend == "sympy" else math.erf(x)

    def tanh(self, x: Any) -> Any:
        return _sympy().tanh(x) if self.backend == "sympy" else math.tanh(x)

    def pi(self) -> Any:
        return _sympy().pi if self.backend == "sympy" else math.pi

    def rational(self, p: int, q: int) -> Any:
        """p / q: exact in SymPy, the nearest float64 otherwise."""
        return _sympy().Rational(p, q) if self.backend == "sympy" else p / q

    def relu(self, x: Any) -> Any:
        return self.max(x, 0)

    def rsqrt(self, x: Any) -> Any:
        return 1 / _sympy().sqrt(x) if self.backend == "sympy" else 1 / math.sqrt(x)

    def power(self, x: Any, k: int) -> Any:
        return x**k


Entry = Callable[[Any, Mapping[str, Any], Any, Any, Any, Mapping[str, Any]], Any]


@dataclass(frozen=True)
class Spec:
    """A named textbook statement: output shape (stack, rows, cols) and entry formula."""

    name: str
    operands: tuple[str, ...]
    sizes: tuple[str, ...]
    shape: Callable[[Mapping[str, Any]], tuple[Any, Any, Any]]
    entry: Entry
    statement: str

    def at(self, /, **sizes: Any) -> BoundSpec:
        """The spec with its size names given (ints, or a construction's size objects)."""
        missing = set(self.sizes) - set(sizes)
        if missing:
            raise SpecError(f"spec {self.name} needs sizes {sorted(missing)}")
        return BoundSpec(self, dict(sizes))


@dataclass(frozen=True)
class BoundSpec:
    """A spec whose sizes are named by the caller's objects (resolved to ints or symbols on use)."""

    spec: Spec
    sizes: dict[str, Any] = field(default_factory=dict)

    def symbolic(self, h: Any, i: Any, j: Any, to_sym: Callable[[Any], Any]) -> Any:
        """Entry (h, i, j) as a SymPy expression: operands as IndexedBase named like the operands."""
        from attnsim.symbolic.spec_symbolic import SymbolicAlg

        sz = {k: to_sym(v) for k, v in self.sizes.items()}
        ops = {name: _sympy().IndexedBase(name) for name in self.spec.operands}
        return self.spec.entry(SymbolicAlg(), ops, h, i, j, sz)

    def evaluate(
        self, operands: Mapping[str, np.ndarray], resolve: Callable[[Any], int], backend: str = "numpy"
    ) -> np.ndarray:
        """Every entry on concrete operands: an array of shape (stack, rows, cols)."""
        sz = {k: int(resolve(v)) for k, v in self.sizes.items()}
        ops = {}
        for name in self.spec.operands:
            a = np.asarray(operands[name])
            ops[name] = a.reshape((1, *a.shape)) if a.ndim == 2 else a
        alg = ConcreteAlg(backend)
        shape = tuple(int(x) for x in self.spec.shape(sz))
        out = np.empty(shape, dtype=np.float64 if backend == "numpy" else object)
        for h, i, j in np.ndindex(*shape):
            out[h, i, j] = self.spec.entry(alg, ops, h, i, j, sz)
        return out


__all__ = ["BoundSpec", "ConcreteAlg", "Entry", "Spec", "SpecError"]
