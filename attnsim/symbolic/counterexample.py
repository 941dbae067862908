"""Counterexamples for an all-sizes proof that did not go through: small sizes (and the constants the
program compares sizes with) are bound and program and spec compared on random operands.  This can
refute a construction, never prove one.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import numpy as np
import sympy as sp

from attnsim.proofs.construction import Construction
from attnsim.proofs.obligation import Outcome
from attnsim.rasp import expr as E


def constants_compared(diff: Any) -> set[int]:
    """Integers a size is compared with in the difference (where a branch on sizes may switch)."""
    out: set[int] = set()
    for rel in diff.atoms(sp.core.relational.Relational):
        for n in rel.atoms(sp.Integer):
            out |= {int(n) - 1, int(n), int(n) + 1}
    return {v for v in out if v >= 1}


def program_constants(con: Construction) -> set[int]:
    """Integers that index expressions or size-valued constants of the program compare with (+-1)."""
    out: set[int] = set()
    for e in con.size_exprs():
        for x in E.nodes(e):
            if isinstance(x, E.BinOp) and x.op in E.COMPARATORS:
                for side in (x.a, x.b):
                    if isinstance(side, E.Const):
                        out |= {side.value - 1, side.value, side.value + 1}
    return {v for v in out if 1 <= v <= 256}


def with_counterexample(
    con: Construction,
    out: Outcome,
    cap: int = 4,
    tries: int = 48,
    special: set[int] | None = None,
    max_len: int = 20000,
) -> Outcome:
    """Search small sizes, and the constants the program compares sizes with, for an entry where
    program and spec differ (this refutes; it never proves)."""
    names = sorted(con.free_sizes)
    rng = np.random.default_rng(0)
    special = (special or set()) | program_constants(con)
    values = sorted(set(range(1, cap + 1)) | special)
    combos = list(itertools.product(values, repeat=len(names)))
    rng.shuffle(combos)
    combos.sort(key=lambda c: -sum(v in special for v in c))  # the constants first
    scalar = {name: (lo, upper) for name, lo, upper, _ in con.scalars}
    for combo in combos[:tries]:
        sizes = dict(zip(names, combo, strict=True))
        try:
            inst = con.bind(**sizes)
            if inst.layout.total > max_len:
                continue
            ops = [
                np.full(inst.layout[n].shape, rng.integers(scalar[n][0], int(E.lift(scalar[n][1]).evaluate(sizes)) + 1))
                if n in scalar
                else rng.integers(0, 2, size=inst.layout[n].shape)
                if n in con.binary
                else rng.integers(-5, 6, size=inst.layout[n].shape)
                for n in inst.inputs
            ]
            backend = "exact" if inst.exact else "numpy"
            got, want = inst.run(*ops, backend=backend), inst.spec(*ops, backend=backend)
        except (ValueError, IndexError):  # sizes outside the construction's or the spec's domain
            continue
        diff = np.argwhere(np.asarray(got != want) if backend == "exact" else ~np.isclose(got, want, rtol=0, atol=1e-9))
        if len(diff):
            ix = tuple(int(x) for x in diff[0])
            return replace(
                out,
                ok=False,
                detail=f"{out.detail}; counterexample at {', '.join(f'{k}={v}' for k, v in sizes.items())}: "
                f"{con.output}{list(ix)} = {got[ix]} but the spec gives {want[ix]}",
                counterexample=tuple(sorted(sizes.items())),
            )
    return out


__all__ = ["constants_compared", "program_constants", "with_counterexample"]
