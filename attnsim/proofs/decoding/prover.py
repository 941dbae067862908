"""The decoding prover's entry points: :func:`prove` (a claim for all sizes, decoding named variables
through layout blocks) and :func:`prove_intent` (a selector equals its intent).

:func:`prove` first checks the premises (:mod:`~attnsim.proofs.decoding.premises`), then splits the
claim into one case per block of each decoded variable (and "outside" unless covered), decides the
membership tests each case names, rewrites the case (:mod:`~attnsim.proofs.decoding.rewriting`;
a coordinate split and the rewriting started again when a division needs it) and asks Z3
(:mod:`~attnsim.proofs.decoding.z3_query`).  Every case unsat proves the claim; a model that
violates the original formulas (:mod:`~attnsim.proofs.decoding.refutation`) refutes it; anything
else is unknown.  Inside one proof's shared answers a query asked again is answered from
:mod:`~attnsim.proofs.decoding.answers`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sympy as sp

from attnsim.proofs import solver_work
from attnsim.proofs.decoding.answers import kept_or_proved
from attnsim.proofs.decoding.index_lemmas import LEMMAS
from attnsim.proofs.decoding.premises import _premises
from attnsim.proofs.decoding.query import Decode, _free_vars, _sizes_of
from attnsim.proofs.decoding.refutation import _violates
from attnsim.proofs.decoding.rewriting import _Ctx, _Refine
from attnsim.proofs.decoding.selectors import K, Q, key_blocks, query_block, selector_explainer
from attnsim.proofs.decoding.z3_query import _z3
from attnsim.proofs.obligation import Outcome, Scope, unknown_cause
from attnsim.rasp import expr as E
from attnsim.rasp.layout import Block, Layout


def _coords(b: Block, prefix: str) -> tuple[dict[str, E.Expr], E.Expr]:
    """Fresh coordinates (name -> extent) and the position they stand for."""
    ext: dict[str, E.Expr] = {}
    h: E.Expr = E.Const(0)
    if not (isinstance(b.stack, E.Const) and b.stack.value == 1):
        h = E.Var(f"{prefix}_h")
        ext[f"{prefix}_h"] = b.stack
    i, j = E.Var(f"{prefix}_i"), E.Var(f"{prefix}_j")
    ext[f"{prefix}_i"], ext[f"{prefix}_j"] = b.rows, b.cols
    return ext, b.position(i, j, h)


def prove(
    goal: E.Expr,
    assumptions: Sequence[E.Expr] = (),
    *,
    decode: Sequence[Decode] = (),
    coords: Mapping[str, E.Expr] | None = None,
    minimum: Mapping[str, int] | None = None,
    timeout: float = 10.0,
    check: Callable[[dict[str, int]], bool | None] | None = None,
    explain: Callable[[dict[str, int]], str] | None = None,
) -> Outcome:
    """Prove ``assumptions -> goal`` for all sizes, decoding the named variables through blocks.

    ``coords`` names further variables ranging over ``[0, extent)`` (coordinates given directly).

    ``check(values)`` re-evaluates a model on the original formulas (True: a real
    counterexample); without it a model is re-evaluated on ``assumptions`` and ``goal``.

    Inside :func:`~attnsim.proofs.solver_work.shared_answers` a decided answer is kept by the exact
    query (:func:`~attnsim.proofs.decoding.answers.query_key`) and given again to the same query (its
    premise check recorded again, as when it was asked); a refutation only when no ``check`` or
    ``explain`` is given (its text depends on them; a proof never calls them).
    """
    return kept_or_proved(
        lambda: _prove(goal, assumptions, decode, coords, minimum, timeout, check, explain),
        goal,
        assumptions,
        decode,
        coords,
        minimum,
        check,
        explain,
    )


def _prove(
    goal: E.Expr,
    assumptions: Sequence[E.Expr],
    decode: Sequence[Decode],
    coords: Mapping[str, E.Expr] | None,
    minimum: Mapping[str, int] | None,
    timeout: float,
    check: Callable[[dict[str, int]], bool | None] | None,
    explain: Callable[[dict[str, int]], str] | None,
) -> Outcome:
    """:func:`prove`, asked of Z3."""
    clock = solver_work.Stopwatch()
    mins = dict(minimum or {})
    pc = _premises(assumptions, decode, dict(coords or {}), mins, timeout)
    refused = pc.refusal()
    if refused is not None:
        return refused
    cases: list[list[tuple[str, Block | None]]] = [[]]
    for d in decode:
        opts: list[tuple[str, Block | None]] = [(d.var, b) for b in d.blocks]
        if not d.cover:
            opts.append((d.var, None))
        cases = [[*c, o] for c in cases for o in opts]
    used: set[str] = set()
    rewrites = 0
    names: list[str] = []
    for case in cases:
        left = timeout - clock.elapsed()
        if left <= 0:
            return Outcome(None, f"timeout after {len(names)} of {len(cases)} cases (CPU seconds)", pc, cause="timeout")
        res, info = _prove_case(goal, assumptions, case, decode, mins, left, dict(coords or {}))
        used |= info["used"]
        rewrites += info["rewrites"]
        label = ", ".join(f"{v} in {b.name}" if b is not None else f"{v} outside" for v, b in case) or "single case"
        if res == "sat":
            vals = info["model"]
            every = [*assumptions, *(r for d in decode for r in d.ranges)]
            real = check(vals) if check is not None else _violates(goal, every, vals)
            if real:
                told = explain(vals) if explain else ""
                shown = ", ".join(f"{k}={v}" for k, v in sorted(vals.items()))
                cex = tuple(sorted(vals.items()))
                return Outcome(False, f"counterexample ({label}): {told or shown}", pc, counterexample=cex)
            return Outcome(None, f"case {label}: Z3 model does not violate the original formulas (rewrite bug?)", pc)
        if res != "unsat":
            return Outcome(None, f"case {label}: z3 {res}", pc, cause=unknown_cause(res))
        names.append(label)
    if decode:
        used.add("block-decode")
    lemmas = ", ".join(LEMMAS[n].id for n in sorted(used))
    shapes = [x for d in decode for b in d.blocks for x in (b.offset, b.rows, b.cols, b.stack)]
    szs = sorted(_sizes_of(goal, *assumptions, *shapes, *(coords or {}).values()))
    scope = Scope(tuple(szs))
    return Outcome(
        True,
        f"unsat in {len(cases)} case(s) ({'; '.join(names)}), {rewrites} div/mod rewrites; "
        f"holds for {scope.text()}; lemmas: {lemmas or 'none'}",
        pc,
        scope=scope,
        lemmas=tuple(sorted(used)),
    )


def _prove_case(
    goal: E.Expr,
    assumptions: Sequence[E.Expr],
    case: list[tuple[str, Block | None]],
    decode: Sequence[Decode],
    mins: dict[str, int],
    timeout: float,
    coords: dict[str, E.Expr],
) -> tuple[str, dict[str, Any]]:
    extents: dict[str, E.Expr] = dict(coords)
    subst: dict[str, E.Expr] = {}
    extra: list[E.Expr] = []
    used: set[str] = set()
    truth: dict[str, int] = {}
    assume = list(assumptions)
    for (var, blk), dec in zip(case, decode, strict=True):
        if blk is not None:
            new_ext, pos = _coords(blk, f"{var}{blk.name}".replace(".", "_"))
            extents.update(new_ext)
            subst[var] = pos
            truth[E.render(blk.contains(E.Var(var)))] = 1  # block-position
            used.add("block-position")
        else:
            extra += [E.Not(b.contains(E.Var(var))) for b in dec.blocks]
            truth.update({E.render(b.contains(E.Var(var))): 0 for b in dec.blocks})
            assume += dec.ranges
    # the case decides every membership test of a decoded variable it names
    goal = _fold(goal, truth)
    assume = [_fold(a, truth) for a in assume]
    assume += extra
    for _ in range(12):
        ctx = _Ctx(mins)
        for name, ext in extents.items():
            ctx.extents[name] = ctx.to_sym(ext)
        try:
            memo: dict[int, E.Expr] = {}
            g = ctx.norm(_subst(goal, subst, memo))
            hyps = [ctx.norm(_subst(a, subst, memo)) for a in assume]
            break
        except _Refine as r:
            # v in [0, M d)  ->  v = a d + b  (divmod-recompose, row-bound)
            v = r.var
            d_expr = ctx.to_expr(r.d)
            m_expr = ctx.to_expr(sp.cancel(ctx.extents[v] / r.d))
            hi, lo = E.Var(f"{v}_hi"), E.Var(f"{v}_lo")
            new = hi * d_expr + lo
            subst = {k: _subst(e, {v: new}) for k, e in subst.items()}
            del extents[v]
            extents[hi.name], extents[lo.name] = m_expr, d_expr
            used |= {"divmod-recompose", "row-bound"}
    else:
        return "unknown", {"used": used, "rewrites": 0, "model": {}}
    used |= ctx.used
    hyps += ctx.bound_facts()
    res, model = _z3(g, hyps, extents, ctx, mins, timeout)
    vals: dict[str, int] = {}
    if res == "sat":
        blocks = [b for d in decode for b in d.blocks]
        shapes = [x for b in blocks for x in (b.offset, b.stack, b.rows, b.cols)]
        for s in _sizes_of(goal, *assumptions, *(r for d in decode for r in d.ranges), *shapes):
            vals[s] = model.get(s, mins.get(s, 1))
        env = dict(model)
        env.update(vals)
        for var, pos in subst.items():
            vals[var] = int(pos.evaluate(env))
        for n in _free_vars(goal, *assumptions) - set(vals):
            vals[n] = model.get(n, 0)
    return res, {"used": used, "rewrites": ctx.rewrites, "model": vals}


def _subst(e: E.Expr, m: Mapping[str, E.Expr], memo: dict[int, E.Expr] | None = None) -> E.Expr:
    """Substitute variables, keeping shared sub-trees shared (so that rewriting visits them once)."""
    memo = {} if memo is None else memo
    got = memo.get(id(e))
    if got is not None:
        return got
    if isinstance(e, E.Var):
        out: E.Expr = m.get(e.name, e)
    elif isinstance(e, E.Const):
        out = e
    elif isinstance(e, E.Not):
        out = E.Not(_subst(e.a, m, memo))
    elif isinstance(e, E.If):
        out = E.If(_subst(e.cond, m, memo), _subst(e.a, m, memo), _subst(e.b, m, memo))
    else:
        assert isinstance(e, E.BinOp)
        out = E.BinOp(e.op, _subst(e.a, m, memo), _subst(e.b, m, memo))
    memo[id(e)] = out
    return out


def _fold(e: E.Expr, truth: Mapping[str, int]) -> E.Expr:
    """Replace the sub-formulas whose rendering is a key of ``truth`` by that constant."""
    if not truth:
        return e
    return E.map_tree(e, lambda n: E.Const(truth[fp]) if (fp := E.render(n)) in truth else None)


def prove_intent(
    sel_expr: E.Expr,
    intent: E.Expr,
    *,
    queries: E.Expr,
    layout: Layout,
    assumptions: Sequence[E.Expr] = (),
    minimum: Mapping[str, int] | None = None,
    timeout: float = 10.0,
) -> Outcome | None:
    """S(q, k) <-> intent(q, k) for every query in its block and every key, for all sizes.

    ``sel_expr`` is the selector formula (``length`` already replaced).  Returns None when no
    block of the layout matches the query condition (the caller then asks Z3 directly).
    """
    qb = query_block(queries, layout)
    if qb is None:
        return None
    length = layout.length
    goal = (sel_expr & intent) | (E.Not(sel_expr) & E.Not(intent))
    assume = [queries, *assumptions]
    decode = [
        Decode(Q.name, (qb,), cover=True, ranges=(Q >= 0, Q < length)),
        Decode(K.name, key_blocks(intent, layout), ranges=(K >= 0, K < length)),
    ]
    explain = selector_explainer(sel_expr, intent, layout, length, queries)
    return prove(goal, assume, decode=decode, minimum=minimum, timeout=timeout, explain=explain)


__all__ = ["prove", "prove_intent"]
