"""Running obligations: one forked process each, a pool of workers, hard timeouts.

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
    try:
        out = ob.check(timeout)
    except Exception as exc:  # a crashing check is a failed check, with its reason
        out = Outcome.bad(f"{type(exc).__name__}: {exc}")
    return _result(ob, out, time.perf_counter() - t0)


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


def _child(ob: Obligation, timeout: float, conn: Connection) -> None:
    try:
        out = ob.check(timeout)
    except Exception as exc:
        tb = traceback.format_exc(limit=3).strip().splitlines()[-1]
        out = Outcome.bad(f"{type(exc).__name__}: {exc} ({tb})")
    conn.send((out.ok, out.detail))
    conn.close()


def run_all(
    obs: Sequence[Obligation],
    jobs: int | None = None,
    timeout: float = 10.0,
    on_done: Callable[[Result], None] | None = None,
) -> list[Result]:
    """Run obligations in forked workers (``jobs`` at once); results in input order."""
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or not hasattr(os, "fork"):
        res = []
        for ob in obs:
            r = run_inline(ob, timeout)
            res.append(r)
            if on_done:
                on_done(r)
        return res
    ctx = mp.get_context("fork")
    pending = list(enumerate(obs))
    running: dict[int, tuple[Any, Connection, float, Obligation]] = {}
    results: dict[int, Result] = {}
    while pending or running:
        while pending and len(running) < jobs:
            idx, ob = pending.pop(0)
            parent, child = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_child, args=(ob, timeout, child), daemon=True)
            proc.start()
            child.close()
            running[idx] = (proc, parent, time.perf_counter(), ob)
        done = []
        for idx, (proc, conn, t0, ob) in running.items():
            elapsed = time.perf_counter() - t0
            if conn.poll():
                try:
                    ok, detail = conn.recv()
                    out = Outcome(ok, detail)
                except EOFError:
                    out = Outcome.bad(f"worker died (exit code {proc.exitcode})")
                done.append((idx, _result(ob, out, elapsed)))
            elif not proc.is_alive():
                out = Outcome.bad(f"worker died (exit code {proc.exitcode})")
                done.append((idx, _result(ob, out, elapsed)))
            elif elapsed > timeout + 0.5:
                proc.kill()
                out = Outcome.unknown(f"timeout after {timeout:g} s")
                done.append((idx, _result(ob, out, elapsed)))
        for idx, r in done:
            proc, conn, _, _ = running.pop(idx)
            conn.close()
            proc.join(timeout=1)
            results[idx] = r
            if on_done:
                on_done(r)
        if not done:
            time.sleep(0.002)
    return [results[i] for i in range(len(obs))]
