"""Theorem 6 / Corollary 6.1 at sizes that cannot run: U's memory estimate (attnsim.universal.memory)
bounds what a run holds, and a run estimated past the memory available is refused up front, in
one line with the estimate, instead of allocating until a MemoryError."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim import TransformerLayer, UniversalSimulator
from attnsim.cli.main import main
from attnsim.universal import memory
from attnsim.universal.errors import SimulatorError


@pytest.mark.parametrize(("variant", "c"), [("compact", 48), ("shallow", 16)])
def test_the_estimate_bounds_what_a_run_holds(variant: str, c: int) -> None:
    """The second run's traced peak plus the memo kept by the first stays within the estimate
    (measured, planned executor: compact 48, 7.3 of 95 MiB; shallow 16, 11.6 of 246 MiB)."""
    u = UniversalSimulator(c, c, 4, c // 4, c, variant=variant)
    T = TransformerLayer.random(c, 4, c // 4, c, seed=0, residual=True, norm="post")
    x = np.random.default_rng(1).normal(size=(c, c))
    u.run(T, x)  # fills the memo
    tracemalloc.start()
    try:
        u.run(T, x)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    held = peak + u.memo.summary().bytes
    est = u.memory_estimate()
    assert held <= est.total, (held, est)
    assert est.total == est.input + est.masks + est.memo + est.values and min(est.input, est.values) > 0


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 6), st.integers(1, 6), st.integers(1, 3), st.integers(1, 4), st.sampled_from(["compact", "shallow"])
)
def test_the_estimate_grows_with_the_capacity(n: int, d: int, h: int, k: int, variant: str) -> None:
    """Each part is at least what it counts: the input (8 bytes a token, twice) and the masks
    (24 bytes an entry); a larger capacity never needs less."""
    small = UniversalSimulator(n, d, h, k, variant=variant)
    big = UniversalSimulator(n + 1, d + 1, h, k + 1, variant=variant)
    e = small.memory_estimate()
    assert e.input == 16 * small.positions_of_input() and e.masks == 24 * n * n and e.positions == small.positions()
    assert big.memory_estimate().total >= e.total


def _huge() -> tuple[UniversalSimulator, TransformerLayer, np.ndarray]:
    return UniversalSimulator(100000, 1000, 8, 125), TransformerLayer.random(4, 1, 2, seed=0), np.ones((2, 4))


def test_a_run_past_the_memory_available_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Capacity (100000, 1000, 8, 125): 8e13 positions, about 1.1 PiB; with 1 GiB available the
    run is refused before anything is allocated (it allocated, then raised MemoryError)."""
    monkeypatch.setattr(memory, "available_memory", lambda: 1 << 30)
    u, T, x = _huge()
    with pytest.raises(SimulatorError) as exc:
        u.run(T, x)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(
        "U at capacity (N, D, H, K, F) = (100000, 1000, 8, 125, 1) on n = 2 is estimated to need about 1.14 PiB "
        "(a run over 8e+13 positions: values held whole 1.14 PiB, input 300 GiB, "
    )
    assert msg.endswith(
        "more than the 1 GiB of memory available (an upper estimate: set ATTNSIM_IGNORE_MEMORY_ESTIMATE=1 to run "
        "anyway); or use a smaller capacity"
    )


def test_simulate_refuses_a_huge_capacity_up_front(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`attnsim simulate` at that capacity: one line with the estimate, exit 2 (it was "internal
    error: MemoryError", exit 1, after allocating for 44 s)."""
    monkeypatch.setattr(memory, "available_memory", lambda: 16 << 30)
    argv = ["simulate", "--max-len", "100000", "--d-model", "1000", "--heads", "8", "--d-head", "125", "--n", "2"]
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("attnsim simulate: error: U at capacity (N, D, H, K, F) = (100000, 1000, 8, 125, 1)")
    assert "more than the 16 GiB of memory available" in err[-1] and err[-1].endswith("or use a smaller capacity")


def test_available_memory_is_read_on_linux() -> None:
    free = memory.available_memory()
    assert free is None or free > 0
