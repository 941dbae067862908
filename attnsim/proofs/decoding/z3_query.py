"""One rewritten case asked of Z3: its linear abstraction first, then the full query with seeded
restarts, a small counterexample preferred.

``_z3`` translates a case (goal, hypotheses, coordinate extents, every size at least its minimum)
to Z3: with every product of unknowns a fresh variable first (``_LinearTranslator``: unsat there is
unsat here, and fast), then in full (``_check_with_restarts``: seeds 0, 1, 2, ... budgeted in
solver units, so the answer does not depend on the machine's load); a sat model is shrunk to
sizes <= 2, 3, 4 or 8 when it can be.  Every deciding query is recorded for export
(:mod:`attnsim.proofs.smtlib`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import z3

from attnsim.proofs import smtlib, solver_work
from attnsim.proofs.decoding.query import _sizes_of
from attnsim.proofs.decoding.rewriting import _Ctx
from attnsim.rasp import expr as E
from attnsim.rasp.z3_translation import Z3Translator


def _check_with_restarts(facts: Sequence[Any], seconds: float) -> tuple[z3.Solver, Any]:
    """Z3 on ``facts``: attempts with random seeds 0, 1, 2, ..., each in a fresh context, the first
    given :data:`~attnsim.proofs.solver_work.RESTART_FIRST` rlimit units and each next one twice
    as many, all together at most :data:`~attnsim.proofs.solver_work.RESTART_TOTAL`; the first
    decided answer counts.  Budgets in units, not seconds: the same seeds and limits give the
    same answer on an idle or a busy machine (``seconds`` is only a wall-clock net).

    On these nonlinear queries Z3's work is heavy-tailed in its seed and state: maxmin's
    partner-embedded intent is proved in 0.2 s with 4 of 6 seeds and undecided after 20 s with the
    other 2; in the shared main context the shallow U's spread.wk gather intent took 0.3-1 s alone and
    over 40 s after three other intents in one process."""
    left, slice_, seed = solver_work.RESTART_TOTAL, solver_work.RESTART_FIRST, 0
    while True:
        last = left <= 2 * slice_
        s = solver_work.isolated(facts, left if last else slice_, seed, seconds=seconds)
        res = solver_work.check(s)
        if res != z3.unknown or last:
            return s, res
        left -= slice_
        slice_, seed = 2 * slice_, seed + 1


def _z3(
    goal: E.Expr,
    hyps: Sequence[E.Expr],
    extents: Mapping[str, E.Expr],
    ctx: _Ctx,
    mins: Mapping[str, int],
    timeout: float,
) -> tuple[str, dict[str, int]]:
    names: set[str] = set(goal.variables())
    for h in (*hyps, *extents.values()):
        names |= h.variables()
    names |= set(extents)
    env = {n: z3.Int(n) for n in sorted(names)}  # sorted, not a set's order: the query's text (so Z3's
    sizes = sorted(_sizes_of(goal, *hyps, *extents.values()) | set(ctx.sizes))  # search) never depends on
    lower = {n: mins.get(n, 1) for n in sizes if n in env} | {v: 0 for v in extents}  # the string hash seed

    def formulas(tr: Z3Translator, side: list[Any]) -> list[Any]:
        facts: list[Any] = [env[n] >= lb for n, lb in lower.items() if n in sizes]
        for v, ext in extents.items():
            facts += [env[v] >= 0, env[v] < tr.term(ext)]
        facts += [tr.boolean(h) for h in hyps]
        g = tr.boolean(goal)
        facts.append(z3.Not(z3.And(g, tr.defined())))  # divisors must be shown >= 1, never assumed
        return facts + side

    # first the linear abstraction (every product of unknowns a fresh variable): unsat there is
    # unsat here, and it is decided fast; otherwise the full nonlinear query
    lin_side: list[Any] = []
    lin = _LinearTranslator(env, lin_side, lower=lower)
    lin_facts = formulas(lin, lin_side)
    if lin.products:
        s = solver_work.isolated([*lin_facts, *lin.bounds], solver_work.RESTART_FIRST, seconds=timeout)
        text = smtlib.text_of(s)
        if solver_work.check(s) == z3.unsat:
            smtlib.record(text, "unsat")
            return "unsat", {}
    side: list[Any] = []
    s, res = _check_with_restarts(formulas(Z3Translator(env, side), side), timeout)
    env = {n: v.translate(s.ctx) for n, v in env.items()}
    smtlib.record(smtlib.text_of(s), str(res))
    if res == z3.unsat:
        return "unsat", {}
    if res == z3.sat:
        m = s.model()
        # prefer a small counterexample: the same query with every size <= 2, 3, 4, 8
        s.set("rlimit", solver_work.RESTART_FIRST)
        for cap in (2, 3, 4, 8):
            s.push()
            s.add(*[env[n] <= cap for n in sizes if n in env])
            if solver_work.check(s) == z3.sat:
                m = s.model()
                s.pop()
                break
            s.pop()
        return "sat", {n: m.eval(v, model_completion=True).as_long() for n, v in env.items()}
    return str(s.reason_unknown()), {}


class _LinearTranslator(Z3Translator):
    """Z3 translation with every product of non-constant terms replaced by a constant times a fresh
    integer, one per monomial: a product tree is flattened into its constant factors and its
    other factors (each rendered), and products with the same factors (as a multiset) share
    the fresh integer, so ``(2*D)*F``, ``2*(D*F)`` and ``F*D`` mean 2, 2 and 1 times one
    unknown.  A model of the full query is one of the abstraction (each fresh integer the value
    of its product), so unsat here is unsat there.

    A product of factors with known non-negative lower bounds (sizes >= their minimum,
    coordinates >= 0) keeps the product of those bounds as a fact (``bounds``).
    """

    def __init__(self, env: Mapping[str, Any], side: list[Any], lower: Mapping[str, int]) -> None:
        super().__init__(env, side)
        self.lower = lower
        self.products: dict[tuple[str, ...], Any] = {}
        self.bounds: list[Any] = []

    def term(self, e: E.Expr) -> Any:
        if isinstance(e, E.BinOp) and e.op == "*" and not isinstance(e.a, E.Const) and not isinstance(e.b, E.Const):
            coeff, factors = 1, []
            stack: list[E.Expr] = [e]
            while stack:
                f = stack.pop()
                if isinstance(f, E.BinOp) and f.op == "*":
                    stack += [f.a, f.b]
                elif isinstance(f, E.Const):
                    coeff *= f.value
                else:
                    factors.append(f)
            if len(factors) < 2:
                return coeff * super().term(factors[0]) if factors else z3.IntVal(coeff)
            key = tuple(sorted(E.render(f) for f in factors))
            if key not in self.products:
                v = z3.Int(f"mono!{len(self.products)}")
                self.products[key] = v
                lows = [self._lower(f) for f in factors]
                if all(lb is not None and lb >= 0 for lb in lows):
                    self.bounds.append(v >= math.prod(lb for lb in lows if lb is not None))
            return self.products[key] if coeff == 1 else coeff * self.products[key]
        return super().term(e)

    def _lower(self, e: E.Expr) -> int | None:
        if isinstance(e, E.Const):
            return e.value
        if isinstance(e, E.Var):
            return self.lower.get(e.name)
        return None
