"""The `attnsim report` subcommand (a rich progress bar on stderr while it measures)."""

from __future__ import annotations

import argparse
from pathlib import Path

from attnsim.cli import command


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, required=True, help="directory for report.md and the PNG figures")
    p.add_argument("--quick", action="store_true", help="sizes <= 16, U <= 8, skip deep obligations")
    p.add_argument("--only", metavar="PREFIX", help="only constructions/obligations whose id starts with PREFIX")
    p.add_argument("--no-verify", action="store_true", help="skip the verify table")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per obligation (then: unknown)")
    p.add_argument("--jobs", "-j", type=int, default=None, help="worker processes for verify")
    p.add_argument("--budget", type=float, default=3.0, help="stop growing a sweep once one size takes this long (s)")


@command("report", _args)
def report(args: argparse.Namespace) -> int:
    """Write PNG figures and report.md (error, cost, selectors, verify) into --out."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from attnsim.report.build import ReportConfig, build_report

    cfg = ReportConfig(
        out=args.out,
        quick=args.quick,
        only=args.only,
        verify=not args.no_verify,
        timeout=args.timeout,
        jobs=args.jobs,
        budget=args.budget,
    )
    err = Console(stderr=True)
    cols = (
        TextColumn("report"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
    )
    with Progress(*cols, console=err, transient=True) as prog:
        task = prog.add_task("start", total=None)
        started = [False]

        def step(desc: str) -> None:
            if started[0]:
                prog.advance(task)
            started[0] = True
            prog.update(task, description=desc)

        res = build_report(cfg, step=step, plan=lambda n: prog.update(task, total=n))
        prog.advance(task)
    out = Console()
    out.print(f"wrote {res.markdown} and {len(res.figures)} figure(s) to {args.out}")
    for s in res.skipped:
        out.print(f"  [yellow]skipped[/]: {s}")
    bad = res.verify_counts.get("failed", 0) + res.verify_counts.get("unknown", 0)
    return 1 if bad else 0
