"""The random operands a specification check evaluates a spec and its textbook formula on.

Each maker takes the sizes, a random generator and the trial number and returns the named
operands (2-D or 3-D float64 arrays) a spec of :mod:`attnsim.symbolic.specs` reads.  Integer-valued
operands make exact comparisons possible; the encoder layer's operands cycle through every
combination of its options.  Kept apart from the cases (:mod:`attnsim.verify.spec_cases`) so that
the table of cases reads as a table.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping

import numpy as np

OperandMaker = Callable[[Mapping[str, int], np.random.Generator, int], dict[str, np.ndarray]]


def ints(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Integers in -5..5 as float64 (exact sums and products)."""
    return rng.integers(-5, 6, size=shape).astype(np.float64)


def reals(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Normal reals, standard deviation 1.5."""
    return rng.normal(0.0, 1.5, size=shape)


def stacked(
    fill: Callable[..., np.ndarray], shapes: Mapping[str, Callable[[Mapping[str, int]], tuple[int, ...]]]
) -> OperandMaker:
    """A maker filling each named operand with ``fill`` at the shape its function gives."""

    def make(sz: Mapping[str, int], rng: np.random.Generator, trial: int) -> dict[str, np.ndarray]:
        return {name: fill(rng, *shape(sz)) for name, shape in shapes.items()}

    return make


def masked_operands(sz: Mapping[str, int], rng: np.random.Generator, trial: int) -> dict[str, np.ndarray]:
    """A and the operand n: 1, cols and a random value in between, in turn."""
    cols = sz["cols"]
    n = (1, cols, int(rng.integers(1, cols + 1)))[trial % 3]
    return {"A": reals(rng, sz["heads"], sz["rows"], cols), "n": np.array([[float(n)]])}


def scalar_c(base: OperandMaker) -> OperandMaker:
    """``base``'s operands and a 1 x 1 integer ``c``."""

    def make(sz: Mapping[str, int], rng: np.random.Generator, trial: int) -> dict[str, np.ndarray]:
        return {**base(sz, rng, trial), "c": ints(rng, 1, 1)}

    return make


def parity_operands(sz: Mapping[str, int], rng: np.random.Generator, trial: int) -> dict[str, np.ndarray]:
    """A random bit string x of the given length."""
    return {"x": rng.integers(0, 2, size=(1, sz["length"])).astype(np.float64)}


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


__all__ = [
    "ENCODER_OPTIONS",
    "OperandMaker",
    "encoder_operands",
    "ints",
    "masked_operands",
    "parity_operands",
    "reals",
    "scalar_c",
    "stacked",
]
