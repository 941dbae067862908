"""Executable extraction (Theorem 6 made concrete) at scale: a compile's memory is estimated before any
work, a compile past the memory available is refused in one line with the estimate, and long
compiles report their progress.
"""

from __future__ import annotations

import itertools
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from attnsim import UniversalSimulator, lemmas
from attnsim.cli import compile as cli_compile
from attnsim.cli.main import main
from attnsim.compile import CompileError, classic, memory
from attnsim.compile.compiler import compile_program
from attnsim.compile.lowering import Lowering
from attnsim.rasp import core as C


def _lemma(make: Callable[[], Any]) -> Callable[[], tuple[C.SOp, int, dict[str, Any]]]:
    def case() -> tuple[C.SOp, int, dict[str, Any]]:
        con = make()
        return con.program, con.layout.total, {}

    return case


def _u() -> tuple[C.SOp, int, dict[str, Any]]:
    u = UniversalSimulator(2, 2, 1, 1, 2)
    return u.program, u.positions(1), {"domains": u.compile_domains()}


def _classic(name: str, n: int) -> Callable[[], tuple[C.SOp, int, dict[str, Any]]]:
    return lambda: (classic.PROGRAMS[name](), n, {"vocab": range(4)})


# what the estimate distinguishes: positions x nodes only (lemmas, U), an index map of two arguments
# (reverse: length x indices), an order selector's predicate table (frac_prevs: indices x indices)
CASES: dict[str, Callable[[], tuple[C.SOp, int, dict[str, Any]]]] = {
    "matmul(16, 16, 16)": _lemma(lambda: lemmas.matmul(16, 16, 16)),
    "transpose(96, 96)": _lemma(lambda: lemmas.transpose(96, 96)),
    "softmax(48, 48)": _lemma(lambda: lemmas.softmax(48, 48)),
    "U(2, 2, 1, 1, 2)": _u,
    "reverse at max_len 250": _classic("reverse", 250),
    "frac_prevs at max_len 200": _classic("frac_prevs", 200),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_estimate_bounds_the_measured_peak(case: str) -> None:
    """The estimate is at least the compile's measured peak (tracemalloc), and its part that grows
    with the sizes at most 5 times the peak (a bound that means something)."""
    program, max_len, kw = CASES[case]()
    vocab = kw.get("vocab")
    est = memory.estimate(program, max_len, None if vocab is None else len(vocab))
    assert est.entries > 0 if case.startswith(("reverse", "frac_prevs")) else est.entries == 0
    tracemalloc.start()
    try:
        compile_program(program, max_len, **kw)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= est.bytes and est.bytes - memory.FIXED_BYTES <= 5 * peak, (case, peak, est)


def _no_lowering(self: Lowering, node: C.SOp) -> object:
    raise AssertionError("the compile started instead of being refused")


def test_a_compile_past_the_memory_available_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """compile_program refuses before lowering anything, in one line naming the estimate and the
    memory available; with enough memory the same compile runs."""
    con = lemmas.matmul(3, 3, 3)
    est = memory.estimate(con.program, con.layout.total)
    monkeypatch.setattr(memory, "available_memory", lambda: est.bytes - 1)
    with monkeypatch.context() as m:
        m.setattr(Lowering, "realize", _no_lowering)
        with pytest.raises(CompileError) as exc:
            compile_program(con.program, con.layout.total)
    msg = str(exc.value)
    assert "\n" not in msg
    assert f"{con.layout.total:,} positions x {est.nodes} program nodes, about {memory.human(est.bytes)}" in msg
    assert f"more than the {memory.human(est.bytes - 1)} of memory available (an upper estimate" in msg
    monkeypatch.setattr(memory, "available_memory", lambda: est.bytes)
    assert compile_program(con.program, con.layout.total).max_len == con.layout.total


def test_the_memory_estimate_can_be_overridden(monkeypatch: pytest.MonkeyPatch) -> None:
    """The estimate is an upper one (measured peaks are 1.5-2x below it): the message names
    ATTNSIM_IGNORE_MEMORY_ESTIMATE, and with it set the same compile runs."""
    con = lemmas.matmul(2, 2, 2)
    est = memory.estimate(con.program, con.layout.total)
    monkeypatch.setattr(memory, "available_memory", lambda: est.bytes - 1)
    with pytest.raises(CompileError, match="set ATTNSIM_IGNORE_MEMORY_ESTIMATE=1 to run anyway"):
        compile_program(con.program, con.layout.total)
    monkeypatch.setenv("ATTNSIM_IGNORE_MEMORY_ESTIMATE", "1")
    assert compile_program(con.program, con.layout.total).max_len == con.layout.total


def test_cli_refuses_matmul_200_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`attnsim compile matmul 200 200 200` on a machine with 8 GB (7.45 GiB) free: one line, exit 2, nothing
    compiled (8,000,000 positions x 13 nodes: about 24.8 GiB)."""
    monkeypatch.setattr(memory, "available_memory", lambda: 8 * 10**9)
    monkeypatch.setattr(Lowering, "realize", _no_lowering)
    assert main(["compile", "matmul", "200", "200", "200", "-q"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip().splitlines() == [
        "attnsim compile: error: compiling matmul(200, 200, 200) is estimated at 8,000,000 positions x 13 "
        "program nodes, about 24.8 GiB of memory, more than the 7.45 GiB of memory available (an upper estimate: "
        "set ATTNSIM_IGNORE_MEMORY_ESTIMATE=1 to run anyway); or compile at smaller sizes or a shorter max_len"
    ]


def test_progress_reaches_every_node_and_position() -> None:
    """The progress callback counts the program's nodes as they are lowered and the position rows
    as they are embedded, never backwards, and ends at the totals."""
    con = lemmas.transpose(182, 182)  # 33,124 positions: more than two progress steps of rows
    calls: list[tuple[str, int, int]] = []
    compile_program(con.program, con.layout.total, progress=lambda *a: calls.append(a))
    for phase, total in (("lowering", None), ("positions", con.layout.total)):
        seen = [(d, t) for p, d, t in calls if p == phase]
        assert seen and seen[-1][0] == seen[-1][1], (phase, seen[-3:])
        assert all(a[0] <= b[0] for a, b in itertools.pairwise(seen)), phase
        assert total is None or seen[-1][1] == total
    assert len([c for c in calls if c[0] == "positions"]) >= 3


def test_cli_tells_the_size_of_a_large_compile(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A compile past LOUD_CELLS prints its estimate on stderr before compiling; a small one does not."""
    assert main(["compile", "transpose", "2", "3", "-q"]) == 0
    assert "positions x" not in capsys.readouterr().err
    monkeypatch.setattr(cli_compile, "LOUD_CELLS", 1)
    assert main(["compile", "transpose", "2", "3", "-q"]) == 0
    out, err = capsys.readouterr()
    est = memory.estimate(lemmas.transpose(2, 3).program, 6)
    assert (
        err
        == f"compiling transpose(2, 3): {est.describe()} ({memory.human(memory.available_memory() or 0)} available)\n"
    )
    assert out.startswith("compiled transpose(2, 3)")


def test_available_memory_is_read() -> None:
    """On Linux the kernel says how much memory is available."""
    free = memory.available_memory()
    assert free is None or free > 0
