"""The ``attnsim`` command's entry point: Ctrl-C at any moment is one line and exit 130.

:func:`attnsim.cli.main.main` turns a Ctrl-C into one line, but only once the package is imported,
which takes seconds; a Ctrl-C before that (or while the parser is built) would print Python's
traceback.  This module imports nothing of attnsim until :func:`main` runs, and catches it there.
Spawned worker processes re-import the main module: this one costs them nothing.
"""

from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130


def main() -> int:
    """Import and run ``attnsim.cli.main.main``; a Ctrl-C outside its own handler is one line, exit 130."""
    try:
        from attnsim.cli.main import main as run  # here, not at the top: a Ctrl-C during it is caught

        return run()
    except KeyboardInterrupt:
        print("attnsim: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
