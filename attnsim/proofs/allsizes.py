"""All-sizes lemma proofs: Z3 intents for every size + SymPy aggregation algebra over symbolic bounds.

An ``all-sizes`` obligation is proved only when every part is:

* every selector intent of the construction is proved ``z3-parametric`` (through
  :func:`attnsim.lemmas.base.check_intent`, i.e. the decoding prover of
  :mod:`attnsim.proofs.decode`): each query selects exactly the intended keys, for all sizes;
* the layout is injective, disjoint and in range for all sizes;
* every lemma an intent proof assumed an instance of (``rasp/z3-parametric/...``) is proved;
* the aggregation algebra holds with symbolic bounds (SymPy ``Sum`` over a symbolic range):
  what the average-hard-attention mean over the intended key set computes, times the
  construction's constant, is the textbook quantity.

Lemma authors call :func:`all_sizes_obligation` with an ``algebra`` check built from
:func:`count_mean` / :func:`single_gather` (or their own callable returning an Outcome).
:func:`scope_summary` turns verify results into one line per construction: all sizes, bounded
(sizes <= N) or sampled.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import sympy as sp

from attnsim.proofs import decode
from attnsim.proofs.obligation import Obligation, Outcome, Result

Algebra = Callable[[float], Outcome]


# -- algebra checks ------------------------------------------------------------------------------
def _zero(expr: Any) -> bool:
    return bool(sp.simplify(expr) == 0)


def count_mean(
    term: sp.Expr, index: sp.Symbol, count: sp.Expr, what: str = "", factor: sp.Expr | None = None
) -> Algebra:
    """``factor * mean_{index < count} term == Sum_{index < count} term``, with ``count`` symbolic.

    The intent proves the selected key set of a query is exactly ``{index : 0 <= index < count}``;
    AHAT averages over it (``Sum term / Sum 1``); the construction multiplies the mean by
    ``factor`` (default ``count``: a sum is count x mean).  A wrong factor fails.
    """
    mult = count if factor is None else factor

    def check(timeout: float) -> Outcome:
        rng = (index, 0, count - 1)
        total = sp.Sum(term, rng)
        width = sp.Sum(sp.Integer(1), rng).doit()
        program = mult * (total / width)
        diff = sp.simplify(program - total)
        if diff != 0:
            return Outcome.bad(f"{what}: {mult} x mean over {index} < {count} - sum = {diff}")
        return Outcome.good(
            f"{what or 'sum'}: {mult} x mean over the {width} keys {index} < {count} = {sp.sstr(total)} (SymPy)"
        )

    return check


def single_gather(
    flat: sp.IndexedBase | None = None,
    what: str = "gather",
    weight: Callable[[sp.Symbol, sp.Symbol], sp.Expr] | None = None,
) -> Algebra:
    """The mean over a key set holding exactly one position p (0 <= p < N) is the value at p.

    ``Sum_m X[m] w(m, p) / Sum_m w(m, p)`` over ``0 <= m < N`` with N and p symbolic, where the
    selection weight ``w`` is what the intent proves (default: ``[m = p]``, exactly the key p).
    """
    sel = weight or (lambda m, p: sp.KroneckerDelta(m, p))

    def check(timeout: float) -> Outcome:
        x = flat if flat is not None else sp.IndexedBase("X")
        m, p = sp.Symbol("m", integer=True), sp.Symbol("p", integer=True, nonnegative=True)
        t = sp.Symbol("t", integer=True, nonnegative=True)
        n = p + 1 + t  # N > p: the position lies in the sequence (block-position)
        num = sp.Sum(x[m] * sel(m, p), (m, 0, n - 1)).doit()
        den = sp.Sum(sel(m, p), (m, 0, n - 1)).doit()
        diff = sp.simplify(num / den - x[p])
        if diff != 0:
            return Outcome.bad(f"{what}: mean over the selected keys - X[p] = {diff}")
        return Outcome.good(f"{what}: mean over the one selected key p = X[p] for every N > p (SymPy)")

    return check


def both(*checks: Algebra) -> Algebra:
    """All of the algebra checks (details joined)."""

    def check(timeout: float) -> Outcome:
        parts = []
        for c in checks:
            out = c(timeout)
            if out.ok is not True:
                return out
            parts.append(out.detail)
        return Outcome.good("; ".join(parts))

    return check


# -- the obligation -----------------------------------------------------------------------------
def all_sizes_check(make: Callable[[], Any], algebra: Algebra) -> Callable[[float], Outcome]:
    """The check behind :func:`all_sizes_obligation` (``make`` returns a Construction)."""

    def check(timeout: float) -> Outcome:
        from attnsim.lemmas.base import check_intent, prove_layout

        t0 = time.perf_counter()

        def left() -> float:
            return max(0.05, timeout - (time.perf_counter() - t0))

        con = make()
        used: set[str] = set()
        for it in con.intents:
            if not it.parametric:
                return Outcome.bad(f"intent {it.name} is registered z3-bounded: no all-sizes claim")
            out = check_intent(it, con.layout, timeout=left())
            if out.ok is not True:
                return Outcome(out.ok, f"intent {it.name}: {out.detail}")
            used |= set(decode.lemmas_in(out.detail))
        out = prove_layout(con.layout, left())
        if out.ok is not True:
            return Outcome(out.ok, f"layout: {out.detail}")
        used |= set(decode.lemmas_in(out.detail))
        for name in sorted(used):
            out = decode.lemma_outcome(name, left())
            if out.ok is not True:
                return Outcome(out.ok, f"lemma {name}: {out.detail}")
        try:
            alg = algebra(left())
        except Exception as exc:  # an algebra that crashes proves nothing
            return Outcome.bad(f"algebra: {type(exc).__name__}: {exc}")
        if alg.ok is not True:
            return Outcome(alg.ok, f"algebra: {alg.detail}")
        return Outcome.good(
            f"{len(con.intents)} intent(s) and the layout for all sizes, lemmas {', '.join(sorted(used)) or 'none'}; "
            f"algebra: {alg.detail}"
        )

    return check


def all_sizes_obligation(
    cid: str,
    paper_ref: str,
    make: Callable[[], Any],
    algebra: Algebra,
    statement: str = "",
    detail: str = "lemma",
) -> Obligation:
    """One ``all-sizes`` obligation for a construction: intents + layout + lemmas + algebra."""
    return Obligation(
        f"{cid}/all-sizes/{detail}",
        cid,
        paper_ref,
        "all-sizes",
        all_sizes_check(make, algebra),
        statement=statement or "every selector intent and the layout for all sizes, plus the aggregation algebra",
    )


def spec_obligation(
    cid: str,
    paper_ref: str,
    makes: Sequence[Callable[[], Any]],
    statement: str,
    detail: str = "lemma",
) -> Obligation:
    """``all-sizes`` by symbolic execution: each symbolic build (unbound sizes) equals its
    independent specification at a symbolic entry, for all sizes (:mod:`attnsim.symbolic.execute`)."""

    def check(timeout: float) -> Outcome:
        from attnsim.symbolic.execute import prove_program_equals_spec

        t0 = time.perf_counter()
        parts = []
        for make in makes:
            con = make()
            if not con.free_sizes:
                return Outcome.bad(f"{con.name}: built with no unbound size, so no all-sizes claim")
            out = prove_program_equals_spec(con, timeout=max(0.05, timeout - (time.perf_counter() - t0)))
            if out.ok is not True:
                return out
            parts.append(f"[{', '.join(sorted(con.free_sizes))}] {out.detail}")
        return Outcome.good(" | ".join(parts))

    return Obligation(f"{cid}/all-sizes/{detail}", cid, paper_ref, "all-sizes", check, statement=statement)


# -- the scope line of `attnsim verify` ----------------------------------------------------------
def _sizes_in(oid: str) -> int | None:
    nums = [int(x) for x in re.findall(r"\d+", oid.rsplit("/", 1)[-1])]
    return max(nums) if nums else None


def scope_summary(results: Sequence[Result]) -> list[tuple[str, str, str]]:
    """Per construction: (name, scope, why), scope in all sizes / bounded (sizes <= N) / sampled / NOT VERIFIED."""
    by: dict[str, list[Result]] = {}
    for r in results:
        by.setdefault(r.construction, []).append(r)
    out = []
    for name, rs in by.items():
        bad = [r for r in rs if r.status in ("failed", "unknown")]
        if bad:
            out.append((name, "NOT VERIFIED", f"{len(bad)} failed/unknown, e.g. {bad[0].id}"))
            continue
        alls = [r for r in rs if r.method == "all-sizes" and r.status == "proved"]
        bounded = [r.bound for r in rs if r.method == "z3-bounded" and r.status == "proved" and r.bound]
        sym = [s for r in rs if r.method == "sympy" and r.status == "proved" if (s := _sizes_in(r.id)) is not None]
        par = [r for r in rs if r.method == "z3-parametric" and r.status == "proved"]
        inst = [r for r in rs if r.method == "z3-instance" and r.status == "proved"]
        sampled = [r for r in rs if r.status == "passed"]
        if alls:
            out.append((name, "all sizes", ", ".join(r.id for r in alls)))
        elif bounded or sym:
            n = max([*bounded, *sym])
            why = []
            if bounded:
                why.append(f"z3-bounded <= {max(bounded)}")
            if sym:
                why.append(f"sympy at listed sizes <= {max(sym)}")
            if par:
                why.append(f"{len(par)} z3-parametric part(s), no all-sizes proof")
            if inst:
                why.append(f"{len(inst)} z3-instance proof(s) of fixed instances")
            out.append((name, f"bounded (sizes <= {n})", "; ".join(why)))
        elif par:
            out.append((name, "parts for all sizes", f"{len(par)} z3-parametric, no all-sizes algebra"))
        elif inst:
            out.append((name, "fixed instances", f"{len(inst)} z3-instance proof(s)"))
        elif sampled:
            out.append((name, "sampled", f"{len(sampled)} exact/numeric/sampled check(s)"))
        else:
            out.append((name, "none", "no obligation ran"))
    return out


def scope_by_result(results: Sequence[Result]) -> list[tuple[str, str, str]]:
    """Per paper result: "all sizes" only when every construction backing it is all sizes in this run."""
    per_con = {name: (scope, why) for name, scope, why in scope_summary(results)}
    by: dict[str, set[str]] = {}
    for r in results:
        by.setdefault(r.paper_ref, set()).add(r.construction)
    out = []
    for ref, cons in sorted(by.items()):
        scopes = {c: per_con[c][0] for c in sorted(cons)}
        if all(s == "all sizes" for s in scopes.values()):
            out.append((ref, "all sizes", ", ".join(scopes)))
        elif any(s == "NOT VERIFIED" for s in scopes.values()):
            bad = [c for c, s in scopes.items() if s == "NOT VERIFIED"]
            out.append((ref, "NOT VERIFIED", f"{', '.join(bad)} failed or unknown"))
        else:
            weaker = [f"{c}: {s}" for c, s in scopes.items() if s != "all sizes"]
            out.append((ref, "not all sizes", "; ".join(weaker)))
    return out


def print_scope(results: Iterable[Result], console: Any) -> None:
    """Print the scope tables (per construction, per paper result) after the verify table."""
    from rich.markup import escape
    from rich.table import Table

    rs = list(results)
    colors = {"all sizes": "green", "NOT VERIFIED": "bold red", "sampled": "yellow"}
    for title, first, rows in (
        ("scope per construction: all sizes / bounded (sizes <= N) / sampled", "construction", scope_summary(rs)),
        (
            "scope per paper result: all sizes only where every construction backing it is",
            "paper result",
            scope_by_result(rs),
        ),
    ):
        table = Table(title=title)
        for col in (first, "scope", "because"):
            table.add_column(col, overflow="fold")
        for name, scope, why in rows:
            c = colors.get(scope, "cyan")
            table.add_row(escape(name), f"[{c}]{escape(scope)}[/]", escape(why[:160]))
        console.print(table)


__all__ = [
    "all_sizes_check",
    "all_sizes_obligation",
    "both",
    "count_mean",
    "print_scope",
    "scope_by_result",
    "scope_summary",
    "single_gather",
    "spec_obligation",
]
