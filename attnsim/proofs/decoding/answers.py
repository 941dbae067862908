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

from attnsim.proofs import solver_work
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
    text depends on them; a proof never calls them)."""
    answers = solver_work.ANSWERS.get()
    key = query_key(goal, assumptions, decode, coords, minimum) if answers is not None else None
    if answers is not None and key is not None:
        kept = answers.get(key)
        if kept is not None and (kept.ok is True or (check is None and explain is None)):
            if kept.premises is not None:
                solver_work.record_premises(kept.premises)
            return kept
    out = prove()
    if answers is not None and key is not None and out.ok is not None:
        solver_work.keep_answer(answers, key, out)
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
    recorded again when asked again."""
    answers = solver_work.ANSWERS.get()
    if answers is None:
        return check()
    key = ("premises check", None, *query_key(E.Const(1), assumptions, decode, coords, mins)[1:])  # no query's key
    kept = answers.get(key)
    if kept is not None:
        return solver_work.record_premises(kept)
    pc = check()
    if pc.status in ("sat", "unsat"):
        solver_work.keep_answer(answers, key, pc)
    return pc


__all__ = ["kept_or_checked", "kept_or_proved", "query_key"]
