"""The ``attnsim`` command's entry point: Ctrl-C at any moment is one line and exit 130.

:func:`attnsim.cli.main.main` turns a Ctrl-C into one line, but only once the package is imported,
which takes seconds; a Ctrl-C before that (or while the parser is built) would print Python's
traceback.  This module imports nothing of attnsim until :func:`main` runs, and catches it there.
"""

from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130


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


if __name__ == "__main__":
    sys.exit(main())
