"""Running obligations: a pool of forked, reused worker processes, hard timeouts.

A check's budget is solver work (Z3 ``rlimit`` units, see :mod:`attnsim.proofs.solver_work`),
metered per obligation into its result.  The timeout is only the outer safety net, counted in
the worker's CPU seconds where the platform tells them (``/proc``), else in wall seconds: a check
that exceeds it is killed and reported ``unknown`` (never proved).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from attnsim.proofs import smtlib, solver_work
from attnsim.proofs.obligation import Obligation, Outcome, Result
from attnsim.proofs.solver_work import WorkMeter
from attnsim.verify.sigint import children_deaf_to_sigint

CROSS_CHECK_BUDGET = 120.0  # seconds a worker may spend on cvc5 after an obligation's own timeout
WALL_NET_FACTOR = 10.0  # a worker stuck without using CPU is killed after this many times its timeout, in wall seconds


@dataclass(frozen=True)
class SmtOptions:
    """What to do with each deciding Z3 query: write it to ``directory``, re-check it with cvc5."""

    directory: Path | None = None
    cross_check: bool = False


def run_inline(ob: Obligation, timeout: float, smt: SmtOptions | None = None) -> Result:
    """Run one obligation in this process (no hard timeout; Z3 checks honour ``timeout``)."""
    t0 = time.perf_counter()
    out, meter = _metered(ob, timeout, smt)
    return _result(ob, out, time.perf_counter() - t0, meter)


def _metered(ob: Obligation, timeout: float, smt: SmtOptions | None) -> tuple[Outcome, WorkMeter]:
    """The obligation's outcome and the solver work it used (units, queries, premise checks)."""
    meter = WorkMeter()
    token = solver_work.METER.set(meter)
    try:
        return _check(ob, timeout, smt), meter
    finally:
        solver_work.METER.reset(token)


def _check(ob: Obligation, timeout: float, smt: SmtOptions | None = None) -> Outcome:
    """The obligation's outcome; a crashing check is a failed check, with its reason, and one whose
    expression grew past a node budget (:class:`~attnsim.proofs.solver_work.NodeBudgetExceeded`) is
    unknown.

    With ``smt``, every deciding Z3 query of the check is exported and/or given to cvc5; a sat
    against unsat disagreement fails the obligation, cvc5 unknowns are only reported."""
    col = None
    token = None
    if smt is not None and (smt.directory is not None or smt.cross_check):
        col = smtlib.Collector(smt.directory, smtlib.safe_name(ob.id), smt.cross_check)
        token = smtlib.SINK.set(col)
    try:
        out = ob.check(timeout)
    except solver_work.NodeBudgetExceeded as exc:  # too large to go on: not decided, on any machine
        out = exc.outcome()
    except Exception as exc:
        tb = traceback.format_exc(limit=3).strip().splitlines()[-1]
        out = Outcome.bad(f"{type(exc).__name__}: {exc} ({tb})")
    finally:
        if token is not None:
            smtlib.SINK.reset(token)
    if ob.method == "z3-parametric" and out.ok is True and out.scope is not None and not out.scope.sizes:
        out = out.retold(
            f"labelled z3-parametric, but the proof mentions no size (a fixed instance: z3-instance): {out.detail}",
            ok=False,
        )
    if col is None or col.count == 0:
        return out
    col.run_cross_check()
    told = replace(out, second_solver=col.stats())
    if col.disagreements:
        return told.retold(f"{out.detail}; {col.summary()}", ok=False)
    return told.retold(f"{out.detail}; {col.summary()}")


def _result(ob: Obligation, out: Outcome, seconds: float, meter: WorkMeter | None = None) -> Result:
    meter = meter or WorkMeter()
    return Result.of(
        ob,
        out,
        seconds,
        units=meter.units,
        queries=meter.queries,
        exhausted=meter.exhausted,
        largest=meter.largest,
        first_premises=meter.first_premises(),
    )


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
    safety net for a child stuck off the CPU): every runner stops a check by this clock, so a busy
    machine does not stop one that an idle machine finishes."""

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


def await_answer(conn: Connection, clock: ChildClock, step: float = 0.05) -> bool:
    """Wait for the child's answer on ``conn``: True when it can be read (or the pipe closed: the
    child died), False when ``clock`` says the child is over its limit first."""
    while not conn.poll(step):
        if clock.over():
            return conn.poll(0)
    return True


def _worker(obs: Sequence[Obligation], limits: Sequence[float], smt: SmtOptions | None, conn: Connection) -> None:
    """A forked worker: run the obligations whose indices arrive on ``conn`` until None, each with
    its own time limit."""
    while True:
        idx = conn.recv()
        if idx is None:
            return
        t0 = time.perf_counter()
        out, meter = _metered(obs[idx], limits[idx], smt)
        conn.send((idx, out, meter, time.perf_counter() - t0))


class _Slot:
    """One worker process and the obligation it is running (if any)."""

    def __init__(self, ctx: Any, obs: Sequence[Obligation], limits: Sequence[float], smt: SmtOptions | None) -> None:
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_worker, args=(obs, limits, smt, child), daemon=True)
        with children_deaf_to_sigint():  # Ctrl-C reaches the parent only, which stops the workers
            self.proc.start()
        child.close()
        self.task: int | None = None
        self.clock = ChildClock(self.proc.pid or 0, 0.0)

    def start(self, task: int, limit: float) -> None:
        """Hand the worker an obligation; its clock starts (CPU seconds when /proc tells them)."""
        self.task = task
        self.clock.start(limit)
        self.conn.send(task)

    def stop(self, kill: bool = False) -> None:
        if kill:
            self.proc.kill()
        else:
            try:
                self.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        self.proc.join(timeout=1)
        self.conn.close()


def run_all(
    obs: Sequence[Obligation],
    jobs: int | None = None,
    timeout: float | Sequence[float] = 10.0,
    on_done: Callable[[Result], None] | None = None,
    smt: SmtOptions | None = None,
) -> list[Result]:
    """Run obligations in ``jobs`` forked worker processes; results in input order.

    ``timeout``: one limit for all, or one per obligation.  Workers are forked once and reused
    (forking per obligation cost more system time than many checks take); the obligations with
    the largest limits (the long ones) are started first, so they do not end the run alone; a
    worker whose obligation exceeds its limit is killed, the obligation is ``unknown``, and a
    fresh worker takes its place.
    """
    jobs = jobs or os.cpu_count() or 1
    limits = [float(timeout)] * len(obs) if isinstance(timeout, (int, float)) else [float(t) for t in timeout]
    if len(limits) != len(obs):
        raise ValueError(f"run_all: {len(limits)} time limits for {len(obs)} obligations")
    if not hasattr(os, "fork"):
        res = []
        for ob, t in zip(obs, limits, strict=True):
            r = run_inline(ob, t, smt)
            res.append(r)
            if on_done:
                on_done(r)
        return res
    ctx = mp.get_context("fork")
    # popped from the end: the largest limits first, then input order (a stable sort)
    pending = sorted(range(len(obs)), key=lambda i: -limits[i])
    pending.reverse()
    results: dict[int, Result] = {}
    cross = smt is not None and smt.cross_check
    hard = [t + 0.5 + (CROSS_CHECK_BUDGET if cross else 0) for t in limits]  # the net: a check, then cvc5
    slots = [_Slot(ctx, obs, limits, smt) for _ in range(min(jobs, max(1, len(obs))))]

    def finish(i: int, r: Result) -> None:
        results[i] = r
        if on_done:
            on_done(r)

    try:
        while len(results) < len(obs):
            for sl in slots:
                if sl.task is None and pending:
                    i = pending.pop()
                    sl.start(i, hard[i])
            busy = [sl for sl in slots if sl.task is not None]
            ready = mp.connection.wait([sl.conn for sl in busy], timeout=0.05)
            for k, sl in enumerate(slots):
                task = sl.task
                if task is None:
                    continue
                ob, elapsed = obs[task], sl.clock.wall()
                died = f"worker died (exit code {sl.proc.exitcode})"
                if sl.conn in ready:
                    try:
                        idx, out, meter, secs = sl.conn.recv()
                        finish(idx, _result(ob, out, secs, meter))
                        sl.task = None
                        continue
                    except (EOFError, OSError):
                        finish(task, _result(ob, Outcome(False, died, cause="worker lost"), elapsed))
                elif sl.clock.over():
                    stopped = Outcome(None, f"timeout after {limits[task]:g} s (safety net)", cause="timeout")
                    finish(task, _result(ob, stopped, elapsed))
                elif sl.proc.is_alive():
                    continue
                else:
                    finish(task, _result(ob, Outcome(False, died, cause="worker lost"), elapsed))
                sl.stop(kill=True)
                slots[k] = _Slot(ctx, obs, limits, smt)
    finally:
        for sl in slots:
            sl.stop(kill=sl.task is not None)
    return [results[i] for i in range(len(obs))]
