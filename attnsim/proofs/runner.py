"""Running obligations: a pool of forked, reused worker processes, hard timeouts.

A check that exceeds its timeout is killed and reported ``unknown`` (never proved).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

from attnsim.proofs.obligation import Obligation, Outcome, Result, status_of


def run_inline(ob: Obligation, timeout: float) -> Result:
    """Run one obligation in this process (no hard timeout; Z3 checks honour ``timeout``)."""
    t0 = time.perf_counter()
    out = _check(ob, timeout)
    return _result(ob, out, time.perf_counter() - t0)


def _check(ob: Obligation, timeout: float) -> Outcome:
    """The obligation's outcome; a crashing check is a failed check, with its reason."""
    try:
        return ob.check(timeout)
    except Exception as exc:
        tb = traceback.format_exc(limit=3).strip().splitlines()[-1]
        return Outcome.bad(f"{type(exc).__name__}: {exc} ({tb})")


def _result(ob: Obligation, out: Outcome, seconds: float) -> Result:
    return Result(
        ob.id,
        ob.construction,
        ob.paper_ref,
        ob.method,
        ob.bound,
        status_of(ob.method, out),
        round(seconds, 4),
        out.detail,
    )


def _worker(obs: Sequence[Obligation], timeout: float, conn: Connection) -> None:
    """A forked worker: run the obligations whose indices arrive on ``conn`` until None."""
    while True:
        idx = conn.recv()
        if idx is None:
            return
        t0 = time.perf_counter()
        out = _check(obs[idx], timeout)
        conn.send((idx, out.ok, out.detail, time.perf_counter() - t0))


class _Slot:
    """One worker process and the obligation it is running (if any)."""

    def __init__(self, ctx: Any, obs: Sequence[Obligation], timeout: float) -> None:
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_worker, args=(obs, timeout, child), daemon=True)
        self.proc.start()
        child.close()
        self.task: int | None = None
        self.t0 = 0.0

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
    timeout: float = 10.0,
    on_done: Callable[[Result], None] | None = None,
) -> list[Result]:
    """Run obligations in ``jobs`` forked worker processes; results in input order.

    Workers are forked once and reused (forking per obligation cost more system time than
    many checks take); a worker whose obligation exceeds ``timeout`` is killed, the obligation
    is ``unknown``, and a fresh worker takes its place.
    """
    jobs = jobs or os.cpu_count() or 1
    if not hasattr(os, "fork"):
        res = []
        for ob in obs:
            r = run_inline(ob, timeout)
            res.append(r)
            if on_done:
                on_done(r)
        return res
    ctx = mp.get_context("fork")
    pending = list(range(len(obs)))
    pending.reverse()
    results: dict[int, Result] = {}
    slots = [_Slot(ctx, obs, timeout) for _ in range(min(jobs, max(1, len(obs))))]

    def finish(i: int, r: Result) -> None:
        results[i] = r
        if on_done:
            on_done(r)

    try:
        while len(results) < len(obs):
            for sl in slots:
                if sl.task is None and pending:
                    sl.task, sl.t0 = pending.pop(), time.perf_counter()
                    sl.conn.send(sl.task)
            busy = [sl for sl in slots if sl.task is not None]
            ready = mp.connection.wait([sl.conn for sl in busy], timeout=0.05)
            for k, sl in enumerate(slots):
                task = sl.task
                if task is None:
                    continue
                ob, elapsed = obs[task], time.perf_counter() - sl.t0
                died = f"worker died (exit code {sl.proc.exitcode})"
                if sl.conn in ready:
                    try:
                        idx, ok, detail, secs = sl.conn.recv()
                        finish(idx, _result(ob, Outcome(ok, detail), secs))
                        sl.task = None
                        continue
                    except (EOFError, OSError):
                        finish(task, _result(ob, Outcome.bad(died), elapsed))
                elif elapsed > timeout + 0.5:
                    finish(task, _result(ob, Outcome.unknown(f"timeout after {timeout:g} s"), elapsed))
                elif sl.proc.is_alive():
                    continue
                else:
                    finish(task, _result(ob, Outcome.bad(died), elapsed))
                sl.stop(kill=True)
                slots[k] = _Slot(ctx, obs, timeout)
    finally:
        for sl in slots:
            sl.stop(kill=sl.task is not None)
    return [results[i] for i in range(len(obs))]
