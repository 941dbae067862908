"""Z3 queries budgeted in solver work (``rlimit``), each in a context of its own, and metered.

Seconds make verdicts depend on the machine's load: a query decided in 3 s alone ran out of a
10 s budget beside other processes.  Z3's ``rlimit`` counts resource units (roughly:
solver steps) and stops a check after the given number of them, whatever the clock says; the
same query in a fresh context with the same seed uses the same units on any run and any load.
So every deciding query of the proof kit goes through :func:`check`:

* a fresh ``z3.Context`` given the query as SMT-LIB text (the answer and its units do not depend
  on what the process asked Z3 before);
* ``rlimit`` set (the query's budget in units, :data:`QUERY_RLIMIT` unless the caller says);
* the units it used added to :data:`METER` when one is set (the runner sets one per obligation,
  and ``attnsim verify`` prints and ``--json`` carries the total).

Wall or CPU time is only the outer safety net (the runner's ``--timeout``).  Which budgets, and
the measured use they rest on: :mod:`attnsim.verify.budgets`.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

import z3

from attnsim.proofs.obligation import Outcome, PremiseCheck

QUERY_RLIMIT = 60_000_000  # one plain query (a lemma, a bounded selector, a linear abstraction)
PREMISE_RLIMIT = 5_000_000  # a vacuity check (premises satisfiable?)
RESTART_FIRST = 4_000_000  # the decoding prover's first seeded attempt; each next one twice as many
RESTART_TOTAL = 120_000_000  # the decoding prover's seeded attempts of one query, all together
SAFETY_FACTOR = 20.0  # Z3's own wall-clock timeout: this many times the caller's timeout (a net only)


@dataclass
class WorkMeter:
    """The solver work of one obligation: units used, queries asked, queries out of budget, the
    premise checks made (in order)."""

    units: int = 0
    queries: int = 0
    exhausted: int = 0
    largest: int = 0  # the most units one decided query used (what a budget must cover)
    premises: list[PremiseCheck] = field(default_factory=list)

    def first_premises(self) -> PremiseCheck | None:
        """The first premise check (the obligation's own, before any sub-proof's)."""
        return self.premises[0] if self.premises else None


METER: contextvars.ContextVar[WorkMeter | None] = contextvars.ContextVar("attnsim_work_meter", default=None)


ANSWERS: contextvars.ContextVar[dict[tuple[Any, ...], Any] | None] = contextvars.ContextVar(
    "attnsim_shared_answers", default=None
)
ANSWERS_KEPT = 4096  # the most decided answers one proof keeps (the oldest is dropped first)

TRACE: contextvars.ContextVar[list[tuple[Any, ...]] | None] = contextvars.ContextVar(
    "attnsim_work_trace", default=None
)

_P = ParamSpec("_P")
_R = TypeVar("_R")


@contextlib.contextmanager
def shared_answers() -> Iterator[dict[tuple[Any, ...], Any]]:
    """One proof's decided answers, by exact query (:func:`attnsim.proofs.decoding.prove` reads and
    fills it): a query asked again in the same proof (the option cases, the padding rows, a later
    stage of one chain) gets the answer it got, without asking Z3 again.  A query's answer depends
    only on the query and its budget in units (a fresh context, the same seeds), so this is the
    answer Z3 would give; an undecided answer is never kept.  Inside a scope already open, that
    scope's answers (so a chain of stages shares one); the answers are dropped when the outermost
    scope ends.  A decided answer another proof of this process computed is given with its work
    replayed into this proof's meter (:data:`attnsim.proofs.decoding.answers.PROCESS`), so the work
    a proof reports is what computing its own answers takes, whatever ran before it."""
    got = ANSWERS.get()
    if got is not None:
        yield got
        return
    fresh: dict[tuple[Any, ...], Any] = {}
    token = ANSWERS.set(fresh)
    try:
        yield fresh
    finally:
        ANSWERS.reset(token)


def sharing_answers(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """``fn`` run inside :func:`shared_answers` (a proof's entry point)."""

    @functools.wraps(fn)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with shared_answers():
            return fn(*args, **kwargs)

    return run


class NodeBudgetExceeded(Exception):
    """A symbolic step's expression grew past its node budget: the obligation is unknown ("over its
    node budget"), whatever the machine (the size of an expression does not depend on the load)."""

    def outcome(self) -> Outcome:
        """What a check that raised it gives: not decided (the runner's and the mutation runner's)."""
        return Outcome(None, f"over its node budget: {self}", cause="over its node budget")


def keep_answer(answers: dict[tuple[Any, ...], Any], key: tuple[Any, ...], answer: Any) -> None:
    """``answer`` kept under ``key``; the oldest answer dropped past :data:`ANSWERS_KEPT`."""
    answers[key] = answer
    if len(answers) > ANSWERS_KEPT:
        del answers[next(iter(answers))]


def isolated(facts: Sequence[Any], rlimit: int, seed: int = 0, seconds: float | None = None) -> z3.Solver:
    """A solver over ``facts`` in a fresh Z3 context, budgeted ``rlimit`` units, Z3 seed ``seed``.

    The facts reach the fresh context as their SMT-LIB text, never by ``translate``: a translated
    query's work depends on what the process asked Z3's main context before (one solver check
    there moved ``rasp/z3-parametric/decode-position`` from 81,459 to 99,532 units, so a worker's
    history decided the units), the parsed text's does not.

    ``seconds``: a wall-clock net (times :data:`SAFETY_FACTOR`) that should never be what stops
    a check on a working machine."""
    ctx = z3.Context()
    s = z3.Solver(ctx=ctx)
    s.set("rlimit", max(1, int(rlimit)))
    s.set("random_seed", seed)
    if seconds is not None:
        s.set("timeout", max(1, int(seconds * SAFETY_FACTOR * 1000)))
    if facts:
        text = z3.Solver(ctx=facts[0].ctx)
        text.add(*facts)
        s.from_string(text.to_smt2())
    return s


@contextlib.contextmanager
def sub_meter() -> Iterator[WorkMeter]:
    """A fresh meter for the checks inside (what a budget over several queries reads: the same
    units on any machine), its counts added to the current meter when the block ends."""
    outer = METER.get()
    inner = WorkMeter()
    token = METER.set(inner)
    try:
        yield inner
    finally:
        METER.reset(token)
        if outer is not None:
            outer.units += inner.units
            outer.queries += inner.queries
            outer.exhausted += inner.exhausted
            outer.largest = max(outer.largest, inner.largest)
            outer.premises.extend(inner.premises)


def replay(trace: Sequence[tuple[Any, ...]]) -> None:
    """The checks and premise records of a :func:`recording` done again to the current meter (and
    trace): what an answer kept by its caller costs where it is given again."""
    for ev in trace:
        if ev[0] == "check":
            metered(ev[1], ev[2])
        elif ev[0] == "record":
            record_premises(ev[1])
        else:
            raise ValueError(f"replay: a {ev[0]!r} event needs its answer cache (attnsim.proofs.decoding.answers)")


def units_of(solver: z3.Solver) -> int:
    """The resource units the solver's context has used so far (Z3's ``rlimit count``)."""
    st = solver.statistics()
    return int(st.get_key_value("rlimit count")) if "rlimit count" in st.keys() else 0


def check(solver: z3.Solver) -> Any:
    """``solver.check()``, its units added to :data:`METER`; a check stopped by its rlimit is
    counted as exhausted (its answer is ``unknown``, reason ``canceled``)."""
    before = units_of(solver)
    res = solver.check()
    used = units_of(solver) - before
    metered(used, res == z3.unknown)
    return res


def metered(used: int, exhausted: bool) -> None:
    """A check's work added to :data:`METER` (and to :data:`TRACE` when one records): what
    :func:`check` does after Z3 answers, and what a replayed answer does again."""
    trace = TRACE.get()
    if trace is not None:
        trace.append(("check", used, exhausted))
    meter = METER.get()
    if meter is not None:
        meter.units += used
        meter.queries += 1
        if exhausted:
            meter.exhausted += 1
        else:
            meter.largest = max(meter.largest, used)


def record_premises(pc: PremiseCheck) -> PremiseCheck:
    """Keep a premise check in the current meter (the obligation's result carries the first)."""
    trace = TRACE.get()
    if trace is not None:
        trace.append(("record", pc))
    meter = METER.get()
    if meter is not None:
        meter.premises.append(pc)
    return pc


@contextlib.contextmanager
def recording() -> Iterator[list[tuple[Any, ...]]]:
    """What the checks inside do to the meter, in order (``("check", units, exhausted)``,
    ``("record", premise check)``, and the kept answers' own ``("sub", ...)`` events): the trace a
    kept answer is replayed from (:mod:`attnsim.proofs.decoding.answers`)."""
    trace: list[tuple[Any, ...]] = []
    token = TRACE.set(trace)
    try:
        yield trace
    finally:
        TRACE.reset(token)


@contextlib.contextmanager
def not_recording() -> Iterator[None]:
    """No trace inside (a replay's own events belong to the answer replayed, not to its caller)."""
    token = TRACE.set(None)
    try:
        yield
    finally:
        TRACE.reset(token)


def model_of(solver: z3.Solver, names: Sequence[str], env: dict[str, Any]) -> tuple[tuple[str, int], ...]:
    """The values of ``names`` (``env``'s Z3 constants, translated to the solver's context) in its model."""
    m = solver.model()
    out = []
    for n in sorted(names):
        v = m.eval(env[n].translate(solver.ctx), model_completion=True)
        out.append((n, v.as_long()))
    return tuple(out)


class Stopwatch:
    """CPU seconds of this process since creation: the in-process safety net (a busy machine
    slows the wall clock, not the CPU time a check uses)."""

    def __init__(self) -> None:
        self.t0 = time.process_time()

    def elapsed(self) -> float:
        return time.process_time() - self.t0


__all__ = [
    "ANSWERS",
    "ANSWERS_KEPT",
    "METER",
    "PREMISE_RLIMIT",
    "QUERY_RLIMIT",
    "RESTART_FIRST",
    "RESTART_TOTAL",
    "TRACE",
    "NodeBudgetExceeded",
    "Stopwatch",
    "WorkMeter",
    "check",
    "isolated",
    "keep_answer",
    "metered",
    "model_of",
    "not_recording",
    "record_premises",
    "recording",
    "replay",
    "shared_answers",
    "sharing_answers",
    "sub_meter",
    "units_of",
]
