"""Lemma 3 (softmax, plain, max-shifted and masked): the obligations `attnsim verify` runs, and the
checks only they use (registered by :mod:`attnsim.catalog`).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import sympy as sp

from attnsim.constructions.checks import (
    embedded_obligations,
    exp_canonical,
    first_difference,
    intent_obligations,
    layout_obligation,
    numeric_check,
    standard_obligations,
    sympy_check,
)
from attnsim.constructions.construction import Construction
from attnsim.constructions.softmax.program import PAPER_REF as SOFTMAX_REF
from attnsim.constructions.softmax.program import masked_softmax, softmax, softmax_ref
from attnsim.proofs.obligation import Obligation, Outcome
from attnsim.rasp import core as C
from attnsim.symbolic.program_equals_spec import all_sizes_obligations


# -- Lemma 3: softmax and its masked form (attnsim.constructions.softmax.program) -------------------------------
def masked_sympy_check(rows: int, cols: int, n: int, heads: int | None = None, stable: bool = False) -> Any:
    """Check: symbolic A, concrete n; program == masked reference (via :func:`exp_canonical`)."""

    def check(timeout: float) -> Outcome:
        con = masked_softmax(rows, cols, heads, stable=stable)
        shape = con.layout["A"].shape
        a = np.empty(shape, dtype=object)
        for ix in np.ndindex(*shape):
            a[ix] = sp.Symbol(f"A_{'_'.join(map(str, ix))}", real=True)
        nn = np.array([[n]], dtype=object)
        got = con.run(a, nn, backend="sympy")
        want = con.reference(a, nn, backend="sympy")
        diff = first_difference(got, want, exp_canonical)
        return Outcome.bad(diff) if diff else Outcome.good(f"{got.size} entries equal symbolically (n = {n})")

    return check


def masked_numeric_check(
    rows: int, cols: int, tol: float, seed: int = 0, scale: float = 1.0, stable: bool = True, offset: float = 0.0
) -> Any:
    """Check: float64 masked softmax vs the NumPy reference for several random n."""

    def check(timeout: float) -> Outcome:
        con = masked_softmax(rows, cols, stable=stable)
        rng = np.random.default_rng(seed)
        worst = 0.0
        for n in sorted({1, cols, *(int(v) for v in rng.integers(1, cols + 1, size=3))}):
            a = offset + rng.normal(size=(rows, cols)) * scale
            err = float(np.max(np.abs(con.run(a, [[n]]) - con.reference(a, [[n]]))))
            if not np.isfinite(err):
                return Outcome.bad(f"non-finite output at n = {n}")
            worst = max(worst, err)
        if worst <= tol:
            return Outcome.good(f"max abs error {worst:.3g} <= {tol:g}")
        return Outcome.bad(f"max abs error {worst:.3g} > {tol:g}")

    return check


def large_numeric_check(
    make: Callable[[], Construction], tol: float, offset: float = 3000.0, scale: float = 30.0, seed: int = 0
) -> Callable[[float], Outcome]:
    """Check: float64 within ``tol`` of NumPy's max-shifted softmax on entries offset + N(0, scale^2)."""

    def check(timeout: float) -> Outcome:
        con = make()
        a = offset + scale * np.random.default_rng(seed).normal(size=con.layout["A"].shape)
        err = float(np.max(np.abs(con.run(a) - con.reference(a))))
        if not np.isfinite(err):
            return Outcome.bad("non-finite output (exp overflow)")
        if err <= tol:
            return Outcome.good(f"max abs error {err:.3g} <= {tol:g}")
        return Outcome.bad(f"max abs error {err:.3g} > {tol:g}")

    return check


def spread_numeric_check(masked: bool, tol: float, seed: int = 0) -> Callable[[float], Outcome]:
    """Check: the max-shifted float64 softmax (masked: every n) is finite and within ``tol`` of
    NumPy's max-shifted softmax on rows of spread far above 709: [1000, 0, -1000], +-1e5 and
    N(0, 1e4^2) entries (the row-mean shift refused these; plain exp overflows)."""

    def check(timeout: float) -> Outcome:
        rng = np.random.default_rng(seed)
        a = np.array([[1000.0, 0.0, -1000.0, 5.0], [1e5, -1e5, 0.0, 1e5], *(1e4 * rng.normal(size=(6, 4)))])
        con = masked_softmax(8, 4, stable=True) if masked else softmax(8, 4, stable=True)
        worst = 0.0
        for n in (1, 2, 3, 4) if masked else (4,):
            got = con.run(a, [[n]]) if masked else con.run(a)
            want = con.reference(a, [[n]]) if masked else con.reference(a)
            if not np.all(np.isfinite(got)):
                return Outcome.bad(f"non-finite output at n = {n}")
            worst = max(worst, float(np.max(np.abs(got - want))))
        if worst <= tol:
            return Outcome.good(f"finite, max abs error {worst:.3g} <= {tol:g}")
        return Outcome.bad(f"max abs error {worst:.3g} > {tol:g}")

    return check


# -- all sizes: program == spec (attnsim.symbolic.execute) -------------------------------------------
def softmax_all_sizes(stable: bool = False, masked: bool = False) -> tuple[Obligation, Obligation]:
    """``all-sizes``: the program over unbound rows, cols (and heads) equals the independent spec at every
    entry (symbolic execution); masked: for every operand 1 <= n <= cols (what the input check enforces)."""
    cid = "softmax-masked" if masked else "softmax"
    rows, cols, heads = C.Size("rows"), C.Size("cols"), C.Size("heads")
    factory = masked_softmax if masked else softmax
    statement = (
        "program == spec: for every operand n with 1 <= n <= cols, exp(A[h, i, j]) / sum_{l < n} exp(A[h, i, l]) "
        "for j < n and 0 for j >= n, every size and entry"
        if masked
        else "program == spec exp(A[h, i, j]) / sum_{l < cols} exp(A[h, i, l]), every size and entry"
    )
    return all_sizes_obligations(
        cid,
        SOFTMAX_REF,
        [lambda: factory(rows, cols, stable=stable), lambda: factory(rows, cols, heads, stable=stable)],
        statement=statement + (" (the row-max shift cancels)" if stable else ""),
        detail="stable" if stable else "lemma",
    )


def softmax_obligations() -> Iterable[Obligation]:
    """sympy (every dimension <= 3, exp symbolic), numeric up to 64, Z3 intents, layout."""
    ref = SOFTMAX_REF
    yield from softmax_all_sizes()
    yield from softmax_all_sizes(stable=True)
    yield from intent_obligations("softmax", ref, lambda: softmax(2, 3, heads=2))
    yield layout_obligation("softmax", ref, lambda: softmax(2, 3, heads=2))
    for r, c in itertools.product((1, 2, 3), repeat=2):
        for h in (None, 2, 3):
            yield from standard_obligations(
                "softmax", ref, functools.partial(softmax, r, c, h), exact=False, numeric_tol=None
            )
        yield Obligation(
            f"softmax/sympy/stable-cols{c}-rows{r}",
            "softmax",
            ref,
            "sympy",
            sympy_check(functools.partial(softmax, r, c, stable=True), exp_canonical),
            "max-shifted program == exp(x)/sum exp(x) on symbols",
        )
    for r, c, h in ((64, 64, None), (16, 64, 4), (8, 3, None)):
        yield from standard_obligations(
            "softmax", ref, functools.partial(softmax, r, c, h), sympy_sizes=False, exact=False, numeric_tol=1e-12
        )
    yield Obligation(
        "softmax/numeric/stable-cols64-rows64",
        "softmax",
        ref,
        "numeric",
        numeric_check(lambda: softmax(64, 64, stable=True), 1e-12),
        "max-shifted float64 within 1e-12 of NumPy",
    )
    yield Obligation(
        "softmax/numeric/stable-cols64-rows64-offset3000",
        "softmax",
        ref,
        "numeric",
        large_numeric_check(lambda: softmax(64, 64, stable=True), 1e-12),
        "max-shifted float64 within 1e-12 at entries 3000 + N(0, 30^2), where plain exp overflows",
    )
    yield Obligation(
        "softmax/numeric/stable-spread",
        "softmax",
        ref,
        "numeric",
        spread_numeric_check(False, 1e-15),
        "max-shifted float64 finite and within 1e-15 of NumPy on rows [1000, 0, -1000, 5], +-1e5, N(0, 1e4^2)",
    )
    yield from embedded_obligations("softmax", ref, softmax_ref)


def _ms_tag(r: int, c: int, n: int, h: int | None, stable: bool) -> str:
    return f"{'stable-' if stable else ''}cols{c}-{f'heads{h}-' if h else ''}n{n}-rows{r}"


def masked_softmax_obligations() -> Iterable[Obligation]:
    """The masked form: sympy for every dimension <= 3 and every n <= c, numeric at 64, Z3."""
    ref, cid = SOFTMAX_REF, "softmax-masked"
    yield from softmax_all_sizes(masked=True)
    yield from softmax_all_sizes(stable=True, masked=True)
    yield from intent_obligations(cid, ref, lambda: masked_softmax(2, 3, heads=2))
    yield layout_obligation(cid, ref, lambda: masked_softmax(2, 3, heads=2))
    for r, c in itertools.product((1, 2, 3), repeat=2):
        for n in range(1, c + 1):
            yield Obligation(
                f"{cid}/sympy/{_ms_tag(r, c, n, None, False)}",
                cid,
                ref,
                "sympy",
                masked_sympy_check(r, c, n),
                "masked program == softmax of the first n columns, 0 elsewhere, on symbols",
            )
    for r, c, n, h in ((3, 3, 2, 2), (2, 3, 2, None)):
        yield Obligation(
            f"{cid}/sympy/{_ms_tag(r, c, n, h, True)}",
            cid,
            ref,
            "sympy",
            masked_sympy_check(r, c, n, h, stable=True),
            "masked, valid-max-shifted program == masked reference on symbols",
        )
    yield Obligation(
        f"{cid}/numeric/cols64-rows64",
        cid,
        ref,
        "numeric",
        masked_numeric_check(64, 64, 1e-12, stable=False),
        "float64 within 1e-12 for n in {1, 64, 3 random}",
    )
    yield Obligation(
        f"{cid}/numeric/stable-cols64-rows64",
        cid,
        ref,
        "numeric",
        masked_numeric_check(64, 64, 1e-12),
        "float64 within 1e-12 for n in {1, 64, 3 random}",
    )
    yield Obligation(
        f"{cid}/numeric/stable-cols64-rows64-offset3000",
        cid,
        ref,
        "numeric",
        masked_numeric_check(64, 64, 1e-12, scale=30.0, offset=3000.0),
        "valid-max-shifted float64 within 1e-12 at entries 3000 + N(0, 30^2), where plain exp overflows",
    )
    yield Obligation(
        f"{cid}/numeric/stable-spread",
        cid,
        ref,
        "numeric",
        spread_numeric_check(True, 1e-15),
        "valid-max-shifted float64 finite and within 1e-15 of NumPy on rows [1000, 0, -1000, 5], +-1e5, "
        "N(0, 1e4^2), for n = 1..4",
    )
    # small rows: a shift that is not the valid max (e.g. over the zero-padded row) leaves 3000, which underflows
    yield Obligation(
        f"{cid}/numeric/stable-cols3-rows3-offset3000",
        cid,
        ref,
        "numeric",
        masked_numeric_check(3, 3, 1e-12, scale=30.0, offset=3000.0),
        "valid-max-shifted float64 within 1e-12 at entries 3000 + N(0, 30^2), 3 columns "
        "(the shift must be the valid max)",
    )


__all__ = [
    "large_numeric_check",
    "masked_numeric_check",
    "masked_softmax_obligations",
    "masked_sympy_check",
    "softmax_all_sizes",
    "softmax_obligations",
    "spread_numeric_check",
]
