"""The one process pool (attnsim/verify/pool.py): verify's obligations, the mutants and a Dask
task's checks all run on it; a task is limited by its worker's CPU seconds, never by how busy the
machine is; a worker dies with the process that started it.

Tasks here are module-level functions or closures made in the tests: the workers are forked and
inherit them."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from attnsim.cli.main import main
from attnsim.proofs.obligation import Obligation, Outcome
from attnsim.verify import dask_runner, pool, runner
from attnsim.verify.mutation import run as mutation_run

ROOT = Path(__file__).resolve().parents[2]
HANG_GUARD = 900.0  # seconds: only ends a test that would otherwise hang


def _spin(seconds: float) -> None:
    """Busy for ``seconds`` of CPU time."""
    t0 = time.process_time()
    while time.process_time() - t0 < seconds:
        pass


def _busy_then_idle(busy: float, idle: float) -> str:
    """``busy`` CPU seconds, ``idle`` seconds off the CPU, then an answer."""
    _spin(busy)
    time.sleep(idle)
    return "done"


@pytest.mark.parametrize(("busy", "idle", "ended"), [(0.0, 1.5, "returned"), (3.0, 0.0, "timeout")])
def test_a_task_is_limited_by_its_cpu_seconds(busy: float, idle: float, ended: str) -> None:
    """A task that waits off the CPU past its 0.3 s limit is waited for (a busy machine keeps every
    task waiting), one that computes past it is stopped; wall time is the far net only."""
    (d,) = pool.run([pool.Task(_busy_then_idle, (busy, idle), 0.3)], workers=1)
    assert d.ended == ended
    assert d.value == ("done" if ended == "returned" else None)


def test_how_a_task_ends_is_told_and_the_pool_goes_on() -> None:
    """Returned, raised, killed past its limit, or its worker died: each told, in input order, and
    a fresh worker takes the place of a killed or dead one."""
    tasks = [
        pool.Task(_spin, (60.0,), 0.5),
        pool.Task(os._exit, (3,), 5.0),
        pool.Task(int, ("x",), 5.0),
        *[pool.Task(os.getpid, (), 5.0) for _ in range(4)],
    ]
    done = pool.run(tasks, workers=2)
    assert [d.ended for d in done] == ["timeout", "died", "raised", *["returned"] * 4]
    assert done[1].detail == "exit code 3"
    assert done[2].detail.startswith("ValueError: invalid literal for int()")


def test_workers_are_reused_unless_each_task_needs_a_process_of_its_own() -> None:
    """Reused by default (forking per check costs more than many take); with
    ``max_tasks_per_worker=1`` (a mutant, which leaves state behind), a new process per task."""
    tasks = [pool.Task(os.getpid, (), 5.0) for _ in range(4)]
    assert len({d.value for d in pool.run(tasks, workers=1)}) == 1
    assert len({d.value for d in pool.run(tasks, workers=1, max_tasks_per_worker=1)}) == 4


def _odd(pid: int) -> bool:
    return pid % 2 == 1


def test_a_task_that_left_state_behind_ends_its_worker() -> None:
    """``retire_after`` true of what a task returned (an obligation that asked Z3): the next task
    gets a fresh worker; false: the worker goes on."""
    keep = [pool.Task(os.getpid, (), 5.0, lambda _: False) for _ in range(3)]
    assert len({d.value for d in pool.run(keep, workers=1)}) == 1
    retire = [pool.Task(os.getpid, (), 5.0, lambda _: True) for _ in range(3)]
    assert len({d.value for d in pool.run(retire, workers=1)}) == 3
    some = [pool.Task(os.getpid, (), 5.0, _odd) for _ in range(6)]
    pids = [d.value for d in pool.run(some, workers=1)]
    assert all((a != b) == _odd(a) for a, b in itertools.pairwise(pids))  # a new worker after each odd pid


def test_verify_and_mutants_run_on_the_one_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """`verify` and `verify --mutants` both hand their checks to pool.run: the obligations as
    reused-worker tasks, each mutant in a worker of its own (then its killers, as obligations)."""
    calls: list[tuple[Callable[..., Any], int | None]] = []
    real = pool.run

    def spy(tasks: Any, *args: Any, **kwargs: Any) -> list[pool.Done]:
        calls.extend((t.fn, kwargs.get("max_tasks_per_worker")) for t in tasks)
        return real(tasks, *args, **kwargs)

    monkeypatch.setattr(pool, "run", spy)
    assert main(["verify", "--only", "transpose/exact/", "-j", "1", "--json"]) == 0
    assert calls and set(calls) == {(runner._metered, None)}
    calls.clear()
    assert main(["verify", "--mutants", "--only", "transpose/", "--max-mutants", "2", "-j", "1", "--json"]) == 0
    assert (mutation_run.mutant_task, 1) in calls
    assert {c for c in calls if c[0] is not mutation_run.mutant_task} <= {(runner._metered, None)}


def test_a_dask_task_runs_its_checks_on_the_one_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Dask task (run here, as a worker runs it) hands its obligations to the same pool, one
    worker process: no check runs in the Dask worker itself."""
    seen: list[tuple[int, int | None]] = []
    real = pool.run

    def spy(tasks: Any, workers: int | None = None, *args: Any, **kwargs: Any) -> list[pool.Done]:
        seen.append((len(tasks), workers))
        return real(tasks, workers, *args, **kwargs)

    monkeypatch.setattr(pool, "run", spy)
    pid = Obligation("t/exact/pid", "t", "x", "exact", lambda t: Outcome.good(str(os.getpid())))
    import cloudpickle

    (r,) = dask_runner.obligations_task([(cloudpickle.dumps(pid), 5.0)], None)
    assert seen == [(1, 1)]
    assert not isinstance(r, Outcome) and r.status == "passed" and r.detail != str(os.getpid())


def _block(mark: Path) -> None:
    """Say this worker's pid in ``mark``, then wait for ever."""
    mark.write_text(str(os.getpid()))
    threading.Event().wait()


def _after(mark: Path) -> None:
    """Return once ``mark`` exists (the other task has started)."""
    while not mark.exists() or not mark.read_text():
        time.sleep(0.01)


def test_an_interrupted_run_kills_its_workers_before_it_returns(tmp_path: Path) -> None:
    """A Ctrl-C (here raised by ``on_done``) while a worker is busy: run() kills every worker as the
    KeyboardInterrupt passes through it, so none is left even while this process lives on (the
    mutation: workers stopped only at a normal end)."""
    mark = tmp_path / "pid"

    def interrupt(d: pool.Done) -> None:
        raise KeyboardInterrupt

    tasks = [pool.Task(_block, (mark,), 3600.0), pool.Task(_after, (mark,), 3600.0)]
    with pytest.raises(KeyboardInterrupt):
        pool.run(tasks, workers=2, on_done=interrupt)
    assert _gone(int(mark.read_text()))


PARENT = """
import sys, threading
from pathlib import Path
from attnsim.verify import pool

def block(mark):
    import os
    Path(mark).write_text(str(os.getpid()))
    threading.Event().wait()

pool.run([pool.Task(block, (sys.argv[1],), 3600.0)], workers=1)
"""


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie no one has reaped yet counts as ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_busy_worker_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    """The parent is killed outright (SIGKILL: no cleanup runs) while its worker is in the middle
    of a task that never ends: the worker dies too (the mutation: without PR_SET_PDEATHSIG it runs
    on, an orphan)."""
    mark = tmp_path / "worker"
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(mark)], env=env)
    try:
        end = time.monotonic() + HANG_GUARD
        while not mark.exists() or not mark.read_text():
            assert parent.poll() is None and time.monotonic() < end, "the worker did not start"
            time.sleep(0.02)
        worker = int(mark.read_text())
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        while not _gone(worker) and time.monotonic() < end:
            time.sleep(0.02)
        assert _gone(worker)
    finally:
        if parent.poll() is None:
            parent.kill()
        if mark.exists() and mark.read_text() and not _gone(int(mark.read_text())):
            os.kill(int(mark.read_text()), signal.SIGKILL)
