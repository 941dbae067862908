"""Write docs/measurements.md: the one page of measured figures the README and docs may quote.

Every figure on the page comes from this run, never from a hand copy: ``attnsim verify`` (run as
a subprocess with ``--json``; its rows counted by status and by method, its wall time), the test
suite (the README's ``pytest``, as a subprocess: its counts, wall time and the torch it ran
with), U's cost
at a few capacities (``UniversalSimulator(...).cost()``: layers, heads, positions) and U compiled
to weights at one capacity (residual width, parameters, its error against the interpreted U and
against T(X)). The page starts with a provenance line (date, commit, Python, cores, load) that
``tests/test_measurements.py`` checks, together with every figure README.md and docs/ quote.

    python benchmarks/measurements.py                    # verify twice (empty Coq cache, then warm) and pytest
    python benchmarks/measurements.py --only transpose --no-pytest   # a quick partial run (the page says so)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import numpy as np

import attnsim
from attnsim import TransformerLayer, UniversalSimulator

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "measurements.md"
STATUSES = ("proved", "passed", "conditional", "failed", "unknown")
# (max_len N, d_model D, n_heads H, d_head K, d_ff F): small to moderate capacities
CAPACITIES = ((2, 2, 1, 1, 2), (3, 3, 2, 2, 3), (4, 4, 2, 2, 8), (8, 8, 2, 4, 16))
COMPILED_CAPACITY = (3, 3, 2, 2, 3)


@dataclass(frozen=True)
class VerifyRun:
    """One ``attnsim verify --json`` run: its command, wall time, exit code and rows."""

    command: str
    seconds: float
    exit_code: int
    rows: list[dict[str, object]]


@dataclass(frozen=True)
class PytestRun:
    """One run of the test suite: its command, wall time, exit code, counts per outcome, and the
    torch and NumPy it ran with (None: not installed)."""

    command: str
    seconds: float
    exit_code: int
    counts: dict[str, int]
    torch: str | None
    numpy: str


PYTEST_OUTCOMES = ("passed", "failed", "skipped", "errors")


def pytest_counts(summary: str) -> dict[str, int]:
    """The counts of pytest's last line (``12 passed, 1 skipped, 3 warnings in 9.1s``), every
    outcome of :data:`PYTEST_OUTCOMES` (0 when absent; ``error`` counted as ``errors``)."""
    found = {w if w != "error" else "errors": int(n) for n, w in re.findall(r"(\d+) (\w+)", summary)}
    return {k: found.get(k, 0) for k in PYTEST_OUTCOMES}


def run_pytest() -> PytestRun:
    """The README's test command (``pytest``, the project's options) in a subprocess from the
    checkout, timed by the wall clock."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest"], cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    last = next((ln for ln in reversed(proc.stdout.splitlines()) if re.search(r"\d+ (passed|failed)", ln)), "")
    return PytestRun("pytest", seconds, proc.returncode, pytest_counts(last), _version("torch"), np.__version__)


def _version(package: str) -> str | None:
    """The installed version of ``package`` (the interpreter the suite runs under), or None."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True)
class CostRow:
    """U's cost at one capacity and variant."""

    variant: str
    capacity: tuple[int, int, int, int, int]
    layers: int
    heads: list[int]
    positions: int


@dataclass(frozen=True)
class CompiledRow:
    """U compiled to weights at one capacity, run on one random T and X."""

    capacity: tuple[int, int, int, int, int]
    positions: int
    residual_width: int
    parameters: int
    nonzero: int
    error_vs_interpreted: float
    error_vs_reference: float


def run_verify(jobs: int, only: str | None, coq_cache: Path) -> VerifyRun:
    """``attnsim verify --json`` in a subprocess from the checkout, timed by the wall clock, its Coq
    libraries compiled into (or read from) ``coq_cache``."""
    args = ["verify", "--json", "-j", str(jobs)] + (["--only", only] if only else [])
    path = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    env = dict(os.environ, PYTHONPATH=path, ATTNSIM_COQ_CACHE=str(coq_cache))
    start = time.perf_counter()
    cmd = [sys.executable, "-m", "attnsim.cli", *args]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    try:
        rows = json.loads(proc.stdout)
    except json.JSONDecodeError:
        sys.exit(f"measurements: attnsim verify gave no JSON (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
    return VerifyRun("attnsim " + " ".join(args), seconds, proc.returncode, rows)


def cost_rows() -> list[CostRow]:
    """U's layers, heads per layer and positions at each capacity of :data:`CAPACITIES`, both variants."""
    out = []
    for variant in ("compact", "shallow"):
        for cap in CAPACITIES:
            c = UniversalSimulator(*cap, variant=variant).cost()
            out.append(CostRow(variant, cap, int(c["layers"]), [int(h) for h in c["heads"]], int(c["positions"])))
    return out


def compiled_row() -> CompiledRow:
    """U (compact) compiled at :data:`COMPILED_CAPACITY` and run on a random T at full capacity."""
    n, d, h, k, f = COMPILED_CAPACITY
    T = TransformerLayer.random(d_model=d, n_heads=h, d_head=k, d_ff=f, seed=0)
    X = np.random.default_rng(1).normal(size=(n, d))
    U = UniversalSimulator(*COMPILED_CAPACITY)
    seq = U.encode(T, X)
    model = attnsim.compile_program(U.program, max_len=len(seq), domains=U.compile_domains())
    Y = U.decode(model.forward(seq, exact=False), n=n, d=d)
    return CompiledRow(
        COMPILED_CAPACITY,
        len(seq),
        int(model.d_model),
        model.parameter_count(),
        model.parameter_count(nonzero=True),
        float(np.max(np.abs(Y - U.run(T, X)))),
        float(np.max(np.abs(Y - T(X)))),
    )


def _commit() -> str:
    def git(*a: str) -> str:
        return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--", "attnsim")
    return head + (" + uncommitted changes to attnsim/" if dirty else "")


# Check kinds named by an id segment (the checks of the trusted base, issue 26; the past-32 numerics, issue 27).
KINDS = ("one-build", "spec-independent", "input-domain", "cap64", "cap128")


def seconds_by_method(rows: list[dict[str, object]]) -> dict[str, float]:
    """Seconds of check time per method, summed over the rows."""
    per_method: dict[str, float] = {}
    for r in rows:
        per_method[str(r["method"])] = per_method.get(str(r["method"]), 0.0) + float(str(r["seconds"]))
    return per_method


def where_the_time_goes(rows: list[dict[str, object]]) -> list[str]:
    """Seconds of check time (summed over obligations: with -j 2 about twice the wall time) per
    method, and per check kind of :data:`KINDS` (an id containing the kind's name)."""
    per_method = seconds_by_method(rows)
    per_kind: dict[str, float] = dict.fromkeys(KINDS, 0.0)
    count: Counter[str] = Counter()
    for r in rows:
        sec = float(str(r["seconds"]))
        for kind in KINDS:
            if kind in str(r["id"]):
                per_kind[kind] += sec
                count[kind] += 1
    total = sum(per_method.values())
    L = ["", f"Where the time goes: {total:.1f} s of check time in all (summed over obligations).", ""]
    L += ["| method | seconds |", "|---|---|"]
    L += [f"| {m} | {sec:.1f} |" for m, sec in sorted(per_method.items(), key=lambda kv: -kv[1])]
    L += ["", "| check kind (id contains) | obligations | seconds |", "|---|---|---|"]
    L += [f"| {k} | {count[k]} | {per_kind[k]:.1f} |" for k in KINDS]
    return L


def pytest_section(t: PytestRun | None) -> list[str]:
    """The test suite's run: counts, wall time, the torch and NumPy it ran with."""
    L = ["", "## pytest", ""]
    if t is None:
        return [*L, "Not run (`--no-pytest`)."]
    c = t.counts
    torch = f"torch {t.torch}" if t.torch else "torch not installed (its tests skipped)"
    return [
        *L,
        f"`{t.command}` (the README's test command, with the project's options: `-n auto`): exit {t.exit_code}, "
        f"**{c['passed']:,} tests passed**, {c['failed']:,} failed, {c['errors']:,} errors, {c['skipped']:,} skipped, "
        f"in **{t.seconds / 60:.1f} min** of wall time; with **{torch}**, NumPy {t.numpy}.",
    ]


def warm_line(cold: VerifyRun, warm: VerifyRun | None) -> list[str]:
    """The second verify run, on the Coq cache the first left, beside the first's kernel time."""
    if warm is None:
        return []
    kernel = lambda run: seconds_by_method(run.rows).get("kernel", 0.0)
    return [
        "",
        f"The same command again, on the Coq libraries the first run compiled (every later run on this "
        f"machine): exit {warm.exit_code}, {len(warm.rows):,} obligations in **{warm.seconds:.1f} s** of wall "
        f"time; kernel obligations {kernel(warm):.1f} s of check time, against {kernel(cold):.1f} s in the first.",
    ]


def render(
    run: VerifyRun,
    costs: list[CostRow],
    compiled: CompiledRow,
    only: str | None,
    commit: str,
    tests: PytestRun | None = None,
    warm: VerifyRun | None = None,
) -> str:
    """The page, as markdown; figures are plain text so that other pages can quote them verbatim.
    ``run`` is verify on an empty Coq cache (a fresh machine), ``warm`` the same again on the cache
    it left (None: not run); ``commit`` is the checkout the measurements ran on, read before they
    started; ``tests`` the test suite's run (None: not run)."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    status = Counter(str(r["status"]) for r in run.rows)
    by_method: dict[str, Counter[str]] = {}
    for r in run.rows:
        by_method.setdefault(str(r["method"]), Counter())[str(r["status"])] += 1
    L = [
        "<!-- generated by benchmarks/measurements.py: do not edit by hand, rerun the script -->",
        "# Measurements",
        "",
        f"Generated by `python benchmarks/measurements.py{' --only ' + only if only else ''}` on {when}; "
        f"commit {commit}; Python {platform.python_version()}, {os.cpu_count()} cores, "
        f"load average {load:.1f} at the start (the machine may be shared: times vary with load).",
        "",
        "## attnsim verify",
        "",
        f"`{run.command}` on an empty Coq cache (a fresh machine: every Coq library compiled): exit "
        f"{run.exit_code}, **{len(run.rows):,} obligations** in **{run.seconds:.1f} s** of wall time"
        + (f" (only `{only}`: a partial run)" if only else " (the default run; `--deep` not run)")
        + ".",
        *warm_line(run, warm),
        "",
        "| status | obligations |",
        "|---|---|",
        *(f"| {s} | {status.get(s, 0):,} |" for s in STATUSES),
        "",
        "| method | " + " | ".join(STATUSES) + " | total |",
        "|---|" + "---|" * (len(STATUSES) + 1),
    ]
    for m in sorted(by_method):
        c = by_method[m]
        L.append(f"| {m} | " + " | ".join(f"{c.get(s, 0):,}" for s in STATUSES) + f" | {sum(c.values()):,} |")
    bad = [r for r in run.rows if r["status"] in ("failed", "unknown")]
    if bad:
        L += ["", "Failed or unknown (a timeout is unknown, never proved):", ""]
        L += ["| obligation | method | status | seconds | detail |", "|---|---|---|---|---|"]
        for r in bad:
            detail = " ".join(str(r["detail"]).split())[:160].replace("|", "\\|")
            L.append(f"| `{r['id']}` | {r['method']} | {r['status']} | {float(str(r['seconds'])):.1f} | {detail} |")
    L += where_the_time_goes(run.rows)
    slow = sorted(run.rows, key=lambda r: -float(str(r["seconds"])))[:5]
    L += ["", "The slowest obligations:", "", "| obligation | method | status | seconds |", "|---|---|---|---|"]
    L += [f"| `{r['id']}` | {r['method']} | {r['status']} | {float(str(r['seconds'])):.1f} |" for r in slow]
    L += pytest_section(tests)
    L += [
        "",
        "## U's cost",
        "",
        "`UniversalSimulator(N, D, H, K, F, variant=...).cost()`: capacity max_len N, d_model D, n_heads H, "
        "d_head K, d_ff F; attention layers, heads per layer, sequence positions.",
        "",
        "| variant | capacity (N, D, H, K, F) | layers | heads per layer | positions |",
        "|---|---|---|---|---|",
    ]
    for row in costs:
        heads = "/".join(str(h) for h in row.heads)
        L.append(f"| {row.variant} | {row.capacity} | {row.layers} | {heads} | {row.positions:,} |")
    p = compiled
    L += [
        "",
        "## U compiled to weights",
        "",
        f"`attnsim.compile_program(U.program, ...)` at capacity {p.capacity} (compact), run in float64 on a random T "
        "(`TransformerLayer.random(..., seed=0)`) and X at full capacity:",
        "",
        "| positions | residual width | parameters (dense) | non-zero | max error vs interpreted U "
        "| max error vs T(X) |",
        "|---|---|---|---|---|---|",
        f"| {p.positions:,} | {p.residual_width:,} | {p.parameters:,} | {p.nonzero:,} | "
        f"{p.error_vs_interpreted:.1e} | {p.error_vs_reference:.1e} |",
        "",
    ]
    return "\n".join(L)


def main(argv: list[str] | None = None) -> int:
    """Run every measurement and write the page."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", "-j", type=int, default=2, help="verify's worker processes (default 2)")
    p.add_argument("--only", default=None, help="verify only obligations with this id prefix (a partial run)")
    p.add_argument("--out", type=Path, default=PAGE, help=f"the page to write (default {PAGE.relative_to(ROOT)})")
    p.add_argument("--no-pytest", action="store_true", help="do not run the test suite (a partial run)")
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error(f"--jobs {args.jobs}: must be at least 1")
    commit = _commit()
    with tempfile.TemporaryDirectory(prefix="attnsim-measure-coq-") as cache:
        run = run_verify(args.jobs, args.only, Path(cache))
        warm = run_verify(args.jobs, args.only, Path(cache))
    tests = None if args.no_pytest else run_pytest()
    page = render(run, cost_rows(), compiled_row(), args.only, commit, tests, warm)
    args.out.write_text(page, encoding="utf-8")
    print(
        f"wrote {args.out}: {len(run.rows)} obligations in {run.seconds:.1f} s (empty Coq cache), "
        f"{warm.seconds:.1f} s again; verify exit {run.exit_code}, {warm.exit_code}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
