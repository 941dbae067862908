"""The `attnsim` command line: verify (and, as issues land, audit, simulate, report, bench, compile)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from attnsim import __version__

COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {}


def command(
    name: str, configure: Callable[[argparse.ArgumentParser], None]
) -> Callable[[Callable[[argparse.Namespace], int]], Callable[[argparse.Namespace], int]]:
    """Register a subcommand: ``configure`` adds its arguments, the decorated function runs it."""

    def deco(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        COMMANDS[name] = (configure, fn)
        return fn

    return deco


# -- verify ------------------------------------------------------------------------------------
def _verify_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the results as a JSON list on stdout")
    p.add_argument("--only", metavar="PREFIX", help="run only obligations whose id starts with PREFIX")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per obligation (then: unknown)")
    p.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: all cores)")
    p.add_argument("--deep", action="store_true", help="also run the slow, larger-bound obligations")
    p.add_argument("--mutants", action="store_true", help="mutation testing: every mutant must be killed")
    p.add_argument("--max-mutants", type=int, default=None, help="with --mutants: sample size (default 12, 0: all)")
    p.add_argument(
        "--cross-check", action="store_true", help="re-check every deciding Z3 query with cvc5 (sat vs unsat fails)"
    )
    p.add_argument("--smt2", metavar="DIR", help="write every deciding Z3 query to DIR as a standalone .smt2 file")


@command("verify", _verify_args)
def verify(args: argparse.Namespace) -> int:
    """Run every proof obligation and print the table; exit 0 only if none failed or stayed unknown."""
    from attnsim.proofs.registry import select
    from attnsim.proofs.runner import run_all

    if args.mutants:
        from attnsim.proofs.mutants import run_cli

        return run_cli(args)
    err = Console(stderr=True)
    smt = _smt_options(args)
    t0 = time.perf_counter()
    obs = select(args.only, include_deep=args.deep)
    if not obs:
        err.print(f"no obligation matches {args.only!r}")
        return 2
    with Progress(
        TextColumn("verify"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err, transient=True
    ) as prog:
        task = prog.add_task("verify", total=len(obs))
        results = run_all(obs, jobs=args.jobs, timeout=args.timeout, on_done=lambda r: prog.advance(task), smt=smt)
    total = time.perf_counter() - t0
    bad = [r for r in results if r.status in ("failed", "unknown")]
    if args.json:
        print(json.dumps([r.as_dict() for r in results], indent=1))
    else:
        out = Console()
        table = Table(title=f"attnsim {__version__}: proof obligations")
        for col in ("id", "method", "bound", "status", "s", "detail"):
            table.add_column(col, overflow="fold")
        colors = {"proved": "green", "passed": "cyan", "failed": "bold red", "unknown": "yellow"}
        for r in results:
            table.add_row(
                r.id,
                r.method,
                "" if r.bound is None else str(r.bound),
                f"[{colors[r.status]}]{r.status}[/]",
                f"{r.seconds:.2f}",
                escape(r.detail[:160]),
            )
        out.print(table)
        from attnsim.proofs.allsizes import print_scope

        print_scope(results, out)  # per construction: all sizes / bounded (sizes <= N) / sampled
        counts = {s: sum(r.status == s for r in results) for s in ("proved", "passed", "failed", "unknown")}
        out.print(", ".join(f"{v} {k}" for k, v in counts.items()) + f"; {len(results)} obligations in {total:.1f} s")
        if smt is not None:
            out.print(smt_summary(results, smt))
    err.print(f"total time {total:.1f} s")
    return 1 if bad else 0


def _smt_options(args: argparse.Namespace) -> Any:
    """--cross-check / --smt2 as runner options (None when neither is given); bad values are usage errors."""
    from attnsim.proofs.runner import SmtOptions

    if args.cross_check:
        try:
            import cvc5  # noqa: F401
        except ImportError:
            raise ValueError("--cross-check needs cvc5: pip install 'attnsim[smt]' (or pip install cvc5)") from None
    directory = None
    if args.smt2:
        directory = Path(args.smt2)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(f"--smt2 {args.smt2}: cannot create the directory ({exc.strerror})") from None
    if not (args.cross_check or directory):
        return None
    return SmtOptions(directory, args.cross_check, args.timeout)


def smt_summary(results: Sequence[Any], smt: Any) -> str:
    """One line: deciding queries exported / confirmed by cvc5 / left unknown / disagreements."""
    import re

    total = confirmed = unknown = 0
    seconds = 0.0
    disagree = []
    for r in results:
        m = re.search(r"cvc5: (\d+) of (\d+) deciding queries confirmed, (\d+) unknown, ([\d.]+) s", r.detail)
        e = re.search(r"(\d+) deciding quer(?:y|ies) exported", r.detail)
        if m:
            confirmed, total, unknown = confirmed + int(m[1]), total + int(m[2]), unknown + int(m[3])
            seconds += float(m[4])
        elif e:
            total += int(e[1])
        if "DISAGREE" in r.detail:
            disagree.append(r.id)
    where = f" written to {smt.directory}" if smt.directory is not None else ""
    if not smt.cross_check:
        return f"{total} deciding Z3 queries{where}"
    shown = f" ({', '.join(disagree[:5])})" if disagree else ""
    return (
        f"cross-check: {total} deciding Z3 queries{where}; cvc5 confirmed {confirmed}, unknown {unknown}, "
        f"disagreed on {len(disagree)}{shown}; cvc5 time {seconds:.1f} s (summed over workers, apart from "
        "the obligations' own times)"
    )


# -- entry point -------------------------------------------------------------------------------
# Modules that define further subcommands with @command (each issue adds its own line).
COMMAND_MODULES: tuple[str, ...] = (
    "attnsim.audit",
    "attnsim.report.command",
    "attnsim.bench",
    "attnsim.compile.cli",
    "attnsim.simulator.cli",
)


def main(argv: Sequence[str] | None = None) -> int:
    import importlib

    for mod in COMMAND_MODULES:
        importlib.import_module(mod)
    parser = argparse.ArgumentParser(
        prog="attnsim", description="Universal simulators of attention, proven three ways."
    )
    parser.add_argument("--version", action="version", version=f"attnsim {__version__}")
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name, (configure, fn) in COMMANDS.items():
        sp = sub.add_parser(name, help=(fn.__doc__ or "").strip().splitlines()[0])
        configure(sp)
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.cmd][1](args)
    except (ValueError, KeyError) as exc:  # user errors: one clear line, no traceback
        print(f"attnsim {args.cmd}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
