"""A decoding proof's first step: its premises shown satisfiable, empty, or undecided.

Unsatisfiable premises prove anything, so before any case is asked the prover looks for a witness
of the top-level premises (the assumptions, each decoded variable's ranges and blocks, every
coordinate in range, every size at least its minimum): by evaluation at small values, then by Z3
at small fixed sizes, then by Z3 in full.  Empty premises fail the proof
"vacuous"; undecided ones leave it unknown.  A witness found by evaluation is exported as a query
too (:func:`~attnsim.proofs.z3sel.export_witness`), so that the second solver sees every premise check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import z3

from attnsim.proofs import smtlib, solver_work
from attnsim.proofs.decoding.answers import kept_or_checked
from attnsim.proofs.decoding.query import Decode, _free_vars, _sizes_of
from attnsim.proofs.obligation import PremiseCheck
from attnsim.proofs.z3sel import export_witness, witness_by_evaluation
from attnsim.rasp import expr as E
from attnsim.rasp.z3_translation import Z3Translator


def _premises(
    assumptions: Sequence[E.Expr],
    decode: Sequence[Decode],
    coords: Mapping[str, E.Expr],
    mins: Mapping[str, int],
    timeout: float,
) -> PremiseCheck:
    """:func:`_premises_checked`; inside :func:`~attnsim.proofs.solver_work.shared_answers` a decided
    check (sat, unsat) is kept by its exact premises and recorded again when asked again
    (:func:`~attnsim.proofs.decoding.answers.kept_or_checked`)."""
    return kept_or_checked(
        lambda: _premises_checked(assumptions, decode, coords, mins, timeout), assumptions, decode, coords, mins
    )


def _premises_checked(
    assumptions: Sequence[E.Expr],
    decode: Sequence[Decode],
    coords: Mapping[str, E.Expr],
    mins: Mapping[str, int],
    timeout: float,
) -> PremiseCheck:
    """The top-level premises shown satisfiable (a small witness by evaluation, else Z3's model),
    empty, or undecided: the proof's first step.

    Premises: the assumptions, each decoded variable's ranges (and block, when ``cover``),
    every coordinate in [0, extent), every size at least its minimum.  Unsatisfiable premises
    prove anything: the proof fails "vacuous"; undecided, it is unknown (never "not vacuous")."""
    hyps = [*assumptions, *(r for d in decode for r in d.ranges)]
    for d in decode:
        if d.cover and d.blocks:
            member: E.Expr = d.blocks[0].contains(E.Var(d.var))
            for b in d.blocks[1:]:
                member = member | b.contains(E.Var(d.var))
            hyps.append(member)
    hyps += [(E.Var(c) >= 0) & (E.Var(c) < ext) for c, ext in coords.items()]
    sizes = _sizes_of(*hyps)
    free = sorted(_free_vars(*hyps) - sizes)
    model = witness_by_evaluation(hyps, {s: mins.get(s, 1) for s in sizes}, free)
    if model is not None:
        export_witness(hyps, model)
        return solver_work.record_premises(PremiseCheck("sat", tuple(sorted(model.items()))))
    for base in (1, 2, 3):  # a witness by Z3 at small fixed sizes: the free variables' problem is then linear
        pc = _premises_check(hyps, sizes, free, mins, timeout, at=base, rlimit=solver_work.PREMISE_RLIMIT // 5)
        if pc.status == "sat":
            return solver_work.record_premises(pc)
    return solver_work.record_premises(_premises_check(hyps, sizes, free, mins, timeout))


def _premises_check(
    hyps: Sequence[E.Expr],
    sizes: set[str],
    free: Sequence[str],
    mins: Mapping[str, int],
    seconds: float,
    at: int = 0,
    rlimit: int | None = None,
) -> PremiseCheck:
    """Z3 on the premises ``hyps``: each size at least its minimum, or, with ``at``, fixed to
    max(minimum, at); budgeted ``rlimit`` units (default the premise budget); sizes in sorted order."""
    sized = {n: z3.IntVal(max(mins.get(n, 1), at)) if at else z3.Int(n) for n in sorted(sizes)}
    env = {**sized, **{v: z3.Int(v) for v in free}}
    side: list[Any] = []
    tr = Z3Translator(env, side)
    floor = [] if at else [sized[n] >= mins.get(n, 1) for n in sorted(sizes)]
    s = solver_work.isolated(
        [*floor, *[tr.boolean(h) for h in hyps], *side], rlimit or solver_work.PREMISE_RLIMIT, seconds=seconds
    )
    text = smtlib.text_of(s)
    res = solver_work.check(s)
    smtlib.record(text, str(res), "premises")
    if res == z3.sat:
        vals = dict(solver_work.model_of(s, [n for n in env if not at or n in free], env))
        vals.update({n: max(mins.get(n, 1), at) for n in sizes} if at else {})
        return PremiseCheck("sat", tuple(sorted(vals.items())))
    if res == z3.unsat:
        return PremiseCheck("unsat")
    why = s.reason_unknown()
    return PremiseCheck("unknown", reason="out of its rlimit budget" if why == "canceled" else why)
