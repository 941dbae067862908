"""Application (Match2): the obligations `attnsim verify` runs (registered by :mod:`attnsim.catalog`;
their checks: :mod:`attnsim.constructions.application_checks`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import z3

from attnsim.constructions.application_checks import (
    _z3_all,
    exhaustive_check,
    prefixes,
    random_check,
)
from attnsim.constructions.match2 import program as match
from attnsim.constructions.match2.reference import match2_spec
from attnsim.proofs.obligation import Obligation


def _m2spec(x: tuple[int, ...], p: int, inc: bool) -> np.ndarray:
    return match2_spec(x, p, inc)


def _draw_ints(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(-(10**6), 10**6, n)


def _match2_z3_spec(p: int, include_self: bool) -> Callable[[list[Any]], list[Any]]:
    def spec(xs: list[Any]) -> list[Any]:
        n = len(xs)
        return [
            z3.If(z3.Or([(xs[i] + xs[j]) % p == 0 for j in range(n) if include_self or j != i] or [False]), 1, 0)
            for i in range(n)
        ]

    return spec


def match2_obligations() -> Iterable[Obligation]:
    """Exhaustive (exact backend, all inputs over residues 0..p-1, length <= 6), Z3 over all integers (p = 2),
    random long inputs."""
    ref = match.PAPER_REF
    for p, max_len in ((2, 6), (3, 6), (4, 6), (5, 5)):
        for inc in (True, False):
            tag = "self" if inc else "noself"
            for n in range(1, max_len + 1):
                for pre in prefixes(p, n):
                    ptag = f"-x0={''.join(map(str, pre))}" if pre else ""
                    yield Obligation(
                        f"match2/exact/all-inputs-p{p}-{tag}-L{n}{ptag}",
                        "match2",
                        ref,
                        "exact",
                        exhaustive_check(
                            functools.partial(match.match2, n, p, inc),
                            range(p),
                            functools.partial(_m2spec, p=p, inc=inc),
                            prefix=pre,
                        ),
                        f"every input over 0..{p - 1} of length {n}"
                        + (f" starting with {pre}" if pre else "")
                        + (", j = i allowed" if inc else ", j != i"),
                    )
    for p, inc, max_len in ((2, True, 6), (2, False, 5), (3, True, 3), (3, False, 3)):
        tag = "self" if inc else "noself"
        for n in range(1, max_len + 1):
            yield Obligation(
                f"match2/z3-bounded/all-integers-p{p}-{tag}-L{n}",
                "match2",
                ref,
                "z3-bounded",
                _z3_all([(functools.partial(match.match2, n, p, inc), n, _match2_z3_spec(p, inc), None)]),
                f"p = {p}: output == spec for EVERY integer input (unbounded values) of length {n}",
                bound=n,
            )
    for inc in (True, False):
        tag = "self" if inc else "noself"
        for p, n in ((7, 1000), (97, 20000)):
            yield Obligation(
                f"match2/sampled/random-p{p}-{tag}-L{n}",
                "match2",
                ref,
                "sampled",
                random_check(
                    functools.partial(match.match2, n, p, inc),
                    functools.partial(_draw_ints, n=n),
                    functools.partial(_m2spec, p=p, inc=inc),
                    trials=3,
                ),
                f"float64 run == spec on random integers, p = {p}, length {n}",
            )


__all__ = ["match2_obligations"]
