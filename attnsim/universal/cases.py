"""Theorem 6: one encoder layer: the cases of its specification check.

:mod:`attnsim.verify.spec_check` runs them.  Each :class:`~attnsim.constructions.spec_case.SpecCase`
names a spec of ``spec.py``, its textbook formula in ``reference.py``, how to make its operands, the
largest size of each kind worth trying and the symbolic builds proved against the spec (their
programs' size constants are tried too).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import numpy as np

from attnsim.constructions.spec_case import SpecCase
from attnsim.universal import reference, spec

#: every combination of ENCODER_LAYER's options: residual, norm (none, pre, post), activation
#: (relu, gelu, gelu_tanh), ffn
ENCODER_OPTIONS = list(itertools.product((1, 0), ((0, 0), (1, 0), (0, 1)), ((0, 0), (1, 0), (0, 1)), (1, 0)))


def encoder_operands(sz: Mapping[str, int], rng: np.random.Generator, trial: int) -> dict[str, np.ndarray]:
    """T's parameters in torch's layout, every option combination in turn, masks with every row's
    own key left unblocked (the spec's premise: a row has an unblocked key)."""
    n, d, hh, k, f = (sz[s] for s in ("n", "d", "hh", "k", "f"))
    residual, (pre, post), (gelu, gelu_tanh), ffn = ENCODER_OPTIONS[trial % len(ENCODER_OPTIONS)]

    def w(*shape: int) -> np.ndarray:
        return np.asarray(rng.normal(0.0, 0.5, size=shape))

    blocked = (rng.random((n, n)) < 0.3).astype(np.float64)
    np.fill_diagonal(blocked, 0.0)
    one = lambda v: np.array([[float(v)]])
    return {
        "X": w(n, d),
        "in_proj_weight": w(3 * hh * k, d),
        "in_proj_bias": w(1, 3 * hh * k),
        "out_proj_weight": w(d, hh * k),
        "out_proj_bias": w(1, d),
        "linear1_weight": w(f, d),
        "linear1_bias": w(1, f),
        "linear2_weight": w(d, f),
        "linear2_bias": w(1, d),
        "norm1_weight": 1 + w(1, d),
        "norm1_bias": w(1, d),
        "norm2_weight": 1 + w(1, d),
        "norm2_bias": w(1, d),
        "additive": w(n, n),
        "blocked": blocked,
        "residual": one(residual),
        "pre": one(pre),
        "post": one(post),
        "gelu": one(gelu),
        "gelu_tanh": one(gelu_tanh),
        "ffn": one(ffn),
        "scale": one(1 / np.sqrt(k)),
        "eps": one(1e-5),
    }


CASES: tuple[SpecCase, ...] = (
    SpecCase(
        "simulator",
        "Theorem 6",
        spec.__name__,
        "ENCODER_LAYER",
        reference.encoder_layer,
        encoder_operands,
        {"n": 16, "d": 16, "hh": 4, "k": 8, "f": 32},
        (),  # U's program over symbolic capacity: its size comparisons are with the capacity, not constants
        rtol=1e-9,
        atol=1e-9,
        extra_small=len(ENCODER_OPTIONS),
        extra_ids="-encoder-layer",
    ),
)

__all__ = ["CASES"]
