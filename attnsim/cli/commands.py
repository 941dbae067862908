"""The command line's parts every subcommand shares: registration, exit codes, option types.

Exit codes, for every subcommand: 0 success; 1 a check failed or stayed unknown (or an
internal error); 2 a usage error (a bad option, a missing file, an input out of range);
130 interrupted.  A subcommand module registers itself with :func:`command`; the parser
(:mod:`attnsim.cli.main`) imports every subcommand module explicitly.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from rich.console import Console
from rich.table import Table
from rich.text import Text

Validator = Callable[[argparse.Namespace], str | None]


COMMANDS: dict[
    str, tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int], Validator | None]
] = {}

CATALOGUE_FREE: set[str] = set()
"""The subcommands that read nothing of the catalogue (registered with ``catalogue=False``): the
command line runs them without loading it, nor the provers it imports."""

EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130


class UsageError(ValueError):
    """A command-line usage error: reported as one line, exit 2."""


def command(
    name: str,
    configure: Callable[[argparse.ArgumentParser], None],
    validate: Validator | None = None,
    *,
    catalogue: bool = True,
) -> Callable[[Callable[[argparse.Namespace], int]], Callable[[argparse.Namespace], int]]:
    """Register a subcommand: ``configure`` adds its arguments, the decorated function runs it.

    ``validate(args)`` (optional) checks combinations of options after parsing and returns an
    error message, or None; the message becomes a one-line usage error (exit 2).
    ``catalogue=False``: the subcommand reads nothing of the catalogue (:data:`CATALOGUE_FREE`).
    """

    def deco(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        COMMANDS[name] = (configure, fn, validate)
        if not catalogue:
            CATALOGUE_FREE.add(name)
        return fn

    return deco


# -- option types: each rejects a bad value with one line, before anything runs ----------------
def _number(text: str, kind: type[int] | type[float]) -> float:
    try:
        v = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected {'an integer' if kind is int else 'a number'}, got {text!r}"
        ) from None
    if v != v or v in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return v


def positive_int(text: str) -> int:
    """An integer >= 1 (worker counts, sizes, repeats)."""
    v = int(_number(text, int))
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text}")
    return v


def nonneg_int(text: str) -> int:
    """An integer >= 0."""
    v = int(_number(text, int))
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text}")
    return v


def positive_float(text: str) -> float:
    """A finite number > 0 (timeouts, budgets, in seconds)."""
    v = float(_number(text, float))
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text}")
    return v


class Parser(argparse.ArgumentParser):
    """argparse, with usage errors on one line (no usage block above them), exit 2."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def out_console() -> Console:
    """The stdout console: the terminal's width, or (in a pipe or a file) wide enough never to fold."""
    c = Console()
    return c if c.is_terminal else Console(width=4000)


def _plain(cell: Any) -> str:
    """A table cell (markup text or a rich Text) as plain text on one line."""
    if isinstance(cell, Text):
        text = cell.plain
    elif isinstance(cell, str):
        text = Text.from_markup(cell).plain
    else:
        text = str(cell)
    return " ".join(text.split())


def print_table(console: Console, table: Table) -> None:
    """``table`` on ``console``: drawn by rich on a terminal; in a pipe or a file, plain lines
    without any padding: the title, the header, then one line per row, cells separated by a tab
    (ids and details whole, no trailing spaces, no box drawing: ``grep`` and ``cut -f`` work)."""
    if console.is_terminal:
        console.print(table)
        return
    lines = [_plain(table.title)] if table.title else []
    lines.append("\t".join(_plain(c.header) for c in table.columns))
    lines += ["\t".join(_plain(x) for x in row) for row in zip(*(list(c.cells) for c in table.columns), strict=True)]
    console.file.write("\n".join(lines) + "\n")  # as written: rich would expand the tabs


def clip(text: str, n: int) -> str:
    """``text`` cut to at most ``n`` characters at a word boundary (with an ellipsis)."""
    text = " ".join(text.split())
    if len(text) <= n:
        return text
    cut = text[: n - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + " …"

