"""`attnsim verify`: run every proof obligation, print the table and the scope, exit 0 only if all hold."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from attnsim import catalog
from attnsim.cli.commands import (
    EXIT_FAILED,
    UsageError,
    clip,
    command,
    nonneg_int,
    out_console,
    positive_float,
    positive_int,
    print_table,
)
from attnsim.proofs import registry
from attnsim.proofs.obligation import NOT_PROVED, cause_kind, settle
from attnsim.verify.budgets import DEFAULT_TIMEOUT, run_budgeted
from attnsim.verify.cache import DEFAULT_DIR
from attnsim.verify.campaign import open_campaign
from attnsim.verify.dask_runner import SchedulerError, parse_local
from attnsim.verify.mutation.report import run_cli
from attnsim.verify.runner import SmtOptions
from attnsim.verify.scope import runnable, scope_tables, skipped_rows
from attnsim.version import __version__


# -- verify ------------------------------------------------------------------------------------
def _verify_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the results as a JSON list on stdout")
    p.add_argument("--only", metavar="PREFIX", help="run only obligations whose id starts with PREFIX")
    p.add_argument(
        "--timeout",
        type=positive_float,
        default=None,
        help="seconds per obligation, then: unknown (default: each one's budget, 10-60 s; deep ones 30-900 s, "
        "see attnsim/verify/budgets.py)",
    )
    p.add_argument("--jobs", "-j", type=positive_int, default=None, help="worker processes (default: all cores)")
    p.add_argument("--deep", action="store_true", help="also run the slow, larger-bound obligations")
    p.add_argument("--mutants", action="store_true", help="mutation testing: every mutant must be killed")
    p.add_argument(
        "--max-mutants", type=nonneg_int, default=None, help="with --mutants: sample size (default 12, 0: all)"
    )
    p.add_argument(
        "--cross-check", action="store_true", help="re-check every deciding Z3 query with cvc5 (sat vs unsat fails)"
    )
    p.add_argument("--smt2", metavar="DIR", help="write every deciding Z3 query to DIR as a standalone .smt2 file")
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the checks on a Dask cluster (tcp://host:port), or on a local one of N worker processes "
        '(local:N); needs pip install "attnsim[dask]"',
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="reuse the decisive results stored in the cache for unchanged checks; run only the rest",
    )
    p.add_argument(
        "--cache",
        metavar="DIR",
        help="where results are stored as JSON, each as soon as it is known (default with --resume: .attnsim-cache)",
    )
    p.add_argument(
        "--summary", action="store_true", help="one row per construction, then the failed, unknown and conditional rows"
    )
    p.add_argument(
        "--failures-only",
        action="store_true",
        help="only the failed, unknown and conditional obligations (conditional: not proved, no failure: exit 0)",
    )


def _verify_validate(args: argparse.Namespace) -> str | None:
    if args.max_mutants is not None and not args.mutants:
        return "argument --max-mutants: only with --mutants"
    if args.mutants and (args.summary or args.failures_only):
        return "--summary and --failures-only apply to obligations, not to --mutants"
    if args.scheduler and args.jobs is not None:
        return "--jobs sets the local pool's workers; with --scheduler the cluster's workers run the checks (local:N)"
    if args.resume and args.smt2:
        return "--resume with --smt2: the queries of reused results would not be written; run --smt2 without --resume"
    if args.scheduler:
        try:
            parse_local(args.scheduler)  # a bad local:N is a usage error before anything starts
        except SchedulerError as exc:
            return str(exc)
    return None


def _campaign(args: argparse.Namespace) -> Any:
    """The campaign of --scheduler / --resume / --cache (a context manager), or None: the local pool as before."""
    if not (args.scheduler or args.resume or args.cache):
        return None

    if args.scheduler:
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise UsageError('--scheduler needs Dask, which is not installed: pip install "attnsim[dask]"') from None
    cache_dir = args.cache or (DEFAULT_DIR if args.resume else None)
    return open_campaign(args.scheduler, args.jobs, cache_dir, args.resume, setup=catalog.load)


def _campaign_note(camp: Any, total: int) -> None:
    """One line on stderr: where the results are stored and how many were reused."""
    if camp.cache is not None:
        print(
            f"cache {camp.cache.dir}: {camp.cache.reused} of {total} results reused, {camp.ran} run, "
            f"{camp.cache.written} written",
            file=sys.stderr,
        )


def _summary_rows(results: Sequence[Any]) -> list[dict[str, Any]]:
    """Per construction, in first-seen order: counts by status and total seconds."""
    rows: dict[str, dict[str, Any]] = {}
    for r in results:
        row = rows.setdefault(
            r.construction,
            {
                "construction": r.construction,
                "obligations": 0,
                "proved": 0,
                "passed": 0,
                "failed": 0,
                "unknown": 0,
                "conditional": 0,
                "seconds": 0.0,
                "units": 0,
            },
        )
        row["obligations"] += 1
        row[r.status] += 1
        row["seconds"] = round(row["seconds"] + r.seconds, 3)
        row["units"] += r.units
    return list(rows.values())


def units_text(units: int) -> str:
    """Z3 resource units, short: 1.9M, 840k, 0 (the reproducible measure of a check's solver work)."""
    if units >= 1_000_000:
        return f"{units / 1_000_000:.1f}M"
    return f"{units / 1000:.0f}k" if units >= 1000 else str(units)


def _obligation_table(results: Sequence[Any], title: str, terminal: bool) -> Table:
    table = Table(title=title)
    width = max((len(r.id) for r in results), default=2)
    table.add_column("id", no_wrap=True, min_width=width)  # ids stay whole: never folded
    for col in ("method", "bound", "status", "s", "Z3 units"):
        table.add_column(col, no_wrap=True)
    table.add_column("detail", overflow="fold")
    colors = {"proved": "green", "passed": "cyan", "conditional": "magenta", "failed": "bold red", "unknown": "yellow"}
    for r in results:
        table.add_row(
            r.id,
            r.method,
            "" if r.bound is None else str(r.bound),
            f"[{colors[r.status]}]{r.status}[/]",
            f"{r.seconds:.2f}",
            units_text(r.units),
            escape(clip(r.detail, 160) if terminal else " ".join(r.detail.split())),
        )
    return table


def _smt_options(args: argparse.Namespace) -> Any:
    """--cross-check / --smt2 as runner options (None when neither is given); bad values are usage errors."""

    if args.cross_check:
        try:
            import cvc5  # noqa: F401
        except ImportError:
            raise UsageError("--cross-check needs cvc5: pip install 'attnsim[smt]' (or pip install cvc5)") from None
    directory = None
    if args.smt2:
        directory = Path(args.smt2)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"--smt2 {args.smt2}: cannot create the directory ({exc.strerror})") from None
    if not (args.cross_check or directory):
        return None
    return SmtOptions(directory, args.cross_check)


def smt_summary(results: Sequence[Any], smt: Any) -> str:
    """One line: deciding queries exported / confirmed by cvc5 / left unknown / disagreements, summed
    from each row's typed ``second_solver`` record."""
    two = [r.second_solver for r in results if r.second_solver is not None]
    total = sum(t.exported for t in two)
    confirmed, unknown = sum(t.confirmed for t in two), sum(t.unknown for t in two)
    skipped, units = sum(t.unchecked for t in two), sum(t.units for t in two)
    seconds = sum(t.seconds for t in two)
    disagree = [r.id for r in results if r.second_solver is not None and r.second_solver.disagree]
    where = f" written to {smt.directory}" if smt.directory is not None else ""
    if not smt.cross_check:
        return f"{total} deciding Z3 queries{where}"
    shown = f" ({', '.join(disagree[:5])})" if disagree else ""
    return (
        f"cross-check: {total} deciding Z3 queries{where}; cvc5 confirmed {confirmed}, unknown {unknown}, "
        f"not checked {skipped} (each obligation's cvc5 budget of resource units), "
        f"disagreed on {len(disagree)}{shown}; cvc5 work {units:,} resource units, {seconds:.1f} s (summed over "
        "workers, apart from the obligations' own times)"
    )


COQ_INSTALL = (
    "apt-get install coq libcoq-mathcomp-ssreflect libcoq-mathcomp-algebra libcoq-mathcomp-algebra-tactics "
    "libcoq-mathcomp-analysis libcoq-mathcomp-zify"
)


@command("verify", _verify_args, _verify_validate)
def verify(args: argparse.Namespace) -> int:
    """Run every proof obligation and print the table; exit 0 only if none failed or stayed unknown."""

    err = Console(stderr=True)
    obs, without_coq = _selected(args, err)
    smt = None if args.mutants else _smt_options(args)
    campaign = _campaign(args)
    if args.mutants:
        if args.timeout is None:
            args.timeout = DEFAULT_TIMEOUT
        if campaign is None:
            return run_cli(args)
        with campaign as camp:
            code = run_cli(args, camp)
            _campaign_note(camp, camp.cache.reused + camp.ran if camp.cache is not None else camp.ran)
        return code
    t0 = time.perf_counter()
    results = _run(obs, args, smt, campaign, err)
    results = settle(results)  # a conclusion whose premises did not all hold in this run: conditional
    total = time.perf_counter() - t0
    bad = [r for r in results if r.status in ("failed", "unknown")]
    shown = [r for r in results if r.status in NOT_PROVED]  # --failures-only: conditional is not proved either
    counts = Counter(r.status for r in results)
    count_line = ", ".join(f"{counts[k]} {k}" for k in ("proved", "passed", "conditional", "failed", "unknown"))
    count_line += f"; {len(results)} obligations in {total:.1f} s, {units_text(sum(r.units for r in results))} Z3 units"
    if args.json:
        _print_json(args, results, shown, counts, without_coq)
    else:
        _print_tables(args, results, shown, obs, without_coq, smt, count_line)
    if not bad:
        err.print(f"total time {total:.1f} s")
        return 0
    why = f"attnsim verify: not verified: {count_line}"
    kinds = Counter(k for r in bad if r.status == "unknown" and (k := cause_kind(r.cause)))
    if kinds:  # kept apart: only a budget exhausted by time may be helped by a larger --timeout
        told = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        why += f"; unknown: {told} (each row says why, and whether a larger --timeout can help)"
    print(why, file=sys.stderr)
    return EXIT_FAILED


def _selected(args: argparse.Namespace, err: Console) -> tuple[list[Any], list[Any]]:
    """The obligations to run, and the kernel ones left out when coqc is not installed."""
    obs = registry.select(args.only, include_deep=args.deep)
    if not obs:
        deep = len(registry.select(args.only, include_deep=True))
        if deep:
            raise UsageError(f"{args.only!r} matches only --deep obligations ({deep}): add --deep to run them")
        raise UsageError(
            f"no obligation matches {args.only!r} (an id prefix, e.g. `matmul/` or `matmul/z3-parametric`)"
        )
    chosen = len(obs)
    obs = registry.with_premises(obs)
    if len(obs) > chosen:  # --only on a conclusion: its premises run too, so it can settle proved
        err.print(f"--only: also running {len(obs) - chosen} premise(s) of the selected obligations (their requires)")
    obs, without_coq = runnable(obs)
    if without_coq:  # not run, never proved: said once, a skipped JSON row each, listed as not run in the scope
        err.print(f"{len(without_coq)} obligation(s) running Coq not run: coqc not installed ({COQ_INSTALL})")
        if not obs:
            raise UsageError(f"the selected obligations run Coq, which is not installed: {COQ_INSTALL}")
    return obs, without_coq


def _run(obs: list[Any], args: argparse.Namespace, smt: Any, campaign: Any, err: Console) -> list[Any]:
    """Run the obligations (on the campaign's cluster when there is one) with a progress bar."""
    with contextlib.ExitStack() as stack:
        camp = stack.enter_context(campaign) if campaign is not None else None
        prog = stack.enter_context(
            Progress(
                TextColumn("verify"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=err,
                transient=True,
            )
        )
        task = prog.add_task("verify", total=len(obs))
        if camp is None:
            results = run_budgeted(
                obs, jobs=args.jobs, timeout=args.timeout, on_done=lambda r: prog.advance(task), smt=smt
            )
        else:
            results = camp.obligations(obs, args.timeout, smt, on_done=lambda r: prog.advance(task))
    if camp is not None:
        _campaign_note(camp, len(obs))
    return results


def _print_json(
    args: argparse.Namespace, results: list[Any], shown: list[Any], counts: Counter[str], without_coq: list[Any]
) -> None:
    """The results (or the summary per construction) as JSON on stdout; ``shown``: the rows that are
    not proved (failed, unknown, conditional); an obligation running Coq, not run without coqc: a skipped row."""
    if args.summary:
        data: Any = {
            "counts": dict(counts + Counter(r.status for r in skipped_rows(without_coq))),
            "constructions": _summary_rows(results),
            "not_ok": [r.as_dict() for r in shown],
        }
    else:
        data = [r.as_dict() for r in (shown if args.failures_only else [*results, *skipped_rows(without_coq)])]
    print(json.dumps(data, indent=1))


def _print_tables(
    args: argparse.Namespace,
    results: list[Any],
    shown: list[Any],
    obs: list[Any],
    without_coq: list[Any],
    smt: Any,
    count_line: str,
) -> None:
    """The results as tables (or the summary per construction), the scope table and the counts."""
    out = out_console()
    title = f"attnsim {__version__}: proof obligations"
    if args.summary:
        table = Table(title=f"{title}, per construction")
        for col in ("construction", "obligations", "proved", "passed", "failed", "unknown", "s", "Z3 units"):
            table.add_column(col, no_wrap=True, justify="left" if col == "construction" else "right")
        for row in _summary_rows(results):
            bad_row = row["failed"] or row["unknown"]
            table.add_row(
                row["construction"],
                *(str(row[k]) for k in ("obligations", "proved", "passed")),
                f"[{'bold red' if row['failed'] else 'default'}]{row['failed']}[/]",
                f"[{'yellow' if row['unknown'] else 'default'}]{row['unknown']}[/]",
                f"[{'bold' if bad_row else 'default'}]{row['seconds']:.1f}[/]",
                units_text(row["units"]),
            )
        print_table(out, table)
    if args.failures_only or args.summary:
        if shown:
            print_table(out, _obligation_table(shown, f"{title}: failed, unknown or conditional", out.is_terminal))
        else:
            out.print("no obligation failed, stayed unknown or is conditional")
    else:
        print_table(out, _obligation_table(results, title, out.is_terminal))

    ran = {o.id for o in obs}
    every = registry.select(args.only, include_deep=True)
    skipped = [o for o in every if o.id not in ran and (registry.is_deep(o) or o in without_coq)]
    # what a complete run at this depth would run and this one left out (--only): not evaluated
    absent = ran | {o.id for o in without_coq}
    unrun = [o for o in registry.all_obligations(include_deep=args.deep) if o.id not in absent]
    for table in scope_tables(results, skipped, unrun):  # per construction and per paper result
        print_table(out, table)
    out.print(count_line)
    if smt is not None:
        out.print(smt_summary(results, smt))
