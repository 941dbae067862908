"""A counterexample search for an all-sizes proof about U that stayed undecided: U run in float64
against the reference layer at concrete capacities, before anyone is told to try a longer budget.

A proof that ran out of its budget, or computed both sides and could not show them equal, or could
not show a side condition (a divisor > 0), says nothing about whether U is right.  A wrong U whose
bug only shows past some size (a scale squared when d_model > 32, a key dropped when N > 32, ReLU
dropped when d_ff > 64) passes every small instance, so the capacities tried are read off U's own
program: every index expression that compares a capacity size with a constant c gives the
capacities c - 1 ... c + 2 for that size (:func:`size_thresholds`), beside a few small ones
(:data:`BASE`).
At each capacity U runs with true sizes equal to the capacity under three option sets that between
them take every option value (norm none / post / pre, activation relu / gelu / gelu_tanh, residual
on and off), and with true sizes 2 (or the capacity when smaller) under the first.  The work is counted in
runs (:data:`MAX_RUNS`, capacities above :data:`MAX_CAPACITY` skipped and said so), never in seconds,
so the search finds the same on a busy machine.

A difference above :data:`TOLERANCE` is a counterexample to the layer: U(T, X) != T(X) at those
sizes.  It refutes U, not necessarily the goal that was being proven (the bug may be in another
stage), so the goal stays undecided; it tells the reader that a longer budget will not help.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from attnsim.proofs.obligation import Outcome
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.universal.layer import TransformerLayer
from attnsim.universal.universal import UniversalSimulator

Cap = tuple[int, int, int, int, int]
CAPACITY = ("N", "D", "H", "K", "F")  # U's capacity sizes, as named in its symbolic build
SMALL = 3  # the capacity every size takes when no threshold moves it
BASE: tuple[tuple[int, int, int, int, int], ...] = ((3, 3, 3, 3, 3), (1, 1, 1, 1, 1), (4, 2, 3, 1, 5))
MAX_CAPACITY = 128  # a capacity past this is not run (a float64 U there takes seconds)
MAX_RUNS = 64  # runs of U (each one T, one X) per search
TOLERANCE = 1e-8  # float64 U agrees with the reference to ~1e-12 (the numeric obligations: 1e-10)
OPTIONS: tuple[dict[str, Any], ...] = (
    {"norm": "post", "activation": "relu", "residual": True},
    {"norm": "pre", "activation": "gelu", "residual": True},
    {"norm": "none", "activation": "gelu_tanh", "residual": False},
)


@dataclass(frozen=True)
class LayerCounterexample:
    """U(T, X) differs from T(X): at ``capacity`` (N, D, H, K, F), true sizes ``sizes`` (n, d, hh, k,
    f), T's ``options``, by ``error`` (max abs)."""

    capacity: Cap
    sizes: Cap
    options: tuple[tuple[str, Any], ...]
    error: float

    def values(self) -> tuple[tuple[str, int], ...]:
        """The sizes as an outcome's typed counterexample: capacities N..F, true sizes n..f."""
        true = ("n", "d", "hh", "k", "f")
        return tuple(zip(CAPACITY, self.capacity, strict=True)) + tuple(zip(true, self.sizes, strict=True))

    def text(self) -> str:
        cap = ", ".join(f"{n} = {v}" for n, v in zip(CAPACITY, self.capacity, strict=True))
        true = ", ".join(f"{n} = {v}" for n, v in zip(("n", "d", "hh", "k", "f"), self.sizes, strict=True))
        opts = ", ".join(f"{k} {v}" for k, v in self.options)
        return f"U(T, X) differs from T(X) by {self.error:.3g} at capacity {cap}, true sizes {true} ({opts})"


@dataclass(frozen=True)
class SearchResult:
    """What :func:`search` found (``found``: None when U agreed everywhere it ran), how many runs it
    made and at which capacities, and the capacities it skipped as too large."""

    found: LayerCounterexample | None
    runs: int
    capacities: tuple[Cap, ...]
    skipped: tuple[Cap, ...] = ()

    def text(self) -> str:
        if self.found is not None:
            return f"counterexample search: {self.found.text()}"
        skipped = f"; capacities past {MAX_CAPACITY} not run: {len(self.skipped)}" if self.skipped else ""
        return (
            f"counterexample search: U == T(X) within {TOLERANCE:g} in {self.runs} float64 run(s) at "
            f"{len(self.capacities)} capacities (small ones and those read off U's size comparisons){skipped}"
        )


def size_thresholds(program: C.RASPExpr) -> dict[str, set[int]]:
    """For each capacity size, the constants an index expression of ``program`` compares it with
    (``D > 32``: {"D": {32}}): where a bug gated on that size would start to show."""
    found: dict[str, set[int]] = {}
    for node in C.topological([program]):
        for ex in _index_exprs(node):
            for sub in E.nodes(ex):
                if not (isinstance(sub, E.BinOp) and sub.op in ("==", "!=", "<", "<=", ">", ">=")):
                    continue
                for side, other in ((sub.a, sub.b), (sub.b, sub.a)):
                    if isinstance(other, E.Const) and isinstance(other.value, int):
                        sizes = side.variables() & set(CAPACITY)
                        if len(sizes) == 1 and side.variables() <= set(CAPACITY):
                            found.setdefault(next(iter(sizes)), set()).add(other.value)
    return found


def _index_exprs(node: C.RASPExpr) -> Iterator[E.Expr]:
    """The index expressions a node states: its index map's, its primitive's expression parameters."""
    fn = getattr(node, "fn", None)
    if isinstance(fn, C.IndexFn):
        yield fn.expr
    elif fn is not None:
        yield from (p for p in getattr(fn, "consts", ()) if isinstance(p, E.Expr))


def capacities(program: C.RASPExpr) -> tuple[list[Cap], list[Cap]]:
    """(capacities to run, capacities skipped as past :data:`MAX_CAPACITY`): for each threshold c of
    a size, that size at c + 1, c + 2, c, c - 1 (>= 1; past a threshold first) and the others
    :data:`SMALL`; then :data:`BASE`."""
    small: Cap = (SMALL, SMALL, SMALL, SMALL, SMALL)
    out: list[Cap] = []
    skipped: list[Cap] = []
    for name, consts in sorted(size_thresholds(program).items()):
        i = CAPACITY.index(name)
        for c in sorted(consts):
            for v in (c + 1, c + 2, c, c - 1):
                if v < 1:
                    continue
                vals = list(small)
                vals[i] = v
                cap: Cap = (vals[0], vals[1], vals[2], vals[3], vals[4])
                if cap in out or cap in skipped:
                    continue
                (out if v <= MAX_CAPACITY else skipped).append(cap)
    return out + [c for c in BASE if c not in out], skipped


def search(program: C.RASPExpr, variant: str = "compact", max_runs: int = MAX_RUNS) -> SearchResult:
    """U (``variant``, built at each capacity of :func:`capacities`) against the reference layer, at
    most ``max_runs`` runs; the first difference above :data:`TOLERANCE` is returned."""
    caps, skipped = capacities(program)
    runs = 0
    tried: list[Cap] = []
    for cap in caps:
        N, D, H, K, F = cap
        u = UniversalSimulator(N, D, H, K, F, variant=variant)
        tried.append(cap)
        small: Cap = (min(N, 2), min(D, 2), min(H, 2), min(K, 2), min(F, 2))
        plan = [(cap, opts) for opts in OPTIONS] + ([(small, OPTIONS[0])] if small != cap else [])
        for true, opts in plan:
            if runs >= max_runs:
                return SearchResult(None, runs, tuple(tried), tuple(skipped))
            runs += 1
            n, d, h, k, f = true
            T = TransformerLayer.random(d, h, k, f, seed=runs, **opts)
            x = np.random.default_rng(runs).normal(size=(n, d))
            err = float(np.max(np.abs(u.run(T, x) - T(x))))
            if not err <= TOLERANCE:  # a NaN differs too
                found = LayerCounterexample(cap, true, tuple(sorted(opts.items())), err)
                return SearchResult(found, runs, tuple(tried), tuple(skipped))
    return SearchResult(None, runs, tuple(tried), tuple(skipped))


SEARCH_RESERVE = 10.0  # CPU seconds of a stage goal's timeout kept for its counterexample search (~0.2-2 s)


def with_search(out: Outcome, u: UniversalSimulator) -> Outcome:
    """``out`` as it is when decided; undecided (a budget exhausted, not shown equal, a side condition
    not shown), with what :func:`search` found running ``u``'s program against the reference.  A
    difference found is the outcome's counterexample (to the layer: the bug may be in this goal's
    stage or another), and the detail says that no longer budget will prove it."""
    if out.ok is not None:
        return out
    res = search(u.program, u.variant)
    if res.found is None:
        return out.retold(f"{out.detail}; {res.text()}")
    told = f"{out.detail}; {res.text()}: a counterexample to the layer, so no longer budget will prove U"
    return replace(out, counterexample=res.found.values()).retold(told)


__all__ = [
    "SEARCH_RESERVE",
    "LayerCounterexample",
    "SearchResult",
    "capacities",
    "search",
    "size_thresholds",
    "with_search",
]
