"""Mutants on the process pool: each in a worker of its own, within a budget of its CPU seconds;
then the kills confirmed.

The obligation that killed is re-run on the unmutated construction, and a kill only counts when it
passes there."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from attnsim.proofs.obligation import Obligation
from attnsim.verify import pool
from attnsim.verify.mutation.plan import Job, mutant_budget
from attnsim.verify.mutation.run import MutantCause, MutantResult, mutant_task
from attnsim.verify.runner import run_all


def run_jobs(
    jobs: Sequence[Job],
    workers: int | None = None,
    timeout: float = 10.0,
    on_done: Callable[[MutantResult], None] | None = None,
    confirm: bool = True,
) -> list[MutantResult]:
    """Run every mutant on the process pool (:func:`attnsim.verify.pool.run`, ``workers`` workers),
    each in a worker process of its own (a mutant changes what its process builds), killed past
    :func:`~attnsim.verify.mutation.plan.mutant_budget` CPU seconds; then (``confirm``) check that
    each killer passes on the original.  Results in input order."""
    todo = [(job, m) for job in jobs for m in job.mutants]
    results: dict[int, MutantResult] = {}

    def finish(i: int, r: MutantResult) -> None:
        results[i] = r
        if on_done:
            on_done(r)

    runnable = []
    for i, (job, m) in enumerate(todo):
        if job.obligations:
            runnable.append(i)
        else:
            finish(i, MutantResult(m, False, None, False, None, "no obligations registered"))
    budgets = [mutant_budget(todo[i][0], timeout) for i in runnable]
    tasks = [
        pool.Task(mutant_task, (todo[i][1], todo[i][0].obligations, todo[i][0].example, timeout), b)
        for i, b in zip(runnable, budgets, strict=True)
    ]

    def done(d: pool.Done) -> None:
        i, m = runnable[d.index], todo[runnable[d.index]][1]
        if d.ended == "returned":
            killed, by, eq, proof, detail, applied, claim, cause = d.value
            finish(i, MutantResult(m, killed, by, eq, proof, detail, d.seconds, applied, claim, cause))
        elif d.ended == "timeout":
            finish(i, _lost(m, f"worker over budget ({budgets[d.index]:.0f} s)", "over budget", d.seconds))
        elif d.ended == "died":
            finish(i, _lost(m, f"worker died ({d.detail})", "worker lost", d.seconds))
        else:
            finish(i, _lost(m, f"worker error {d.detail}", "worker error", d.seconds))

    pool.run(tasks, workers, done, max_tasks_per_worker=1)
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
