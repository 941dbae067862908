"""`attnsim bench`: how much slower is simulating than computing directly, and how does it grow?

Times U's numeric simulation ``U.run(T, X)`` against the direct NumPy reference ``T(X)`` for
``max_len = d_model`` in {8, 16, 32, 64}, and every registered construction's ``run`` against its
NumPy formula (``reference``), with repeats and medians of wall and CPU seconds; reports the ratio
of CPU medians (another process on the machine moves wall times, much less CPU times), its growth
with size (the log-log slope between consecutive sizes, and a least-squares fit with its R^2 and
number of sizes), the load average at the start and end, and the peak memory of one run
(tracemalloc, in a separate untimed run so that tracing does not distort the times). A wall-clock
budget (default 100 s) caps the whole run: a size whose predicted time would exceed what is left is
skipped and said so.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from attnsim.cli.commands import command, positive_float, positive_int
from attnsim.cli.measure import BenchError, fmt_s, median_wall_and_cpu, peak_mb
from attnsim.cli.target_rows import (
    TARGET_COLUMNS,
    TARGETS,
    TargetRow,
    elementwise_ns,
    format_target_cell,
    simulator_targets,
)
from attnsim.proofs import registry
from attnsim.report import data as D

SIZES = (8, 16, 32, 64)


@dataclass
class Timing:
    """One (construction, size): medians of ``repeats`` runs (wall and CPU seconds), the ratio of the
    CPU medians (ours / direct NumPy), peak memory."""

    kind: str  # "lemma" or "simulator"
    name: str
    size: int | None  # None: the registered example (a construction whose sizes cannot be scaled)
    positions: int | None
    repeats: int
    build_s: float
    run_median_s: float
    ref_median_s: float
    ratio: float
    peak_mb: float
    error: float
    extra: dict[str, Any] = field(default_factory=dict)
    run_cpu_s: float = math.nan
    ref_cpu_s: float = math.nan


@dataclass
class BenchResult:
    """Everything `attnsim bench --json` prints."""

    sizes: list[int]
    repeats: int
    budget_s: float
    timings: list[Timing] = field(default_factory=list)
    growth: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    total_s: float = 0.0
    load: dict[str, Any] = field(default_factory=dict)  # cpus, and the 1-minute load average at start and end

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["timings"] = [asdict(t) for t in self.timings]
        return d



def _growth(points: Sequence[Timing]) -> dict[str, Any]:
    """How the (CPU) ratio grows with size: log-log slopes between consecutive sizes, the
    least-squares log-log slope over all sizes (0: flat, 1: linear, 2: quadratic...), how many sizes
    it rests on, and its R^2 (None through two sizes: a line through two points fits them exactly,
    whatever their noise)."""
    pts = [(p.size, p.ratio) for p in points if p.size is not None and p.ratio > 0 and math.isfinite(p.ratio)]
    steps = [
        round(math.log(rb / ra) / math.log(sb / sa), 3) for (sa, ra), (sb, rb) in itertools.pairwise(pts) if sb != sa
    ]
    fit, r2 = None, None
    sizes = len({s for s, _ in pts})
    if sizes >= 2:
        x = np.log([s for s, _ in pts])
        y = np.log([r for _, r in pts])
        slope, icept = np.polyfit(x, y, 1)
        fit = round(float(slope), 3)
        spread = float(np.sum((y - y.mean()) ** 2))
        if sizes >= 3:
            r2 = round(1.0 - float(np.sum((y - (slope * x + icept)) ** 2)) / spread, 4) if spread > 0 else 1.0
    return {"consecutive": steps, "fit": fit, "sizes": sizes, "r2": r2, "clock": "cpu"}


def _load() -> float | None:
    """The 1-minute load average (None where the platform does not tell it)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def growth_line(name: str, g: dict[str, Any]) -> str:
    """One line: the fitted growth exponent of ``name``'s ratio, with what it rests on."""
    if g["fit"] is None:
        return f"{name}: no growth (one size)"
    if g["r2"] is None:
        how = f"through {g['sizes']} sizes only: no fit quality, two medians decide it"
    else:
        how = f"least squares over {g['sizes']} sizes, R^2 = {g['r2']:.3f}"
    return f"{name}: CPU ratio ~ size^{g['fit']} ({how}); between consecutive sizes {g['consecutive']}"


def load_line(load: dict[str, Any]) -> str:
    """One line: the machine's load during the bench, and what that means for the figures."""
    start, end, cpus = load.get("start"), load.get("end"), load.get("cpus")
    if start is None or end is None:
        return "load average: not available; the ratios and their growth use CPU seconds"
    text = f"load average {start:g} at the start, {end:g} at the end, {cpus} CPU(s)"
    if cpus and max(start, end) > cpus:
        return f"{text}: busy, so the wall times are noisy; the ratios and their growth use CPU seconds"
    return f"{text}; the ratios and their growth use CPU seconds"


def _construction_names() -> list[str]:
    """The registered constructions' names (what --only selects from)."""
    return list(registry.constructions())


def bench(  # noqa: C901
    sizes: Sequence[int] = SIZES,
    repeats: int = 7,
    budget: float = 100.0,
    only: str | None = None,
    simulator: bool = True,
    lemmas: bool = True,
    on_step: Callable[[str], None] | None = None,
) -> BenchResult:
    """Run the benchmark (see the module docstring); nothing here asserts on time."""

    if not sizes or any(int(s) < 1 for s in sizes):
        raise BenchError(f"sizes must be positive integers, got {list(sizes)}")
    if repeats < 1:
        raise BenchError(f"repeats must be >= 1, got {repeats}")
    if budget <= 0:
        raise BenchError(f"budget must be positive, got {budget}")
    if only and not any(n.startswith(only) for n in _construction_names()):
        raise BenchError(f"--only {only!r} matches no construction (names: {', '.join(_construction_names())})")
    t_start = time.perf_counter()
    res = BenchResult(sorted(int(s) for s in sizes), repeats, budget, load={"cpus": os.cpu_count(), "start": _load()})
    say = on_step or (lambda s: None)

    def left() -> float:
        return budget - (time.perf_counter() - t_start)

    if simulator:
        if D.simulator_api() is None:
            res.skipped.append("simulator: attnsim.universal (UniversalSimulator) has not landed")
        else:
            reserve = 25.0 if lemmas else 0.0  # keep time for the constructions after U
            _bench_simulator(res, lambda: left() - reserve, say)
    if lemmas:
        fams, skipped = D.families()
        res.skipped += [f"{n}: {why}" for n, why in skipped]
        todo = [f for f in fams if not only or f.name.startswith(only)]
        for i, fam in enumerate(todo):  # each construction gets a fair share of what is left
            share = max(left(), 0.0) / (len(todo) - i)
            t_fam = time.perf_counter()

            def share_left(t: float = t_fam, b: float = share) -> float:
                return b - (time.perf_counter() - t)

            _bench_family(res, fam, left, share_left, say)
    for name in dict.fromkeys(t.name for t in res.timings):
        pts = [t for t in res.timings if t.name == name]
        if len(pts) > 1:
            res.growth[name] = _growth(pts)
    res.total_s = round(time.perf_counter() - t_start, 2)
    res.load["end"] = _load()
    return res


def _predict(runs: Sequence[tuple[int, float]], size: int) -> float | None:
    """Seconds of one run at ``size``, extrapolated log-log from the last two runs (cubic from one)."""
    if not runs:
        return None
    s1, t1 = runs[-1]
    if len(runs) >= 2 and runs[-2][0] != s1 and runs[-2][1] > 0:
        s0, t0 = runs[-2]
        k = max(1.0, math.log(t1 / t0) / math.log(s1 / s0))
    else:
        k = 3.0
    return t1 * (size / s1) ** k


def _bench_family(
    res: BenchResult, fam: Any, left: Callable[[], float], share: Callable[[], float], say: Callable[[str], None]
) -> None:
    """Sizes of one construction while they fit its ``share`` of the budget (the first always runs)."""

    rng = np.random.default_rng(0)
    runs: list[tuple[int, float]] = []
    grid: list[int | None] = list(res.sizes) if fam.scaled else [None]
    for s in grid:
        est = _predict(runs, s) if s is not None else None
        if est is not None and est * (res.repeats + 3) > min(share(), left()):
            res.skipped.append(
                f"{fam.name} at size {s}: predicted {est * (res.repeats + 3):.1f} s, over its share of the budget"
            )
            break
        if left() <= 0:
            res.skipped.append(f"{fam.name}: budget exhausted")
            break
        say(f"{fam.name} size {s}")
        t0 = time.perf_counter()
        try:
            con = fam.build(s)
            build = time.perf_counter() - t0
            ops = D.random_operands(con, rng)
            t1 = time.perf_counter()
            got = con.run(*ops)
            if s is not None:
                runs.append((s, time.perf_counter() - t1))
        except ValueError as exc:
            res.skipped.append(f"{fam.name} at size {s}: {exc}")
            continue
        want = con.reference(*ops)
        run_m, run_c = median_wall_and_cpu(functools.partial(con.run, *ops), res.repeats)
        ref_m, ref_c = median_wall_and_cpu(functools.partial(con.reference, *ops), res.repeats)
        peak = peak_mb(functools.partial(con.run, *ops))
        res.timings.append(
            Timing(
                "lemma",
                fam.name,
                s if s is not None else fam.example_size,
                int(con.layout.total),
                res.repeats,
                round(build, 6),
                run_m,
                ref_m,
                run_c / ref_c if ref_c > 0 else math.inf,
                round(peak, 3),
                D.rel_error(got, want),
                run_cpu_s=run_c,
                ref_cpu_s=ref_c,
            )
        )


def _bench_simulator(res: BenchResult, left: Callable[[], float], say: Callable[[str], None]) -> None:
    TL, US = D.simulator_api()  # type: ignore[misc]
    runs: list[tuple[int, float]] = []  # (size, seconds of one build + run)
    for s in res.sizes:
        est = _predict(runs, s)
        if est is not None and 3 * est > left():
            res.skipped.append(
                f"U at max_len = d_model = {s}: one run predicted at {est:.0f} s, over the remaining budget "
                f"({max(left(), 0):.0f} s)"
            )
            break
        say(f"U size {s}")
        h = 2 if s >= 2 else 1
        try:
            t0 = time.perf_counter()
            U = US(max_len=s, d_model=s, n_heads=h, d_head=max(1, s // h), d_ff=2 * s)
            build = time.perf_counter() - t0
            T = TL.random(d_model=s, n_heads=h, d_head=max(1, s // h), d_ff=2 * s, seed=0)
            X = np.random.default_rng(0).normal(size=(s, s))
            t1 = time.perf_counter()
            got = U.run(T, X)
            last = time.perf_counter() - t1 + build
            runs.append((s, last))
        except (ValueError, MemoryError) as exc:
            res.skipped.append(f"U at size {s}: {type(exc).__name__}: {exc}")
            break
        want = T(X)
        reps = res.repeats if last * res.repeats < left() / 4 else 1

        def simulate(u: Any = U, t: Any = T, x: np.ndarray = X) -> Any:
            return u.run(t, x)

        def direct(t: Any = T, x: np.ndarray = X) -> Any:
            return t(x)

        run_m, run_c = median_wall_and_cpu(simulate, reps)
        ref_m, ref_c = median_wall_and_cpu(direct, max(reps, 5))
        peak = peak_mb(simulate) if last * 3 < left() else float("nan")
        extra: dict[str, Any] = {"n_heads": h, "d_head": max(1, s // h), "d_ff": 2 * s}
        positions = None
        try:
            c = U.cost()
            extra["layers"] = int(D.cost_get(c, "layers"))
            extra["heads"] = [int(x) for x in D.cost_get(c, "heads")]
            pos = D.cost_get(c, "positions")
            positions = None if pos is None else int(pos)
        except Exception as exc:
            extra["cost_note"] = str(exc)
        res.timings.append(
            Timing(
                "simulator",
                "U",
                s,
                positions,
                reps,
                round(build, 6),
                run_m,
                ref_m,
                run_c / ref_c if ref_c > 0 else math.inf,
                round(peak, 3),
                D.rel_error(got, want),
                extra,
                run_cpu_s=run_c,
                ref_cpu_s=ref_c,
            )
        )


# -- CLI -------------------------------------------------------------------------------------
def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be integers >= 1, got {text!r}")
    return sizes


def _targets(text: str) -> list[tuple[str, int]]:
    out = []
    for part in (t.strip() for t in text.split(",") if t.strip()):
        variant, _, cap = part.partition(":")
        if variant not in ("compact", "shallow") or not cap.isdigit() or int(cap) < 1:
            raise argparse.ArgumentTypeError(f"a target is compact:<capacity> or shallow:<capacity>, got {part!r}")
        out.append((variant, int(cap)))
    if not out:
        raise argparse.ArgumentTypeError(f"no targets in {text!r}")
    return out


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    p.add_argument("--sizes", type=_sizes, default=list(SIZES), help="comma-separated sizes (default 8,16,32,64)")
    p.add_argument("--repeats", type=positive_int, default=7, help="timed runs per measurement (median reported)")
    p.add_argument("--budget", type=positive_float, default=100.0, help="wall-clock cap in seconds for the whole bench")
    p.add_argument("--only", metavar="NAME", help="only constructions whose name starts with NAME")
    p.add_argument("--no-simulator", action="store_true", help="skip U")
    p.add_argument("--no-lemmas", action="store_true", help="skip the constructions")
    p.add_argument(
        "--simulator-targets",
        action="store_true",
        help="only U's target rows: compact at capacity 32 and 64, shallow at 32 (4 heads; several minutes)",
    )
    p.add_argument(
        "--targets",
        type=_targets,
        default=None,
        metavar="VARIANT:CAP,...",
        help="the target rows to run with --simulator-targets (e.g. compact:128,shallow:32)",
    )


@command("bench", _args)
def bench_cmd(args: argparse.Namespace) -> int:
    """Time U and every construction against direct NumPy: medians, ratio, growth, peak memory."""
    from rich.console import Console
    from rich.table import Table

    err = Console(stderr=True)
    if args.simulator_targets or args.targets:
        with err.status("bench") as st:
            rows = simulator_targets(
                args.targets or TARGETS, repeats=args.repeats, on_step=lambda s: st.update(f"bench: {s}")
            )
        if args.json:
            print(json.dumps(_clean([asdict(r) for r in rows]), indent=1, allow_nan=False))
            return 0
        title = "U at its targets: max_len = d_model = d_ff = capacity, 4 heads (medians after the first run)"
        tab = Table(title=title)
        for _, head in TARGET_COLUMNS:
            tab.add_column(head, justify="left" if head == "variant" else "right")
        for r in rows:
            d = asdict(r)
            tab.add_row(*(format_target_cell(k, d[k]) for k, _ in TARGET_COLUMNS))
        Console(width=max(200, Console().width)).print(tab)
        return 0
    with err.status("bench") as st:
        res = bench(
            args.sizes,
            args.repeats,
            args.budget,
            args.only,
            simulator=not args.no_simulator,
            lemmas=not args.no_lemmas,
            on_step=lambda s: st.update(f"bench: {s}"),
        )
    if args.json:
        print(json.dumps(_clean(res.as_dict()), indent=1, allow_nan=False))
        return 0
    out = Console(width=max(130, Console().width))
    table = Table(title=f"attnsim bench: medians of {res.repeats} runs (ratio = ours / direct NumPy, CPU seconds)")
    for col in ("what", "size", "positions", "build", "ours", "ours CPU", "NumPy CPU", "ratio", "peak MB", "error"):
        table.add_column(col, justify="right" if col != "what" else "left", no_wrap=True)
    for t in res.timings:
        table.add_row(
            t.name,
            "example" if t.size is None else str(t.size),
            "-" if t.positions is None else str(t.positions),
            fmt_s(t.build_s),
            fmt_s(t.run_median_s),
            fmt_s(t.run_cpu_s),
            fmt_s(t.ref_cpu_s),
            f"{t.ratio:.3g}",
            f"{t.peak_mb:.3g}",
            f"{t.error:.2g}",
        )
    out.print(table)
    out.print(load_line(res.load), highlight=False, markup=False)
    for name, g in res.growth.items():
        out.print(growth_line(name, g), highlight=False, markup=False)
    for s in res.skipped:
        out.print(f"[yellow]skipped[/]: {s}")
    out.print(f"total {res.total_s:.1f} s")
    return 0


def _clean(obj: Any) -> Any:
    """NaN/inf -> None, so that --json is strict JSON."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    return obj


__all__ = [  # TargetRow and the rest of U's target rows live in target_rows; importable from here too
    "SIZES",
    "TARGETS",
    "TARGET_COLUMNS",
    "BenchError",
    "BenchResult",
    "TargetRow",
    "Timing",
    "bench",
    "bench_cmd",
    "elementwise_ns",
    "format_target_cell",
    "simulator_targets",
]
