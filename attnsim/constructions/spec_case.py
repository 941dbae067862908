"""A specification check's case, and the random operands it evaluates a spec on.

Every folder with a ``spec.py`` lists its cases in ``cases.py`` (one :class:`SpecCase` per spec);
:mod:`attnsim.verify.spec_cases` gathers them in ``verify``'s order and
:mod:`attnsim.verify.spec_check` runs them.  An operand maker takes the sizes, a random generator
and the trial number and returns the named operands (2-D or 3-D float64 arrays) a spec reads;
integer-valued operands make exact comparisons possible.  The makers here are the ones several
folders share; a folder's own (the masked softmax's n, the encoder layer's options) is in its
``cases.py``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnsim.symbolic.spec_language import Spec

Sizes = dict[str, int]
OperandMaker = Callable[[Mapping[str, int], np.random.Generator, int], dict[str, np.ndarray]]


@dataclass(frozen=True)
class SpecCase:
    """One specification, how to make its operands, its textbook reference, and what to try.

    ``spec_module`` and ``spec_attr`` name the spec (a folder's ``spec.py`` and the constant in
    it); it is looked up when the check runs, so a spec replaced there (a test's wrong factor) is
    the one checked.  ``large``: per size, the largest value tried (what stays cheap: a spec is
    evaluated entry by entry in Python); ``valid``: the sizes the spec is stated for (MaxMin: an
    even width); ``makers``: the symbolic builds proved against this spec (their programs' size
    constants)."""

    construction: str
    paper_ref: str
    spec_module: str
    spec_attr: str
    reference: Callable[[Mapping[str, np.ndarray], Mapping[str, int]], np.ndarray]
    operands: OperandMaker
    large: Mapping[str, int]
    makers: Sequence[Callable[[], Any]] = ()
    valid: Callable[[Mapping[str, int]], bool] = lambda sz: True
    repair: Callable[[Sizes], Sizes] = lambda sz: sz  # an assignment outside ``valid`` moved into it
    extra_small: int = 0  # further small random assignments (the encoder layer: every option combination)
    rtol: float = 0.0
    atol: float = 0.0
    small: int = 3
    extra_ids: str = ""

    @property
    def spec(self) -> Spec:
        found = getattr(importlib.import_module(self.spec_module), self.spec_attr)
        assert isinstance(found, Spec)
        return found

    @property
    def id(self) -> str:
        return f"{self.construction}/numeric/spec-independent{self.extra_ids}"


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


def scalar_c(base: OperandMaker) -> OperandMaker:
    """``base``'s operands and a 1 x 1 integer ``c``."""

    def make(sz: Mapping[str, int], rng: np.random.Generator, trial: int) -> dict[str, np.ndarray]:
        return {**base(sz, rng, trial), "c": ints(rng, 1, 1)}

    return make


__all__ = ["OperandMaker", "Sizes", "SpecCase", "ints", "reals", "scalar_c", "stacked"]
