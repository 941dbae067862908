"""Running obligations: one check with its solver work metered, and many on the process pool.

A check's budget is solver work (Z3 ``rlimit`` units, see :mod:`attnsim.proofs.solver_work`),
metered per obligation into its result.  The timeout is only the outer safety net, counted in
the worker's CPU seconds (:mod:`attnsim.verify.pool`): a check that exceeds it is killed and
reported ``unknown`` (never proved).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from attnsim.proofs import smtlib, solver_work
from attnsim.proofs.obligation import Obligation, Outcome, Result
from attnsim.proofs.solver_work import WorkMeter
from attnsim.verify import pool

CROSS_CHECK_BUDGET = 120.0  # seconds a worker may spend on cvc5 after an obligation's own timeout


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


def _asked_z3(value: tuple[Outcome, WorkMeter]) -> bool:
    """Whether a check asked Z3: Z3's process-wide state then moves the units the next query in
    that process uses (one bounded Match2 query: 11,395 units alone, 9,687 after the query of the
    next shorter length), so the next obligation gets a worker that asked Z3 nothing."""
    return value[1].queries > 0


def run_all(
    obs: Sequence[Obligation],
    jobs: int | None = None,
    timeout: float | Sequence[float] = 10.0,
    on_done: Callable[[Result], None] | None = None,
    smt: SmtOptions | None = None,
) -> list[Result]:
    """Run obligations on the process pool (:func:`attnsim.verify.pool.run`, ``jobs`` workers);
    results in input order.

    ``timeout``: one limit for all, or one per obligation, in CPU seconds of the worker.  The
    obligations with the largest limits (the long ones) are started first, so they do not end the
    run alone; an obligation past its limit (plus cvc5's budget with ``--cross-check``) is killed
    and ``unknown`` (cause ``timeout``), one whose worker dies is ``failed`` (``worker lost``).
    """
    limits = [float(timeout)] * len(obs) if isinstance(timeout, (int, float)) else [float(t) for t in timeout]
    if len(limits) != len(obs):
        raise ValueError(f"run_all: {len(limits)} time limits for {len(obs)} obligations")
    order = sorted(range(len(obs)), key=lambda i: -limits[i])  # the largest limits first, else input order
    extra = 0.5 + (CROSS_CHECK_BUDGET if smt is not None and smt.cross_check else 0.0)  # the net: a check, then cvc5
    tasks = [pool.Task(_metered, (obs[i], limits[i], smt), limits[i] + extra, _asked_z3) for i in order]
    results: dict[int, Result] = {}

    def finish(d: pool.Done) -> None:
        i = order[d.index]
        ob = obs[i]
        if d.ended == "returned":
            out, meter = d.value
            r = _result(ob, out, d.seconds, meter)
        elif d.ended == "timeout":
            r = _result(ob, Outcome(None, f"timeout after {limits[i]:g} s (safety net)", cause="timeout"), d.seconds)
        elif d.ended == "died":
            r = _result(ob, Outcome(False, f"worker died ({d.detail})", cause="worker lost"), d.seconds)
        else:
            r = _result(ob, Outcome.bad(d.detail), d.seconds)
        results[i] = r
        if on_done:
            on_done(r)

    pool.run(tasks, jobs, finish)
    return [results[i] for i in range(len(obs))]
