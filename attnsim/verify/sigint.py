"""Ctrl-C with worker processes: only the parent hears it.

A terminal's Ctrl-C sends SIGINT to the whole foreground process group, so every worker
(``verify``'s forked pool, the mutant children, a local Dask cluster's spawned processes) would
raise ``KeyboardInterrupt`` and print its own traceback.  :func:`children_deaf_to_sigint` blocks
SIGINT in the calling thread while workers are started: a blocked mask is inherited across fork
and exec, so the workers never receive it, while the parent, when the block ends, gets any
Ctrl-C that arrived meanwhile (deferred, not lost) and stops its workers as it unwinds.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def children_deaf_to_sigint() -> Iterator[None]:
    """Processes started inside never see SIGINT; a SIGINT to this process meanwhile is delivered at the end."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield  # no signal masks here (Windows), or not the thread Python delivers SIGINT to
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


__all__ = ["children_deaf_to_sigint"]
