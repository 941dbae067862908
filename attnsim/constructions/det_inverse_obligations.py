"""The obligations of the determinant and inverse lemmas, and the checks they share.

The paper's fixed-order 3 x 3 construction (:mod:`attnsim.constructions.det3.program`) and our n x n det and
inverse by Faddeev-LeVerrier (:mod:`attnsim.constructions.det_n.program`) are checked the same way: the program
equals the reference as rational functions of symbolic entries (SymPy), with ``==`` on random
invertible rationals, on the authors' example; a singular matrix is refused; float64 is compared
with the exact result.  Moved here from ``cofactor.py`` and ``faddeev.py`` (issue 25), so that
those modules hold the constructions only.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import sympy as sp

from attnsim.constructions.checks import intent_obligations, layout_obligation, rational_operands, symbolic_operands
from attnsim.constructions.construction import Construction, ConstructionError
from attnsim.constructions.det3.program import PAPER_REF as COFACTOR_REF
from attnsim.constructions.det3.program import (
    SingularMatrixError,
    _to_fraction,
    cofactor3,
    det3,
    exact_matrix,
    inverse3,
)
from attnsim.constructions.det_n.program import PAPER_REF as FADDEEV_REF
from attnsim.constructions.det_n.program import det, inverse
from attnsim.proofs.intents import prove_layout
from attnsim.proofs.obligation import Obligation, Outcome
from attnsim.symbolic.sympy_work import CANCEL_NODES, within_nodes

# -- the checks both constructions share (from cofactor.py) ----------------------------------------
AUTHORS_EXAMPLE = ((7, 8, 12), (10, 11, 9), (2, 4, 21))  # det 45 (the authors' script)


def rational_identity_check(make: Callable[[], Construction]) -> Callable[[float], Outcome]:
    """SymPy proof on symbols: every output entry equals the reference as a rational function.

    Each side is split as numerator/denominator and cross-multiplied in a sparse polynomial
    ring over QQ (fast, no ``simplify``); a zero denominator fails.
    """

    def check(timeout: float) -> Outcome:
        con = make()
        ops = symbolic_operands(con)
        syms = [s for op in ops for s in op.flat]
        got = np.asarray(con.run(*ops, backend="sympy"), dtype=object)
        want = np.asarray(con.reference(*ops, backend="sympy"), dtype=object)
        if got.shape != want.shape:
            return Outcome.bad(f"shape {got.shape} != {want.shape}")
        ring_, *_ = sp.ring(syms, sp.QQ)
        memo: dict[Any, Any] = {}  # the denominators (det, c_0) repeat in every entry

        def poly(x: Any) -> Any:
            if x not in memo:
                memo[x] = ring_(x)
            return memo[x]

        for ix in np.ndindex(*got.shape):
            gn, gd = sp.fraction(got[ix])
            wn, wd = sp.fraction(want[ix])
            try:
                pgn, pgd, pwn, pwd = (poly(x) for x in (gn, gd, wn, wd))
            except (sp.polys.polyerrors.CoercionFailed, ValueError, TypeError):
                if sp.cancel(within_nodes(got[ix] - want[ix], CANCEL_NODES, f"entry {ix}'s difference")) != 0:
                    return Outcome.bad(f"entry {ix}: program - reference does not cancel to 0")
                continue
            if pgd == 0:
                return Outcome.bad(f"entry {ix}: the program divides by a polynomial that is 0")
            if pgn * pwd != pwn * pgd:
                return Outcome.bad(f"entry {ix}: program {got[ix]} != reference {want[ix]}")
        return Outcome.good(f"{got.size} entries equal as rational functions of {len(syms)} symbols")

    return check


def accuracy_check(
    make: Callable[[], Construction], tol: float, trials: int = 5, seed: int = 0
) -> Callable[[float], Outcome]:
    """float64 on standard normal inputs vs the *exact* result for the same inputs (relative error)."""

    def check(timeout: float) -> Outcome:
        worst = relative_error(make(), trials, seed)
        if not np.isfinite(worst):
            return Outcome.bad("non-finite output")
        if worst <= tol:
            return Outcome.good(f"max relative error vs exact {worst:.3g} <= {tol:g} ({trials} normal inputs)")
        return Outcome.bad(f"max relative error vs exact {worst:.3g} > {tol:g}")

    return check


def relative_error(con: Construction, trials: int, seed: int = 0) -> float:
    """max |float64 run - exact| / max |exact| over ``trials`` standard normal inputs (one generator)."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(trials):
        a = rng.normal(size=con.layout["A"].shape)
        exact = np.asarray(con.reference(a.astype(object), backend="exact"), dtype=object)
        truth = np.asarray([float(x) for x in exact.flat]).reshape(exact.shape)
        got = con.run(a)
        worst = max(worst, float(np.max(np.abs(got - truth))) / float(np.max(np.abs(truth))))
    return worst


def invertible_exact_check(
    make: Callable[[], Construction], trials: int = 3, seed: int = 0
) -> Callable[[float], Outcome]:
    """Exact: on random rational inputs (redrawn while singular), program == reference with ==."""

    def check(timeout: float) -> Outcome:
        con = make()
        rng = np.random.default_rng(seed)
        for t in range(trials):
            ops = rational_operands(con, rng)
            while exact_matrix(ops[0]).det() == 0:
                ops = rational_operands(con, rng)
            got = con.run(*ops, backend="exact")
            want = con.reference(*ops, backend="exact")
            if got.shape != want.shape or not all(g == w for g, w in zip(got.flat, want.flat, strict=True)):
                return Outcome.bad(f"trial {t}: program {got.tolist()} != reference {want.tolist()}")
        return Outcome.good(f"{trials} random invertible rational inputs equal with ==")

    return check


def example_check(make: Callable[[], Construction], a: Any, want: Any) -> Callable[[float], Outcome]:
    """Exact: the program on ``a`` equals ``want`` (a SymPy-computed value) with ==."""

    def check(timeout: float) -> Outcome:
        got = np.asarray(make().run(np.array(a, dtype=object), backend="exact"), dtype=object)
        w = np.asarray(want, dtype=object)
        if got.shape != w.shape or not all(g == x for g, x in zip(got.flat, w.flat, strict=True)):
            return Outcome.bad(f"got {got.tolist()}, want {w.tolist()}")
        return Outcome.good(f"== {w.tolist()}")

    return check


def singular_check(make: Callable[[], Construction], a: Any) -> Callable[[float], Outcome]:
    """A singular input is a SingularMatrixError on the exact and NumPy backends, never a number."""

    def check(timeout: float) -> Outcome:
        con = make()
        for backend in ("exact", "numpy"):
            try:
                out = con.run(np.array(a, dtype=object if backend == "exact" else np.float64), backend=backend)
            except SingularMatrixError:
                continue
            except ConstructionError as exc:
                return Outcome.bad(f"{backend}: {type(exc).__name__} ({exc}) instead of SingularMatrixError")
            return Outcome.bad(f"{backend}: singular input returned {np.asarray(out).tolist()}")
        return Outcome.good("SingularMatrixError on the exact and NumPy backends")

    return check


def sympy_inverse(a: Any) -> np.ndarray:
    """SymPy's inverse of an integer/rational matrix, as Fractions."""
    inv = sp.Matrix(a).inv()
    return np.array([[_to_fraction(x) for x in row] for row in inv.tolist()], dtype=object)


def algebra_obligations(
    cid: str, paper_ref: str, make: Callable[[], Construction], tag: str, *, exact_trials: int = 3
) -> list[Obligation]:
    """sympy (rational-function identity) + exact (random rationals) for one instance."""
    return [
        Obligation(
            f"{cid}/sympy/{tag}",
            cid,
            paper_ref,
            "sympy",
            rational_identity_check(make),
            "program == reference on symbols (as rational functions)",
        ),
        Obligation(
            f"{cid}/exact/{tag}",
            cid,
            paper_ref,
            "exact",
            invertible_exact_check(make, trials=exact_trials),
            "program == reference on random rationals",
        ),
    ]


# -- the paper's 3 x 3: cofactor3, det3, inverse3 (attnsim.constructions.det3.program) ------------------------
NUMERIC_TOL_3x3 = 1e-14  # measured worst 1.5e-15 (inverse3/det3, 5 normal inputs)
SINGULAR_3x3 = ((1, 2, 3), (2, 4, 6), (1, 1, 1))


def cofactor_obligations() -> Iterable[Obligation]:
    """Z3 intents and layout, SymPy identity, exact, float64 accuracy, the authors' example, singular."""
    a = sp.Matrix(AUTHORS_EXAMPLE)
    examples = {
        "cofactor3": np.array(a.adjugate().T.tolist(), dtype=object),
        "det3": np.array(a.det(), dtype=object),
        "inverse3": sympy_inverse(AUTHORS_EXAMPLE),
    }
    for cid, make in (("cofactor3", cofactor3), ("det3", det3), ("inverse3", inverse3)):
        yield from intent_obligations(cid, COFACTOR_REF, make)
        yield layout_obligation(cid, COFACTOR_REF, make)
        yield from algebra_obligations(cid, COFACTOR_REF, make, "n3", exact_trials=5)
        yield Obligation(
            f"{cid}/numeric/n3",
            cid,
            COFACTOR_REF,
            "numeric",
            accuracy_check(make, NUMERIC_TOL_3x3),
            f"float64 within {NUMERIC_TOL_3x3:g} relative of the exact result",
        )
        yield Obligation(
            f"{cid}/exact/authors-example",
            cid,
            COFACTOR_REF,
            "exact",
            example_check(make, AUTHORS_EXAMPLE, examples[cid]),
            "the authors' example [[7,8,12],[10,11,9],[2,4,21]] (det 45) equals SymPy's result with ==",
        )
    yield Obligation(
        "inverse3/exact/singular",
        "inverse3",
        COFACTOR_REF,
        "exact",
        singular_check(inverse3, SINGULAR_3x3),
        "a singular matrix is a SingularMatrixError (exact and NumPy), never a number",
    )


# -- det(n), inverse(n) by Faddeev-LeVerrier (attnsim.constructions.det_n.program) ------------------------------
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
