"""Z3 proofs shared by the equivalence levels: once per goal in a process, or BOUNDED per size.

Instances that differ only in size values share one all-sizes attempt (sizes render by name).  When
Z3 cannot decide a goal with symbolic sizes (``x mod p``), it is proven once per size assignment
with every size <= :data:`BOUNDED_SIZE` and at each instance's sizes, labelled BOUNDED."""

from __future__ import annotations

import time
from collections.abc import Sequence

from attnsim.proofs import z3sel
from attnsim.proofs.obligation import Outcome
from attnsim.rasp import expr as E

_SYMBOLIC: dict[str, Outcome] = {}  # all-sizes proofs attempted in this (child) process


def _cached_prove(goal: E.Expr, hyps: Sequence[E.Expr], minimum: dict[str, int], timeout: float) -> Outcome:
    """z3sel.prove, once per (goal, hypotheses, minimum) in this process: sizes render by name, so
    instances that differ only in size values share one all-sizes attempt."""
    key = "|".join(E.render(x) for x in (goal, *hyps)) + repr(sorted(minimum.items()))
    res = _SYMBOLIC.get(key) or z3sel.prove(goal, hyps, minimum=minimum, timeout=timeout)
    _SYMBOLIC[key] = res
    return res


BOUNDED_SIZE = 8  # bounded equivalence proofs: every size <= this (and the sizes of every instance built)


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
    deadline = time.perf_counter() + 3 * timeout
    for combo in sorted(combos):
        env = dict(zip(sizes, combo, strict=True))
        if not all(bool(h.substitute(env).evaluate({})) for h in hyps if not h.substitute(env).variables()):
            continue
        left = deadline - time.perf_counter()
        if left <= 0:
            return False, "bounded proof ran out of time"
        res = z3sel.prove(goal.substitute(env), [h.substitute(env) for h in hyps], timeout=min(timeout, left))
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
