"""Selectors to Z3: prove that a selector picks exactly the intended keys.

A Select whose keys and queries are index expressions of the position (built from
``indices``, integer constants, ``length`` and index Maps) becomes a formula S(q, k) over a
query position q, a key position k and the size symbols.  The *intent* is another formula,
usually written in matrix coordinates through a :class:`~attnsim.rasp.layout.Block`.  We ask Z3
for (q, k, sizes) where they differ:

* ``unsat``  -> proved (for all sizes >= their minimum, or every size <= bound);
* ``sat``    -> failed, with the counterexample (sizes, q, k, and what they stand for);
* ``unknown``-> unknown (never proved).

Before that, the premises are shown satisfiable by a model (kept in the outcome): a proof
under empty premises fails "vacuous", and one whose premises are undecided is unknown.

div/mod become fresh quotient/remainder variables (see :class:`attnsim.rasp.z3_translation.Z3Translator`).
This direct translation decides bounded claims and small parametric ones; parametric selector
intents go through :mod:`attnsim.proofs.decoding` first (positions decoded into matrix
coordinates), which turns the nonlinear question into small, mostly linear ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import z3

from attnsim.proofs import smtlib, solver_work
from attnsim.proofs.obligation import Outcome, PremiseCheck, Scope, unknown_cause
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.intent import K, Q
from attnsim.rasp.z3_translation import Z3Translator


class NotStructural(ValueError):
    """The selector compares values that depend on tokens: no index-level formula."""


def size_names(*exprs: E.Expr) -> dict[str, int | None]:
    """Sizes mentioned in expressions, with their bound values (None: unbound)."""
    out: dict[str, int | None] = {}
    for e in exprs:
        out.update(C.size_bindings(e, bound_only=True))
        out.update(dict.fromkeys(sorted(C.unbound_sizes(e) - set(out))))  # sorted: no hash-seed order
    return out


def selector_expr(sel: C.Selector) -> E.Expr:
    """The selector as a boolean index expression over q and k."""
    if isinstance(sel, C.Select):
        if sel.cmp == "TRUE":
            return E.Const(1).eq(1)
        if sel.cmp == "FALSE":
            return E.Const(0).eq(1)
        ek, eq = C.index_expr(sel.keys, K), C.index_expr(sel.queries, Q)
        if ek is None or eq is None:
            raise NotStructural(f"selector {sel.label} compares token-dependent values")
        return {
            "==": lambda: ek.eq(eq),
            "!=": lambda: ek.ne(eq),
            "<": lambda: ek < eq,
            "<=": lambda: ek <= eq,
            ">": lambda: ek > eq,
            ">=": lambda: ek >= eq,
        }[sel.cmp]()
    if isinstance(sel, C.SelectAnd):
        return selector_expr(sel.a) & selector_expr(sel.b)
    if isinstance(sel, C.SelectOr):
        return selector_expr(sel.a) | selector_expr(sel.b)
    if isinstance(sel, C.SelectNot):
        return E.Not(selector_expr(sel.a))
    raise NotStructural(f"not a selector: {sel!r}")


def prove(
    goal: E.Expr,
    assumptions: Sequence[E.Expr] = (),
    *,
    minimum: Mapping[str, int] | None = None,
    bound: int | None = None,
    timeout: float = 10.0,
    free: Sequence[str] = (),
    explain: Callable[[dict[str, int]], str] | None = None,
    rlimit: int | None = None,
) -> Outcome:
    """Prove ``assumptions -> goal`` for all integer values of the variables.

    Size variables are >= 1 (or ``minimum[name]``); with ``bound`` every size is also <= bound.
    ``free`` names other integer variables (positions); all are universally quantified.
    The premises are first shown satisfiable (:func:`premises_check`): unsat fails "vacuous",
    unknown is unknown.  The query's budget is ``rlimit`` units (default
    :data:`attnsim.proofs.solver_work.QUERY_RLIMIT`); ``timeout`` seconds is only a safety net.
    """
    sizes = size_names(goal, *assumptions)
    names = set(goal.variables())
    for a in assumptions:
        names |= a.variables()
    env = {n: z3.Int(n) for n in sorted(names)}  # sorted: the query never depends on the string hash seed
    side: list[Any] = []
    tr = Z3Translator(env, side)
    ranges: list[Any] = []  # each size's range
    for n in sizes:
        ranges.append(env[n] >= (minimum or {}).get(n, 1))
        if bound is not None:
            ranges.append(env[n] <= bound)
    premises = [*ranges, *(tr.boolean(a) for a in assumptions)]
    g = tr.boolean(goal)
    # first the premises, shown satisfiable by a model: else the proof would prove anything
    pc = _premises_shown(assumptions, sizes, minimum, bound, premises, side, env, timeout)
    refused = pc.refusal()
    if refused is not None:
        return refused
    claim = z3.Not(z3.And(g, tr.defined()))  # a divisor <= 0 anywhere refutes
    scope = Scope(tuple(sorted(sizes)), bound)
    if assumptions and _holds_without_assumptions(claim, ranges, side, timeout):
        return Outcome(True, f"unsat: holds for {scope.text()} (without its assumptions)", pc, scope=scope)
    facts = [*premises, claim, *side]
    s = solver_work.isolated(facts, rlimit or solver_work.QUERY_RLIMIT, seconds=timeout)
    text = smtlib.text_of(s)
    res = solver_work.check(s)
    smtlib.record(text, str(res))
    if res == z3.unsat:
        return Outcome(True, f"unsat: holds for {scope.text()}", pc, scope=scope)
    if res == z3.sat:
        model = solver_work.model_of(s, list(env), env)
        vals = dict(model)
        shown = ", ".join(f"{k}={v}" for k, v in sorted(vals.items()))
        extra = f"; {explain(vals)}" if explain else ""
        return Outcome(False, f"counterexample: {shown}{extra}", pc, scope=scope, counterexample=model)
    why = _reason(s)
    return Outcome(None, f"z3 unknown ({why})", pc, scope=scope, cause=unknown_cause(why))


UNASSUMED_RLIMIT = 200_000  # the budget of a claim first tried without its assumptions


def _holds_without_assumptions(claim: Any, sizes: Sequence[Any], side: Sequence[Any], timeout: float) -> bool:
    """The claim shown (unsat) with the sizes' ranges only, none of the assumptions, within
    :data:`UNASSUMED_RLIMIT` units: a stronger statement, so the claim holds under them too.  A
    selector's intent whose formula does not need its ranges (a gather from one fixed position)
    is then decided without the nonlinear sequence length of its key range (shallow U's header
    gathers: 3 M units each with them).  Not shown (sat, or out of budget): False, and the
    query with its assumptions is asked."""
    s = solver_work.isolated([*sizes, claim, *side], UNASSUMED_RLIMIT, seconds=timeout)
    text = smtlib.text_of(s)
    res = solver_work.check(s)
    smtlib.record(text, str(res))
    return bool(res == z3.unsat)


def _reason(s: z3.Solver) -> str:
    """Z3's reason for an unknown, saying so when the query ran out of its rlimit budget."""
    why = s.reason_unknown()
    return "out of its rlimit budget" if why in ("canceled", "max. resource limit exceeded") else why


WITNESS_SIZES = (1, 2, 3, 5)  # the size values a witness by evaluation tries (each at least the minimum)
WITNESS_POINTS = 12  # each free variable is tried at 0 .. WITNESS_POINTS - 1
WITNESS_FREE = 4  # at most this many free variables (WITNESS_POINTS ** free points)


def witness_by_evaluation(
    hyps: Sequence[E.Expr], floors: Mapping[str, int], free: Sequence[str], bound: int | None = None
) -> dict[str, int] | None:
    """A point where every premise in ``hyps`` holds, found by evaluating them exactly (integers):
    every size (``floors``: name -> minimum) at one small value (:data:`WITNESS_SIZES`, at least its
    minimum, at most ``bound``), each free variable at each of 0 .. 11; None when no point is found
    (then Z3 looks for a model).  A witness shows the premises satisfiable as Z3's model would: the
    premises are the same expressions, evaluated with the same integer semantics (div and mod by a
    divisor >= 1; a point where a divisor is not is skipped), the point confirmed in Python's
    unbounded integers (the grid is searched in int64, which can wrap)."""
    if len(free) > WITNESS_FREE:  # (checked before the grid is built: 12^len(free) points)
        return None
    for base in WITNESS_SIZES:
        env: dict[str, Any] = {s: max(lo, base) for s, lo in sorted(floors.items())}
        if bound is not None and any(v > bound for v in env.values()):
            break
        grids = np.meshgrid(*[np.arange(0, WITNESS_POINTS) for _ in free], indexing="ij") if free else []
        env.update({v: g.reshape(-1) for v, g in zip(free, grids, strict=True)})
        try:
            ok = np.ones(1, dtype=bool)
            for h in hyps:
                ok = ok & (np.asarray(h.evaluate(env)) != 0)
            hits = np.flatnonzero(np.broadcast_to(ok, (WITNESS_POINTS ** len(free),)))
        except (E.ExprError, ZeroDivisionError, OverflowError):
            continue
        for at in hits:  # int64 arithmetic may wrap: a point counts once it holds in Python's integers
            point = {n: int(env[n]) for n in sorted(floors)} | {v: int(env[v][at]) for v in free}
            if _holds_exactly(hyps, point):
                return point
    return None


def _holds_exactly(hyps: Sequence[E.Expr], point: Mapping[str, int]) -> bool:
    """Every premise holds at ``point``, evaluated in Python's unbounded integers."""
    try:
        return all(int(h.evaluate(point)) != 0 for h in hyps)
    except (E.ExprError, ZeroDivisionError):
        return False


def export_witness(hyps: Sequence[E.Expr], model: Mapping[str, int]) -> None:
    """When queries are exported: the premises with a witness found by evaluation, as a query Z3
    answers (sat), so that the second solver sees every premise check, this one too."""
    if not smtlib.wanted():
        return
    env = {n: z3.Int(n) for n in model}
    side: list[Any] = []
    tr = Z3Translator(env, side)
    facts = [*[env[n] == v for n, v in model.items()], *[tr.boolean(h) for h in hyps], *side]
    s = solver_work.isolated(facts, solver_work.PREMISE_RLIMIT)
    text = smtlib.text_of(s)
    smtlib.record(text, str(solver_work.check(s)), "premises")


def premises_check(
    premises: Sequence[Any],
    side: Sequence[Any] = (),
    env: Mapping[str, Any] | None = None,
    timeout: float = 10.0,
    rlimit: int | None = None,
) -> PremiseCheck:
    """Are the premises satisfiable?  sat (with a model over ``env``'s names), unsat, or unknown.

    The side conditions of div/mod (quotient and remainder definitions) always have a solution
    once their divisors are >= 1, so they are checked together with the premises.  The check is
    kept in the current :data:`attnsim.proofs.solver_work.METER`, and exported (kind ``premises``)
    when it decides."""
    s = solver_work.isolated([*premises, *side], rlimit or solver_work.PREMISE_RLIMIT, seconds=timeout)
    text = smtlib.text_of(s)
    res = solver_work.check(s)
    smtlib.record(text, str(res), "premises")
    if res == z3.sat:
        model = solver_work.model_of(s, list(env or {}), dict(env or {}))
        return solver_work.record_premises(PremiseCheck("sat", model))
    if res == z3.unsat:
        return solver_work.record_premises(PremiseCheck("unsat"))
    return solver_work.record_premises(PremiseCheck("unknown", reason=_reason(s)))


def check_premises(
    assumptions: Sequence[E.Expr],
    *,
    minimum: Mapping[str, int] | None = None,
    bound: int | None = None,
    timeout: float = 10.0,
) -> PremiseCheck:
    """:func:`premises_check` of expressions: each size >= its minimum (<= ``bound`` if given) and
    every assumption."""
    sizes = size_names(*assumptions)
    names: set[str] = set()
    for a in assumptions:
        names |= a.variables()
    env = {n: z3.Int(n) for n in sorted(names)}  # sorted: the query never depends on the string hash seed
    side: list[Any] = []
    tr = Z3Translator(env, side)
    premises = [env[n] >= (minimum or {}).get(n, 1) for n in sizes]
    premises += [env[n] <= bound for n in sizes] if bound is not None else []
    premises += [tr.boolean(a) for a in assumptions]
    return _premises_shown(assumptions, sizes, minimum, bound, premises, side, env, timeout)


def _premises_shown(
    assumptions: Sequence[E.Expr],
    sizes: Mapping[str, int | None],
    minimum: Mapping[str, int] | None,
    bound: int | None,
    premises: Sequence[Any],
    side: Sequence[Any],
    env: Mapping[str, Any],
    timeout: float,
) -> PremiseCheck:
    """The premises (``premises``: the sizes' ranges and ``assumptions`` in Z3) shown satisfiable
    by a small witness found by evaluation (:func:`witness_by_evaluation`, exported when queries
    are), else by Z3 (:func:`premises_check`)."""
    floors = {n: (minimum or {}).get(n, 1) for n in sizes}
    free = sorted({v for a in assumptions for v in a.variables()} - set(sizes))
    found = witness_by_evaluation(assumptions, floors, free, bound)
    if found is None:
        return premises_check(premises, side, env, timeout)
    export_witness(assumptions, found)
    return solver_work.record_premises(PremiseCheck("sat", tuple(sorted(found.items()))))


def prove_selector(
    sel: C.Selector,
    intent: E.Expr,
    *,
    queries: E.Expr,
    length: E.Expr,
    assumptions: Sequence[E.Expr] = (),
    minimum: Mapping[str, int] | None = None,
    bound: int | None = None,
    timeout: float = 10.0,
    explain: Callable[[dict[str, int]], str] | None = None,
) -> Outcome:
    """For every query q with ``queries(q)`` and key k in [0, length): S(q, k) <-> intent(q, k).

    ``intent`` and ``queries`` are boolean expressions over Q, K and the sizes.
    """
    try:
        s_expr = selector_expr(sel)
    except NotStructural as exc:
        return Outcome.bad(str(exc))
    s_expr = s_expr.substitute({"length": length})
    goal = _iff(s_expr, intent)
    assume = [queries, Q >= 0, Q < length, K >= 0, K < length, *assumptions]
    return prove(goal, assume, minimum=minimum, bound=bound, timeout=timeout, explain=explain)


def _iff(a: E.Expr, b: E.Expr) -> E.Expr:
    return (a & b) | (E.Not(a) & E.Not(b))
