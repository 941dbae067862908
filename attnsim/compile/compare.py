"""Our classic programs and Tracr's, compiled and measured side by side (``attnsim compare tracr``).

Every system compiles each classic program at max_len = vocabulary size = N and runs the *same*
inputs (:func:`inputs_for`: every sequence of length 1..N over 0..N-1 when there are at most
20,000 of them, as at N = 5; else ``samples`` seeded random inputs per length, as at N = 10).
An input is wrong when any position differs from the *intended* function (:func:`intended`, plain
Python: reverse, length, histogram, sorted, fraction of zeros so far); exact values (ints,
Fractions) must be equal, float values within ``tol``.  ``sort_unique``'s intended function is
the sort, so its rows also count the inputs with distinct tokens apart: with a repeated token it
is not a sort in either system.

A system is anything with a ``name`` and ``build(program, n) -> Built`` (:class:`System`):
:class:`Ours` here, Tracr's adapter in :mod:`attnsim.compile.tracr_adapter` (the only module that
imports Tracr), a fake in the tests.  Compile time is the wall time of ``build``; forward time is
the steady state per input: each batch (one per length) runs once untimed (which warms up a jit),
then the fastest of ``repeats`` timed runs, summed over batches and divided by the inputs.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

import numpy as np

from attnsim.compile import classic
from attnsim.compile.compiler import compile_program
from attnsim.compile.obligations import universal_factory

Forward = Callable[[np.ndarray], Sequence[Sequence[Any]] | np.ndarray]
"""A batch (B, L) of token ids 0..N-1 -> B output sequences (one value per position)."""

TOL = 1e-5  # float outputs: right within this (distinct intended values differ by > 1e-2 at N <= 10)


@dataclass
class Built:
    """One compiled program: its size and its forward pass(es), by label (e.g. exact, float64)."""

    layers: int
    params: int
    params_nonzero: int
    forwards: dict[str, Forward]
    layers_note: str = ""  # e.g. "+ MLP0": an MLP before the first attention layer
    notes: dict[str, Any] = field(default_factory=dict)


class System(Protocol):
    """A compiler of the classic programs: ``build(program, n)`` at max_len = vocabulary size = n."""

    name: str

    def build(self, program: str, n: int) -> Built: ...


class Ours:
    """attnsim's compiler on :mod:`attnsim.compile.classic`; the exact and the float64 forward."""

    name = "attnsim"

    def build(self, program: str, n: int) -> Built:
        """Compile ``classic.PROGRAMS[program]`` at max_len n over tokens 0..n-1."""
        ct = compile_program(classic.PROGRAMS[program](), max_len=n, vocab=range(n))
        return Built(
            layers=ct.n_layers,
            params=ct.parameter_count(),
            params_nonzero=ct.parameter_count(nonzero=True),
            forwards={
                "exact": lambda b: ct.forward(b, exact=True),
                "float64": lambda b: ct.forward(b, exact=False),
            },
            layers_note="+ MLP0" if ct.layers[0].mlp else "",
        )


def inputs_for(
    max_len: int, vocab: int, exhaustive_limit: int = 20_000, samples: int = 200, seed: int = 0
) -> tuple[list[np.ndarray], str]:
    """Batches (one per length) of inputs, and how they were chosen."""
    total = sum(vocab**n for n in range(1, max_len + 1))
    rng = np.random.default_rng(seed)
    if total <= exhaustive_limit:
        return [
            np.array(list(itertools.product(range(vocab), repeat=n))) for n in range(1, max_len + 1)
        ], f"all {total:,}"
    return [
        rng.integers(0, vocab, size=(samples, n)) for n in range(1, max_len + 1)
    ], f"{samples} random per length, seed {seed}"


def intended(program: str, x: Sequence[Any]) -> list[Any]:
    """What ``program`` is meant to compute on ``x`` (plain Python, exact)."""
    xs = [int(t) for t in x]
    if program == "length":
        return [len(xs)] * len(xs)
    if program == "reverse":
        return xs[::-1]
    if program == "histogram":
        return [xs.count(t) for t in xs]
    if program == "sort_unique":
        return sorted(xs)
    if program == "frac_prevs":
        return [Fraction(xs[: i + 1].count(0), i + 1) for i in range(len(xs))]
    raise KeyError(f"no intended function for {program!r}; known: {', '.join(classic.PROGRAMS)}")


def agrees(got: Sequence[Any], want: Sequence[Any], tol: float = TOL) -> tuple[bool, float | None]:
    """(every position right, largest |error| over the float-valued positions or None if none)."""
    if len(got) != len(want):
        return False, None
    ok, err = True, None
    for g, w in zip(got, want, strict=True):
        if isinstance(g, (int, Fraction, np.integer)) and not isinstance(g, bool):
            ok = ok and Fraction(int(g) if isinstance(g, np.integer) else g) == w
            continue
        try:
            f = float(g)
        except (TypeError, ValueError):  # None, a BOS marker...: wrong
            ok = False
            continue
        e = abs(f - float(w)) if math.isfinite(f) else math.inf
        err = e if err is None else max(err, e)
        ok = ok and e <= tol
    return ok, err


def measure(
    systems: Sequence[System],
    programs: Sequence[str] = tuple(classic.PROGRAMS),
    sizes: Sequence[int] = (5, 10),
    samples: int = 200,
    seed: int = 0,
    repeats: int = 3,
    tol: float = TOL,
    clock: Callable[[], float] = time.perf_counter,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """One row per (program, N, system, forward): size, wrong outputs, compile and forward time."""
    rows = []
    for n in sizes:
        batches, how = inputs_for(n, n, samples=samples, seed=seed)
        for name in programs:
            wants = [[intended(name, x) for x in b] for b in batches]
            for system in systems:
                t0 = clock()
                built = system.build(name, n)
                compile_s = clock() - t0
                for label, fwd in built.forwards.items():
                    row = _run(built, fwd, batches, wants, repeats, tol, clock)
                    row.update(
                        program=name,
                        n=n,
                        system=f"{system.name} {label}",
                        inputs=how,
                        layers=built.layers,
                        layers_note=built.layers_note,
                        params=built.params,
                        params_nonzero=built.params_nonzero,
                        compile_s=compile_s,
                        **built.notes,
                    )
                    rows.append(row)
                    if on_row is not None:
                        on_row(row)
    return rows


def _run(
    built: Built,
    fwd: Forward,
    batches: list[np.ndarray],
    wants: list[list[list[Any]]],
    repeats: int,
    tol: float,
    clock: Callable[[], float],
) -> dict[str, Any]:
    wrong = checked = wrong_distinct = checked_distinct = 0
    by_length: dict[int, list[int]] = {}  # length -> [wrong, checked]
    max_err: float | None = None
    first_wrong: dict[str, Any] | None = None
    seconds = 0.0
    for batch, want in zip(batches, wants, strict=True):
        outs = fwd(batch)  # untimed: warms up (a jit compiles here) and gives the outputs
        best = math.inf
        for _ in range(repeats):
            t0 = clock()
            fwd(batch)
            best = min(best, clock() - t0)
        seconds += best
        for x, y, w in zip(batch, outs, want, strict=True):
            ok, err = agrees(list(y), w, tol)
            if err is not None:
                max_err = err if max_err is None else max(max_err, err)
            distinct = len(set(x.tolist())) == len(x)
            checked += 1
            checked_distinct += distinct
            counts = by_length.setdefault(len(x), [0, 0])
            counts[1] += 1
            if not ok:
                wrong += 1
                counts[0] += 1
                wrong_distinct += distinct
                if first_wrong is None:
                    first_wrong = {"input": x.tolist(), "got": [_plain(v) for v in y], "want": [_plain(v) for v in w]}
    return {
        "wrong": wrong,
        "checked": checked,
        "wrong_distinct": wrong_distinct,
        "checked_distinct": checked_distinct,
        "max_err": max_err,
        "first_wrong": first_wrong,
        "wrong_by_length": {str(k): v for k, v in sorted(by_length.items()) if v[0]},  # "L": [wrong, checked]
        "forward_us": 1e6 * seconds / max(checked, 1),
    }


def _plain(v: Any) -> Any:
    """A value for JSON: int, float, a Fraction as "p/q", anything else as its str."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, Fraction):
        return int(v) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return int(f) if f.is_integer() else f
    return str(v)


# -- the table ---------------------------------------------------------------------------------
COLUMNS = ("program", "N", "system", "layers", "params (dense)", "non-zero", "wrong", "compile s", "forward µs/input")


def cells(r: dict[str, Any]) -> list[str]:
    """One row of the table as strings (shared by the rich and the Markdown table)."""
    wrong = f"{r['wrong']:,} of {r['checked']:,}"
    if r["program"] == "sort_unique":
        wrong += f" ({r['wrong_distinct']:,} of {r['checked_distinct']:,} with distinct tokens)"
    elif r.get("wrong_by_length") and len(r["wrong_by_length"]) <= 2:
        at = "; ".join(f"{w:,} of {c:,}" + f" at length {k}" for k, (w, c) in r["wrong_by_length"].items())
        wrong += f" ({at})"
    if r["program"] == "frac_prevs" and r.get("max_err"):
        wrong += f" (max error {r['max_err']:.0e})"
    layers = f"{r['layers']}" + (f" {r['layers_note']}" if r.get("layers_note") else "")
    return [
        r["program"],
        str(r["n"]),
        r["system"],
        layers,
        f"{r['params']:,}",
        f"{r['params_nonzero']:,}",
        wrong,
        f"{r['compile_s']:.3g}",
        f"{r['forward_us']:.3g}",
    ]


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The table as Markdown (docs/compile.md describes its columns)."""
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    out += ["| " + " | ".join(cells(r)) + " |" for r in rows]
    return "\n".join(out)


def universal_sizes(
    capacities: tuple[tuple[int, int, int, int, int], ...] = ((2, 2, 1, 2, 2), (3, 3, 2, 2, 3), (4, 4, 2, 2, 4)),
) -> list[dict[str, Any]]:
    """Compiled U per capacity (max_len, d_model, n_heads, d_head, d_ff): positions, width, layers, sizes."""

    rows = []
    for cap in capacities:
        u, ct = universal_factory(*cap)
        rows.append(
            {
                "capacity": cap,
                "positions": u.positions(),
                "d_model": ct.d_model,
                "layers": ct.n_layers,
                "heads": sum(ct.heads_per_layer()),
                "params": ct.parameter_count(),
                "params_nonzero": ct.parameter_count(nonzero=True),
                "max_mlp_width": max((w for lw in ct.mlp_widths() for w in lw), default=0),
                "generalized_nodes": len(ct.generalized_nodes()),
            }
        )
    return rows
