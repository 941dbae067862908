"""The scope tables of `attnsim verify`: how far each claim reaches.

An ``all-sizes`` obligation (:func:`attnsim.symbolic.program_equals_spec.spec_obligation`) is
proved only when the construction, built over unbound sizes, equals its independent specification
at a symbolic output entry for every size.  :func:`scope_summary` and :func:`scope_by_result` turn verify
results into one line per construction and per paper result: all sizes, bounded (sizes <= N),
fixed instances or sampled.  A scope is computed only from a run that includes every obligation it
rests on: a construction or paper result some of whose obligations this run left out (``--only``)
is "not evaluated in this run" (what ran of it may be all sizes while what did not is bounded).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from attnsim.proofs.obligation import Obligation, Outcome, Result

Algebra = Callable[[float], Outcome]


# -- what this machine cannot run -----------------------------------------------------------------
NO_COQC = "not run: coqc not installed"


def runnable(obs: Sequence[Obligation]) -> tuple[list[Obligation], list[Obligation]]:
    """(to run, not run here): without ``coqc`` the obligations that run it (the kernel ones and the
    Coq-evaluator checks) are not run (never proved), as ``attnsim verify`` and ``attnsim report``
    both say."""
    if shutil.which("coqc") is not None:
        return list(obs), []
    return [o for o in obs if not needs_coqc(o)], [o for o in obs if needs_coqc(o)]


def needs_coqc(ob: Obligation) -> bool:
    """Whether the obligation runs ``coqc`` (every kernel obligation does)."""
    return ob.method == "kernel" or "coqc" in ob.tools


def skipped_rows(obs: Sequence[Obligation]) -> list[Result]:
    """A ``skipped`` row for each obligation :func:`runnable` left out (every id stays in the JSON)."""
    return [Result.skipped(o, NO_COQC) for o in obs]


# -- the scope line of `attnsim verify` ----------------------------------------------------------
def _sizes_in(oid: str) -> int | None:
    nums = [int(x) for x in re.findall(r"\d+", oid.rsplit("/", 1)[-1])]
    return max(nums) if nums else None


def _not_run(name: str, skipped: Sequence[Obligation]) -> str:
    """The all-sizes (deep) and kernel (no coqc) obligations of a construction that this run skipped, as a note."""
    ids = [o.id for o in skipped if o.construction == name and o.method == "all-sizes"]
    kernel = [o.id for o in skipped if o.construction == name and needs_coqc(o)]
    note = f"; all-sizes obligations not run: {', '.join(ids)} (run --deep to check)" if ids else ""
    return note + (f"; obligations running Coq not run: {', '.join(kernel)} (coqc not installed)" if kernel else "")


NOT_EVALUATED = "not evaluated in this run"


def _partial(what: str, ran: int, left_out: int) -> str:
    return f"{ran} of the {ran + left_out} obligations of {what} ran (--only); a run of all of them decides its scope"


def scope_summary(
    results: Sequence[Result], skipped: Sequence[Obligation] = (), unrun: Sequence[Obligation] = ()
) -> list[tuple[str, str, str]]:
    """Per construction: (name, scope, why), scope in all sizes / bounded (sizes <= N) / sampled / NOT VERIFIED;
    ``skipped``: deep obligations not run (their all-sizes ones are named in why); ``unrun``: the
    obligations of a complete run (at this run's depth) that this run left out: a construction
    with one of them is :data:`NOT_EVALUATED` (unless one that ran failed: NOT VERIFIED)."""
    left_out: dict[str, int] = {}
    for o in unrun:
        left_out[o.construction] = left_out.get(o.construction, 0) + 1
    out = []
    for name, scope, why in _scopes(results):
        if left_out.get(name) and scope != "NOT VERIFIED":
            ran = sum(r.construction == name for r in results)
            out.append((name, NOT_EVALUATED, _partial("the construction", ran, left_out[name])))
        else:
            out.append((name, scope, why + _not_run(name, skipped)))
    return out


def _scopes(results: Sequence[Result]) -> list[tuple[str, str, str]]:  # noqa: C901, PLR0912
    by: dict[str, list[Result]] = {}
    for r in results:
        by.setdefault(r.construction, []).append(r)
    out = []
    for name, rs in by.items():
        bad = [r for r in rs if r.status in ("failed", "unknown")]
        if bad:
            out.append((name, "NOT VERIFIED", f"{len(bad)} failed/unknown, e.g. {bad[0].id}"))
            continue
        cond = [r for r in rs if r.status == "conditional"]
        if cond:
            on = sorted({q for r in cond for q in r.requires})
            cond_why = f"{', '.join(r.id for r in cond)} rest on {', '.join(on)}, not all proved in this run"
            out.append((name, "conditional", cond_why))
            continue
        alls = [r for r in rs if r.method == "all-sizes" and r.status == "proved"]
        # kernel-checked: Coq checked the catalogue's own construction (not a variant of it)
        kern = [r for r in rs if r.method == "kernel" and r.status == "proved" and r.kernel and r.kernel.registered]
        bounded = [r.bound for r in rs if r.method == "z3-bounded" and r.status == "proved" and r.bound]
        sym = [s for r in rs if r.method == "sympy" and r.status == "proved" if (s := _sizes_in(r.id)) is not None]
        par = [r for r in rs if r.method == "z3-parametric" and r.status == "proved"]
        inst = [r for r in rs if r.method == "z3-instance" and r.status == "proved"]
        sampled = [r for r in rs if r.status == "passed"]
        if kern:  # Coq's kernel checked the program against MathComp's definition (at every size it has)
            ids = ", ".join(f"{r.id} ({r.seconds:.1f} s)" for r in kern + alls)
            every = alls or any(r.kernel and r.kernel.sizes for r in kern)  # else one fixed size (3 x 3)
            out.append((name, "all sizes, kernel-checked" if every else "fixed size, kernel-checked", ids))
        elif alls:
            out.append((name, "all sizes", ", ".join(f"{r.id} ({r.seconds:.1f} s)" for r in alls)))
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


def scope_by_result(
    results: Sequence[Result], skipped: Sequence[Obligation] = (), unrun: Sequence[Obligation] = ()
) -> list[tuple[str, str, str]]:
    """Per paper result: "all sizes" only when every construction backing it is all sizes in this run;
    ``skipped``: deep obligations not run, named where they back the result; ``unrun``: the
    obligations of a complete run (at this run's depth) that this run left out: a result backed by
    one of them, or by a construction with one of them, is :data:`NOT_EVALUATED` (unless a
    construction backing it failed: NOT VERIFIED)."""
    per_con = {name: (scope, why) for name, scope, why in scope_summary(results, (), unrun)}
    by: dict[str, set[str]] = {}
    for r in results:
        by.setdefault(r.paper_ref, set()).add(r.construction)
    out = []
    for ref, cons in sorted(by.items()):
        scopes = {c: per_con[c][0] for c in sorted(cons)}
        left = sum(o.paper_ref == ref for o in unrun)
        partial = [c for c, s in scopes.items() if s == NOT_EVALUATED]
        if (left or partial) and "NOT VERIFIED" not in scopes.values():
            why = [_partial("the result", sum(r.paper_ref == ref for r in results), left)] if left else []
            why += [f"constructions not evaluated: {', '.join(partial)}"] if partial else []
            out.append((ref, NOT_EVALUATED, "; ".join(why)))
        elif all(s.startswith("all sizes") for s in scopes.values()):
            out.append((ref, "all sizes", ", ".join(scopes)))
        elif any(s == "NOT VERIFIED" for s in scopes.values()):
            bad = [c for c, s in scopes.items() if s == "NOT VERIFIED"]
            out.append((ref, "NOT VERIFIED", f"{', '.join(bad)} failed or unknown"))
        elif any(s == "conditional" for s in scopes.values()):
            cond = [f"{c}: {per_con[c][1]}" for c, s in scopes.items() if s == "conditional"]
            out.append((ref, "conditional", "; ".join(cond)))
        else:
            weaker = [f"{c}: {s}" for c, s in scopes.items() if not s.startswith("all sizes")]
            deep = [o.id for o in skipped if o.paper_ref == ref and o.method == "all-sizes"]
            note = f"; not run: {', '.join(deep)} (run --deep to check)" if deep else ""
            out.append((ref, "not all sizes", "; ".join(weaker) + note))
    return out


def scope_tables(
    results: Iterable[Result], skipped: Sequence[Obligation] = (), unrun: Sequence[Obligation] = ()
) -> list[Any]:
    """The scope tables (per construction, per paper result) that follow the verify table, as rich
    Tables (the caller prints them: drawn on a terminal, plain lines in a file); ``skipped``: the
    deep obligations this run did not run (named where they would count); ``unrun``: the
    obligations of a complete run that this one left out (what they back is not evaluated)."""
    from rich.markup import escape
    from rich.table import Table

    rs = list(results)
    colors = {
        "all sizes": "green",
        "all sizes, kernel-checked": "green",
        "fixed size, kernel-checked": "green",
        "NOT VERIFIED": "bold red",
        "sampled": "yellow",
        "conditional": "magenta",
        NOT_EVALUATED: "dim",
    }
    tables = []
    for title, first, rows in (
        (
            "scope per construction: all sizes / bounded (sizes <= N) / sampled",
            "construction",
            scope_summary(rs, skipped, unrun),
        ),
        (
            "scope per paper result: all sizes only where every construction backing it is",
            "paper result",
            scope_by_result(rs, skipped, unrun),
        ),
    ):
        table = Table(title=title)
        for col in (first, "scope", "because"):
            table.add_column(col, overflow="fold")
        for name, scope, why in rows:
            c = colors.get(scope, "cyan")
            shown = why if len(why) <= 240 else why[:237] + "..."
            table.add_row(escape(name), f"[{c}]{escape(scope)}[/]", escape(shown))
        tables.append(table)
    return tables


__all__ = ["NOT_EVALUATED", "scope_by_result", "scope_summary", "scope_tables"]
