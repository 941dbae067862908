"""Application (k-PARITY, sparse parity): the obligations `attnsim verify` runs (registered by
:mod:`attnsim.catalog`; their checks: :mod:`attnsim.constructions.application_checks`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import numpy as np
import z3

from attnsim.constructions.application_checks import (
    _parity_mod2_check,
    _z3_all,
    exhaustive_check,
    prefixes,
    random_check,
)
from attnsim.constructions.checks import intent_obligations
from attnsim.constructions.parity import program as kparity
from attnsim.constructions.parity.reference import parity_spec
from attnsim.proofs.obligation import Obligation
from attnsim.rasp import core as C
from attnsim.symbolic.program_equals_spec import all_sizes_obligations


def _pspec(x: Any, n: int, sub: tuple[int, ...] | None) -> np.ndarray:
    return np.full(n, parity_spec(x, sub))


def binary(x: Any) -> Any:
    """A Z3 token constraint: x in {0, 1}."""
    return z3.Or(x == 0, x == 1)


def _z3_parity(xs: list[Any]) -> list[Any]:
    return [z3.Sum(xs) % 2] * len(xs)


def _exhaustive_parity_obligations(ref: str) -> Iterable[Obligation]:
    """``exact``: every binary input up to length 12 (parity) and of each listed subset (sparse parity), in
    checks of at most 1024 inputs (split by leading tokens)."""
    for n in range(1, 13):
        for pre in prefixes(2, n):
            tag = f"L{n}" + (f"-x0={''.join(map(str, pre))}" if pre else "")
            yield Obligation(
                f"parity/exact/all-inputs-{tag}",
                "parity",
                ref,
                "exact",
                exhaustive_check(
                    functools.partial(kparity.parity, n),
                    (0, 1),
                    functools.partial(_pspec, n=n, sub=None),
                    prefix=pre,
                ),
                f"every binary input of length {n}" + (f" starting with {pre}" if pre else ""),
            )
    subsets = {12: (0, 3, 4, 7, 11), 9: (8,), 10: (1, 2, 5, 6, 9), 7: (0, 3, 5)}  # 7: the registered example
    for n, sub in subsets.items():
        for pre in prefixes(2, n):
            tag = f"L{n}-k{len(sub)}" + (f"-x0={''.join(map(str, pre))}" if pre else "")
            yield Obligation(
                f"sparse_parity/exact/all-inputs-{tag}",
                "sparse_parity",
                ref,
                "exact",
                exhaustive_check(
                    functools.partial(kparity.sparse_parity, n, sub),
                    (0, 1),
                    functools.partial(_pspec, n=n, sub=sub),
                    prefix=pre,
                ),
                f"every binary input of length {n}, subset {sub}",
            )


def parity_obligations() -> Iterable[Obligation]:
    """Exhaustive up to length 12 (exact), Z3 mask intents and mod-2 algebra for all lengths, Z3 unrolling."""
    ref = kparity.PAPER_REF
    yield from all_sizes_obligations(
        "parity",
        ref,
        [lambda: kparity.parity(C.Size("length"))],
        statement="program == spec (sum of the bits) mod 2 at every position, for every length (binary input)",
    )
    yield from intent_obligations("parity", ref, lambda: kparity.parity(5))
    yield from intent_obligations("sparse_parity", ref, lambda: kparity.sparse_parity(9, (0, 4, 5, 8)))
    yield Obligation(
        "parity/z3-instance/mod2",
        "parity",
        ref,
        "z3-instance",
        _parity_mod2_check(lambda: kparity.parity(5)),
        "for every integer count c >= 0 the output index function is 1 iff c is odd, else 0",
    )
    yield Obligation(
        "sparse_parity/z3-instance/mod2",
        "sparse_parity",
        ref,
        "z3-instance",
        _parity_mod2_check(lambda: kparity.sparse_parity(9, (0, 4, 5, 8))),
        "for every integer count c >= 0 the output index function is 1 iff c is odd, else 0",
    )
    yield from _exhaustive_parity_obligations(ref)
    yield Obligation(
        "parity/z3-bounded/unrolled",
        "parity",
        ref,
        "z3-bounded",
        _z3_all([(functools.partial(kparity.parity, n), n, _z3_parity, binary) for n in range(1, 7)]),
        "Z3 unrolling of the program (independent of the engine): output == sum mod 2, every binary input, length <= 6",
        bound=6,
    )
    yield Obligation(
        "parity/sampled/random-L4096",
        "parity",
        ref,
        "sampled",
        random_check(
            lambda: kparity.parity(4096),
            lambda rng: rng.integers(0, 2, 4096),
            lambda x: np.full(4096, parity_spec(x)),
            trials=3,
        ),
        "float64 run == spec on random binary inputs of length 4096",
    )


__all__ = ["binary", "parity_obligations"]
