"""Unread changes: no position of the output block can hold a changed value (:mod:`attnsim.verify.mutation.taint`).

The positions where a changed value may differ are followed through the program (position-wise maps
keep them; an attention read keeps only the queries whose selected keys include one) until none is
left or the output block is reached; none may reach an operand that can raise (a divisor on the
exact backend...).  Every instance built is enumerated position by position at its own sizes; then
Z3 tries the same for all sizes of the domain (within a budget of solver work,
:data:`ALL_SIZES_UNITS`); the proof says which instances hold for all sizes and which only at their
sizes (BOUNDED)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from attnsim.constructions.construction import Construction
from attnsim.proofs import solver_work, z3sel
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.verify.mutation import taint
from attnsim.verify.mutation.equivalence.node import domain_of
from attnsim.verify.mutation.equivalence.selector import _original_selector
from attnsim.verify.mutation.equivalence.z3_proofs import _cached_prove
from attnsim.verify.mutation.generate import Applied, Mutator

# Z3 units for the all-sizes attempts of one mutant, all Constructions built together (four plain
# queries' worth); past them, the rest stay BOUNDED (enumerated at their own sizes)
ALL_SIZES_UNITS = 240_000_000


def _initial_taint(a: Applied, at_least_one: Callable[[E.Expr], bool]) -> tuple[E.Expr | None, E.Expr | None]:
    """(T(p), D(q, k)) of one changed node: where it may now differ from the original."""
    n, op = a.node, a.op
    if isinstance(n, (C.Map, C.SequenceMap)):
        if isinstance(n.fn, C.IndexFn) and op.startswith("expr:"):
            return taint.changed_map(n, a.before, n.args, at_least_one), None
        if isinstance(n.fn, C.IndexFn) and op.startswith("swap:"):
            return taint.changed_map(n, n.fn, a.before, at_least_one), None
        if isinstance(n.fn, C.Prim) and op.startswith(("swap:", "param:")):
            if n.fn.primitive.partial:
                raise taint.Unsupported(f"the changed {n.fn.name} may raise where the original does not")
            return taint.TRUE, None
    if isinstance(n, (C.Full, C.Aggregate)) and op in ("full:+1", "score:drop"):
        return taint.TRUE, None
    if isinstance(n, C.Selector) and op.startswith(("cmp:", "kq-swap", "drop:")):
        try:
            new, old = z3sel.selector_expr(n), z3sel.selector_expr(_original_selector(a))
        except z3sel.NotStructural:
            return None, taint.TRUE
        return None, (new & E.Not(old)) | (old & E.Not(new))
    raise taint.Unsupported(f"no taint rule for {op}")


def unread_changes(hook: Mutator, built: Sequence[Any], timeout: float) -> tuple[bool, str]:  # noqa: C901, PLR0912
    """Equivalent on the outputs: in every Construction built that contains a changed node, Z3
    proves that no position of the output block can hold a changed value (the changes stay where
    only position-wise maps read them, and every selector leaves those positions out), and that no
    change can make the program raise (:mod:`attnsim.verify.mutation.taint`).  For all sizes of the
    construction's domain when Z3 decides it; else at the instance's own sizes (BOUNDED, said so)."""
    if not hook.log:
        return False, "-"
    changed = {id(a.node) for a in hook.log}
    seen: set[int] = set()
    symbolic: set[str] = set()
    concrete: dict[str, list[str]] = {}
    emptied = 0
    n_cons = 0
    spent = solver_work.WorkMeter()  # the all-sizes attempts' work so far (their budget)
    for con in built:
        layout, program = getattr(con, "layout", None), getattr(con, "program", None)
        if layout is None or not isinstance(program, C.RASPExpr):
            continue
        hit = {id(x) for x in C.topological([program])} & changed
        if not hit:
            continue
        seen |= hit
        n_cons += 1
        log = [a for a in hook.log if id(a.node) in hit]
        # every position of this instance first (fast, and a taint reaching the output ends it);
        # then, while the budget lasts, the same for all sizes by Z3.  A symbolic build (a sized
        # factory's, before it is bound) has no positions to enumerate: Z3 alone, or not shown.
        free = bool(getattr(con, "free_sizes", frozenset()))
        ok, why, k = True, "", 0
        if not free:
            try:
                ok, why, k = _unread_in(con, program, log, timeout, fixed=True)
            except taint.Unsupported as exc:
                ok, why, k = False, str(exc), 0
        if not ok:
            return False, f"unread: {why}"
        out = con.layout[con.output].name
        ok = False
        if spent.units < ALL_SIZES_UNITS:
            with solver_work.sub_meter() as work:
                try:
                    ok, _, k2 = _unread_in(con, program, log, timeout, fixed=False)
                except taint.Unsupported:
                    ok = False
            spent.units += work.units
        if ok:
            symbolic.add(out)
            emptied += k2
        elif free:
            return False, "unread: not shown for all sizes of a symbolic build (it has no instance to enumerate)"
        else:
            emptied += k
            concrete.setdefault(out, []).append(", ".join(f"{n}={v}" for n, v in sorted(con.sizes.items())))
    if n_cons == 0 or seen != changed:
        return False, "-"
    n_enum = sum(len(v) for v in concrete.values())
    if n_enum == 0:
        scope = f"z3, for all sizes of each construction's domain, in all {n_cons} Constructions built"
    else:
        shown = "; ".join(dict.fromkeys(x or "fixed sizes" for v in concrete.values() for x in v))
        scope = (
            f"BOUNDED: {n_enum} of {n_cons} Constructions built by enumerating every position at their own "
            f"sizes ({shown}), the other {n_cons - n_enum} by z3 for all sizes of the domain"
        )
    return True, (
        f"unread ({scope}): no position of the output block ({', '.join(sorted(symbolic | set(concrete)))}) can "
        f"hold a changed value ({emptied} attention reads skip every changed position; no partial primitive, "
        "divisor or token comparison reached)"
    )


def _unread_in(
    con: Construction, program: C.RASPExpr, log: Sequence[Applied], timeout: float, fixed: bool
) -> tuple[bool, str, int]:
    """One Construction: (proved, why not, attention reads proven clean).  ``fixed``: the taints are
    enumerated on the instance's positions (its sizes); else formulas over symbolic sizes, by Z3."""
    minimum, assume = domain_of(con)
    layout = con.layout
    pos = taint.POS
    length = layout.length
    hyps = (pos >= 0, pos < length, *assume)
    budget = min(timeout, 2.0)

    def valid(goal: E.Expr, extra: tuple[E.Expr, ...] = ()) -> bool:
        goal = goal.substitute({"length": length})
        return _cached_prove(goal, hyps + extra, minimum, budget).ok is True

    sizes = dict(con.sizes)
    dom: taint.Formulas | taint.Positions
    if fixed:
        dom = taint.Positions(layout.total, sizes)
        at_least_one: Callable[[E.Expr], bool] = lambda d: bool(int(d.evaluate(C.size_bindings(d))) >= 1)
    else:
        dom = taint.Formulas(length, lambda f: valid(E.Not(f)))
        at_least_one = lambda d: valid(d >= 1)
    sop0: dict[int, E.Expr] = {}
    sel0: dict[int, E.Expr] = {}
    for a in log:
        t0, d0 = _initial_taint(a, at_least_one)
        for into, x in ((sop0, t0), (sel0, d0)):
            if x is not None:
                into[id(a.node)] = x if id(a.node) not in into else into[id(a.node)] | x
    spread = taint.Spread(dom)
    spread.run(program, sop0, sel0)
    out_blk = layout[con.output]
    t_out = spread.taint(program)
    if t_out is None:
        return True, "", spread.emptied
    if isinstance(dom, taint.Positions):
        ok = not bool(t_out[out_blk.start : out_blk.end].any())
    else:
        ok = valid(E.Not(t_out), (out_blk.contains(pos),))
    if not ok:
        where = "at the instance's sizes" if fixed else "for all sizes"
        return False, f"the output block {out_blk.name} may change {where}", spread.emptied
    return True, "", spread.emptied
