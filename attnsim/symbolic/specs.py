"""Independent specifications: each construction's textbook statement, in matrix coordinates.

This module imports nothing from :mod:`attnsim.rasp` nor any layout: a specification says what
entry (h, i, j) of the result is, from the operands' entries and the sizes, the way a textbook
does (out[h, i, j] = A[h, j, i]; sum_{l < k} A[h, i, l] B[h, l, j]; ...).  The all-sizes proof
compares a program with its specification at a symbolic entry and symbolic sizes
(:mod:`attnsim.symbolic.execute`); :meth:`BoundSpec.evaluate` runs the very same definition on
concrete operands, and the tests compare that with the NumPy reference, so a wrong spec fails on
its own.

A definition is a function ``entry(alg, ops, h, i, j, sz)``: ``ops[name][h, i, j]`` reads an
operand (stack index first, 0 for a single matrix), ``sz[name]`` a size, and ``alg`` supplies
the operations whose meaning differs between the symbolic and the concrete reading (a sum over
``l < upper``, exp, max, min).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp

from attnsim.symbolic.ite import ite


class SpecError(ValueError):
    """A specification was evaluated on something it is not defined for."""


class SymbolicAlg:
    """Sums as SymPy ``Sum`` over a fresh bound variable; exp, max, min as SymPy functions."""

    def __init__(self) -> None:
        self._n = itertools.count()

    def sum(self, body: Callable[[Any], Any], upper: Any) -> Any:
        var = sp.Symbol(f"s!{next(self._n)}", integer=True)  # "!": never a size's name
        return sp.Sum(body(var), (var, 0, upper - 1))

    def exp(self, x: Any) -> Any:
        return sp.exp(x)

    def max(self, a: Any, b: Any) -> Any:
        return sp.Max(a, b)

    def min(self, a: Any, b: Any) -> Any:
        return sp.Min(a, b)

    def if_even(self, j: Any, even: Callable[[], Any], odd: Callable[[], Any]) -> Any:
        return ite(sp.Eq(sp.Mod(j, 2), 0), even(), odd())

    def if_less(self, a: Any, b: Any, then: Callable[[], Any], other: Callable[[], Any]) -> Any:
        return ite(sp.Lt(a, b), then(), other())

    def delta(self, i: Any, j: Any) -> Any:
        return ite(sp.Eq(i, j), 1, 0)

    def elu1(self, x: Any) -> Any:
        return ite(x > 0, x + 1, sp.exp(x))

    def sqrt(self, x: Any) -> Any:
        return sp.sqrt(x)

    def mod(self, x: Any, m: int) -> Any:
        return sp.Mod(x, m)


@dataclass
class ConcreteAlg:
    """Sums as Python sums over ``range(upper)``; exp per backend (numpy float, SymPy; none exact)."""

    backend: str

    def sum(self, body: Callable[[int], Any], upper: Any) -> Any:
        terms = [body(v) for v in range(int(upper))]
        return sum(terms[1:], terms[0]) if terms else 0

    def exp(self, x: Any) -> Any:
        if self.backend == "numpy":
            return math.exp(x)
        if self.backend == "sympy":
            return sp.exp(x)
        raise SpecError("exp has no exact (Fraction) value; use backend='sympy' or 'numpy'")

    def max(self, a: Any, b: Any) -> Any:
        return sp.Max(a, b) if self.backend == "sympy" else max(a, b)

    def min(self, a: Any, b: Any) -> Any:
        return sp.Min(a, b) if self.backend == "sympy" else min(a, b)

    def if_even(self, j: int, even: Callable[[], Any], odd: Callable[[], Any]) -> Any:
        return even() if j % 2 == 0 else odd()

    def if_less(self, a: Any, b: Any, then: Callable[[], Any], other: Callable[[], Any]) -> Any:
        return then() if a < b else other()

    def delta(self, i: int, j: int) -> int:
        return 1 if i == j else 0

    def elu1(self, x: Any) -> Any:
        if self.backend == "sympy":
            return x + 1 if x > 0 else sp.exp(x)
        return x + 1 if x > 0 else self.exp(x)

    def sqrt(self, x: Any) -> Any:
        return sp.sqrt(x) if self.backend == "sympy" else math.sqrt(x)

    def mod(self, x: Any, m: int) -> Any:
        return x % m


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

    def at(self, **sizes: Any) -> BoundSpec:
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
        sz = {k: to_sym(v) for k, v in self.sizes.items()}
        ops = {name: sp.IndexedBase(name) for name in self.spec.operands}
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


def _stack(sz: Mapping[str, Any]) -> Any:
    return sz.get("heads", 1)


TRANSPOSE = Spec(
    "transpose",
    ("A",),
    ("rows", "cols", "heads"),
    lambda sz: (_stack(sz), sz["cols"], sz["rows"]),
    lambda alg, ops, h, i, j, sz: ops["A"][h, j, i],
    "out[h, i, j] = A[h, j, i]",
)

MATMUL = Spec(
    "matmul",
    ("A", "B"),
    ("rows", "inner", "cols", "heads"),
    lambda sz: (_stack(sz), sz["rows"], sz["cols"]),
    lambda alg, ops, h, i, j, sz: alg.sum(lambda m: ops["A"][h, i, m] * ops["B"][h, m, j], sz["inner"]),
    "out[h, i, j] = sum_{l < inner} A[h, i, l] B[h, l, j]",
)

SOFTMAX = Spec(
    "softmax",
    ("A",),
    ("rows", "cols", "heads"),
    lambda sz: (_stack(sz), sz["rows"], sz["cols"]),
    lambda alg, ops, h, i, j, sz: (
        alg.exp(ops["A"][h, i, j]) / alg.sum(lambda m: alg.exp(ops["A"][h, i, m]), sz["cols"])
    ),
    "out[h, i, j] = exp(A[h, i, j]) / sum_{l < cols} exp(A[h, i, l])",
)

RELU = Spec(
    "relu",
    ("A",),
    ("rows", "n"),
    lambda sz: (1, sz["rows"], sz["n"]),
    lambda alg, ops, h, i, j, sz: alg.max(ops["A"][h, i, j], 0),
    "out[i, j] = max(A[i, j], 0)",
)

MAXMIN = Spec(
    "maxmin",
    ("A",),
    ("rows", "n"),
    lambda sz: (1, sz["rows"], sz["n"]),
    lambda alg, ops, h, i, j, sz: alg.if_even(
        j,
        lambda: alg.max(ops["A"][h, i, j], ops["A"][h, i, j + 1]),
        lambda: alg.min(ops["A"][h, i, j - 1], ops["A"][h, i, j]),
    ),
    "out[i, 2t] = max(A[i, 2t], A[i, 2t+1]), out[i, 2t+1] = min(A[i, 2t], A[i, 2t+1])",
)

MASKED_SOFTMAX = Spec(
    "softmax-masked",
    ("A", "n"),
    ("rows", "cols", "heads"),
    lambda sz: (_stack(sz), sz["rows"], sz["cols"]),
    lambda alg, ops, h, i, j, sz: alg.if_less(
        j,
        ops["n"][0, 0, 0],
        lambda: alg.exp(ops["A"][h, i, j]) / alg.sum(lambda m: alg.exp(ops["A"][h, i, m]), ops["n"][0, 0, 0]),
        lambda: 0,
    ),
    "out[h, i, j] = exp(A[h, i, j]) / sum_{l < n} exp(A[h, i, l]) for j < n, else 0 (n an operand, 1 <= n <= cols)",
)


def _trace(alg: Any, a: Any, n: Any) -> Any:
    return alg.sum(lambda m: a[0, m, m], n)


TRACE = Spec(
    "trace",
    ("A",),
    ("n",),
    lambda sz: (1, 1, 1),
    lambda alg, ops, h, i, j, sz: _trace(alg, ops["A"], sz["n"]),
    "out = tr A = sum_{l < n} A[l, l]",
)

FROBENIUS = Spec(
    "frobenius",
    ("A",),
    ("rows", "cols"),
    lambda sz: (1, 1, 1),
    lambda alg, ops, h, i, j, sz: alg.sum(
        lambda r: alg.sum(lambda c: ops["A"][0, r, c] * (2 * ops["A"][0, r, c] + 1), sz["cols"]), sz["rows"]
    ),
    "out = <A, 2A + 1> = sum_{r < rows} sum_{c < cols} A[r, c] (2 A[r, c] + 1)",
)

FIRST_STEP = Spec(
    "first-step",
    ("A",),
    ("n",),
    lambda sz: (1, sz["n"], sz["n"]),
    lambda alg, ops, h, i, j, sz: ops["A"][0, i, j] - _trace(alg, ops["A"], sz["n"]) * alg.delta(i, j),
    "M_2 = A - tr(A) I",
)

GENERAL_STEP = Spec(
    "general-step",
    ("A", "M", "c"),
    ("n",),
    lambda sz: (1, sz["n"], sz["n"]),
    lambda alg, ops, h, i, j, sz: (
        alg.sum(lambda m: ops["A"][0, i, m] * ops["M"][0, m, j], sz["n"]) + ops["c"][0, 0, 0] * alg.delta(i, j)
    ),
    "M' = A M + c I (c an operand)",
)

COEFFICIENT_STEP = Spec(
    "coefficient-step",
    ("A", "M"),
    ("n",),
    lambda sz: (1, 1, 1),
    lambda alg, ops, h, i, j, sz: alg.sum(
        lambda r: alg.sum(lambda c: ops["A"][0, r, c] * ops["M"][0, c, r], sz["n"]), sz["n"]
    ),
    "out = tr(A M) = sum_r sum_c A[r, c] M[c, r]",
)


def _next_m(alg: Any, ops: Mapping[str, Any], i: Any, j: Any, n: Any) -> Any:
    """(A M + c I)[i, j]."""
    return alg.sum(lambda m: ops["A"][0, i, m] * ops["M"][0, m, j], n) + ops["c"][0, 0, 0] * alg.delta(i, j)


ITERATION = Spec(
    "iteration",
    ("A", "M", "c"),
    ("n", "k"),
    lambda sz: (1, 1, 1),
    lambda alg, ops, h, i, j, sz: (
        -alg.sum(lambda r: alg.sum(lambda q: ops["A"][0, r, q] * _next_m(alg, ops, q, r, sz["n"]), sz["n"]), sz["n"])
        / (sz["k"] + 1)
    ),
    "c' = -tr(A (A M + c I)) / (k + 1): step k of Faddeev-LeVerrier, from (M_k, c_{n-k}) to c_{n-k-1}",
)


def _similarity(alg: Any, ops: Mapping[str, Any], i: Any, l: Any, d: Any) -> Any:  # noqa: E741
    """phi(q_i) . phi(k_l), phi = elu + 1."""
    return alg.sum(lambda m: alg.elu1(ops["Q"][0, i, m]) * alg.elu1(ops["K"][0, l, m]), d)


LINEAR_ATTENTION = Spec(
    "linear_attention",
    ("Q", "K", "V"),
    ("n", "d", "dv"),
    lambda sz: (1, sz["n"], sz["dv"]),
    lambda alg, ops, h, i, j, sz: (
        alg.sum(lambda l: _similarity(alg, ops, i, l, sz["d"]) * ops["V"][0, l, j], sz["n"])  # noqa: E741
        / alg.sum(lambda l: _similarity(alg, ops, i, l, sz["d"]), sz["n"])  # noqa: E741
    ),
    "out[i, j] = sum_l sim(i, l) V[l, j] / sum_l sim(i, l), sim(i, l) = phi(q_i) . phi(k_l) (the quadratic form)",
)


def _lf_score(alg: Any, ops: Mapping[str, Any], i: Any, l: Any, sz: Mapping[str, Any]) -> Any:  # noqa: E741
    """(Q (E K)^T)[i, l] / sqrt(d)."""
    ek = lambda m: alg.sum(lambda t: ops["E"][0, l, t] * ops["K"][0, t, m], sz["n"])
    return alg.sum(lambda m: ops["Q"][0, i, m] * ek(m), sz["d"]) / alg.sqrt(sz["d"])


LINFORMER = Spec(
    "linformer",
    ("Q", "K", "V", "E", "F"),
    ("n", "d", "dv", "kp"),
    lambda sz: (1, sz["n"], sz["dv"]),
    lambda alg, ops, h, i, j, sz: alg.sum(
        lambda c: (
            alg.exp(_lf_score(alg, ops, i, c, sz))
            / alg.sum(lambda r: alg.exp(_lf_score(alg, ops, i, r, sz)), sz["kp"])
            * alg.sum(lambda t: ops["F"][0, c, t] * ops["V"][0, t, j], sz["n"])
        ),
        sz["kp"],
    ),
    "out = softmax(Q (E K)^T / sqrt(d)) (F V)",
)

PARITY = Spec(
    "parity",
    ("x",),
    ("length",),
    lambda sz: (1, 1, sz["length"]),
    lambda alg, ops, h, i, j, sz: alg.mod(alg.sum(lambda m: ops["x"][0, 0, m], sz["length"]), 2),
    "out[j] = (sum_{l < length} x[l]) mod 2 at every position j (x binary)",
)

SPECS: dict[str, Spec] = {
    s.name: s
    for s in (
        TRANSPOSE,
        MATMUL,
        SOFTMAX,
        MASKED_SOFTMAX,
        RELU,
        MAXMIN,
        TRACE,
        FROBENIUS,
        FIRST_STEP,
        GENERAL_STEP,
        COEFFICIENT_STEP,
        ITERATION,
        LINEAR_ATTENTION,
        LINFORMER,
        PARITY,
    )
}

__all__ = [
    "COEFFICIENT_STEP",
    "FIRST_STEP",
    "FROBENIUS",
    "GENERAL_STEP",
    "ITERATION",
    "LINEAR_ATTENTION",
    "LINFORMER",
    "MASKED_SOFTMAX",
    "MATMUL",
    "MAXMIN",
    "PARITY",
    "RELU",
    "SOFTMAX",
    "SPECS",
    "TRACE",
    "TRANSPOSE",
    "BoundSpec",
    "ConcreteAlg",
    "Spec",
    "SpecError",
    "SymbolicAlg",
]
