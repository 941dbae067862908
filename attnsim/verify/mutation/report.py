"""``attnsim verify --mutants``: the per-construction summary, the tables (or JSON) and the exit code.

Anything neither killed nor proven equivalent is listed as a survivor, and makes the run fail."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from attnsim.verify.mutation.plan import DEFAULT_MAX_MUTANTS, Job, plan
from attnsim.verify.mutation.pool import run_jobs
from attnsim.verify.mutation.run import MutantResult


def summarize(jobs: Sequence[Job], results: Sequence[MutantResult]) -> list[dict[str, Any]]:
    """Per construction: mutants, killed, equivalent, survived, how they were killed."""
    out = []
    for job in jobs:
        rs = [r for r in results if r.mutant.construction == job.name]
        methods: dict[str, int] = {}
        for r in rs:
            if r.by:
                meth = r.by.split("/")[1]
                methods[meth] = methods.get(meth, 0) + 1
        out.append(
            {
                "construction": job.name,
                "mutants": len(rs),
                "sites_total": job.total,
                "killed": sum(r.killed for r in rs),
                "equivalent": sum(r.equivalent for r in rs),
                "claim_only": sum(r.claim_only for r in rs),
                "survived": sum(r.survived for r in rs),
                "by_method": methods,
                "obligations": len(job.obligations),
            }
        )
    return out


def run_cli(args: Any, campaign: Any = None) -> int:
    """``attnsim verify --mutants``: the table (or JSON); exit 1 when a non-equivalent mutant survives.

    ``campaign`` (:class:`attnsim.verify.campaign.Campaign`): run the mutants through it (a Dask
    cluster, the result cache) instead of the local forked pool."""
    import json

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    err = Console(stderr=True)
    t0 = time.perf_counter()
    cap = getattr(args, "max_mutants", None)
    jobs = plan(args.only, DEFAULT_MAX_MUTANTS if cap is None else cap, include_deep=getattr(args, "deep", False))
    n = sum(len(j.mutants) for j in jobs)
    with Progress(
        TextColumn("mutants"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err, transient=True
    ) as prog:
        task = prog.add_task("mutants", total=n)
        if campaign is None:
            results = run_jobs(jobs, workers=args.jobs, timeout=args.timeout, on_done=lambda r: prog.advance(task))
        else:
            results = campaign.mutants(jobs, args.timeout, on_done=lambda r: prog.advance(task))
    total = time.perf_counter() - t0
    survivors = [r for r in results if r.survived]
    broken = [j for j in jobs if j.error]
    if args.json:
        print(json.dumps([r.as_dict() for r in results], indent=1))
    else:
        out = Console()
        table = Table(title="mutation testing: every mutant must be killed or proven equivalent")
        for col in ("construction", "killed / total", "equivalent", "survived", "killed by", "sampled"):
            table.add_column(col, overflow="fold")
        for s in summarize(jobs, results):
            ok = s["survived"] == 0
            table.add_row(
                s["construction"],
                f"[{'green' if ok else 'bold red'}]{s['killed']} / {s['mutants']}[/]",
                str(s["equivalent"]),
                f"[{'green' if ok else 'bold red'}]{s['survived']}[/]",
                ", ".join(f"{k} {v}" for k, v in sorted(s["by_method"].items(), key=lambda kv: -kv[1])),
                "" if s["mutants"] == s["sites_total"] else f"{s['mutants']} of {s['sites_total']} (seeded)",
            )
        out.print(table)
        for j in broken:
            out.print(f"[bold red]{j.name}: {j.error}[/]")
        rest = [r for r in results if not r.killed]
        if rest:
            t2 = Table(title="equivalent and surviving mutants")
            for col in ("construction", "mutant", "status", "proof / detail"):
                t2.add_column(col, overflow="fold")
            for r in rest:
                st = (
                    "[yellow]equivalent[/]"
                    if r.equivalent
                    else "[cyan]claim only[/]"
                    if r.claim_only
                    else "[bold red]SURVIVED[/]"
                )
                t2.add_row(r.mutant.construction, r.mutant.description, st, (r.proof or r.detail)[:300])
            out.print(t2)
        out.print(
            f"{sum(r.killed for r in results)} killed, {sum(r.equivalent for r in results)} equivalent, "
            f"{sum(r.claim_only for r in results)} claim-only (an intent changed, the program not: not counted "
            f"as killed), {len(survivors)} survived; {len(results)} mutants in {total:.1f} s"
        )
    err.print(f"total time {total:.1f} s")
    for j in broken:
        err.print(f"{j.name}: {j.error}")
    return 1 if survivors or broken else 0
