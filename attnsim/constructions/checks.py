"""The checks every lemma's obligations share, and the obligations built from them.

A construction is compared with its textbook reference on symbols (SymPy), on random rationals
(Fractions, ``==``) and in float64; its selectors are proved against their Z3 intents and its
layout is proved injective and disjoint; a composable form's selectors are proved at any offset
in any longer sequence (:func:`embedded_obligations`); :func:`exp_canonical` decides SymPy
identities between exponentials fast.  The
Construction record is in :mod:`attnsim.constructions.construction`, the checks that read it here.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from attnsim.constructions.construction import Construction
from attnsim.proofs.intents import Intent, check_intent, prove_layout, z3_method
from attnsim.proofs.obligation import Obligation, Outcome
from attnsim.rasp import core as C
from attnsim.rasp.layout import Block, Layout, MatRef
from attnsim.symbolic.sympy_work import CANCEL_NODES, cancelled, within_nodes


def symbolic_operands(con: Construction, prefix: str = "") -> list[np.ndarray]:
    """One fresh real symbol per operand entry."""
    out = []
    for nm in con.inputs:
        shape = con.layout[nm].shape
        flat = [sp.Symbol(f"{prefix}{nm}_{'_'.join(map(str, ix))}", real=True) for ix in np.ndindex(*shape)]
        arr = np.empty(len(flat), dtype=object)
        arr[:] = flat
        out.append(arr.reshape(shape))
    return out


def rational_operands(con: Construction, rng: np.random.Generator) -> list[np.ndarray]:
    """Random rationals p/q with |p| <= 20, 1 <= q <= 9."""
    out = []
    for nm in con.inputs:
        shape = con.layout[nm].shape
        flat = [Fraction(int(rng.integers(-20, 21)), int(rng.integers(1, 10))) for _ in range(int(np.prod(shape)))]
        arr = np.empty(len(flat), dtype=object)
        arr[:] = flat
        out.append(arr.reshape(shape))
    return out


def first_difference(got: np.ndarray, want: np.ndarray, simplify: Callable[[Any], Any]) -> str | None:
    """The first entry where two object arrays differ, with the simplified difference."""
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    for ix in np.ndindex(*got.shape):
        d = simplify(got[ix] - want[ix])
        if d != 0:
            return f"entry {ix}: program - reference = {d}"
    return None


def sympy_check(
    make: Callable[[], Construction], simplify: Callable[[Any], Any] | None = None
) -> Callable[[float], Outcome]:
    """Check: on symbolic operands, run(..., 'sympy') - reference simplifies to 0 everywhere."""

    def check(timeout: float) -> Outcome:
        con = make()
        ops = symbolic_operands(con)
        got = con.run(*ops, backend="sympy")
        want = con.reference(*ops, backend="sympy")
        simp = simplify or (lambda e: sp.simplify(within_nodes(sp.expand(e), CANCEL_NODES, "a difference")))
        diff = first_difference(got, want, simp)
        if diff:
            return Outcome.bad(diff)
        return Outcome.good(f"{got.size} entries equal symbolically")

    return check


def exact_check(make: Callable[[], Construction], trials: int = 3, seed: int = 0) -> Callable[[float], Outcome]:
    """Check: on random rationals, run(..., 'exact') == reference(..., 'exact')."""

    def check(timeout: float) -> Outcome:
        con = make()
        rng = np.random.default_rng(seed)
        for t in range(trials):
            ops = rational_operands(con, rng)
            got = con.run(*ops, backend="exact")
            want = con.reference(*ops, backend="exact")
            diff = first_difference(got, want, lambda e: e)
            if diff:
                return Outcome.bad(f"trial {t}: {diff}")
        return Outcome.good(f"{trials} random rational inputs equal with ==")

    return check


def numeric_check(
    make: Callable[[], Construction], tol: float, trials: int = 2, seed: int = 0, scale: float = 1.0
) -> Callable[[float], Outcome]:
    """Check: float64 run within ``tol`` (relative to the entries' scale) of the NumPy reference."""

    def check(timeout: float) -> Outcome:
        con = make()
        rng = np.random.default_rng(seed)
        worst = 0.0
        for _ in range(trials):
            ops = [rng.normal(size=con.layout[nm].shape) * scale for nm in con.inputs]
            got = con.run(*ops)
            want = con.reference(*ops)
            s = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
            err = float(np.max(np.abs(got - want))) / s if want.size else 0.0
            if not np.isfinite(err):
                return Outcome.bad("non-finite output")
            worst = max(worst, err)
        if worst <= tol:
            return Outcome.good(f"max relative error {worst:.3g} <= {tol:g}")
        return Outcome.bad(f"max relative error {worst:.3g} > {tol:g}")

    return check


def intent_obligations(cid: str, paper_ref: str, make: Callable[[], Construction], bound: int = 8) -> list[Obligation]:
    """One Z3 obligation per selector intent of the construction (parametric or bounded)."""
    con = make()
    obs = []
    for it in con.intents:
        method = z3_method(it.intent, it.queries, con.layout.length) if it.parametric else "z3-bounded"

        def check(timeout: float, name: str = it.name) -> Outcome:
            c = make()
            intent = next(i for i in c.intents if i.name == name)
            return check_intent(intent, c.layout, timeout=timeout, bound=None if intent.parametric else bound)

        obs.append(
            Obligation(
                f"{cid}/{method}/{it.name}",
                cid,
                paper_ref,
                method,
                check,
                statement=it.statement,
                bound=None if it.parametric else bound,
            )
        )
    return obs


def layout_obligation(cid: str, paper_ref: str, make: Callable[[], Construction]) -> Obligation:
    """Z3, all sizes: the layout's blocks are injective, pairwise disjoint and inside the sequence."""

    def check(timeout: float) -> Outcome:
        return prove_layout(make().layout, timeout)

    lay = make().layout
    method = z3_method(*(x for b in lay for x in (b.offset, b.rows, b.cols, b.stack)))
    return Obligation(
        f"{cid}/{method}/layout",
        cid,
        "Proposition 1",
        method,
        check,
        statement="every block is injective (row-major), blocks of one channel are disjoint, all lie in the sequence",
    )


def standard_obligations(
    cid: str,
    paper_ref: str,
    make: Callable[[], Construction],
    *,
    sympy_sizes: bool = True,
    exact: bool = True,
    numeric_tol: float | None = 1e-12,
) -> list[Obligation]:
    """sympy + exact + numeric + z3 intents + layout, for one instance of a construction."""
    obs: list[Obligation] = []
    con = make()
    tag = "-".join(f"{k}{v}" for k, v in sorted(con.sizes.items())) or "0"
    if sympy_sizes:
        obs.append(
            Obligation(
                f"{cid}/sympy/{tag}", cid, paper_ref, "sympy", sympy_check(make), "program == reference on symbols"
            )
        )
    if exact and con.exact:
        obs.append(
            Obligation(
                f"{cid}/exact/{tag}",
                cid,
                paper_ref,
                "exact",
                exact_check(make),
                "program == reference on random rationals",
            )
        )
    if numeric_tol is not None:
        obs.append(
            Obligation(
                f"{cid}/numeric/{tag}",
                cid,
                paper_ref,
                "numeric",
                numeric_check(make, numeric_tol),
                f"float64 within {numeric_tol:g}",
            )
        )
    return obs


# -- a fast, sound canonical form for the SymPy obligations ------------------------------------
def exp_canonical(e: Any) -> Any:
    """A form of ``e`` that is 0 iff ``e`` vanishes for all real values of its symbols.

    When ``e`` is a rational function of exponentials of rational linear forms in real symbols
    x_s (softmax's case), each exp(sum a_s x_s) becomes prod t_s^(a_s D) with t_s = exp(x_s / D)
    a positive symbol (D = lcm of the denominators of the a_s); x -> t is a bijection R -> R+,
    so ``e`` is identically 0 iff the resulting rational function cancels to 0.  Otherwise falls
    back to ``sp.simplify``.  A ``Max``/``Min`` (the max-shifted variant's row max) is first
    replaced by a fresh real symbol: an identity in that free symbol holds in particular at the
    max (a generalization; it is never needed for soundness that the symbol be the max).
    """
    e = sp.sympify(e)
    opaque = sorted(e.atoms(sp.Max, sp.Min), key=sp.default_sort_key)
    e = e.xreplace({m: sp.Symbol(f"_m{k}", real=True) for k, m in enumerate(opaque)})
    syms = sorted(e.free_symbols, key=str)
    atoms = list(e.atoms(sp.exp))
    linear: list[dict[Any, Any]] = []
    for at in atoms:
        d = sp.expand(at.args[0]).as_coefficients_dict()
        if any(s not in syms or not v.is_Rational for s, v in d.items()):
            return sp.simplify(within_nodes(e, CANCEL_NODES, "a program - reference difference"))
        linear.append(d)
    den = math.lcm(1, *(int(v.q) for d in linear for v in d.values()))
    t = {s: sp.Symbol(f"_t_{s}", positive=True) for s in syms}
    rep = {at: sp.Mul(*(t[s] ** (v * den) for s, v in d.items())) for at, d in zip(atoms, linear, strict=True)}
    out = e.xreplace(rep)
    if out.free_symbols & set(syms):
        return sp.simplify(within_nodes(e, CANCEL_NODES, "a program - reference difference"))
    return cancelled(out, "a program - reference difference")


def embedded_obligations(
    cid: str, paper_ref: str, build: Callable[[MatRef], tuple[MatRef, list[Intent]]], stacked: bool = True
) -> list[Obligation]:
    """Z3, all sizes: the composable form's selectors at ANY offset inside ANY longer sequence.

    The operand is a (rows, cols) matrix, or a stack (heads, rows, cols) when ``stacked``, at a
    symbolic ``offset`` >= 0 in a sequence of offset + size + ``pad`` positions (pad >= 0): what
    composition needs, beyond the harness.
    """
    off, pad = C.Size("offset", 2), C.Size("pad", 3)
    stack: Any = C.Size("heads", 2) if stacked else 1
    blk = Block.of("A", off, C.Size("rows", 2), C.Size("cols", 4), stack)
    layout = Layout.of(blk, length=blk.end_expr() + pad)
    _, intents = build(MatRef(C.tokens, blk))
    obs = []
    for it in intents:

        def check(timeout: float, name: str = it.name) -> Outcome:
            # built here, not when listed: the check sees the code as it is when it runs (mutation testing)
            it = next(i for i in build(MatRef(C.tokens, blk))[1] if i.name == name)
            wide = dataclasses.replace(it, minimum=(("offset", 0), ("pad", 0), *it.minimum))
            return check_intent(wide, layout, timeout=timeout)

        obs.append(
            Obligation(
                f"{cid}/z3-parametric/{it.name}-embedded",
                cid,
                paper_ref,
                "z3-parametric",
                check,
                statement=f"{it.statement}; operand at any offset in any longer sequence",
            )
        )
    return obs
