"""How `attnsim bench` measures, shared by its two tables (the constructions and U's targets).

A median over repeated calls on a wall or CPU clock (fast calls looped, as timeit's autorange
does), one call's peak traced memory, the process's peak RSS, seconds in a short unit, and
:class:`BenchError` for bad bench arguments.  Kept apart so that :mod:`attnsim.cli.bench` and
:mod:`attnsim.cli.target_rows` share them without importing each other.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any


class BenchError(ValueError):
    """Bad bench arguments (sizes, repeats, budget)."""


def median_seconds(fn: Callable[[], Any], repeats: int, min_sample: float, clock: Callable[[], float]) -> float:
    """Median ``clock`` seconds per call over ``repeats`` samples; fast calls are looped (as
    timeit's autorange does) so that one sample lasts at least ``min_sample`` seconds."""
    loops = 1
    while True:
        t0 = clock()
        for _ in range(loops):
            fn()
        dt = clock() - t0
        if dt >= min_sample or loops >= 10_000:
            break
        loops *= 10
    times = [dt / loops]
    for _ in range(repeats - 1):
        t0 = clock()
        for _ in range(loops):
            fn()
        times.append((clock() - t0) / loops)
    return statistics.median(times)


def median_time(fn: Callable[[], Any], repeats: int, min_sample: float = 0.002) -> float:
    """Median wall seconds per call (``time.perf_counter``)."""
    return median_seconds(fn, repeats, min_sample, time.perf_counter)


def median_wall_and_cpu(fn: Callable[[], Any], repeats: int, min_sample: float = 0.002) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds) per call, both read around the same samples; fast
    calls are looped until one sample lasts ``min_sample`` CPU seconds.  CPU seconds
    (``time.process_time``, all threads) are what another process on the machine does not move."""
    loops = 1
    while True:
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(loops):
            fn()
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        if cpu >= min_sample or loops >= 10_000:
            break
        loops *= 10
    walls, cpus = [wall / loops], [cpu / loops]
    for _ in range(repeats - 1):
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(loops):
            fn()
        walls.append((time.perf_counter() - w0) / loops)
        cpus.append((time.process_time() - c0) / loops)
    return statistics.median(walls), statistics.median(cpus)


def fmt_s(x: float) -> str:
    """Seconds in a short human unit."""
    if not math.isfinite(x):
        return "-"
    for unit, f in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if x >= f:
            return f"{x / f:.3g} {unit}"
    return f"{x * 1e9:.3g} ns"


def peak_mb(fn: Callable[[], Any]) -> float:
    """Peak traced memory (tracemalloc, MB) of one call of ``fn``."""
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20


def median_cpu(fn: Callable[[], Any], repeats: int, min_sample: float = 0.02) -> float:
    """Median CPU seconds per call (``time.process_time``, all threads): the figure to compare on
    a shared machine."""
    return median_seconds(fn, repeats, min_sample, time.process_time)


def rss_mb() -> float:
    """The process's peak resident set size so far, in MB (Unix only: ``resource``)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


__all__ = [
    "BenchError",
    "fmt_s",
    "median_cpu",
    "median_seconds",
    "median_time",
    "median_wall_and_cpu",
    "peak_mb",
    "rss_mb",
]
