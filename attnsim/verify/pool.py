"""The one process pool: tasks in forked worker processes, each within a limit of CPU seconds.

Every check that needs a hard limit runs through :func:`run`: verify's obligations
(:func:`attnsim.verify.runner.run_all`), the mutants (:func:`attnsim.verify.mutation.pool.run_jobs`),
and, on a Dask worker, the checks of each Dask task (:mod:`attnsim.verify.dask_runner`).

* **Tasks** are a function and its arguments, known when :func:`run` starts: the workers are forked
  and inherit them (an obligation's check is a closure, never pickled); only what a task returns
  crosses a pipe, pickled.
* **Limits** are CPU seconds (user + system) of the worker process, counted from the task's start
  by :class:`ChildClock`: a task past its limit is killed and reported ``timeout``.  Wall time is
  only a far safety net (:data:`WALL_NET_FACTOR` times the limit, for a worker stuck off the
  CPU), so a busy machine does not stop a task that an idle one finishes.
* **Workers** are reused from task to task (forking per check costs more than many checks take),
  except after a task that says it left state behind (:attr:`Task.retire_after`: one that asked
  Z3), or, with ``max_tasks_per_worker=1``, after every task (a mutant); a fresh worker, forked
  from the caller, takes the next task; a killed or dead worker is replaced.
* **Ctrl-C**: workers are started inside :func:`~attnsim.verify.sigint.children_deaf_to_sigint` and
  never hear SIGINT; the caller gets the ``KeyboardInterrupt``, and :func:`run` kills every worker
  as it unwinds.
* **No orphans**: a worker dies with the thread that started it (``PR_SET_PDEATHSIG``, Linux), even
  when that process is killed outright; elsewhere an idle worker ends when the pipe from its parent
  closes (no other process holds that pipe), a busy one once its task ends.
"""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Literal

from attnsim.verify.sigint import children_deaf_to_sigint

WALL_NET_FACTOR = 10.0  # a worker stuck without using CPU is killed after this many times its limit, in wall seconds
PR_SET_PDEATHSIG = 1
Ended = Literal["returned", "raised", "timeout", "died"]


@dataclass(frozen=True)
class Task:
    """``fn(*args)`` in a worker, within ``limit`` CPU seconds.  ``retire_after``: given what the
    task returned, whether it left state behind that the next task must not see; then its worker
    ends and a fresh one, forked from the caller, takes the next task."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    limit: float
    retire_after: Callable[[Any], bool] | None = None


@dataclass(frozen=True)
class Done:
    """How a task ended: ``returned`` (``value`` is what it returned), ``raised`` (an exception,
    told in ``detail``), ``timeout`` (killed past its limit) or ``died`` (its worker ended without
    an answer; ``detail`` says the exit code).  ``seconds``: wall seconds the task took."""

    index: int
    ended: Ended
    value: Any = None
    detail: str = ""
    seconds: float = 0.0


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (Linux ``/proc``), None where not available."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class ChildClock:
    """The time a child process has spent on its current task, from :meth:`start`: its CPU seconds
    (``/proc``), else (no ``/proc``) wall seconds.  :meth:`over` says when the task is past
    ``limit`` CPU seconds, or past :data:`WALL_NET_FACTOR` times it in wall seconds (the far
    safety net for a child stuck off the CPU)."""

    def __init__(self, pid: int, limit: float) -> None:
        self.pid, self.limit = pid, limit
        self.t0 = time.perf_counter()
        self.cpu0 = cpu_seconds(pid)

    def start(self, limit: float) -> None:
        """A new task for the same child, with its own limit."""
        self.limit, self.t0, self.cpu0 = limit, time.perf_counter(), cpu_seconds(self.pid)

    def wall(self) -> float:
        return time.perf_counter() - self.t0

    def used(self) -> float:
        """Seconds the task has used: the child's CPU time, else wall time."""
        now = cpu_seconds(self.pid) if self.cpu0 is not None else None
        if now is None or self.cpu0 is None:
            return self.wall()
        return now - self.cpu0

    def over(self) -> bool:
        return self.used() > self.limit or self.wall() > WALL_NET_FACTOR * self.limit


def _libc_prctl() -> Callable[..., int] | None:
    """libc's ``prctl`` (Linux), looked up once in the parent."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
        return prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _libc_prctl()


def _die_with_parent(parent: int) -> None:
    """This worker is killed when the thread that forked it ends (its process exits or is killed);
    if the parent is already gone, it ends now."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(0)


def _serve(tasks: Sequence[Task], conn: Connection, siblings: list[Connection], parent: int, most: int | None) -> None:
    """A worker: run the tasks whose indices arrive on ``conn`` until None, EOF, or ``most`` tasks;
    send back (index, ended, value, detail, seconds) for each.  ``siblings``: the parent's ends of
    the other workers' pipes, inherited by the fork and closed here, so that each pipe closes when
    the parent goes."""
    _die_with_parent(parent)
    for c in siblings:
        c.close()
    ran = 0
    while most is None or ran < most:
        try:
            i = conn.recv()
        except (EOFError, OSError):
            return
        if i is None:
            return
        t0 = time.perf_counter()
        try:
            value = tasks[i].fn(*tasks[i].args)
            answer: tuple[Any, ...] = (i, "returned", value, "")
        except Exception as exc:
            answer = (i, "raised", None, f"{type(exc).__name__}: {exc}")
        seconds = time.perf_counter() - t0
        try:
            conn.send((*answer, seconds))
        except OSError:  # the parent is gone
            return
        except Exception as exc:  # a value that does not pickle: the task's fault, told as such
            conn.send((i, "raised", None, f"its result cannot be sent: {type(exc).__name__}: {exc}", seconds))
        ran += 1


class _Worker:
    """One worker process, its end of the pipe, the task it runs and the clock timing that task."""

    def __init__(self, tasks: Sequence[Task], most: int | None, siblings: Sequence[_Worker]) -> None:
        ctx = mp.get_context("fork")
        self.conn, child = ctx.Pipe(duplex=True)
        others = [w.conn for w in siblings]
        self.proc = ctx.Process(target=_serve, args=(tasks, child, others, os.getpid(), most), daemon=True)
        with children_deaf_to_sigint():  # Ctrl-C reaches the caller only, which stops the workers
            self.proc.start()
        child.close()
        self.task: int | None = None
        self.ran = 0
        self.clock = ChildClock(self.proc.pid or 0, 0.0)

    def start(self, index: int, limit: float) -> None:
        self.task = index
        self.ran += 1
        self.clock.start(limit)
        self.conn.send(index)

    def stop(self, kill: bool) -> None:
        """End the worker: killed, or (idle) told to end, then reaped."""
        if kill:
            self.proc.kill()
        else:
            try:
                self.conn.send(None)
            except OSError:
                pass
        self.proc.join(timeout=None if kill else 5)
        if self.proc.exitcode is None:  # an idle worker that did not end when told
            self.proc.kill()
            self.proc.join()
        self.conn.close()


def run(  # noqa: C901
    tasks: Sequence[Task],
    workers: int | None = None,
    on_done: Callable[[Done], None] | None = None,
    max_tasks_per_worker: int | None = None,
) -> list[Done]:
    """Run ``tasks`` in at most ``workers`` forked processes (default: one per core), started in the
    order given; how each ended, in that order.  ``on_done`` is called as each one ends.

    ``max_tasks_per_worker``: a worker ends after that many tasks and a fresh one takes its place
    (1: every task in a process of its own, forked from this one).  Without ``fork`` (Windows) the
    tasks run here, one after the other, with no limit."""
    if not hasattr(os, "fork"):
        return _inline(tasks, on_done)
    todo = list(range(len(tasks)))[::-1]  # popped from the end: in the order given
    done: dict[int, Done] = {}
    n = min(workers or os.cpu_count() or 1, max(1, len(tasks)))
    pool: list[_Worker] = []

    def finish(d: Done) -> None:
        done[d.index] = d
        if on_done is not None:
            on_done(d)

    interrupted = True
    try:
        while len(done) < len(tasks):
            while todo and sum(w.task is None for w in pool) == 0 and len(pool) < n:
                pool.append(_Worker(tasks, max_tasks_per_worker, pool))
            for w in pool:
                if w.task is None and todo:
                    i = todo.pop()
                    w.start(i, tasks[i].limit)
            busy = [w for w in pool if w.task is not None]
            ready = wait([w.conn for w in busy], timeout=0.05)
            for w in busy:
                if w.conn in ready:
                    try:
                        i, ended, value, detail, seconds = w.conn.recv()
                    except (EOFError, OSError):  # its end of the pipe closed: it died
                        task = w.task
                        assert task is not None
                        w.task = None
                        _retire(pool, w, kill=True)
                        finish(Done(task, "died", detail=f"exit code {w.proc.exitcode}", seconds=w.clock.wall()))
                        continue
                    finish(Done(i, ended, value, detail, seconds))
                    w.task = None
                    if (max_tasks_per_worker is not None and w.ran >= max_tasks_per_worker) or _left_state(
                        tasks[i], ended, value
                    ):
                        _retire(pool, w, kill=False)
                elif w.clock.over():
                    task = w.task
                    assert task is not None
                    w.task = None
                    _retire(pool, w, kill=True)
                    finish(Done(task, "timeout", seconds=w.clock.wall()))
        interrupted = False
    finally:
        for w in pool:
            w.stop(kill=interrupted or w.task is not None)
    return [done[i] for i in range(len(tasks))]


def _left_state(task: Task, ended: Ended, value: Any) -> bool:
    """Whether ``task``, ended so, left its worker in a state the next task must not inherit."""
    return ended == "returned" and task.retire_after is not None and task.retire_after(value)


def _retire(pool: list[_Worker], w: _Worker, kill: bool) -> None:
    pool.remove(w)
    w.stop(kill=kill)


def _inline(tasks: Sequence[Task], on_done: Callable[[Done], None] | None) -> list[Done]:
    out = []
    for i, task in enumerate(tasks):
        t0 = time.perf_counter()
        try:
            d = Done(i, "returned", task.fn(*task.args))
        except Exception as exc:
            d = Done(i, "raised", detail=f"{type(exc).__name__}: {exc}")
        d = Done(d.index, d.ended, d.value, d.detail, time.perf_counter() - t0)
        out.append(d)
        if on_done is not None:
            on_done(d)
    return out
