"""The `attnsim report` subcommand (a rich progress bar on stderr while it measures)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from attnsim.cli.commands import EXIT_FAILED, command, positive_float, positive_int
from attnsim.report.build import ReportConfig, build_report, selects_anything


class ReportError(ValueError):
    """--out cannot hold the report (exit 2, one line)."""


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, required=True, help="directory for report.md and the PNG figures")
    p.add_argument("--quick", action="store_true", help="sizes <= 16, U <= 8 (and never the deep obligations)")
    p.add_argument("--deep", action="store_true", help="also run the slow, larger-bound obligations (minutes)")
    p.add_argument("--only", metavar="PREFIX", help="only constructions/obligations whose id starts with PREFIX")
    p.add_argument("--no-verify", action="store_true", help="skip the verify table")
    p.add_argument(
        "--timeout",
        type=positive_float,
        default=None,
        help="seconds per obligation, then: unknown (default: each one's budget, see attnsim/verify/budgets.py)",
    )
    p.add_argument("--jobs", "-j", type=positive_int, default=None, help="worker processes for verify")
    p.add_argument(
        "--budget", type=positive_float, default=3.0, help="stop growing a sweep once one size takes this long (s)"
    )


def _validate(args: argparse.Namespace) -> str | None:
    if args.deep and args.quick:
        return "--deep and --quick contradict each other"
    if args.deep and args.no_verify:
        return "--deep runs obligations; --no-verify runs none"
    return None


def prepare_out(out: Path) -> None:
    """Create --out (and its parents) or say in one line why it cannot hold the report."""
    if out.exists() and not out.is_dir():
        raise ReportError(f"--out {out}: exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".attnsim-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ReportError(f"--out {out}: cannot write there ({exc.strerror or exc})") from None


@command("report", _args, _validate)
def report(args: argparse.Namespace) -> int:
    """Write PNG figures and report.md (error, cost, selectors, verify) into --out."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


    if not selects_anything(args.only):
        raise ReportError(f"--only {args.only!r} matches no construction, no obligation and not U")
    prepare_out(args.out)
    cfg = ReportConfig(
        out=args.out,
        quick=args.quick,
        only=args.only,
        verify=not args.no_verify,
        deep=args.deep,
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
    failed, unknown = res.verify_counts.get("failed", 0), res.verify_counts.get("unknown", 0)
    if failed or unknown:
        print(
            f"attnsim report: {failed} obligation(s) failed and {unknown} stayed unknown: see {res.markdown}, "
            "section (d)",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return 0
