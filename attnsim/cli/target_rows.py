"""U's target rows (`attnsim bench --targets`): CPU time, ratios to NumPy and torch, time per head position.

One row per (variant, capacity): U built at that capacity runs one encoder layer T, timed on the
CPU clock beside NumPy's T(X) and torch's own layer, with the positions one run computes and a
same-run NumPy calibration; ``TARGET_COLUMNS`` and :func:`format_target_cell` make its table
(``benchmarks/simulator_table.py`` writes docs/simulator-bench.md from them).  Apart from the
constructions' bench (:mod:`attnsim.cli.bench`), which registers the command that runs both.
"""

from __future__ import annotations

import functools
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnsim.cli.measure import BenchError, fmt_s, median_cpu, peak_mb, rss_mb
from attnsim.universal.layer import TransformerLayer
from attnsim.universal.universal import UniversalSimulator

TARGETS: tuple[tuple[str, int], ...] = (("compact", 32), ("compact", 64), ("shallow", 32))


@dataclass
class TargetRow:
    """U at one (variant, capacity): max_len = d_model = d_ff = capacity, 4 heads of width
    capacity / 4, one layer T.  Times are medians; CPU time (``time.process_time``, all threads)
    is the figure to compare on a shared machine, wall time is beside it.  ``head_positions``:
    the positions of node values one run computes (``RunStats``); ``ns_per_head_position`` is
    CPU time over them, ``calibration_ns`` a same-run NumPy elementwise multiply per element,
    ``per_position_vs_calibration`` their ratio (a figure that holds across machines)."""

    variant: str
    capacity: int
    layers: int
    positions: int
    repeats: int
    build_s: float
    first_run_cpu_s: float
    run_s: float  # wall, median
    run_cpu_s: float  # CPU, median
    numpy_cpu_s: float
    torch_cpu_s: float | None
    ratio_cpu_numpy: float
    ratio_cpu_torch: float | None
    head_positions: int
    memo_positions: int
    ns_per_head_position: float
    calibration_ns: float
    per_position_vs_calibration: float
    peak_mb: float  # tracemalloc peak of one run
    rss_growth_mb: float  # peak RSS growth of the process over the runs (meaningful in a fresh process)
    memo_mb: float
    error_vs_reference: float
    error_vs_torch: float | None


def elementwise_ns(n: int = 1 << 20, repeats: int = 7) -> float:
    """CPU nanoseconds per element of one NumPy elementwise float64 multiply (into a preallocated
    output), median of ``repeats``: the floor an interpreter's vectorised pass is compared to."""
    rng = np.random.default_rng(0)
    a, b, out = rng.normal(size=n), rng.normal(size=n), np.empty(n)
    return median_cpu(lambda: np.multiply(a, b, out=out), repeats) * 1e9 / n


def _target_layer(
    c: int, h: int, k: int, x: np.ndarray, repeats: int
) -> tuple[TransformerLayer, np.ndarray | None, float | None]:
    """The layer T at capacity ``c``, torch's output on ``x`` and torch's median CPU seconds:
    torch's default post-norm ReLU encoder layer (float64) when torch is installed, else a random
    post-norm layer and no torch figures."""
    torch_out, torch_cpu = None, None
    try:
        import torch

        torch.manual_seed(0)
        torch.set_num_threads(1)  # CPU time of one thread: threads spinning on a shared machine count too
        layer = torch.nn.TransformerEncoderLayer(c, h, dim_feedforward=c, dropout=0.0, batch_first=True)
        layer = layer.double().eval()
        T = TransformerLayer.from_torch(layer)
        tx = torch.from_numpy(x)[None]
        with torch.no_grad():
            torch_out = layer(tx)[0].numpy()

            def torch_layer(layer: Any = layer, tx: Any = tx) -> Any:
                with torch.no_grad():
                    return layer(tx)

            torch_cpu = median_cpu(torch_layer, max(repeats, 5))
    except ImportError:
        T = TransformerLayer.random(c, h, k, c, seed=0, residual=True, norm="post")
    return T, torch_out, torch_cpu


def simulator_targets(
    targets: Sequence[tuple[str, int]] = TARGETS, repeats: int = 3, on_step: Callable[[str], None] | None = None
) -> list[TargetRow]:
    """One row per (variant, capacity c): max_len = d_model = d_ff = c, 4 heads of width c / 4, one
    layer T (torch's default post-norm ReLU encoder layer when torch is installed, compared with
    torch's own float64 output and timed too; else a random post-norm layer).  The first run
    fills U's memo of position-only index maps; the medians are over the ``repeats`` runs after it
    (one when a run takes over 30 s)."""

    say = on_step or (lambda s: None)
    rows = []
    calib = elementwise_ns()
    for variant, c in targets:
        if variant not in ("compact", "shallow") or c < 1:
            raise BenchError(f"a target is compact:<capacity> or shallow:<capacity>, got {variant}:{c}")
        say(f"U {variant} at capacity {c}")
        h, k = 4, max(1, c // 4)
        x = np.random.default_rng(0).normal(size=(c, c))
        T, torch_out, torch_cpu = _target_layer(c, h, k, x, repeats)
        rss0 = rss_mb()
        t0 = time.perf_counter()
        U = UniversalSimulator(c, c, h, k, c, variant=variant)
        build = time.perf_counter() - t0
        cost = U.cost()
        c0 = time.process_time()
        y = U.run(T, x)
        first = time.process_time() - c0
        reps = repeats if first * repeats < 60 else 1
        walls, cpus = [], []
        for _ in range(reps):
            w0, c0 = time.perf_counter(), time.process_time()
            U.run(T, x)
            walls.append(time.perf_counter() - w0)
            cpus.append(time.process_time() - c0)
        stats = U.last_stats
        rss = rss_mb() - rss0
        peak = peak_mb(functools.partial(U.run, T, x))
        cpu = statistics.median(cpus)
        numpy_cpu = median_cpu(functools.partial(T, x), max(repeats, 5))
        per_pos = cpu * 1e9 / max(stats.head_positions, 1)
        rows.append(
            TargetRow(
                variant=variant,
                capacity=c,
                layers=int(cost["layers"]),
                positions=int(cost["positions"]),
                repeats=reps,
                build_s=round(build, 4),
                first_run_cpu_s=round(first, 4),
                run_s=round(statistics.median(walls), 4),
                run_cpu_s=round(cpu, 4),
                numpy_cpu_s=numpy_cpu,
                torch_cpu_s=torch_cpu,
                ratio_cpu_numpy=cpu / numpy_cpu if numpy_cpu > 0 else math.inf,
                ratio_cpu_torch=None if not torch_cpu else cpu / torch_cpu,
                head_positions=stats.head_positions,
                memo_positions=stats.memo_positions,
                ns_per_head_position=per_pos,
                calibration_ns=calib,
                per_position_vs_calibration=per_pos / calib if calib > 0 else math.inf,
                peak_mb=round(peak, 1),
                rss_growth_mb=round(rss, 1),
                memo_mb=round(U.memo.used_bytes / 2**20, 1),
                error_vs_reference=float(np.max(np.abs(y - T(x)))),
                error_vs_torch=None if torch_out is None else float(np.max(np.abs(y - torch_out))),
            )
        )
    return rows


TARGET_COLUMNS: tuple[tuple[str, str], ...] = (
    ("variant", "variant"),
    ("capacity", "capacity"),
    ("layers", "layers"),
    ("positions", "positions"),
    ("run_s", "wall"),
    ("run_cpu_s", "CPU"),
    ("first_run_cpu_s", "first run CPU"),
    ("numpy_cpu_s", "NumPy T(X) CPU"),
    ("ratio_cpu_numpy", "CPU / NumPy"),
    ("torch_cpu_s", "torch layer CPU"),
    ("ratio_cpu_torch", "CPU / torch"),
    ("head_positions", "head positions"),
    ("ns_per_head_position", "ns / head position"),
    ("calibration_ns", "NumPy ns / element"),
    ("per_position_vs_calibration", "x calibration"),
    ("peak_mb", "peak MB (traced)"),
    ("rss_growth_mb", "RSS growth MB"),
    ("memo_mb", "memo MB"),
    ("error_vs_reference", "error vs reference"),
    ("error_vs_torch", "error vs torch"),
)


def format_target_cell(key: str, v: Any) -> str:
    """One cell of the targets table: seconds in short units, errors in 2 digits, counts in full."""
    if v is None:
        return "-"
    if key.startswith("error"):
        return f"{v:.2g}"
    if key.endswith("_s"):
        return fmt_s(float(v))
    if key in ("head_positions", "memo_positions", "positions"):
        return f"{int(v):,}"
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


__all__ = ["TARGETS", "TARGET_COLUMNS", "TargetRow", "elementwise_ns", "format_target_cell", "simulator_targets"]
