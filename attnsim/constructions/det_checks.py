"""The checks the determinant and inverse obligations share: ``det3/obligations.py`` (the paper's
fixed-order 3 x 3) and ``det_n/obligations.py`` (n x n by Faddeev-LeVerrier).

Both are checked the same way: the program equals the reference as rational functions of
symbolic entries (SymPy), with ``==`` on random invertible rationals, on the authors' example; a
singular matrix is refused; float64 is compared with the exact result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import sympy as sp

from attnsim.constructions.checks import rational_operands, symbolic_operands
from attnsim.constructions.construction import Construction, ConstructionError
from attnsim.constructions.det3.program import (
    SingularMatrixError,
    _to_fraction,
    exact_matrix,
)
from attnsim.proofs.obligation import Obligation, Outcome
from attnsim.symbolic.sympy_work import CANCEL_NODES, within_nodes

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


__all__ = [
    "AUTHORS_EXAMPLE",
    "accuracy_check",
    "algebra_obligations",
    "example_check",
    "invertible_exact_check",
    "rational_identity_check",
    "relative_error",
    "singular_check",
    "sympy_inverse",
]
