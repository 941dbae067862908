"""The ``attnsim`` command's entry point: Ctrl-C at any moment is one line and exit 130.

:func:`attnsim.cli.main.main` turns a Ctrl-C into one line, but only once the package is imported,
which takes seconds; a Ctrl-C before that (or while the parser is built) would print Python's
traceback.  This module imports nothing of attnsim until :func:`main` runs, and catches it there.
Spawned worker processes re-import the main module: this one costs them nothing.

It is also the preload of a local Dask cluster's forkserver (``verify --scheduler local:N``,
:func:`attnsim.verify.dask_runner.deaf_forkserver`), for what it installs at import: a Ctrl-C while
the cluster starts stops the parent, which unlinks its semaphores and closes its pipes as it exits;
a worker process the cluster was starting then fails while it reads what its parent sent
(``FileNotFoundError`` rebuilding a semaphore, ``EOFError`` on the pipe), and the server would print
that traceback after the run's one line.  The ``sys.excepthook`` installed here (the server's, so
every child's; a worker's own forkserver for its slots preloads this module too) drops exactly such
a failure (:func:`start_data_lost`) and prints every other exception as before.  A preload that
imported attnsim would load it in the server from the working directory, not from the parent's
``sys.path`` (Python 3.11's server ignores it), and the workers would run another copy.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from types import TracebackType

EXIT_INTERRUPTED = 130
DEAF = "ATTNSIM_DEAF_FORKSERVER"  # set by attnsim.verify.dask_runner.deaf_forkserver for its server only
LOST = (EOFError, FileNotFoundError)  # the parent's pipe closed, or its semaphores unlinked


def main() -> int:
    """Import and run ``attnsim.cli.main.main``; a Ctrl-C outside its own handler is one line, exit 130."""
    try:
        from attnsim.cli.main import main as run  # here, not at the top: a Ctrl-C during it is caught

        code = run()
    except KeyboardInterrupt:
        print("attnsim: interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    if code == EXIT_INTERRUPTED:
        _forget_the_interrupt()
    return code


def _forget_the_interrupt() -> None:
    """Clear CPython's "unhandled KeyboardInterrupt" mark: a KeyboardInterrupt that escaped an
    ``exec`` of a source string (dataclasses and namedtuple run one while modules import) sets it
    even when it is caught later, and under ``python -m`` the interpreter then kills itself with
    SIGINT at exit (-2, not 130; measured: 1 interrupted import in 12).  Running any source string
    resets it (CPython 3.11's ``run_eval_code_obj`` clears it first)."""
    exec("pass")


def start_data_lost(exc_type: type[BaseException], tb: TracebackType | None) -> bool:
    """Whether an exception is a child's failure to read its start data: one of :data:`LOST`, raised
    inside ``multiprocessing.spawn._main`` (which then runs the process as ``_bootstrap``, and that
    prints its own errors and returns an exit code: none of them reaches the hook)."""
    if not issubclass(exc_type, LOST):
        return False
    frames = [(f.f_code.co_filename.replace("\\", "/"), f.f_code.co_name) for f, _ in traceback.walk_tb(tb)]
    return any(path.endswith("multiprocessing/spawn.py") and name == "_main" for path, name in frames)


def _quiet_lost_starts(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    if start_data_lost(exc_type, tb):
        return
    _PREVIOUS_HOOK(exc_type, exc, tb)


def preloaded_by_a_forkserver() -> bool:
    """Whether this import is a forkserver's preload for :func:`deaf_forkserver`'s server: the server's
    ``main`` is on the stack, not inside a child it forked (``_serve_one``), and the client asked for
    a deaf server (:data:`DEAF`, in the server's environment)."""
    if os.environ.get(DEAF) != "1":
        return False
    frame = sys._getframe()
    while frame is not None:
        code = frame.f_code
        if code.co_filename.replace("\\", "/").endswith("multiprocessing/forkserver.py"):
            return code.co_name == "main"  # the innermost forkserver frame: main in the server itself
        frame = frame.f_back  # type: ignore[assignment]
    return False


_PREVIOUS_HOOK = sys.excepthook
sys.excepthook = _quiet_lost_starts
if preloaded_by_a_forkserver():
    # The server saves SIGINT's handler after its preloads and gives the saved one to every child it
    # forks: ignored here, no child (nor what it execs) hears Ctrl-C, which the client handles.  Set
    # in the server, not in the client around the server's start, where setting it ignored would
    # discard a Ctrl-C arriving meanwhile (a verify interrupted as its Dask cluster started went on).
    signal.signal(signal.SIGINT, signal.SIG_IGN)

if __name__ == "__main__":
    sys.exit(main())
