"""The registry of named value primitives used inside Maps and SequenceMaps.

Each primitive has one implementation per arithmetic: NumPy float64 (vectorized), exact
(``fractions.Fraction``; absent when the result is irrational, e.g. exp) and SymPy.  Its
``realization`` tag answers "how does an FFN compute this?":

* ``relu-exact``: a finite ReLU network computes it exactly on all reals (affine, relu, max,
  min, abs);
* ``finite-lookup``: exact on a finite (categorical) domain by a lookup table;
* ``generalized``: a position-wise function that ReLU units only approximate (exp, 1/x, x*y,
  sqrt, gelu, gelu_tanh, comparisons of reals).  GAHAT allows any position-wise function; the tag keeps
  that assumption visible.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

REALIZATIONS = ("relu-exact", "finite-lookup", "generalized")


class PrimitiveError(ValueError):
    """Unknown primitive, wrong arity, or a value the primitive is not defined for."""


@dataclass(frozen=True)
class Primitive:
    """A named position-wise function with its three implementations."""

    name: str
    arity: int
    n_params: int
    realization: str
    numpy: Callable[..., Any]
    exact: Callable[..., Any] | None
    sympy: Callable[..., Any]
    doc: str
    partial: tuple[int, ...] = ()  # operands whose value can make the exact implementation raise


_REGISTRY: dict[str, Primitive] = {}


def register(
    name: str,
    arity: int,
    realization: str,
    numpy: Callable[..., Any],
    exact: Callable[..., Any] | None,
    sympy: Callable[..., Any],
    doc: str,
    n_params: int = 0,
    partial: tuple[int, ...] = (),
) -> Primitive:
    """Add a primitive to the registry (names are unique).

    ``partial`` lists the operands on whose value the exact implementation may raise (a divisor,
    a square root's argument): mutation testing's taint proofs must not let a change reach them.
    """
    if realization not in REALIZATIONS:
        raise PrimitiveError(f"realization must be one of {REALIZATIONS}, got {realization!r}")
    if name in _REGISTRY:
        raise PrimitiveError(f"primitive {name!r} is already registered")
    p = Primitive(name, arity, n_params, realization, numpy, exact, sympy, doc, partial)
    _REGISTRY[name] = p
    return p


def get(name: str) -> Primitive:
    """Look a primitive up by name, with a clear error for unknown names."""
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise PrimitiveError(f"unknown primitive {name!r}; known primitives: {known}") from None


def names() -> list[str]:
    """All registered primitive names, sorted."""
    return sorted(_REGISTRY)


# -- helpers -------------------------------------------------------------------------------
def _sp() -> Any:
    import sympy

    return sympy


def _exact_recip(x: Fraction) -> Fraction:
    if x == 0:
        raise PrimitiveError("reciprocal of 0 (singular input?)")
    return 1 / x


def _exact_div(x: Fraction, y: Fraction) -> Fraction:
    if y == 0:
        raise PrimitiveError("division by 0 (singular input?)")
    return x / y


def _exact_sqrt(x: Fraction) -> Fraction:
    if x < 0:
        raise PrimitiveError(f"sqrt of a negative number {x}")
    n, d = math.isqrt(x.numerator), math.isqrt(x.denominator)
    if n * n != x.numerator or d * d != x.denominator:
        raise PrimitiveError(f"sqrt({x}) is irrational: no exact value; use backend='sympy'")
    return Fraction(n, d)


def _np_recip(x: Any) -> Any:
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 / x


def _np_div(x: Any, y: Any) -> Any:
    with np.errstate(divide="ignore", invalid="ignore"):
        return x / y


def _np_gelu(x: Any) -> Any:
    from math import erf

    verf = np.vectorize(erf, otypes=[np.float64])
    return 0.5 * x * (1.0 + verf(x / math.sqrt(2.0)))


GELU_TANH_KAPPA = Fraction(44715, 10**6)  # torch's GELU(approximate="tanh"): 0.044715, as a decimal


def _np_gelu_tanh(x: Any) -> Any:
    """torch's tanh-GELU, 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), vectorised in float64."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def _sp_gelu_tanh(x: Any) -> Any:
    s = _sp()
    kappa = s.Rational(GELU_TANH_KAPPA.numerator, GELU_TANH_KAPPA.denominator)
    return x * (1 + s.tanh(s.sqrt(2 / s.pi) * (x + kappa * x**3))) / 2


def _sp_relu(x: Any) -> Any:
    """max(0, x) in SymPy, deciding the sign only from x's assumptions.

    ``Max(0, x)`` evaluated also runs ``factor_terms`` on x to look for a sign; on U's large
    symbolic arguments (GELU, pre-norm, FFN) that alone took 181 s of a 196 s whole-U check."""
    sp = _sp()
    x = sp.sympify(x)
    if x.is_number:
        return sp.Max(0, x)
    if x.is_extended_nonnegative:
        return x
    if x.is_extended_nonpositive:
        return sp.Integer(0)
    return sp.Max(0, x, evaluate=False)


def _flag(b: bool) -> Fraction:
    return Fraction(int(b))


# -- the registry ----------------------------------------------------------------------------
register("identity", 1, "relu-exact", lambda x: x, lambda x: x, lambda x: x, "x")
register("neg", 1, "relu-exact", lambda x: -x, lambda x: -x, lambda x: -x, "-x")
register("add", 2, "relu-exact", lambda x, y: x + y, lambda x, y: x + y, lambda x, y: x + y, "x + y")
register("sub", 2, "relu-exact", lambda x, y: x - y, lambda x, y: x - y, lambda x, y: x - y, "x - y")
register(
    "affine",
    1,
    "relu-exact",
    lambda x, a, b: a * x + b,
    lambda x, a, b: a * x + b,
    lambda x, a, b: a * x + b,
    "a*x + b (constants a, b)",
    n_params=2,
)
register("scale", 1, "relu-exact", lambda x, a: a * x, lambda x, a: a * x, lambda x, a: a * x, "a*x", n_params=1)
register(
    "relu",
    1,
    "relu-exact",
    lambda x: np.maximum(x, 0.0),
    lambda x: x if x > 0 else Fraction(0),
    _sp_relu,
    "max(x, 0)",
)
register("abs", 1, "relu-exact", np.abs, abs, lambda x: _sp().Abs(x), "|x|")
register("max", 2, "relu-exact", np.maximum, lambda x, y: max(x, y), lambda x, y: _sp().Max(x, y), "max(x, y)")
register("min", 2, "relu-exact", np.minimum, lambda x, y: min(x, y), lambda x, y: _sp().Min(x, y), "min(x, y)")
register("mul", 2, "generalized", lambda x, y: x * y, lambda x, y: x * y, lambda x, y: x * y, "x * y")
register("square", 1, "generalized", lambda x: x * x, lambda x: x * x, lambda x: x * x, "x^2")
register("reciprocal", 1, "generalized", _np_recip, _exact_recip, lambda x: 1 / x, "1/x", partial=(0,))
register("div", 2, "generalized", _np_div, _exact_div, lambda x, y: x / y, "x / y", partial=(1,))
register("exp", 1, "generalized", np.exp, None, lambda x: _sp().exp(x), "e^x (true e)")
register(
    "sqrt",
    1,
    "generalized",
    lambda x: np.sqrt(np.where(x < 0, np.nan, x)),
    _exact_sqrt,
    lambda x: _sp().sqrt(x),
    "sqrt(x)",
    partial=(0,),
)
register(
    "gelu",
    1,
    "generalized",
    _np_gelu,
    None,
    lambda x: x * (1 + _sp().erf(x / _sp().sqrt(2))) / 2,
    "x * Phi(x), erf form",
)
register(
    "gelu_tanh",
    1,
    "generalized",
    _np_gelu_tanh,
    None,
    _sp_gelu_tanh,
    "x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2, torch's GELU(approximate='tanh')",
)
register(
    "lt",
    2,
    "generalized",
    lambda x, y: (x < y).astype(np.float64),
    lambda x, y: _flag(x < y),
    lambda x, y: _sp().Piecewise((1, _sp().Lt(x, y)), (0, True)),
    "1 if x < y else 0 (a step: exact by lookup on a finite domain, approximated on reals)",
)
register(
    "gate",
    2,
    "generalized",
    lambda c, x: np.where(c != 0, x, 0.0),
    lambda c, x: x if c != 0 else Fraction(0),
    lambda c, x: (
        _sp().Piecewise((x, _sp().Ne(c, 0)), (0, True))
        if not _sp().sympify(c).is_number
        else (x if c != 0 else _sp().Integer(0))
    ),
    "x if c != 0 else 0 (c a 0/1 flag; exact with ReLU only given a bound on |x|)",
)
register(
    "where",
    3,
    "generalized",
    lambda c, x, y: np.where(c != 0, x, y),
    lambda c, x, y: x if c != 0 else y,
    lambda c, x, y: (
        (x if c != 0 else y) if _sp().sympify(c).is_number else _sp().Piecewise((x, _sp().Ne(c, 0)), (y, True))
    ),
    "x if c != 0 else y (c a 0/1 flag)",
)


def _np_elu1(x: Any) -> Any:
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def _sp_elu1(x: Any) -> Any:
    s = _sp()
    x = s.sympify(x)
    if x.is_number:
        return x + 1 if x > 0 else s.exp(x)
    return s.Piecewise((x + 1, x > 0), (s.exp(x), True))


register(
    "elu1",
    1,
    "generalized",
    _np_elu1,
    None,
    _sp_elu1,
    "elu(x) + 1 = x + 1 if x > 0 else e^x (the linear-attention feature map of Katharopoulos et al. 2020)",
)
