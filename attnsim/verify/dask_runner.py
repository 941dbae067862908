"""Obligations and mutants on a Dask cluster (``attnsim verify --scheduler``): the optional extra.

Why Dask: one campaign (every-site mutants of U, the deep obligations) outgrows one small machine,
and ``dask.distributed`` already gives what spreading it needs: a scheduler that places one task
per batch of obligations or per (construction, mutant) on any number of workers, reruns the tasks
of a worker that dies on another one, streams results back as they finish (``as_completed``) and
cancels what is left (``client.cancel``).  No RPC or scheduler of our own; ``pip install
"attnsim[dask]"``; without it the local pool (:mod:`attnsim.verify.pool`) runs and ``--scheduler``
says how to install.

A Dask task cannot be interrupted, so a task never runs a check in the worker itself: it runs its
checks through the one process pool (:func:`attnsim.verify.runner.run_all`,
:func:`attnsim.verify.mutation.pool.run_jobs`) with one worker process, forked from the Dask worker
for this task, which is killed past its CPU seconds and dies with the Dask worker.  The verdicts
and the rows are those of the local pool.

Registered obligations travel by id and are looked up on the worker, after the ``setup`` the
client passes (the catalogue's ``load``: the harness does not import the catalogue above it); any
other obligation travels cloudpickled.  Worker processes must be allowed children: ``local:N``
starts them so; for ``dask worker`` set ``DASK_DISTRIBUTED__WORKER__DAEMON=False``.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from attnsim.proofs import registry
from attnsim.proofs.obligation import Obligation, Outcome, Result
from attnsim.verify.budgets import explain_unknown
from attnsim.verify.cache import code_version, coq_inputs, solver_versions
from attnsim.verify.mutation.plan import Job
from attnsim.verify.mutation.pool import run_jobs
from attnsim.verify.mutation.run import MutantResult
from attnsim.verify.runner import SmtOptions, _result, run_all
from attnsim.verify.sigint import children_deaf_to_sigint

INSTALL = 'pip install "attnsim[dask]"'
Ref = str | bytes  # a registered obligation's id, or a cloudpickled obligation
Setup = Callable[[], object]  # run on a worker before it looks an obligation up (idempotent)


class SchedulerError(ValueError):
    """``--scheduler`` cannot be used: Dask is missing, the address is bad or unreachable (exit 2)."""


# -- worker side ----------------------------------------------------------------------------------
def _may_start_processes() -> None:
    if mp.current_process().daemon:
        raise SchedulerError(
            "this Dask worker is daemonic and cannot start the processes that enforce timeouts: "
            "start workers with DASK_DISTRIBUTED__WORKER__DAEMON=False"
        )


def _registered(setup: Setup | None) -> dict[str, Obligation]:
    if setup is not None:
        setup()
    return {o.id: o for o in registry.all_obligations(include_deep=True)}


def _resolve(ref: Ref, known: dict[str, Obligation]) -> Obligation:
    if isinstance(ref, bytes):
        import cloudpickle

        ob = cloudpickle.loads(ref)
        assert isinstance(ob, Obligation)
        return ob
    return known[ref]


def obligations_task(
    batch: list[tuple[Ref, float]], smt: SmtOptions | None, setup: Setup | None = None
) -> list[Result | Outcome]:
    """One Dask task: a few obligations (ref, timeout) on the process pool of this worker, one
    worker process, each under its own limit: their results, or an obligation that cannot be
    loaded here as a failed outcome."""
    _may_start_processes()
    known = _registered(setup) if any(isinstance(ref, str) for ref, _ in batch) else {}
    loaded: dict[int, Obligation] = {}
    lost: dict[int, Outcome] = {}
    for k, (ref, _) in enumerate(batch):
        try:
            loaded[k] = _resolve(ref, known)
        except Exception as exc:
            lost[k] = Outcome.bad(f"the worker cannot load obligation {ref!r:.80}: {type(exc).__name__}: {exc}")
    results = run_all(list(loaded.values()), jobs=1, timeout=[batch[k][1] for k in loaded], smt=smt)
    ran: dict[int, Result | Outcome] = dict(zip(loaded, results, strict=True))
    return [ran[k] if k in ran else lost[k] for k in range(len(batch))]


def mutant_task(name: str, ids: list[str], mutant: Any, timeout: float, setup: Setup | None = None) -> tuple[Any, ...]:
    """One Dask task: one mutant on the process pool of this worker, as
    :func:`attnsim.verify.mutation.pool.run_jobs` runs it locally.

    Returns (killed, by, equivalent, proof, detail, applied, claim_only, cause, seconds)."""
    _may_start_processes()
    known = _registered(setup)
    job = Job(name, registry.constructions()[name][1], [known[i] for i in ids], [mutant], 1)
    (r,) = run_jobs([job], workers=1, timeout=timeout, confirm=False)
    return (r.killed, r.by, r.equivalent, r.proof, r.detail, r.applied, r.claim_only, r.cause, r.seconds)


def worker_versions() -> tuple[str, dict[str, str], str | None]:
    """This process's checking-code version, solver versions and Coq sources' digest (compared with
    the client's)."""

    return code_version(), solver_versions(), coq_inputs()["sources"]


# -- client side ----------------------------------------------------------------------------------
def parse_local(address: str) -> int | None:
    """N for ``local:N`` (a LocalCluster of N worker processes); None for a scheduler address."""
    if not address.startswith("local:"):
        return None
    n = address.removeprefix("local:")
    if not n.isdigit() or int(n) < 1:
        raise SchedulerError(f"--scheduler {address}: expected local:N with N >= 1 worker processes")
    return int(n)


@contextlib.contextmanager
def connect(address: str) -> Iterator[Any]:
    """A Dask client for ``address`` (``tcp://host:port``, or ``local:N``); closed on exit.

    The workers must run the same attnsim and solvers as this process, since results are
    labelled (and cached) with this process's versions.  A ``local:N`` cluster is started inside
    :func:`~attnsim.verify.sigint.children_deaf_to_sigint`: its processes never hear Ctrl-C, and a
    Ctrl-C during the start is raised once the client is connected, so that leaving this context
    closes the client and the cluster through Dask, which stops the worker processes."""
    n = parse_local(address)
    try:
        import dask
        from distributed import Client
    except ImportError:
        raise SchedulerError(f"--scheduler needs Dask, which is not installed: {INSTALL}") from None

    with contextlib.ExitStack() as stack:
        if n is not None:
            cfg: dict[str, Any] = {
                "distributed.worker.daemon": False,  # a worker starts the pool's processes
                "distributed.worker.profile.enabled": False,  # no statistical profiler competing with the checks
                # glibc reads it once at start and the pool's processes fork from the worker: the
                # allocation-heavy SymPy and Z3 checks ran measurably slower with Dask's default
                "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
            }
            stack.enter_context(dask.config.set(cfg))
            client = _local_client(stack, n)
        else:
            try:
                client = stack.enter_context(Client(address, timeout="20s"))
            except (OSError, ValueError) as exc:
                raise SchedulerError(f"--scheduler {address}: cannot reach a Dask scheduler ({exc})") from None
            _same_versions(client)  # a local cluster's workers are this interpreter's children: same code
        yield client


def _local_client(stack: contextlib.ExitStack, n: int) -> Any:
    """A client of a new LocalCluster of ``n`` worker processes, both closed by ``stack``."""
    import logging
    from multiprocessing import resource_tracker

    from distributed import Client, LocalCluster

    # Started before the block: Python's resource tracker unblocks SIGINT in the thread that starts
    # it, and Dask's loop thread would start it with the cluster's first worker (spawn).
    resource_tracker.ensure_running()
    with children_deaf_to_sigint():
        cluster = stack.enter_context(
            LocalCluster(
                n_workers=n,
                threads_per_worker=1,
                processes=True,
                # its HTTP server on any free port: on 8787, the default, a second cluster
                # (another verify, a test) makes the scheduler warn on stderr and take another
                dashboard_address=":0",
                # its processes' own log lines never reach the terminal: what a check finds or a
                # lost worker is a typed result of the run
                silence_logs=logging.CRITICAL,
            )
        )
        client = stack.enter_context(Client(cluster))
    return client


def _same_versions(client: Any) -> None:
    mine = worker_versions()
    theirs = client.run(worker_versions)
    if not theirs:
        raise SchedulerError("the Dask cluster has no workers")
    for addr, v in theirs.items():
        if tuple(v) != mine:
            what = f"solvers {v[1]} (here {mine[1]})"
            what = "Coq sources" if v[2] != mine[2] else what
            what = "attnsim source" if v[0] != mine[0] else what
            raise SchedulerError(f"Dask worker {addr} runs a different {what}: results would be mislabelled")


def _key(label: str) -> str:
    return f"attnsim-{label}-{uuid.uuid4().hex[:10]}"


def batches(timeouts: Sequence[float], workers: int, most: int = 16) -> list[list[int]]:
    """Indices in runs of equal timeout, shrinking towards the end (guided): each batch at most
    ``most`` long and about 1/(4 workers) of what remains, so the last ones are single obligations.

    One Dask task per obligation costs more scheduling than most checks take; small final
    batches keep every worker busy until the end."""
    out: list[list[int]] = []
    size = 0
    for i, t in enumerate(timeouts):
        if out and len(out[-1]) < size and timeouts[out[-1][-1]] == t:
            out[-1].append(i)
        else:
            size = max(1, min(most, (len(timeouts) - i) // (4 * max(1, workers))))
            out.append([i])
    return out


def run_obligations(
    client: Any,
    obs: Sequence[Obligation],
    timeouts: Sequence[float],
    smt: SmtOptions | None = None,
    on_done: Callable[[int, Result], None] | None = None,
    setup: Setup | None = None,
) -> list[Result]:
    """Run obligations on the cluster, ``timeouts[i]`` for ``obs[i]``; results in input order.

    Obligations go in small batches (:func:`batches`), one Dask task each; ``on_done(i, result)``
    is called as each batch finishes.  A timed-out result names its rerun command (as the local
    runner's); a batch lost with its worker is rerun by Dask on another, and one whose workers keep
    dying is ``failed`` (worker died), never proved.  ``setup`` runs on a worker before it looks a
    registered obligation up.  However this ends (a Ctrl-C included), what is left is cancelled."""
    import cloudpickle
    from distributed import as_completed

    known = {o.id: o for o in registry.all_obligations(include_deep=True)} if registry.loaded() else {}
    refs: list[Ref] = [ob.id if known.get(ob.id) is ob else cloudpickle.dumps(ob) for ob in obs]
    workers = sum(client.nthreads().values()) or 1
    futures: dict[Any, list[int]] = {}
    for batch in batches(timeouts, workers):
        items = [(refs[i], timeouts[i]) for i in batch]
        futures[client.submit(obligations_task, items, smt, setup, key=_key(obs[batch[0]].id))] = batch
    results: dict[int, Result] = {}
    try:
        for fut in as_completed(list(futures)):
            batch = futures[fut]
            try:
                outs: list[Result | Outcome] = fut.result()
            except Exception as exc:
                outs = [Outcome(False, f"worker died: {type(exc).__name__}: {exc}", cause="worker lost")] * len(batch)
            for i, got in zip(batch, outs, strict=True):
                r = got if isinstance(got, Result) else _result(obs[i], got, 0.0)
                r = explain_unknown(r, obs[i], timeouts[i])
                results[i] = r
                if on_done:
                    on_done(i, r)
    finally:
        client.cancel([f for f in futures if not f.done()])
    return [results[i] for i in range(len(obs))]


def run_mutants(
    client: Any,
    todo: Sequence[tuple[Any, Any]],
    timeout: float,
    on_done: Callable[[int, Any], None] | None = None,
    setup: Setup | None = None,
) -> list[Any]:
    """Run (job, mutant) pairs as one Dask task each; :class:`MutantResult` s in input order.
    ``setup`` runs on a worker before it looks the obligations up; however this ends, what is
    left is cancelled.

    Killers are not confirmed here (see :func:`attnsim.verify.mutation.pool.confirm_killers`)."""
    from distributed import as_completed

    results: dict[int, MutantResult] = {}
    futures: dict[Any, int] = {}

    def finish(i: int, r: MutantResult) -> None:
        results[i] = r
        if on_done:
            on_done(i, r)

    for i, (job, m) in enumerate(todo):
        if not job.obligations:
            finish(i, MutantResult(m, False, None, False, None, "no obligations registered"))
            continue
        ids = [o.id for o in job.obligations]
        fut = client.submit(mutant_task, job.name, ids, m, timeout, setup, key=_key(f"mutant-{job.name}"))
        futures[fut] = i
    try:
        for fut in as_completed(list(futures)):
            i = futures[fut]
            m = todo[i][1]
            try:
                killed, by, eq, proof, detail, applied, claim, cause, secs = fut.result()
            except Exception as exc:
                killed, by, eq, proof, detail, applied, claim, cause, secs = (
                    False, None, False, None, f"worker died: {type(exc).__name__}: {exc}", 0, False, "worker lost", 0.0
                )  # fmt: skip
            finish(i, MutantResult(m, killed, by, eq, proof, detail, secs, applied, claim, cause))
    finally:
        client.cancel([f for f in futures if not f.done()])
    return [results[i] for i in range(len(todo))]
