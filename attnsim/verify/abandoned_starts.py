"""The preload of a local Dask cluster's forkserver: a child whose start was abandoned dies quietly.

Ctrl-C while ``attnsim verify --scheduler local:N`` starts its cluster stops the parent
(:func:`attnsim.verify.dask_runner.connect`), which unlinks its semaphores and closes its pipes as it
exits.  A process the cluster was starting at that moment (a nanny or a worker, forked by the
forkserver of :func:`~attnsim.verify.dask_runner.deaf_forkserver`) then fails while it reads what
its parent sent (``FileNotFoundError`` rebuilding a semaphore, ``EOFError`` on the pipe), and the
server prints that traceback on the terminal, after the run's one line "interrupted".

The server imports this module first (its preload), so the hook installed here is the server's and
every child's ``sys.excepthook`` (and a forkserver a child starts, e.g. a nanny's for its worker,
preloads it too): it drops exactly such a failure (:func:`start_data_lost`: one of
those errors, raised in ``multiprocessing.spawn._main`` before the process's target ran) and prints
every other exception as before.  A parent that is alive still sees the child's exit code.
"""

from __future__ import annotations

import sys
import traceback
from multiprocessing import forkserver
from types import TracebackType

LOST = (EOFError, FileNotFoundError, ConnectionError)  # the parent's data or semaphores are gone


def start_data_lost(exc_type: type[BaseException], tb: TracebackType | None) -> bool:
    """Whether an exception is a child's failure to read its start data: one of :data:`LOST`,
    raised inside ``multiprocessing.spawn._main`` and not in the process's own run (``_bootstrap``)."""
    if not issubclass(exc_type, LOST):
        return False
    frames = [(f.f_code.co_filename.replace("\\", "/"), f.f_code.co_name) for f, _ in traceback.walk_tb(tb)]
    reading = any(path.endswith("multiprocessing/spawn.py") and name == "_main" for path, name in frames)
    running = any(path.endswith("multiprocessing/process.py") and name == "_bootstrap" for path, name in frames)
    return reading and not running


def _hook(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    if start_data_lost(exc_type, tb):
        return
    _PREVIOUS(exc_type, exc, tb)


_PREVIOUS = sys.excepthook
sys.excepthook = _hook
forkserver.set_forkserver_preload(["__main__", __name__])  # for the forkservers this process's children start

__all__ = ["LOST", "start_data_lost"]
