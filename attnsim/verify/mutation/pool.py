"""The local pool: every mutant in its own forked worker, under a budget of its CPU seconds (a wall
clock net of :data:`~attnsim.verify.runner.WALL_NET_FACTOR` times it); then the kills confirmed.

The obligation that killed is re-run on the unmutated construction, and a kill only counts when it
passes there."""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

from attnsim.proofs.obligation import Obligation
from attnsim.verify.mutation.plan import Job, mutant_budget
from attnsim.verify.mutation.run import MutantCause, MutantResult, _child
from attnsim.verify.runner import ChildClock, run_all
from attnsim.verify.sigint import children_deaf_to_sigint


def run_jobs(
    jobs: Sequence[Job],
    workers: int | None = None,
    timeout: float = 10.0,
    on_done: Callable[[MutantResult], None] | None = None,
    confirm: bool = True,
) -> list[MutantResult]:
    """Run every mutant in forked workers; then (``confirm``) check that each killer passes on the original."""
    workers = workers or os.cpu_count() or 1
    ctx = mp.get_context("fork")
    todo = [(job, m) for job in jobs for m in job.mutants]
    results: dict[int, MutantResult] = {}
    pending = list(enumerate(todo))
    running: dict[int, tuple[Any, Connection, ChildClock, float]] = {}
    while pending or running:
        while pending and len(running) < workers:
            idx, (job, m) = pending.pop(0)
            if not job.obligations:
                results[idx] = MutantResult(m, False, None, False, None, "no obligations registered")
                if on_done:
                    on_done(results[idx])
                continue
            parent, child = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_child, args=(m, job.obligations, job.example, timeout, child), daemon=True)
            with children_deaf_to_sigint():  # Ctrl-C reaches the parent only, which stops the children
                proc.start()
            child.close()
            budget = mutant_budget(job, timeout)
            running[idx] = (proc, parent, ChildClock(proc.pid or 0, budget), budget)
        done = []
        for idx, (proc, conn, clock, budget) in running.items():
            m = todo[idx][1]
            elapsed = clock.wall()
            if conn.poll():
                try:
                    killed, by, eq, proof, detail, applied, claim, cause = conn.recv()
                    r = MutantResult(m, killed, by, eq, proof, detail, elapsed, applied, claim, cause)
                except EOFError:
                    r = _lost(m, f"worker died (exit {proc.exitcode})", "worker lost", elapsed)
                done.append((idx, r))
            elif not proc.is_alive():
                done.append((idx, _lost(m, f"worker died (exit {proc.exitcode})", "worker lost")))
            elif clock.over():
                proc.kill()
                done.append((idx, _lost(m, f"worker over budget ({budget:.0f} s)", "over budget")))
        for idx, r in done:
            proc, conn, _, _ = running.pop(idx)
            conn.close()
            proc.join(timeout=1)
            results[idx] = r
            if on_done:
                on_done(r)
        if not done:
            time.sleep(0.002)
    out = [results[i] for i in range(len(todo))]
    if confirm:
        confirm_killers(out, jobs, timeout, lambda obs, t: run_all(obs, jobs=workers, timeout=t))
    return out


def _lost(m: Any, detail: str, cause: MutantCause, seconds: float = 0.0) -> MutantResult:
    """The result of a mutant whose worker gave no answer: survived, undecided by ``cause``."""
    return MutantResult(m, False, None, False, None, detail, seconds, cause=cause)


def confirm_killers(
    results: list[MutantResult],
    jobs: Sequence[Job],
    timeout: float,
    run: Callable[[list[Obligation], float], list[Any]],
) -> None:
    """A kill counts only if the killing obligation holds on the unmutated construction.

    ``run(obligations, timeout)`` runs them (the local pool, or a Dask cluster) and returns results."""
    by_id = {o.id: o for job in jobs for o in job.obligations}
    killers = sorted({r.by for r in results if r.by is not None})
    if not killers:
        return
    base = run([by_id[k] for k in killers], max(3 * timeout, 30.0))
    bad = {b.id: b.status for b in base if b.status not in ("proved", "passed")}
    for r in results:
        if r.by in bad:
            r.detail = f"killer {r.by} is {bad[r.by]} on the original too; {r.detail}"
            r.killed, r.by = False, None
