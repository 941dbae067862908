"""Ctrl-C in `attnsim verify`: SIGINT to the whole process group, as a terminal sends it, at several
moments after the command line has started (while it loads, as workers start, while they run),
with the local pool and a local Dask cluster: exit 130, one line on stderr, no traceback from any
child, and no process of the group left behind.  Then the mechanism: children started inside
:func:`~attnsim.verify.sigint.children_deaf_to_sigint` never hear SIGINT, and a SIGINT that
arrives meanwhile is held and raised at the end, never lost.

Every wait is for an event, never a delay (the same verdict on an idle machine and beside CPU hogs):
* a moment is an event: the command line has started (``MARK.main`` exists), the group has so many
  processes (the workers are started), a Dask worker process is starting, a check is running (the
  target's ``MARK`` exists);
* the interrupted runs cannot end first: they include the target of
  tests/proofs/interrupt_target.py, a check that waits for ever;
* verify is started as a terminal's foreground job is, with SIGINT at its default and unblocked
  (a job a non-interactive shell starts in the background inherits SIGINT ignored, and so would
  this test's children: that, not the load, had failed these tests in a loaded CI run);
* it runs as the console script does: a script file calling the entry point of pyproject.toml
  (under ``python -m``, CPython may end an interrupted run by SIGINT instead of its exit code).
HANG_GUARD only stops a test that would otherwise hang (a lost Ctrl-C); no verdict waits on it.
"""

from __future__ import annotations

import _thread
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from attnsim.verify.sigint import children_deaf_to_sigint

ROOT = Path(__file__).resolve().parents[2]
TARGET = Path(__file__).with_name("interrupt_target.py")
HANG_GUARD = 900.0  # seconds: an interrupted verify exits in seconds; this only ends a hung test
# exec verify with SIGINT as a terminal's foreground job has it: default, unblocked
FOREGROUND = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT}); os.execv(sys.executable, sys.argv[1:])"
)
pytestmark = pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX")


def _group_alive(pgid: int) -> list[str]:
    return subprocess.run(["pgrep", "-g", str(pgid)], capture_output=True, text=True).stdout.split()


def _until(event: Callable[[], bool], what: str, fail: bool = True) -> None:
    """Poll until ``event()`` holds; past the hang guard, fail the test (or, with ``fail=False``,
    return and let the caller's assertion say what is wrong) instead of hanging it."""
    end = time.monotonic() + HANG_GUARD
    while not event():
        if time.monotonic() > end:
            assert not fail, f"{what}: not within the hang guard of {HANG_GUARD:g} s"
            return
        time.sleep(0.02)


def _interrupt(moment: Callable[[subprocess.Popen[str]], bool], *argv: str) -> tuple[int, list[str], list[str]]:
    """Run ``python ARGV`` in a new process group, SIGINT the group once ``moment(process)`` holds:
    (exit code, non-blank stderr lines, processes of the group left once it exited)."""
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    p = subprocess.Popen(
        [sys.executable, "-c", FOREGROUND, sys.executable, *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )
    try:
        _until(lambda: moment(p) or p.poll() is not None, "the moment of the interrupt")
        assert p.poll() is None, "verify ended before the moment of the interrupt"
        os.killpg(p.pid, signal.SIGINT)
        _, err = p.communicate(timeout=HANG_GUARD)
        # what the run started has been stopped as it unwound, or dies with it: the group empties
        _until(lambda: not _group_alive(p.pid), "the group's exit", fail=False)
        left = _group_alive(p.pid)
    finally:
        if p.poll() is None or _group_alive(p.pid):
            os.killpg(p.pid, signal.SIGKILL)
    return p.returncode, [ln for ln in err.splitlines() if ln.strip()], left


def _processes(n: int) -> Callable[[subprocess.Popen[str]], bool]:
    return lambda p: len(_group_alive(p.pid)) >= n


def _file(mark: Path) -> Callable[[subprocess.Popen[str]], bool]:
    return lambda p: mark.exists()


def _starting_a_spawned_process(p: subprocess.Popen[str]) -> bool:
    """Whether a process of the group is a spawned interpreter (a Dask worker process, starting)."""
    for pid in _group_alive(p.pid):
        try:
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            pass
    return False


def test_the_console_script_is_the_clis_main() -> None:
    """`attnsim` is attnsim.cli.main:main, and the package installs no top-level module besides."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["scripts"] == {"attnsim": "attnsim.cli.main:main"}
    assert "py-modules" not in project["tool"].get("setuptools", {})


@pytest.mark.parametrize("moment", ["cli started", "workers started", "running"])
def test_ctrl_c_local_pool(moment: str, tmp_path: Path) -> None:
    """Once the command line has started (it is loading its subcommands and the catalogue), as the
    forked workers start (the parent and 2 workers), while they run (the target's check has started)."""
    mark = tmp_path / "running"
    when = {
        "cli started": _file(mark.with_name("running.main")),
        "workers started": _processes(3),
        "running": _file(mark),
    }[moment]
    pool = ("-j", "2", "--cache", str(tmp_path / "cache"))
    code, lines, left = _interrupt(when, str(TARGET), str(mark), "verify", "--only", "softmax", *pool)
    assert code == 130
    said = ("attnsim: interrupted", "attnsim verify: interrupted")  # before or after the command is parsed
    assert len(lines) == 1 and lines[0] in (said if moment == "cli started" else said[1:]), lines
    assert left == []


@pytest.mark.parametrize("moment", ["cluster starting", "running"])
def test_ctrl_c_local_dask(moment: str, tmp_path: Path) -> None:
    """As the local Dask cluster starts (a worker process is being spawned), and while it runs checks
    (the target's check has started in a worker's pool process)."""
    pytest.importorskip("distributed")
    mark = tmp_path / "running"
    when = _starting_a_spawned_process if moment == "cluster starting" else _file(mark)
    code, lines, left = _interrupt(
        when, str(TARGET), str(mark), "verify", "--scheduler", "local:2", "--only", "softmax"
    )
    assert code == 130
    assert lines == ["attnsim verify: interrupted"], lines
    assert left == []


def _wait_interruptible(ready: Any) -> None:
    """A child: say it is running, then sleep until a signal ends it."""
    ready.set()
    while True:
        time.sleep(3600)


@contextmanager
def _hearing_sigint() -> Iterator[None]:
    """SIGINT handled as Python's default (KeyboardInterrupt) in this process, as in a terminal's
    foreground job, whatever this test process inherited."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="pending signals are read from /proc")
def test_children_started_inside_do_not_hear_sigint(sigint_in: Callable[..., tuple[bool, ...]]) -> None:
    """A forked child started inside the block blocks SIGINT and holds one (pending, alive) that
    kills one started outside it (the mutation: without the mask the child dies of
    KeyboardInterrupt)."""

    def pending(pid: int) -> bool:
        return any(sigint_in(Path(f"/proc/{pid}/status"), "ShdPnd", "SigPnd"))

    ctx = mp.get_context("fork")
    with _hearing_sigint():
        ready = [ctx.Event(), ctx.Event()]
        with children_deaf_to_sigint():
            deaf = ctx.Process(target=_wait_interruptible, args=(ready[0],), daemon=True)
            deaf.start()
        hearing = ctx.Process(target=_wait_interruptible, args=(ready[1],), daemon=True)
        hearing.start()
    try:
        assert all(r.wait(HANG_GUARD) for r in ready), "a child did not start within the hang guard"
        blocked = [sigint_in(Path(f"/proc/{proc.pid}/status"), "SigBlk") for proc in (deaf, hearing)]
        assert blocked == [(True,), (False,)]  # the mask, inherited by the one started inside
        for proc in (deaf, hearing):
            assert proc.pid is not None
            os.kill(proc.pid, signal.SIGINT)
        hearing.join(HANG_GUARD)
        assert hearing.exitcode == 1  # 1: KeyboardInterrupt
        assert deaf.pid is not None
        # held (pending) or, without the block, fatal: whichever happens first
        _until(lambda: not deaf.is_alive() or pending(deaf.pid or 0), "the deaf child's SIGINT")
        # alive with the signal held, because it blocks SIGINT (pending alone is no proof: a signal
        # is pending from its sending until the receiver runs)
        assert (
            deaf.is_alive() and pending(deaf.pid) and sigint_in(Path(f"/proc/{deaf.pid}/status"), "SigBlk") == (True,)
        )
    finally:
        deaf.kill()
        hearing.kill()


def test_a_sigint_during_the_block_is_raised_at_its_end_never_inside_nor_lost() -> None:
    """A SIGINT taken while children start (by a thread that does not block it: simulated by
    ``_thread.interrupt_main``, which runs the handler as such a delivery does) lets the body run to
    its end, then raises KeyboardInterrupt: a local Dask cluster is then whole when the interrupt
    closes it.  The mutations: without the holding handler it is raised inside the body; without
    raising it again at the end it is lost (a verify interrupted as its cluster started went on)."""
    steps: list[str] = []
    with _hearing_sigint(), pytest.raises(KeyboardInterrupt):
        with children_deaf_to_sigint():
            _thread.interrupt_main(signal.SIGINT)
            steps.append("after the signal")
            steps.append("end of the body")
        steps.append("after the block")
    assert steps == ["after the signal", "end of the body"]


def test_an_ignored_sigint_stays_ignored() -> None:
    """A verify started in the background by a non-interactive shell inherits SIGINT ignored: the
    block neither makes it hear SIGINT nor raises one at its end."""
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with children_deaf_to_sigint():
            assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
            _thread.interrupt_main(signal.SIGINT)  # ignored: does nothing
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, old)
