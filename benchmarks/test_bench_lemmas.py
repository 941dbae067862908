"""Benchmarks: each registered construction against its NumPy formula, and U against T(X).

Run with ``pytest benchmarks/ --benchmark-only`` (needs the ``dev`` extra: pytest-benchmark).
Sizes are read off the registry, so new constructions are benchmarked without edits here.
No timing assertions: pytest-benchmark records, the reader compares.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from attnsim.report import data as D

pytest.importorskip("pytest_benchmark")

FAMILIES, _ = D.families()
CASES = [(f, s) for f in FAMILIES for s in ((8, 32) if f.scaled else (None,))]


def _ids(case: tuple[D.Family, int | None]) -> str:
    return f"{case[0].name}-{case[1] if case[1] is not None else 'example'}"


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_construction_run(benchmark: Any, case: tuple[D.Family, int | None]) -> None:
    """Our program, numpy backend."""
    fam, s = case
    con = fam.build(s)
    ops = D.random_operands(con, np.random.default_rng(0))
    benchmark(con.run, *ops)


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_construction_reference(benchmark: Any, case: tuple[D.Family, int | None]) -> None:
    """The textbook NumPy formula, for the ratio."""
    fam, s = case
    con = fam.build(s)
    ops = D.random_operands(con, np.random.default_rng(0))
    benchmark(con.reference, *ops)


@pytest.mark.parametrize("size", [8, 16])
def test_simulator_run(benchmark: Any, size: int) -> None:
    """U.run(T, X) at max_len = d_model = size."""
    api = D.simulator_api()
    if api is None:
        pytest.skip("attnsim.universal has not landed")
    TL, US = api
    U = US(max_len=size, d_model=size, n_heads=2, d_head=size // 2, d_ff=2 * size)
    T = TL.random(d_model=size, n_heads=2, d_head=size // 2, d_ff=2 * size, seed=0)
    X = np.random.default_rng(0).normal(size=(size, size))
    benchmark.pedantic(U.run, args=(T, X), rounds=3, iterations=1)


@pytest.mark.parametrize("size", [8, 16])
def test_simulator_reference(benchmark: Any, size: int) -> None:
    """T(X) directly."""
    api = D.simulator_api()
    if api is None:
        pytest.skip("attnsim.universal has not landed")
    TL, _ = api
    T = TL.random(d_model=size, n_heads=2, d_head=size // 2, d_ff=2 * size, seed=0)
    X = np.random.default_rng(0).normal(size=(size, size))
    benchmark(T, X)
