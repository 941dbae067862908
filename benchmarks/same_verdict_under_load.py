"""Same commit, same verdicts: the default ``attnsim verify`` on an idle machine and beside CPU hogs.

Issue 27: budgets in seconds made verdicts depend on the machine's load.  With every Z3 query
budgeted in rlimit units (:mod:`attnsim.proofs.solver_work`) and CPU seconds as the only safety
net, the statuses of every obligation must be identical in both runs.  This script runs
``attnsim verify --json`` twice (first as the machine is, then beside ``--hogs`` processes of
``yes > /dev/null``), compares status per obligation and the Z3 units per obligation, and writes
a report (default ``docs/same-verdict-under-load.md``).  It asserts nothing about time.

    PYTHONPATH=$PWD python benchmarks/same_verdict_under_load.py [--hogs 6] [--only PREFIX] [--out FILE]

Exit 0 when every status agrees, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Run:
    """One ``attnsim verify --json`` run: its rows by id, wall seconds, load average at its start."""

    rows: dict[str, dict[str, Any]]
    seconds: float
    load: float
    exit_code: int


def verify(only: str | None) -> Run:
    """``attnsim verify --json`` in a subprocess (this checkout first on the path)."""
    cmd = [sys.executable, "-m", "attnsim.cli", "verify", "--json"] + (["--only", only] if only else [])
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    secs = time.perf_counter() - t0
    try:
        rows = {r["id"]: r for r in json.loads(proc.stdout)}
    except json.JSONDecodeError:
        sys.exit(f"attnsim verify printed no JSON (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
    return Run(rows, secs, load, proc.returncode)


def beside_hogs(n: int, only: str | None) -> Run:
    """:func:`verify` while ``n`` processes of ``yes > /dev/null`` run; they are ended after it."""
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(n)]
    try:
        time.sleep(2)  # let the load rise
        return verify(only)
    finally:
        for h in hogs:
            h.terminate()
        for h in hogs:
            h.wait()


def report(idle: Run, loaded: Run, hogs: int, only: str | None) -> tuple[str, bool]:
    """The markdown report and whether every status agreed."""
    ids = sorted(set(idle.rows) | set(loaded.rows))
    differ = [i for i in ids if idle.rows.get(i, {}).get("status") != loaded.rows.get(i, {}).get("status")]
    units_differ = [i for i in ids if idle.rows.get(i, {}).get("units") != loaded.rows.get(i, {}).get("units")]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)

    def counts(run: Run) -> str:
        c: dict[str, int] = {}
        for r in run.rows.values():
            c[r["status"]] = c.get(r["status"], 0) + 1
        return ", ".join(f"{v} {k}" for k, v in sorted(c.items()))

    lines = [
        "# Same verdicts on an idle and a loaded machine",
        "",
        f"Written by `benchmarks/same_verdict_under_load.py` on commit {commit.stdout.strip() or '?'} "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}), `attnsim verify --json`"
        + (f" `--only {only}`" if only else " (the default run)")
        + f", {os.cpu_count()} cores.",
        "",
        "| run | load average at start | wall s | exit | statuses | Z3 units |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, run in (("as the machine was", idle), (f"beside {hogs} x `yes > /dev/null`", loaded)):
        units = sum(r.get("units", 0) for r in run.rows.values())
        lines.append(
            f"| {name} | {run.load:.1f} | {run.seconds:.1f} | {run.exit_code} | {counts(run)} | {units:,} |"
        )
    lines += [
        "",
        f"Obligations: {len(ids)}; statuses that differ: {len(differ)}; Z3 units that differ: {len(units_differ)}.",
    ]
    for i in differ:
        lines.append(f"- `{i}`: {idle.rows.get(i, {}).get('status')} vs {loaded.rows.get(i, {}).get('status')}")
    for i in units_differ[:20]:
        lines.append(f"- units of `{i}`: {idle.rows.get(i, {}).get('units')} vs {loaded.rows.get(i, {}).get('units')}")
    lines.append("")
    return "\n".join(lines), not differ


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hogs", type=int, default=6, help="CPU-bound processes beside the second run (default 6)")
    p.add_argument("--only", default=None, help="an obligation id prefix (default: the whole default run)")
    p.add_argument("--out", type=Path, default=Path("docs/same-verdict-under-load.md"))
    args = p.parse_args()
    idle = verify(args.only)
    loaded = beside_hogs(args.hogs, args.only)
    text, same = report(idle, loaded, args.hogs, args.only)
    args.out.write_text(text)
    print(text)
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
