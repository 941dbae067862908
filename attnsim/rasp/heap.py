"""glibc's heap kept through a long run, so that the engine's pieces reuse freed memory.

A streamed run allocates and frees NumPy arrays of one piece (``PIECE`` float64s, 1 MiB)
thousands of times.  Under glibc's default thresholds such an array is mapped and unmapped
(over the mmap threshold, 128 KiB until a free raises it), and the heap's top is given back to
the system whenever twice that threshold lies free, so each new piece faults its pages in
again: at capacity 128 that was 400-620 K minor page faults per run of compact U, and close to
half of the run's CPU time spent in the kernel.

:func:`kept_heap` holds, while the outermost long run of the process lasts, glibc's mmap
threshold at 32 MiB (the upper bound glibc's own dynamic threshold stops at: a piece comes from
the heap, a larger array is still mapped) and its trim threshold at 1 GiB (freed memory stays
for the next piece).  When that run ends the trim threshold is set to 64 MiB (where glibc's
dynamic rule puts it for a 32 MiB mmap threshold) and the free memory is given back to the
system (``malloc_trim(0)``), so a run does not leave the process larger than its own peak did.
These are settings of the whole process, kept after the run: glibc's dynamic thresholds stay
off (the mmap threshold stays at 32 MiB, the trim threshold at 64 MiB), and while a run lasts
every thread's freed memory is held too.  Values are untouched: only where the allocator takes
memory from changes.  Elsewhere than on glibc (no ``mallopt``) nothing is done.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit systems
TRIM_DURING_RUN = 1 << 30
TRIM_AFTER_RUN = 2 * MMAP_THRESHOLD


def _glibc() -> Any:
    """The C library when it is glibc (has ``mallopt`` and ``malloc_trim``), else None."""
    try:
        libc = ctypes.CDLL(None)
        if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") and hasattr(libc, "gnu_get_libc_version"):
            return libc
    except OSError:  # pragma: no cover - no C library to load
        pass
    return None  # pragma: no cover - not glibc


_LIBC = _glibc()
_lock = threading.Lock()
_depth = 0


@contextmanager
def kept_heap() -> Iterator[bool]:
    """Keep freed memory in glibc's heap while the outermost of these contexts lasts (nested and
    concurrent runs share it); yields whether the thresholds are in force (False off glibc)."""
    global _depth
    if _LIBC is None:  # pragma: no cover - not glibc
        yield False
        return
    entered = False
    try:
        with _lock:
            _depth += 1
            entered = True
            if _depth == 1:
                _LIBC.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                _LIBC.mallopt(M_TRIM_THRESHOLD, TRIM_DURING_RUN)
        yield True
    finally:
        if entered:
            with _lock:
                _depth -= 1
                if _depth == 0:
                    _LIBC.mallopt(M_TRIM_THRESHOLD, TRIM_AFTER_RUN)
                    _LIBC.malloc_trim(0)


__all__ = ["kept_heap"]
