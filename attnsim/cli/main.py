"""The `attnsim` command line: verify, audit, simulate, report, bench, compile.

:func:`main` is the console script's entry point.  No Python traceback reaches the user
(``attnsim --traceback CMD`` shows it): every exception becomes one line on stderr, and that line
is the last one.  Ctrl-C, from the moment :func:`main` runs, is one line (``attnsim CMD:
interrupted``, or ``attnsim: interrupted`` before the command is known) and exit code 130: the
subcommand modules and the catalogue, seconds of imports, load inside it (:func:`load`), and what a
command started (worker processes, a local Dask cluster) is stopped as the interrupt unwinds.  A
Ctrl-C while Python itself imports this module (and the package's facade) is Python's: its
traceback.  Only the named subcommand's module is imported (every one for ``--help`` and for a
word naming none), and the catalogue only for a subcommand that reads it: ``attnsim simulate``
loads neither Z3 nor SymPy.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from attnsim.cli.commands import CATALOGUE_FREE, COMMANDS, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, Parser
from attnsim.version import __version__

# the module that registers each subcommand (:func:`attnsim.cli.commands.command`)
MODULES = {
    "verify": "attnsim.cli.verify",
    "audit": "attnsim.cli.audit",
    "simulate": "attnsim.cli.simulate",
    "report": "attnsim.cli.report",
    "bench": "attnsim.cli.bench",
    "compile": "attnsim.cli.compile",
    "compare": "attnsim.cli.compile",
}


def load(name: str | None = None) -> None:
    """Import the module of subcommand ``name`` (every subcommand module when ``name`` is None or
    names no subcommand), so that it registers itself, and load the catalogue unless every loaded
    subcommand is registered as not reading it (``attnsim simulate``: a numeric run loads neither
    Z3 nor SymPy); idempotent."""
    for module in sorted(set(MODULES.values()) if name not in MODULES else {MODULES[name]}):
        importlib.import_module(module)
    if set(COMMANDS) - CATALOGUE_FREE:
        from attnsim import catalog

        catalog.load()


def _command_named(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names: its first word that is not an option (the top-level options
    take no value), or None."""
    return next((a for a in argv if not a.startswith("-")), None)


def _one_line(exc: BaseException) -> str:
    """An exception as one line: our own errors by their message, others by type and message."""
    text = " ".join(str(exc).split()) or "(no message)"
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    own = type(exc).__module__.startswith("attnsim")
    return text if own else f"{type(exc).__name__}: {text}"


def build_parser(name: str | None = None) -> argparse.ArgumentParser:
    """The top-level parser with the subcommand ``name`` (see :func:`load`), or every subcommand."""
    load(name)
    parser = Parser(prog="attnsim", description="Universal simulators of attention, proven three ways.")
    parser.add_argument("--version", action="version", version=f"attnsim {__version__}")
    parser.add_argument(
        "--traceback", action="store_true", help="on an error, show the Python traceback instead of one line"
    )
    sub = parser.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    for name, (configure, fn, _) in COMMANDS.items():
        sp = sub.add_parser(name, help=((fn.__doc__ or "").strip().splitlines() or [""])[0])
        configure(sp)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand and return its exit code (0 ok, 1 failed check, 2 usage error, 130
    interrupted).

    argparse-level usage errors (an unknown option, a bad value) raise ``SystemExit(2)`` after
    their one line, as argparse does; every other exception becomes one line and a return code.
    """
    prefix = "attnsim"
    try:
        argv = sys.argv[1:] if argv is None else argv
        parser = build_parser(_command_named(argv))
        args = parser.parse_args(argv)
        prefix = f"attnsim {args.cmd}"
        return _run(parser, args)
    except KeyboardInterrupt:
        print(f"{prefix}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """The subcommand ``args.cmd``, its exceptions turned into one line and an exit code (a
    ``KeyboardInterrupt`` is left to :func:`main`)."""
    _, fn, validate = COMMANDS[args.cmd]
    if validate is not None:
        msg = validate(args)
        if msg:
            sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
            sub.choices[args.cmd].error(msg)
    debug = args.traceback or os.environ.get("ATTNSIM_TRACEBACK") == "1"
    prefix = f"attnsim {args.cmd}"
    try:
        return fn(args)
    except BrokenPipeError:  # `attnsim verify | head`: the reader left; say nothing more
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_FAILED
    except (ValueError, KeyError, OSError) as exc:  # bad input, a missing or unwritable file: usage
        if debug:
            raise
        print(f"{prefix}: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a bug: still one line, naming the exception
        if debug:
            raise
        print(
            f"{prefix}: internal error: {type(exc).__name__}: {' '.join(str(exc).split())} "
            "(rerun with `attnsim --traceback ...` and report it)",
            file=sys.stderr,
        )
        return EXIT_FAILED


if __name__ == "__main__":
    raise SystemExit(main())
