"""Z3 proofs shared by the equivalence levels: once per goal in a process, or BOUNDED per size.

Instances that differ only in size values share one all-sizes attempt (sizes render by name).  When
Z3 cannot decide a goal with symbolic sizes (``x mod p``), it is proven once per size assignment
with every size <= :data:`BOUNDED_SIZE` and at each instance's sizes, labelled BOUNDED, within a
budget of solver work (:data:`BOUNDED_UNITS`), never of time: the same answer on a busy machine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attnsim.proofs import solver_work, z3sel
from attnsim.proofs.obligation import Outcome
from attnsim.rasp import expr as E

# all-sizes proofs attempted in this (child) process, with the work each took (replayed when given again)
_SYMBOLIC: dict[str, tuple[Outcome, list[tuple[Any, ...]]]] = {}


def _cached_prove(
    goal: E.Expr, hyps: Sequence[E.Expr], minimum: dict[str, int], timeout: float, rlimit: int | None = None
) -> Outcome:
    """z3sel.prove, once per (goal, hypotheses, minimum, rlimit) in this process: sizes render by name,
    so instances that differ only in size values share one all-sizes attempt.  An answer given again
    has its work replayed into the current meter, so a budget over several proofs reads the same
    units whatever this process proved before."""
    key = "|".join(E.render(x) for x in (goal, *hyps)) + repr(sorted(minimum.items())) + f"|{rlimit}"
    got = _SYMBOLIC.get(key)
    if got is not None:
        solver_work.replay(got[1])
        return got[0]
    outer = solver_work.TRACE.get()
    with solver_work.recording() as trace:
        res = z3sel.prove(goal, hyps, minimum=minimum, timeout=timeout, rlimit=rlimit)
    if outer is not None:
        outer.extend(trace)
    _SYMBOLIC[key] = (res, trace)
    return res


BOUNDED_SIZE = 8  # bounded equivalence proofs: every size <= this (and the sizes of every instance built)
# Z3 units for all the per-size proofs of one goal together: match2's token selector swap, 64 size
# assignments, used 0.1 M in all (the largest query 1,920 units); a plain query may use 60 M
BOUNDED_UNITS = 120_000_000


def _prove_per_size(
    goal: E.Expr, hyps: Sequence[E.Expr], minimum: dict[str, int], instances: Sequence[dict[str, int]], timeout: float
) -> tuple[bool, str]:
    """Z3 once per assignment of the sizes (each in minimum..BOUNDED_SIZE, plus each instance's own
    values): a BOUNDED proof, said so, for goals Z3 cannot decide with symbolic sizes."""
    import itertools

    sizes = sorted(z3sel.size_names(goal, *hyps))
    grids = [range(minimum.get(n, 1), BOUNDED_SIZE + 1) for n in sizes]
    combos = {tuple(c) for c in itertools.product(*grids)}
    combos |= {tuple(inst[n] for n in sizes) for inst in instances if all(n in inst for n in sizes)}
    if len(combos) > 4096:
        return False, f"bounded proof skipped ({len(combos)} size assignments)"
    with solver_work.sub_meter() as work:
        for combo in sorted(combos):
            env = dict(zip(sizes, combo, strict=True))
            if not all(bool(h.substitute(env).evaluate({})) for h in hyps if not h.substitute(env).variables()):
                continue
            left = BOUNDED_UNITS - work.units
            if left <= 0:
                return False, f"bounded proof ran out of its solver budget ({BOUNDED_UNITS:,} Z3 units)"
            rlimit = min(solver_work.QUERY_RLIMIT, left)
            res = z3sel.prove(goal.substitute(env), [h.substitute(env) for h in hyps], timeout=timeout, rlimit=rlimit)
            if res.ok is not True:
                return False, f"at {env}: {res.detail[:120]}"
    extra = sorted({tuple(sorted(i.items())) for i in instances} - {()})
    inst = f" and at the instances' sizes {[dict(x) for x in extra]}" if extra else ""
    return True, (
        f"BOUNDED: holds for every size assignment with {', '.join(sizes)} <= {BOUNDED_SIZE}{inst} "
        f"({len(combos)} assignments, each proven by z3 for all tokens and positions)"
    )


def _scope(res: Outcome) -> str:
    """The sizes a proof holds for, from its typed scope (its detail when it states none)."""
    return res.scope.text() if res.scope is not None else res.detail
