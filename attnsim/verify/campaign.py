"""A verification campaign: where checks run (local pool or Dask) and which results are reused.

``attnsim verify`` builds one :class:`Campaign` when ``--scheduler``, ``--resume`` or ``--cache``
is given; otherwise it runs the local pool exactly as before.  The campaign

* looks every obligation (and mutant) up in the :class:`~attnsim.verify.cache.ResultCache` when
  resuming, and runs only the rest;
* runs that rest on the Dask cluster (:mod:`attnsim.verify.dask_runner`) or the local pool;
* writes each result to the cache the moment it arrives, so an interrupted campaign continues
  where it stopped.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from attnsim.proofs.obligation import Obligation, Result
from attnsim.verify import cache as C
from attnsim.verify import dask_runner
from attnsim.verify.budgets import run_budgeted, timeout_for
from attnsim.verify.mutation.pool import confirm_killers, run_jobs
from attnsim.verify.mutation.run import MutantResult

_MUTANT_FIELDS = ("killed", "by", "equivalent", "proof", "detail", "seconds", "applied", "claim_only", "cause")


@dataclasses.dataclass
class Campaign:
    """Where checks run (``client``: a Dask client, or None for the local pool of ``jobs``) and the cache;
    ``setup``: what a Dask worker runs before it looks registered obligations up (the catalogue's
    ``load``, passed from above the harness)."""

    client: Any = None
    jobs: int | None = None
    cache: C.ResultCache | None = None
    resume: bool = False
    setup: Callable[[], object] | None = None  # run on a Dask worker before it looks obligations up
    ran: int = 0  # checks actually run (not reused)

    # -- obligations ---------------------------------------------------------------------------
    def obligations(  # noqa: C901
        self,
        obs: Sequence[Obligation],
        timeout: float | None = None,
        smt: Any = None,
        on_done: Callable[[Result], None] | None = None,
    ) -> list[Result]:
        """Results of ``obs`` in input order (``timeout``: an explicit ``--timeout``, else each one's budget)."""

        timeouts = [timeout_for(ob, timeout) for ob in obs]
        keys: list[dict[str, Any]] = []
        if self.cache is not None:
            fps = C.construction_fingerprints({ob.construction for ob in obs})
            common = C.inputs()
            keys = [
                C.obligation_key(ob, t, fps.get(ob.construction), smt, common)
                for ob, t in zip(obs, timeouts, strict=True)
            ]
        results: dict[int, Result] = {}
        todo: list[int] = []
        for i in range(len(obs)):
            hit = self.cache.get(keys[i], C.reusable_obligation) if self.cache is not None and self.resume else None
            if hit is None:
                todo.append(i)
                continue
            results[i] = C.result_from(hit)
            if on_done:
                on_done(results[i])

        def done(i: int, r: Result) -> None:
            results[i] = r
            self.ran += 1
            if self.cache is not None:
                self.cache.put(keys[i], r.as_dict())
            if on_done:
                on_done(r)

        sub = [obs[i] for i in todo]
        if self.client is not None:
            dask_runner.run_obligations(
                self.client, sub, [timeouts[i] for i in todo], smt, lambda k, r: done(todo[k], r), self.setup
            )
        elif sub:
            where = {obs[i].id: i for i in todo}
            res = run_budgeted(sub, jobs=self.jobs, timeout=timeout, on_done=lambda r: done(where[r.id], r), smt=smt)
            for i, r in zip(todo, res, strict=True):
                results[i] = r  # with the cause an unknown result is told after the pool returns
        return [results[i] for i in range(len(obs))]

    # -- mutants ---------------------------------------------------------------------------------
    def mutants(self, jobs: Sequence[Any], timeout: float, on_done: Callable[[Any], None] | None = None) -> list[Any]:
        """Every mutant of ``jobs`` (:class:`attnsim.verify.mutation.plan.Job`), sharded by (construction,
        mutant); killers are then confirmed on the unmutated constructions through :meth:`obligations`."""

        todo = [(job, m) for job in jobs for m in job.mutants]
        common = C.inputs()
        keys = [C.mutant_key(m, [o.id for o in job.obligations], timeout, common) for job, m in todo]
        results: dict[int, Any] = {}
        rest: list[int] = []
        for i, (_, m) in enumerate(todo):
            hit = self.cache.get(keys[i], C.reusable_mutant) if self.cache is not None and self.resume else None
            if hit is None:
                rest.append(i)
                continue
            results[i] = MutantResult(m, **{k: hit[k] for k in _MUTANT_FIELDS})
            if on_done:
                on_done(results[i])

        def done(i: int, r: Any) -> None:
            results[i] = r
            self.ran += 1
            if self.cache is not None:
                self.cache.put(keys[i], {k: getattr(r, k) for k in _MUTANT_FIELDS})
            if on_done:
                on_done(r)

        if self.client is not None:
            dask_runner.run_mutants(
                self.client, [todo[i] for i in rest], timeout, lambda k, r: done(rest[k], r), self.setup
            )
        elif rest:
            where = {(todo[i][0].name, todo[i][1].description): i for i in rest}
            keep = {id(todo[i][1]) for i in rest}
            sub_jobs = [dataclasses.replace(job, mutants=[m for m in job.mutants if id(m) in keep]) for job in jobs]
            run_jobs(
                [j for j in sub_jobs if j.mutants],
                workers=self.jobs,
                timeout=timeout,
                on_done=lambda r: done(where[(r.mutant.construction, r.mutant.description)], r),
                confirm=False,
            )
        out = [results[i] for i in range(len(todo))]
        confirm_killers(out, jobs, timeout, lambda obs, t: self.obligations(obs, t))
        return out


@contextlib.contextmanager
def open_campaign(
    scheduler: str | None = None,
    jobs: int | None = None,
    cache_dir: str | Path | None = None,
    resume: bool = False,
    setup: Callable[[], object] | None = None,
) -> Iterator[Campaign]:
    """A campaign on ``scheduler`` (Dask address or ``local:N``; None: the local pool of ``jobs``),
    with a result cache in ``cache_dir`` when given (``resume``: reuse what it holds); ``setup``:
    see :class:`Campaign`."""
    cache = C.ResultCache(cache_dir) if cache_dir is not None else None
    if scheduler is None:
        yield Campaign(None, jobs, cache, resume, setup)
        return

    with dask_runner.connect(scheduler) as client:
        yield Campaign(client, jobs, cache, resume, setup)
