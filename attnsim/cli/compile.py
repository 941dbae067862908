"""`attnsim compile NAME [sizes...] --max-len N --out FILE`: compile a lemma, U or a classic program.

NAME is a registered construction (``transpose``, ``matmul``, ``softmax``...; its sizes are the
lemma factory's required arguments, listed by ``attnsim compile --help``; none: the registered
example), ``u`` or ``simulator`` (sizes: max_len d_model n_heads d_head [d_ff]; none: the
registered example capacity) or a classic RASP program (``reverse``, ``histogram``,
``sort_unique``, ``length``, ``frac_prevs``; ``--max-len`` and ``--vocab``).

`attnsim compare tracr [--n 5 10] [--json | --markdown]`: the classic programs compiled by us and
by Tracr (the optional extra ``attnsim[tracr]``), measured on the same inputs
(:mod:`attnsim.compile.compare`).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import sys
import time
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from attnsim import lemmas
from attnsim.cli.commands import UsageError, command, nonneg_int, out_console, positive_int
from attnsim.compile import classic, compare, memory
from attnsim.compile.compiler import compile_program, refuse_past_memory
from attnsim.compile.model import CompiledTransformer, CompileError
from attnsim.compile.tracr_adapter import TracrSystem, TracrUnavailable
from attnsim.proofs import registry
from attnsim.universal.universal import UniversalSimulator

U_NAMES = ("u", "simulator")
U_SIZES = ("MAX_LEN", "D_MODEL", "N_HEADS", "D_HEAD", "[D_FF]")


def size_names(key: str) -> tuple[str, ...] | None:
    """The sizes a construction takes on the command line (its factory's required arguments).

    None when the construction has no size-taking factory in :mod:`attnsim.lemmas` (only its
    registered example compiles).  Optional arguments (a lemma's ``heads``...) are not sizes, so
    a surplus number is refused instead of silently becoming one.
    """

    factory = getattr(lemmas, key.replace("-", "_"), None)
    if factory is None or not callable(factory):
        return None
    params = inspect.signature(factory).parameters.values()
    req = tuple(
        p.name.upper()
        for p in params
        if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    )
    return req or None


def sizes_help() -> str:
    """The --help epilog: which sizes each NAME takes."""

    lines = ["sizes per NAME:"]
    fixed = []
    for key in registry.constructions():
        if key in U_NAMES:
            continue
        names = size_names(key)
        if names:
            lines.append(f"  {key} {' '.join(names)}")
        else:
            fixed.append(key)
    lines.append(f"  u | simulator {' '.join(U_SIZES)}   (U's capacity; none: the registered example)")
    lines.append(f"  no sizes (the registered example): {', '.join(fixed)}")
    lines.append(f"  no sizes, --max-len and --vocab instead (classic RASP): {', '.join(classic.PROGRAMS)}")
    lines.append("examples: attnsim compile matmul 2 3 2 --out matmul.npz; attnsim compile u 4 4 2 2 8 --quiet")
    return "\n".join(lines)


def _args(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = sizes_help()
    p.add_argument(
        "name", help="a construction (see below), 'u' / 'simulator' (the universal simulator) or a classic program"
    )
    p.add_argument("sizes", nargs="*", type=positive_int, help="the construction's sizes, or U's capacity (see below)")
    p.add_argument(
        "--max-len", type=positive_int, default=None, help="longest sequence (default: the construction's length)"
    )
    p.add_argument(
        "--vocab", type=positive_int, default=None, help="classic programs: tokens are 0..VOCAB-1 (default 4)"
    )
    p.add_argument("--out", metavar="FILE", default=None, help="write the weights to FILE (.npz)")
    p.add_argument(
        "--stack", type=positive_int, default=1, help="u: number of layers T_1..T_M in the input (pointer range)"
    )
    p.add_argument("--quiet", "-q", action="store_true", help="one summary line instead of every head and MLP")


def check_out(out: str) -> None:
    """Refuse an --out that cannot be written, before spending time on compiling."""
    path = Path(out)
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise CompileError(f"--out {out}: is a directory; name a file such as {path / 'model.npz'}")
    if not parent.is_dir():
        raise CompileError(f"--out {out}: no directory {parent}")
    if not os.access(parent, os.W_OK):
        raise CompileError(f"--out {out}: directory {parent} is not writable")
    existed = path.exists()
    try:  # os.access says yes to root everywhere (/proc too): try the file itself
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise CompileError(f"--out {out}: cannot write there ({exc.strerror})") from None
    if not existed:
        path.unlink(missing_ok=True)


LOUD_CELLS = 1_000_000
"""Positions x program nodes (plus table entries) from which the estimate is printed before
compiling: compiles of several seconds and more."""


def compile_shown(
    what: str,
    program: Any,
    max_len: int,
    vocab: Iterable[Any] | None = None,
    domains: dict[str, Any] | None = None,
) -> CompiledTransformer:
    """compile_program with its size told first and its progress shown on stderr: a compile past the
    memory available is refused in one line with the estimate before any work; a large one prints
    the estimate; a rich progress bar (on a terminal) follows the nodes lowered and positions
    embedded."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    est = memory.estimate(program, max_len, None if vocab is None else len(list(vocab)))
    refuse_past_memory(what, est)
    if est.positions * est.nodes + est.entries >= LOUD_CELLS:
        free = memory.available_memory()
        avail = f" ({memory.human(free)} available)" if free is not None else ""
        print(f"compiling {what}: {est.describe()}{avail}", file=sys.stderr, flush=True)
    err = Console(stderr=True)
    if not err.is_terminal:
        return compile_program(program, max_len, vocab, domains)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        tasks: dict[str, Any] = {}

        def advance(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                label = "lowering: program nodes" if phase == "lowering" else "embedding: positions"
                tasks[phase] = bar.add_task(f"{what} {label}", total=total)
            bar.update(tasks[phase], completed=done)

        return compile_program(program, max_len, vocab, domains, progress=advance)


def build(name: str, sizes: list[int], max_len: int | None, vocab: int | None, stack: int = 1) -> CompiledTransformer:  # noqa: C901, PLR0912
    """Compile NAME at the given sizes (see the module docstring)."""

    key = name.lower()
    if any(s < 1 for s in sizes):
        raise CompileError(f"sizes must be >= 1, got {' '.join(map(str, sizes))}")
    if key not in U_NAMES and stack != 1:
        raise CompileError(f"--stack is for u / simulator (layers in U's input), not {key}")
    if key not in classic.PROGRAMS and vocab is not None:
        raise CompileError(f"--vocab is for classic programs ({', '.join(classic.PROGRAMS)}), not {key}")
    if key in U_NAMES:
        if not sizes:
            example: Any = registry.constructions()["simulator"][1]()
            sizes = list(example.capacity.values())
        if len(sizes) not in (4, 5):
            raise CompileError(f"{key} takes its capacity: {' '.join(U_SIZES)}; got {len(sizes)} size(s)")
        if stack < 1:
            raise CompileError(f"--stack must be >= 1, got {stack}")
        u = UniversalSimulator(*sizes)
        n = u.positions(stack)
        if max_len is not None and max_len < n:
            raise CompileError(f"U at this capacity runs on {n} positions; --max-len {max_len} is too short")
        ct = compile_shown(f"U{tuple(sizes)}", u.program, max_len or n, domains=u.compile_domains())
        ct.name = f"U{tuple(sizes)}"
        return ct
    if key in classic.PROGRAMS:
        if sizes:
            raise CompileError(f"classic program {key} takes no sizes; use --max-len and --vocab")
        return compile_shown(key, classic.PROGRAMS[key](), max_len or 10, vocab=range(vocab or 4))
    cons = registry.constructions()
    if key not in cons:
        known = ", ".join(sorted([*cons, "u", *classic.PROGRAMS]))
        raise CompileError(f"unknown construction {name!r}; known: {known}")
    con: Any  # a Construction, or U for the key 'simulator'
    if sizes:
        names = size_names(key)
        if names is None:
            raise CompileError(f"{key} has no size-taking factory in attnsim.lemmas; omit the sizes")
        if len(sizes) != len(names):
            raise CompileError(
                f"{key} takes {len(names)} size(s) ({' '.join(names)}), got {len(sizes)}: {' '.join(map(str, sizes))}"
            )
        try:
            con = getattr(lemmas, key.replace("-", "_"))(*sizes)
        except TypeError as exc:
            raise CompileError(f"{key}{tuple(sizes)}: {exc}") from None
    else:
        con = cons[key][1]()
    n = con.layout.total
    if max_len is not None and max_len < n:
        raise CompileError(f"{key} runs on {n} positions; --max-len {max_len} is too short")
    ct = compile_shown(f"{key}{tuple(sizes) if sizes else ''}", con.program, max_len or n)
    ct.name = f"{key}{tuple(sizes) if sizes else ''}"
    return ct


def one_line(ct: CompiledTransformer) -> str:
    """The --quiet summary: name, layers, heads, residual width, parameters."""
    return (
        f"compiled {ct.name}: {ct.n_layers} layer{'' if ct.n_layers == 1 else 's'}, heads per layer "
        f"{ct.heads_per_layer()}, residual width "
        f"{ct.d_model}, {ct.parameter_count():,} parameters ({ct.parameter_count(nonzero=True):,} non-zero)"
    )


@command("compile", _args)
def compile_command(args: argparse.Namespace) -> int:
    """Compile a lemma, U or a classic program to transformer weights; print the summary, write the .npz."""
    if args.out:
        check_out(args.out)
    ct = build(args.name, list(args.sizes), args.max_len, args.vocab, args.stack)
    print(one_line(ct) if args.quiet else ct.summary())
    if args.name.lower() in classic.LIMITS:
        print(f"note: {args.name.lower()} {classic.LIMITS[args.name.lower()]}", file=sys.stderr)
    if args.out:
        path = ct.save(args.out)
        print(f"wrote {path}")
    return 0


# -- compare tracr -----------------------------------------------------------------------------
def tracr_system() -> compare.System:
    """Tracr's adapter (a usage error naming the extra when Tracr is not installed)."""

    try:
        return TracrSystem()
    except TracrUnavailable as exc:
        raise UsageError(str(exc)) from None


def machine() -> dict[str, Any]:
    """Where and when the comparison ran: date, CPU, cores, Python and package versions."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    versions: dict[str, str | None] = {}
    for pkg in ("attnsim", "tracr-pypi", "jax", "jaxlib", "numpy"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    return {
        "date": time.strftime("%Y-%m-%d"),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "versions": versions,
    }


def machine_line(m: dict[str, Any]) -> str:
    """The machine as one line (printed under the table)."""
    vs = ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v)
    return f"measured {m['date']} on {m['cpu']} ({m['cores']} cores), Python {m['python']}; {vs}"


def _compare_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("against", choices=["tracr"], help='the other compiler (tracr: pip install "attnsim[tracr]")')
    p.add_argument(
        "--n",
        type=positive_int,
        nargs="+",
        default=[5, 10],
        metavar="N",
        help="sizes: max_len = vocabulary size N (default 5 10)",
    )
    p.add_argument(
        "--programs",
        nargs="+",
        choices=list(classic.PROGRAMS),
        default=list(classic.PROGRAMS),
        metavar="NAME",
        help=f"classic programs (default all: {', '.join(classic.PROGRAMS)})",
    )
    p.add_argument(
        "--samples",
        type=positive_int,
        default=200,
        help="random inputs per length when all inputs are more than 20,000 (default 200)",
    )
    p.add_argument("--seed", type=nonneg_int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument("--repeats", type=positive_int, default=3, help="timed forward runs per batch, fastest kept")
    p.add_argument("--json", action="store_true", help="print the rows and the machine as JSON")
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown (docs/compile.md describes it)")


def _compare_validate(args: argparse.Namespace) -> str | None:
    if args.json and args.markdown:
        return "--json and --markdown contradict; choose one"
    return None


@command("compare", _compare_args, _compare_validate)
def compare_command(args: argparse.Namespace) -> int:
    """Compile the classic programs with attnsim and with Tracr; measure size, wrong outputs, time."""
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    other = tracr_system()  # first: without the extra, one line and exit 2 before any work
    systems = [compare.Ours(), other]
    total = len(args.n) * len(args.programs) * len(systems)
    with Progress(console=Console(stderr=True), transient=True) as prog:
        task = prog.add_task("compare", total=total)
        seen: set[tuple[str, int, str]] = set()

        def advance(row: dict[str, Any]) -> None:
            key = (row["program"], row["n"], row["system"].split()[0])
            if key not in seen:
                seen.add(key)
                prog.advance(task)

        rows = compare.measure(
            systems, args.programs, args.n, samples=args.samples, seed=args.seed, repeats=args.repeats, on_row=advance
        )
    m = machine()
    if args.json:
        print(json.dumps({"rows": rows, "machine": m}, indent=1))
        return 0
    if args.markdown:
        print(compare.markdown(rows))
        print()
        print(machine_line(m))
        return 0
    table = Table(title="attnsim vs Tracr: classic programs at max_len = vocabulary size = N")
    for col in compare.COLUMNS:
        table.add_column(col, justify="left" if col in ("program", "system", "wrong") else "right")
    for r in rows:
        table.add_row(*compare.cells(r))
    out = out_console()
    out.print(table)
    out.print(machine_line(m))
    return 0
