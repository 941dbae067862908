"""det(n) and inverse(n) by Faddeev-LeVerrier: their obligations (registered by
:mod:`attnsim.catalog`; the checks they share with det3 in :mod:`attnsim.constructions.det_checks`),
and ``measure``, the float64 accuracy measurement behind their tolerances.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable

import numpy as np
import sympy as sp

from attnsim.constructions.checks import intent_obligations, layout_obligation
from attnsim.constructions.construction import Construction
from attnsim.constructions.det_checks import (
    AUTHORS_EXAMPLE,
    accuracy_check,
    algebra_obligations,
    example_check,
    invertible_exact_check,
    rational_identity_check,
    relative_error,
    singular_check,
    sympy_inverse,
)
from attnsim.constructions.det_n.program import PAPER_REF as FADDEEV_REF
from attnsim.constructions.det_n.program import det, inverse
from attnsim.proofs.intents import prove_layout
from attnsim.proofs.obligation import Obligation, Outcome

# Measured with ``measure`` (10 successive standard normal draws of default_rng(0), the numeric
# obligations' sampling): max relative error vs the exact result of the same float64 inputs,
# max over det and inverse.  NumPy's LU (np.linalg.det/inv) stays at 1e-14 on the same inputs.
MEASURED_REL_ERROR = {
    "faddeev": {2: 1.9e-16, 3: 5.0e-16, 4: 3.3e-14, 8: 2.2e-13, 12: 6.4e-13, 16: 4.9e-12, 24: 7.0e-11, 32: 1.7e-7},
    "powers": {2: 4.7e-16, 3: 1.9e-15, 4: 3.5e-14, 8: 4.3e-13, 12: 2.9e-13, 16: 1.4e-11, 24: 3.4e-10, 32: 2.6e-7},
}
# Asserted by the numeric obligations (5 draws, 3 at n = 16): 50-200x the measurement, so the check
# is meaningful (a wrong construction is off by O(1)) without being flaky.
NUMERIC_TOL = {
    "faddeev": {3: 1e-13, 8: 2e-11, 16: 5e-10},
    "powers": {3: 1e-13, 8: 5e-11, 16: 1e-9},
}
SINGULAR_4x4 = ((1, 2, 3, 4), (2, 4, 6, 8), (0, 1, 0, 1), (5, 0, 2, 1))
# Sizes past SymPy's n <= 4 checked exactly in the default run (one random invertible rational input
# each, under 0.2 s): odd and even alike, since the algorithm's signs depend on the parity of n
# (det = (-1)^n c_0); with n <= 4 every n up to 8.
EXACT_SIZES = (5, 6, 7, 8)


def faddeev_obligations() -> Iterable[Obligation]:
    """Z3 intents (every distinct selector), layout, SymPy n <= 4, exact, float64 accuracy, examples."""
    authors = np.array(AUTHORS_EXAMPLE, dtype=object)
    for method, pre in (("faddeev", ""), ("powers", "powers-")):
        for cid, fac in (("det", det), ("inverse", inverse)):
            factory = functools.partial(fac, method=method)
            yield from intent_obligations(f"{cid}", FADDEEV_REF, _prefixed(functools.partial(factory, 4), pre))
            if not pre:
                yield layout_obligation(cid, FADDEEV_REF, functools.partial(factory, 4))
            else:
                yield Obligation(
                    f"{cid}/z3-parametric/{pre}layout",
                    cid,
                    "Proposition 1",
                    "z3-parametric",
                    _layout_check(functools.partial(factory, 4)),
                    statement="every block is injective, blocks of one channel are disjoint, all lie in the sequence",
                )
            for n in range(1, 5):
                yield from algebra_obligations(cid, FADDEEV_REF, functools.partial(factory, n), f"{pre}n{n}")
            yield Obligation(
                f"{cid}/sympy/{pre}n5",
                cid,
                FADDEEV_REF,
                "sympy",
                rational_identity_check(functools.partial(factory, 5)),
                "program == reference on 25 symbols, as rational functions (tens of seconds)",
                deep=True,
            )
            for n in EXACT_SIZES:
                yield Obligation(
                    f"{cid}/exact/{pre}n{n}",
                    cid,
                    FADDEEV_REF,
                    "exact",
                    invertible_exact_check(functools.partial(factory, n), trials=1),
                    "program == reference on random rationals",
                )
            yield Obligation(
                f"{cid}/exact/{pre}n16",
                cid,
                FADDEEV_REF,
                "exact",
                invertible_exact_check(functools.partial(factory, 16), trials=1),
                "program == reference on random rationals (tens of seconds)",
                deep=True,
            )
            for n, tol in NUMERIC_TOL[method].items():
                yield Obligation(
                    f"{cid}/numeric/{pre}n{n}",
                    cid,
                    FADDEEV_REF,
                    "numeric",
                    accuracy_check(functools.partial(factory, n), tol, trials=5 if n < 16 else 3),
                    f"float64 within {tol:g} relative of the exact result (the algorithm is unstable in float)",
                )
            want = (
                sympy_inverse(AUTHORS_EXAMPLE) if cid == "inverse" else np.array(sp.Matrix(authors).det(), dtype=object)
            )
            yield Obligation(
                f"{cid}/exact/{pre}authors-example",
                cid,
                FADDEEV_REF,
                "exact",
                example_check(functools.partial(factory, 3), AUTHORS_EXAMPLE, want),
                "the authors' example [[7,8,12],[10,11,9],[2,4,21]] (det 45) equals SymPy's result with ==",
            )
        yield Obligation(
            f"inverse/exact/{pre}singular",
            "inverse",
            FADDEEV_REF,
            "exact",
            singular_check(functools.partial(inverse, 4, method=method), SINGULAR_4x4),
            "a singular matrix is a SingularMatrixError (exact and NumPy), never a number",
        )


def _layout_check(make: Callable[[], Construction]) -> Callable[[float], Outcome]:
    return lambda timeout: prove_layout(make().layout, timeout)


def _prefixed(make: Callable[[], Construction], pre: str) -> Callable[[], Construction]:
    """The construction with its intents renamed ``pre + name`` (distinct obligation ids per method)."""

    def build() -> Construction:
        con = make()
        con.intents = [dataclasses.replace(i, name=pre + i.name) for i in con.intents]
        return con

    return build


def measure(
    ns: Iterable[int], method: str = "faddeev", trials: int = 10, seed: int = 0
) -> dict[int, tuple[float, float]]:
    """Max relative float64 error (det, inverse) vs the exact result, on standard normal inputs.

    The same sampling as the numeric obligations (one generator, ``trials`` successive draws).
    """
    out: dict[int, tuple[float, float]] = {}
    for n in ns:
        errs = []
        for make in (det, inverse):
            errs.append(relative_error(make(n, method=method), trials, seed))
        out[n] = (errs[0], errs[1])
    return out


__all__ = ["EXACT_SIZES", "MEASURED_REL_ERROR", "NUMERIC_TOL", "faddeev_obligations", "measure"]
