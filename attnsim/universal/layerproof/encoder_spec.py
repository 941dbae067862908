"""The encoder layer's specification as the stage proofs read it: the true sizes' symbols, eps, the
0/1 option cases and the specification's own intermediate quantities.

The simulated layer has true sizes n <= N, d <= D, hh <= H, k <= K, f <= F (symbols ``n, d, hh, k,
f``: :data:`SIZE`).  The 0/1 options (residual, pre, post, gelu, gelu_tanh, ffn) are split into cases
(:func:`option_cases`): each case substitutes its 0/1 values into the gate tokens and into the
specification (:func:`fix`), so a ``where`` on a gate is evaluated on the branch taken only.  scale
and eps stay symbols; eps > 0 is a premise of the domain (``TransformerLayer`` enforces it).
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import sympy as sp

from attnsim.symbolic.spec_symbolic import SymbolicAlg
from attnsim.universal.record import TRUE
from attnsim.universal.spec import ENCODER_LAYER, encoder_layer_parts

OPTIONS = ("residual", "pre", "post", "gelu", "gelu_tanh", "ffn")
SIZE = {t: sp.Symbol(t, integer=True) for t in TRUE}
EPS = sp.IndexedBase("eps")[0, 0, 0]


def option_cases() -> list[dict[str, int]]:
    """The admissible 0/1 options: pre and post not both, gelu and gelu_tanh not both (T has one activation)."""
    out = []
    for vals in itertools.product((0, 1), repeat=len(OPTIONS)):
        o = dict(zip(OPTIONS, vals, strict=True))
        if not (o["pre"] and o["post"]) and not (o["gelu"] and o["gelu_tanh"]):
            out.append(o)
    return out


@functools.cache
def spec_parts() -> dict[str, Any]:
    """ENCODER_LAYER's intermediate quantities (:func:`encoder_layer_parts`) on SymPy operands,
    sizes the true-size symbols, the 0/1 options left as operands (``fix`` substitutes a case).
    One instance for every stage: a statement unfolded from a later stage's opaque functions is
    then the same SymPy object as the earlier stage's (its sums' bound variables included)."""
    ops = {name: sp.IndexedBase(name) for name in ENCODER_LAYER.operands}
    return encoder_layer_parts(SymbolicAlg(), ops, SIZE)


def fix(e: Any, options: dict[str, int]) -> Any:
    """``e`` with the option operands of a case replaced by their 0/1 values."""
    return sp.sympify(e).xreplace({sp.IndexedBase(k)[0, 0, 0]: sp.Integer(v) for k, v in options.items()})


__all__ = ["EPS", "OPTIONS", "SIZE", "fix", "option_cases", "spec_parts"]
