"""The FFN's activations as the executor reads them.

* **ReLU form**: U's ``relu`` is max(x, 0); the specification writes it (x + |x|) / 2
  (:meth:`attnsim.symbolic.spec_symbolic.SymbolicAlg.relu`), the same real for every real x.  The executor
  gives it that form (SymPy's Max on a large argument asks its assumptions, which may wrongly call
  it non-real);
* **GELU forms**: erf-GELU y (1 + erf(y / sqrt 2)) / 2 and torch's tanh-GELU
  y (1 + tanh(sqrt(2 / pi) (y + 0.044715 y^3))) / 2, as U's primitives and the spec write them;
* **flags out of an activation**: a(g x) = g a(x) for a 0/1 flag g and a in {ReLU, GELU, tanh-GELU} (a(0) = 0):
  the guard flags every term of the argument carries (a padded row or feature) become factors of
  the value, where the normal form and the flag rules see them.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from attnsim.symbolic.if_then_else import Ite
from attnsim.universal.layerproof.flags import flag_condition

ACTIVATIONS = ("relu", "gelu", "gelu_tanh")


def common_flags(x: Any) -> tuple[Any, Any]:
    """``x = g y`` with g the product of the 0/1 flags every term of x carries (g^p = g): (g, y)."""
    terms = sp.Add.make_args(sp.expand(x))
    flags = [{c for f in sp.Mul.make_args(t) if (c := flag_condition(f)) is not None} for t in terms]
    common = set.intersection(*flags) if flags else set()
    if not common:
        return sp.Integer(1), x
    strip = lambda t: sp.Mul(*(f for f in sp.Mul.make_args(t) if flag_condition(f) not in common))
    flags_out = (Ite(c, sp.Integer(1), sp.Integer(0)) for c in sorted(common, key=sp.default_sort_key))
    return sp.Mul(*flags_out), sp.Add(*(strip(t) for t in terms))


def activation(name: str, x: Any) -> Any:
    """relu(x) as (y + |y|) / 2, gelu(x) as y (1 + erf(y / sqrt 2)) / 2, gelu_tanh(x) as
    y (1 + tanh(sqrt(2 / pi) (y + 0.044715 y^3))) / 2, times x's common flags g (x = g y)."""
    g, y = common_flags(x)
    if name == "relu":
        return g * (y + sp.Abs(y)) / 2
    if name == "gelu":
        return g * y * (1 + sp.erf(y / sp.sqrt(2))) / 2
    if name == "gelu_tanh":
        return g * y * (1 + sp.tanh(sp.sqrt(2 / sp.pi) * (y + sp.Rational(44715, 10**6) * y**3))) / 2
    raise ValueError(f"{name} is not an activation ({', '.join(ACTIVATIONS)})")


__all__ = ["ACTIVATIONS", "activation", "common_flags"]
