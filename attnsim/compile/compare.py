"""Size and correctness of our compiled classic programs next to Tracr's (for the README table).

Tracr's figures are the ones measured and quoted in the compile issue (Tracr is not a dependency):
``reverse`` compiles to 4 layers / 20,649 parameters at max_len 5 over 5 symbols and 4 layers /
108,059 parameters at max_len 10 over 10 symbols, with all 200 random inputs of length 10
wrong (re-measured in issue 15 with tracr-pypi 1.0.0: its ``length`` gives 9 at length 10 at its
default MLP exactness; an earlier quote said 19 of 200).  Our "wrong" counts compare the
exact compiled forward with the exact interpreter using ``==``: exhaustively over every input of
every length up to ``max_len`` when there are at most ``exhaustive_limit`` of them, else on
``samples`` random inputs per length.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from attnsim.compile import classic
from attnsim.compile.compiler import compile_program
from attnsim.compile.model import CompiledTransformer
from attnsim.rasp.engine import evaluate

TRACR: dict[tuple[str, int], dict[str, Any]] = {
    ("reverse", 5): {"layers": 4, "params": 20_649, "wrong": None},
    ("reverse", 10): {"layers": 4, "params": 108_059, "wrong": "200/200 at length 10"},
}


def inputs_for(
    max_len: int, vocab: int, exhaustive_limit: int = 20_000, samples: int = 200, seed: int = 0
) -> tuple[list[np.ndarray], str]:
    """Batches (one per length) of inputs, and how they were chosen."""
    total = sum(vocab**n for n in range(1, max_len + 1))
    rng = np.random.default_rng(seed)
    if total <= exhaustive_limit:
        return [
            np.array(list(itertools.product(range(vocab), repeat=n))) for n in range(1, max_len + 1)
        ], f"all {total}"
    return [rng.integers(0, vocab, size=(samples, n)) for n in range(1, max_len + 1)], f"{samples} random per length"


def wrong_outputs(ct: CompiledTransformer, program: Any, batches: list[np.ndarray]) -> tuple[int, int]:
    """(inputs whose exact compiled output differs from the exact interpreter, inputs checked)."""
    bad = total = 0
    for batch in batches:
        ys = ct.forward(batch, exact=True)
        for x, y in zip(batch, ys, strict=True):
            r = evaluate(program, x, "exact")
            total += 1
            if not all(a == b for a, b in zip(y, r, strict=True)):
                bad += 1
    return bad, total


def tracr_table(
    programs: tuple[str, ...] = ("length", "reverse", "histogram", "sort_unique"),
    sizes: tuple[int, ...] = (5, 10),
    samples: int = 200,
) -> list[dict[str, Any]]:
    """One row per (program, max_len): our size and wrong outputs, Tracr's where measured.

    The vocabulary has ``max_len`` symbols (as in the Tracr measurements).
    """
    rows = []
    for name in programs:
        for n in sizes:
            prog = classic.PROGRAMS[name]()
            ct = compile_program(prog, max_len=n, vocab=range(n))
            batches, how = inputs_for(n, n, samples=samples)
            bad, total = wrong_outputs(ct, prog, batches)
            tr = TRACR.get((name, n), {})
            rows.append(
                {
                    "program": name,
                    "max_len": n,
                    "vocab": n,
                    "layers": ct.n_layers,
                    "mlp0": bool(ct.layers[0].mlp),
                    "heads": sum(ct.heads_per_layer()),
                    "d_model": ct.d_model,
                    "params": ct.parameter_count(),
                    "params_nonzero": ct.parameter_count(nonzero=True),
                    "wrong": bad,
                    "checked": total,
                    "inputs": how,
                    "tracr_layers": tr.get("layers"),
                    "tracr_params": tr.get("params"),
                    "tracr_wrong": tr.get("wrong"),
                }
            )
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    """The table as Markdown (for the README)."""
    head = (
        "| program | N | attention layers (ours / Tracr) | params (ours dense, non-zero / Tracr) "
        "| wrong (ours / Tracr) |"
    )
    out = [head, "|---|---|---|---|---|"]
    for r in rows:
        tl = "n/a" if r["tracr_layers"] is None else str(r["tracr_layers"])
        tp = "n/a" if r["tracr_params"] is None else f"{r['tracr_params']:,}"
        tw = "n/a" if r["tracr_wrong"] is None else str(r["tracr_wrong"])
        size = f"{r['params']:,}, {r['params_nonzero']:,} / {tp}"
        wrong = f"{r['wrong']} of {r['checked']} ({r['inputs']}) / {tw}"
        ours = f"{r['layers']}" + (" (+ layer-0 MLP)" if r.get("mlp0") else "")
        out.append(f"| {r['program']} | {r['max_len']} | {ours} / {tl} | {size} | {wrong} |")
    return "\n".join(out)


def universal_sizes(
    capacities: tuple[tuple[int, int, int, int, int], ...] = ((2, 2, 1, 2, 2), (3, 3, 2, 2, 3), (4, 4, 2, 2, 4)),
) -> list[dict[str, Any]]:
    """Compiled U per capacity (max_len, d_model, n_heads, d_head, d_ff): positions, width, layers, sizes."""
    from attnsim.compile.obligations import universal_factory

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
