"""Exact (Fraction) and symbolic (SymPy) arithmetic for the engine.

Both hold values in NumPy arrays of dtype object.  A selector may only compare concrete
rational values: comparing symbols has no truth value, and the engine says so.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from attnsim.rasp import primitives as P
from attnsim.rasp.arith import Arithmetic, BackendError
from attnsim.rasp.guards import complex_entry


def _obj(xs: Any) -> np.ndarray:
    out = np.empty(len(xs), dtype=object)
    for i, x in enumerate(xs):
        out[i] = x
    return out


class ExactArith(Arithmetic):
    """Rational arithmetic with fractions.Fraction."""

    name = "exact"

    @staticmethod
    def to_fraction(x: Any, allow_nonfinite: bool = False) -> Fraction:
        if isinstance(x, Fraction):
            return x
        if isinstance(x, (bool, np.bool_)):
            return Fraction(int(x))
        if isinstance(x, (int, np.integer)):
            return Fraction(int(x))
        if isinstance(x, (float, np.floating)):
            if not math.isfinite(float(x)):
                raise BackendError(f"token {x} is not finite: the exact backend has no NaN/inf")
            return Fraction(float(x))
        if isinstance(x, sp.Basic) and x.is_Rational:
            return Fraction(int(x.p), int(x.q))
        raise BackendError(f"value {x!r} is not rational: use backend='sympy'")

    def from_input(self, values: Any, allow_nonfinite: bool) -> np.ndarray:
        bad_complex = complex_entry(values)
        if bad_complex:
            raise BackendError(bad_complex)
        vals = list(np.asarray(values, dtype=object).reshape(-1))
        return _obj([self.to_fraction(v) for v in vals])

    def from_int(self, ints: np.ndarray) -> np.ndarray:
        return _obj([Fraction(int(v)) for v in ints])

    def to_int(self, values: np.ndarray, what: str) -> np.ndarray:
        out = np.empty(len(values), dtype=np.int64)
        for i, v in enumerate(values):
            f = Fraction(v)
            if f.denominator != 1:
                raise BackendError(f"{what}: an index function got the non-integer value {f}")
            out[i] = int(f)
        return out

    def comparable(self, values: np.ndarray, what: str) -> np.ndarray:
        return values

    def const(self, value: Any, n: int) -> np.ndarray:
        return _obj([Fraction(value)] * n)

    def _apply(self, prim: P.Primitive, params: tuple[Any, ...], args: list[np.ndarray]) -> np.ndarray:
        if prim.exact is None:
            raise BackendError(f"primitive {prim.name!r} has no exact (rational) value; use backend='sympy'")
        fn = prim.exact
        try:
            return _obj([Fraction(fn(*xs, *params)) for xs in zip(*args, strict=True)])
        except P.PrimitiveError as exc:
            raise BackendError(str(exc)) from None

    def mean(self, vals: np.ndarray) -> Any:
        return sum(vals, Fraction(0)) / len(vals)

    def zeros(self, n: int) -> np.ndarray:
        return _obj([Fraction(0)] * n)


class SympyArith(Arithmetic):
    """SymPy expressions: inputs may be symbols; exp and sqrt stay symbolic."""

    name = "sympy"

    def from_input(self, values: Any, allow_nonfinite: bool) -> np.ndarray:
        bad_complex = complex_entry(values)
        if bad_complex:
            raise BackendError(bad_complex)
        vals = list(np.asarray(values, dtype=object).reshape(-1))
        out = []
        for v in vals:
            if isinstance(v, (float, np.floating)):
                if not math.isfinite(float(v)):
                    raise BackendError(f"token {v} is not finite")
                out.append(sp.Rational(Fraction(float(v))))
            elif isinstance(v, Fraction):
                out.append(sp.Rational(v.numerator, v.denominator))
            else:
                s = sp.sympify(v)
                if s.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
                    raise BackendError(f"token {v} is not finite")
                out.append(s)
        return _obj(out)

    def from_int(self, ints: np.ndarray) -> np.ndarray:
        return _obj([sp.Integer(int(v)) for v in ints])

    def to_int(self, values: np.ndarray, what: str) -> np.ndarray:
        out = np.empty(len(values), dtype=np.int64)
        for i, v in enumerate(values):
            s = sp.sympify(v)
            if not s.is_Integer:
                raise BackendError(f"{what}: an index function needs concrete integers, got {s}")
            out[i] = int(s)
        return out

    def comparable(self, values: np.ndarray, what: str) -> np.ndarray:
        out = []
        for v in values:
            s = sp.nsimplify(v) if isinstance(v, float) else sp.sympify(v)
            if not s.is_Rational:
                raise BackendError(
                    f"{what}: a selector compares the symbolic value {s}; its truth value is unknown "
                    "(give concrete values, or prove the selector with Z3)"
                )
            out.append(Fraction(int(s.p), int(s.q)))
        return _obj(out)

    def const(self, value: Any, n: int) -> np.ndarray:
        f = Fraction(value)
        return _obj([sp.Rational(f.numerator, f.denominator)] * n)

    def _apply(self, prim: P.Primitive, params: tuple[Any, ...], args: list[np.ndarray]) -> np.ndarray:
        ps = tuple(sp.Rational(Fraction(p).numerator, Fraction(p).denominator) for p in params)
        return _obj([prim.sympy(*xs, *ps) for xs in zip(*args, strict=True)])

    def mean(self, vals: np.ndarray) -> Any:
        return sp.Add(*vals) / len(vals)

    def scored_mean(self, scores: np.ndarray, values: np.ndarray, same: bool) -> Any:
        """Decidable scores pick their maximal keys; symbolic ones give ``Max`` for a max head
        (the values are the scores) and fail otherwise (which key wins is not known)."""
        try:
            return super().scored_mean(scores, values, same)
        except TypeError:
            if same:
                return sp.Max(*scores)
            raise BackendError("a value-scored head needs comparable scores (symbolic: max heads only)") from None

    def zeros(self, n: int) -> np.ndarray:
        return _obj([sp.Integer(0)] * n)
