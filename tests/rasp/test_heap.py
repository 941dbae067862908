"""rasp/heap.py: glibc's heap kept through a long run (issue 29, the engine at U's capacities).

The figure it backs: without it, a streamed run of compact U at capacity 128 page-faulted
400-620 K times, close to half of its CPU time in the kernel; docs/engine-performance.md.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from attnsim.rasp import core as C
from attnsim.rasp import engine, heap

GLIBC = heap._LIBC is not None

FAULTS = """
import resource
import numpy as np
from attnsim.rasp.heap import kept_heap

def faults():
    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        pieces = [np.ones(1 << 17) for _ in range(20)]  # 20 pieces of 1 MiB, written, then freed
        del pieces
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0

plain = faults()
with kept_heap():
    kept = faults()
print(plain, kept)
"""


@pytest.mark.skipif(not GLIBC, reason="the heap is kept on glibc only")
def test_pieces_reuse_freed_memory_in_a_kept_heap() -> None:
    """20 rounds of 20 one-MiB pieces: under glibc's default thresholds (a fresh process) every
    round faults its pages in again (20 x 20 x 256 pages); in a kept heap the first round does."""
    out = subprocess.run([sys.executable, "-c", FAULTS], capture_output=True, text=True, check=True).stdout
    plain, kept = (int(x) for x in out.split())
    pages = 20 * 20 * (1 << 20) // 4096
    assert plain > pages // 2, (plain, kept)
    assert kept < pages // 5, (plain, kept)


class FakeLibc:
    """Records mallopt and malloc_trim calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append(("mallopt", param, value))
        return 1

    def malloc_trim(self, pad: int) -> int:
        self.calls.append(("malloc_trim", pad))
        return 1


def test_thresholds_set_by_the_outermost_context_and_the_heap_given_back(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeLibc()
    monkeypatch.setattr(heap, "_LIBC", fake)
    with pytest.raises(RuntimeError):
        with heap.kept_heap() as on:
            assert on
            with heap.kept_heap():
                pass
            assert fake.calls == [
                ("mallopt", heap.M_MMAP_THRESHOLD, 32 << 20),
                ("mallopt", heap.M_TRIM_THRESHOLD, 1 << 30),
            ]
            raise RuntimeError("a run that fails still gives the heap back")
    assert fake.calls[2:] == [("mallopt", heap.M_TRIM_THRESHOLD, 64 << 20), ("malloc_trim", 0)]
    assert heap._depth == 0


@pytest.mark.parametrize("length, kept", [(1000, False), (1 << 17, True)])
def test_runs_of_one_piece_and_longer_keep_the_heap(monkeypatch: pytest.MonkeyPatch, length: int, kept: bool) -> None:
    """evaluate keeps the heap for a run with arrays of a piece (1 MiB) or more, not for the
    many short runs of the proofs; the values are the same either way."""
    fake = FakeLibc()
    monkeypatch.setattr(heap, "_LIBC", fake)
    prog = C.apply("mul", C.tokens, C.tokens)
    x = np.arange(length, dtype=np.float64)
    assert np.array_equal(engine.evaluate(prog, x), x * x)
    assert bool(fake.calls) is kept
