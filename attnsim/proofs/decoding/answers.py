"""The decoding prover's per-proof answer cache: a decided answer given again to the same query.

Inside :func:`~attnsim.proofs.solver_work.shared_answers` (one proof: a stage proof, the stage
chain, a program == spec proof) a decided answer is kept by its exact query and given again when
the same query is asked: :func:`kept_or_proved` for a whole decoding proof, :func:`kept_or_checked`
for its premise check (keyed by the premises alone).  :func:`query_key` says when two queries are
the same: every expression by its rendering, and which names are sizes.  A query's answer depends
only on the query and its budget in units (a fresh context, the same seeds), so this is the answer
Z3 would give; an undecided answer is never kept.  The scope and its store are
:mod:`attnsim.proofs.solver_work`'s (shared by every prover); what makes two decoding queries the
same is this module's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from attnsim.proofs import smtlib, solver_work
from attnsim.proofs.decoding.query import Decode, _sizes_of
from attnsim.proofs.obligation import Outcome, PremiseCheck
from attnsim.rasp import expr as E


def query_key(
    goal: E.Expr,
    assumptions: Sequence[E.Expr],
    decode: Sequence[Decode],
    coords: Mapping[str, E.Expr] | None,
    minimum: Mapping[str, int] | None,
) -> tuple[Any, ...]:
    """Everything :func:`~attnsim.proofs.decoding.prover.prove`'s answer depends on besides its
    budget: the goal, the assumptions (in order), each decoded variable with its blocks (name and
    shape), cover and ranges, the coordinates with their extents, the size minimums; every
    expression by its rendering, and which of the names are sizes (a size renders as a variable of
    its name, but is bounded below)."""
    r = E.render
    blocks = lambda d: tuple((b.name, r(b.offset), r(b.rows), r(b.cols), r(b.stack)) for b in d.blocks)
    exts = [E.lift(ext) for ext in (coords or {}).values()]
    shapes = [x for d in decode for b in d.blocks for x in (b.offset, b.rows, b.cols, b.stack, *d.ranges)]
    return (
        r(goal),
        tuple(r(a) for a in assumptions),
        tuple((d.var, blocks(d), d.cover, tuple(r(x) for x in d.ranges)) for d in decode),
        tuple(sorted((c, r(E.lift(ext))) for c, ext in (coords or {}).items())),
        tuple(sorted((minimum or {}).items())),
        tuple(sorted(_sizes_of(goal, *assumptions, *exts, *shapes))),
    )


PROCESS: dict[tuple[Any, ...], tuple[Any, list[tuple[Any, ...]]]] = {}
"""Every decided answer this process computed, by exact query, with the trace of the work it took
(:func:`attnsim.proofs.solver_work.recording`): a later proof that asks the same query (another
obligation on the same worker: the stage goals of one variant ask many of the same) is given the
answer and its work replayed into its own meter, so it reports what computing it would (units,
queries, premise checks, its own answers kept), whichever worker ran what before."""


def _storable(trace: list[tuple[Any, ...]]) -> bool:
    return all(ev[0] != "unkept" for ev in trace)


def _store(key: tuple[Any, ...], answer: Any, trace: list[tuple[Any, ...]]) -> None:
    """Keep ``answer`` with its trace when every nested answer it used is kept too (a replay reads
    them).  Never dropped: a trace names the answers it used (one default run decides about 4,000
    distinct queries per worker)."""
    if _storable(trace):
        PROCESS[key] = (answer, trace)


def _replay(trace: list[tuple[Any, ...]]) -> None:
    """The work of a kept answer done again to this proof's meter and answers: each check's units,
    each premise record, each nested kept answer used as a fresh run would use it here."""
    with solver_work.not_recording():
        for ev in trace:
            if ev[0] == "check":
                solver_work.metered(ev[1], ev[2])
            elif ev[0] == "record":
                solver_work.record_premises(ev[1])
            else:  # ("sub", kind, key, reusable)
                _use(ev[1], ev[2], ev[3], None)


def _use(kind: str, key: tuple[Any, ...], reusable: bool, compute: Callable[[], Any] | None) -> Any:
    """The answer to ``key`` in the current proof: kept by this proof (the kept answer's premise
    record again), else kept by the process (its work replayed), else computed (``compute``) and
    kept; ``reusable``: whether a kept refutation may be given (no check/explain callbacks)."""
    answers = solver_work.ANSWERS.get()
    parent = solver_work.TRACE.get()
    if parent is not None:
        parent.append(("sub", kind, key, reusable))
    kept = answers.get(key) if answers is not None else None
    if kept is not None and (kind == "premises" or kept.ok is True or reusable):
        if parent is not None and key not in PROCESS:
            parent.append(("unkept",))  # kept by this proof only: a replay elsewhere could not use it
        record = kept if kind == "premises" else kept.premises
        if record is not None:
            with solver_work.not_recording():
                solver_work.record_premises(record)
        return kept
    got = PROCESS.get(key) if not smtlib.wanted() else None
    if got is not None and (kind == "premises" or got[0].ok is True or reusable):
        _replay(got[1])
        answer = got[0]
    else:
        if compute is None:  # a replayed trace names an answer this process no longer keeps
            raise KeyError(key)
        with solver_work.recording() as trace:
            answer = compute()
        decided = answer.status in ("sat", "unsat") if kind == "premises" else answer.ok is not None
        if decided and not smtlib.wanted():
            _store(key, answer, trace)
        elif parent is not None:
            parent.append(("unkept",))  # the caller's answer cannot be replayed without this one
    decided = answer.status in ("sat", "unsat") if kind == "premises" else answer.ok is not None
    if answers is not None and decided:
        solver_work.keep_answer(answers, key, answer)
    return answer


def kept_or_proved(
    prove: Callable[[], Outcome],
    goal: E.Expr,
    assumptions: Sequence[E.Expr],
    decode: Sequence[Decode],
    coords: Mapping[str, E.Expr] | None,
    minimum: Mapping[str, int] | None,
    check: Callable[[dict[str, int]], bool | None] | None,
    explain: Callable[[dict[str, int]], str] | None,
) -> Outcome:
    """``prove()``: :func:`~attnsim.proofs.decoding.prover.prove`'s answer to the query of the other
    arguments.  Inside :func:`~attnsim.proofs.solver_work.shared_answers` a decided answer is kept by
    the exact query (:func:`query_key`) and given again to the same query (its premise check recorded
    again, as when it was asked); a refutation only when no ``check`` or ``explain`` is given (its
    text depends on them; a proof never calls them).  A decided answer this process computed for
    another proof is given with its work replayed (:data:`PROCESS`)."""
    if solver_work.ANSWERS.get() is None:
        return prove()
    key = query_key(goal, assumptions, decode, coords, minimum)
    out: Outcome = _use("proof", key, check is None and explain is None, prove)
    return out


def kept_or_checked(
    check: Callable[[], PremiseCheck],
    assumptions: Sequence[E.Expr],
    decode: Sequence[Decode],
    coords: Mapping[str, E.Expr],
    mins: Mapping[str, int],
) -> PremiseCheck:
    """``check()``: the premise check of the other arguments.  Inside
    :func:`~attnsim.proofs.solver_work.shared_answers` a decided check (sat, unsat) is kept by its
    exact premises (the goal plays no part in it: the queries of one executor share them) and
    recorded again when asked again; one this process made for another proof is given with its
    work replayed (:data:`PROCESS`)."""
    if solver_work.ANSWERS.get() is None:
        return check()
    key = ("premises check", None, *query_key(E.Const(1), assumptions, decode, coords, mins)[1:])  # no query's key
    pc: PremiseCheck = _use("premises", key, True, check)
    return pc


__all__ = ["PROCESS", "kept_or_checked", "kept_or_proved", "query_key"]
