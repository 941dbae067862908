"""Suite-wide hooks: the catalogue loaded once per process (as the CLI does); with
ATTNSIM_NO_SKIP=1 (set by .ci/run), a skipped test fails the run.

Skips are legitimate on a machine without an optional extra (torch), but CI installs every
extra, so a skip there means a test silently stopped running.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from attnsim import catalog
from attnsim.proofs.decoding import answers
from attnsim.symbolic import sums

catalog.load()


def _no_skip() -> bool:
    return os.environ.get("ATTNSIM_NO_SKIP") == "1"


def _skipped(config: pytest.Config) -> list[pytest.TestReport]:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    return list(reporter.stats.get("skipped", [])) if reporter is not None else []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _no_skip() and _skipped(session.config) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config) -> None:
    skipped = _skipped(config)
    if _no_skip() and skipped:
        terminalreporter.section("ATTNSIM_NO_SKIP=1: a skipped test fails this run", red=True)
        for rep in skipped:
            reason = rep.longrepr[-1] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
            terminalreporter.write_line(f"{rep.nodeid}: {reason}")


@pytest.fixture
def benchmark_script() -> Callable[[str], ModuleType]:
    """Load ``benchmarks/<name>.py`` as a module (benchmarks/ is not a package): the scripts that
    write the generated pages, which their tests compare with the pages."""

    def load(name: str) -> ModuleType:
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
        )
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        return mod

    return load


@pytest.fixture(autouse=True)
def _fresh_kept_results() -> None:
    """Each test starts with no kept Sum normal forms and no kept decoding answers (each process
    keeps them: :mod:`attnsim.symbolic.sums`, :data:`attnsim.proofs.decoding.answers.PROCESS`): a
    test that monkeypatches a rule or counts what is computed must see it applied, not an answer
    kept by an earlier test."""
    sums._sum.cache_clear()
    sums.normal_forms.cache_clear()
    answers.PROCESS.clear()


def sigint_bits(status: Path, *fields: str) -> tuple[bool, ...]:
    """SIGINT's bit in each of these fields of a /proc status file (SigBlk: blocked, SigIgn:
    ignored, SigCgt: caught, ShdPnd/SigPnd: pending)."""
    got = dict(ln.split(":", 1) for ln in status.read_text().splitlines() if ":" in ln)
    return tuple(bool(int(got[f], 16) & (1 << (signal.SIGINT - 1))) for f in fields)


@pytest.fixture
def sigint_in() -> Callable[..., tuple[bool, ...]]:
    """:func:`sigint_bits`, for tests (which do not import this module)."""
    return sigint_bits


def _sigint_state() -> tuple[object, ...]:
    """SIGINT as the kernel sees this thread (blocked, ignored, caught: what a process started now
    inherits) and Python's handler for it."""
    kernel: tuple[bool, ...] = ()
    try:
        kernel = sigint_bits(Path("/proc/thread-self/status"), "SigBlk", "SigIgn", "SigCgt")
    except (OSError, KeyError, ValueError):  # no /proc (not Linux): Python's view only
        pass
    return (*kernel, signal.getsignal(signal.SIGINT))


@pytest.fixture(autouse=True)
def _sigint_left_as_found() -> Iterator[None]:
    """No test leaves SIGINT ignored, handled elsewhere or blocked: every process a later test starts
    inherits that (a blocked mask or an ignored handler survives fork and exec), and the Ctrl-C tests
    of tests/proofs/test_sigint.py, run after it in the same worker, would see a verify that never
    hears its interrupt."""
    before = _sigint_state()
    yield
    after = _sigint_state()
    assert after == before, f"this test changed SIGINT (blocked, ignored, caught, handler) from {before} to {after}"


@pytest.fixture
def nothing_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """For the tests of the command line's argument checks: reaching a subcommand's body, or the
    obligation registry, fails the test at once.  An argument check that lets a bad value through
    then fails in milliseconds, instead of running the whole command first (a whole ``verify``)."""
    from attnsim.cli import commands
    from attnsim.cli.main import load
    from attnsim.proofs import registry

    load()  # the subcommands register themselves as main() loads them: here, before they are replaced

    def reached(what: str) -> Callable[..., Any]:
        def stop(*args: Any, **kwargs: Any) -> Any:
            pytest.fail(f"{what} was reached: the argument check let the command run", pytrace=False)

        return stop

    for name, (configure, _, validate) in list(commands.COMMANDS.items()):
        monkeypatch.setitem(commands.COMMANDS, name, (configure, reached(f"`attnsim {name}`"), validate))
    for query in ("all_obligations", "select", "with_premises", "by_id"):
        monkeypatch.setattr(registry, query, reached(f"registry.{query}"))


@pytest.fixture
def wall_clock_racing(monkeypatch: pytest.MonkeyPatch) -> None:
    """``time.perf_counter`` jumps 1,000 s at every read, as on a machine so loaded that each step
    takes ages by the wall clock while the CPU time a check uses stays what it is: a verdict that
    reads the wall clock to decide anything changes under it; one decided by CPU time or solver
    work does not."""
    import itertools
    import time

    real = time.perf_counter
    jumps = itertools.count(1)
    monkeypatch.setattr(time, "perf_counter", lambda: real() + 1000.0 * next(jumps))
