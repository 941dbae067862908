"""Ctrl-C with child processes: only the parent hears it, and a Ctrl-C is never lost.

A terminal's Ctrl-C sends SIGINT to the whole foreground process group, so every child (the
pool's workers, a local Dask cluster's processes) would raise ``KeyboardInterrupt`` and print its
own traceback.  Children are started inside :func:`children_deaf_to_sigint`, so they never hear
it; the parent gets a ``KeyboardInterrupt`` and stops them as it unwinds.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


@contextlib.contextmanager
def children_deaf_to_sigint() -> Iterator[None]:
    """Processes and threads started inside never hear SIGINT; a SIGINT to this process meanwhile
    is held and raised again when the block ends.

    * SIGINT is blocked in the calling thread: the threads it starts inherit the blocked mask, and
      so do the processes it starts, across fork and exec; none of them ever receives it.
    * This process's handler is replaced, for the block, by one that holds the signal (a thread
      started before the block, a native one included, may still take a SIGINT to the process).
      When the block ends, the handler is put back and a held SIGINT is raised to it: under
      Python's default handler, a ``KeyboardInterrupt`` once the body has run to its end, never
      inside it, and never lost.
    * A SIGINT that is ignored (a job a non-interactive shell starts in the background) stays
      ignored.  Outside the main thread (where Python runs no handler), or without signal masks,
      nothing is changed.
    """
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    hearing = callable(previous)  # not SIG_IGN, SIG_DFL, nor a handler set outside Python (None)
    held: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        held.append(signum)

    if hearing:
        signal.signal(signal.SIGINT, hold)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # one pending for this thread reaches `hold` now
        if hearing:
            signal.signal(signal.SIGINT, previous)
            if held:
                signal.raise_signal(signal.SIGINT)


__all__ = ["children_deaf_to_sigint"]
