"""The padding statement of a cut, proven: what U's nodes hold at the padding rows i >= n.

A cut proven on the padding rows too (``Cut.padded``) is read there as one value per name
(:mod:`attnsim.universal.layerproof.cut`, which says why a later stage needs it): :func:`prove_padding`
shows, in the stage that proves the cut, that each node executed at a row past n equals the
representative node of the name there, is a function of the arguments only and is 0 past each
guard.  The statement is about U only (no spec).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sympy as sp

from attnsim.proofs.obligation import Outcome, PaddingValue
from attnsim.proofs.solver_work import sharing_answers
from attnsim.rasp import expr as E
from attnsim.symbolic.execute import ExecutionFailed, sym
from attnsim.symbolic.sums import normal_forms
from attnsim.universal.layerproof.cut import Cut
from attnsim.universal.layerproof.encoder_spec import SIZE
from attnsim.universal.layerproof.flags import assuming, flag_form, merge_flags
from attnsim.universal.layerproof.stage_proof import CaseRun, node_of, setup


@sharing_answers  # the option cases ask many of the same queries
def prove_padding(  # noqa: C901
    u: Any,
    goal: Cut,
    rep: Cut,
    cases: list[dict[str, int]],
    timeout: float,
    *,
    cuts: Mapping[str, Cut] | None = None,
    step_cap: float = 120.0,
) -> Outcome:
    """The padding statement of ``goal`` (``goal.padded``): at every padding row i >= n of its grid
    (its other region conditions kept), U's node ``goal.label`` equals U's node ``rep.label`` (the
    representative of the name, ``rep`` may be ``goal``) at the same arguments, and that value
    depends on the arguments only (on no other coordinate of either grid) and is 0 where a guard
    flag of the cut is 0 (the value with the guard's condition false is 0 in the normal form).  So
    every node of the name holds one value ``padded(args)`` there, times the guard flags: what a
    later stage reads (:meth:`~attnsim.universal.layerproof.executor.LayerExecutor.cut_value`).  U's nodes are
    executed as in :func:`~attnsim.universal.layerproof.stage_proof.prove_stage` (every divisor shown > 0) at a
    row the executor takes past n: a token of <T, X> at such a row is 0 (the encoding's padding,
    :meth:`InputMap.encode`), a proven cut read there is its own padding value.  The statement is
    about U only (no spec): its proof is that the values are one."""
    row = ("i", "n")
    what0 = f"{goal.stage} (padding rows): {goal.label}"
    if not goal.padded or goal.padded != rep.padded or len(goal.args) != len(rep.args):
        return Outcome.bad(f"{what0}: {rep.label} holds no padding value of the same name and arguments")
    if row not in goal.below or row not in rep.below or "i" not in goal.args:
        return Outcome.bad(f"{what0}: the padding rows are the row axis i past n, in the region of both nodes")
    if dict(zip(rep.args, goal.args, strict=True)).get("i") != "i":
        return Outcome.bad(f"{what0}: {rep.label}'s row is not the same argument")
    cut_map = {c.label: c for c in (cuts or {}).values()}
    con, caps = setup(u)
    node, rnode = node_of(u, goal.label), node_of(u, rep.label)
    vs = {a: E.Var(f"{a}!") for a in goal.grid.axes}
    to_goal = dict(zip(rep.args, goal.args, strict=True))
    rvs = {b: vs[to_goal[b]] if b in to_goal else E.Var(f"{b}_rep!") for b in rep.grid.axes}
    for b, a in to_goal.items():
        if sp.expand(sym(rep.grid.dim(b)) - sym(goal.grid.dim(a))) != 0:
            return Outcome.bad(f"{what0}: {rep.label}'s axis {b} and {goal.label}'s axis {a} differ in extent")
    coords = {vs[a].name: goal.grid.dim(a) for a in goal.grid.axes}
    coords.update({rvs[b].name: rep.grid.dim(b) for b in rep.grid.axes})
    below = {vs[a].name: t for a, t in goal.below if (a, t) != row}
    below.update({rvs[b].name: t for b, t in rep.below if (b, t) != row})
    pos = goal.grid.position(*(vs[a] for a in goal.grid.axes))
    rpos = rep.grid.position(*(rvs[b] for b in rep.grid.axes))
    args = {sym(vs[a]) for a in goal.args}
    others = {sym(v) for v in [*vs.values(), *rvs.values()]} - args
    cs = {a: sym(v) for a, v in vs.items()}
    run = CaseRun(u, con, caps, timeout, coords, below, cut_map, step_cap, above={vs["i"].name: "n"})
    done = []
    for case in cases:
        ex, what = run.executor(case)
        try:
            got = flag_form(ex.value(node, pos))
            ref = got if rep.label == goal.label else flag_form(ex.value(rnode, rpos))
        except ExecutionFailed as exc:
            return exc.outcome.retold(f"{what0} ({what}): {exc.outcome.detail}")
        stray = sorted(str(x) for x in sp.sympify(ref).free_symbols & others)
        if stray:
            return Outcome.bad(
                f"{what0} ({what}): {rep.label}'s value there reads {', '.join(stray)}: {sp.sstr(ref)[:200]}"
            )
        if rep.label != goal.label:
            diff = normal_forms(got, ref)[2]
            if diff != 0:
                return Outcome.bad(f"{what0} ({what}): not the value of {rep.label} there: {sp.sstr(diff)[:300]}")
        for a, t in goal.guard:
            off = merge_flags(assuming(got, {sp.Lt(cs[a], SIZE[t]): sp.false, sp.Gt(SIZE[t], cs[a]): sp.false}))
            off_nf = normal_forms(off, sp.Integer(0))[2]
            if off_nf != 0:
                return Outcome.bad(f"{what0} ({what}): not 0 where {a} >= {t}: {sp.sstr(off_nf)[:300]}")
        done.append(what)
    read = f"; premises: the proven stages {', '.join(sorted({c.stage for c in cut_map.values()}))}" if cut_map else ""
    return Outcome(
        True,
        f"at every padding row i >= n of {goal.grid.name} (the other coordinates in the region), U's {goal.label} "
        f"== {goal.padded}({', '.join(goal.args)}), the value of {rep.label} there (the arguments' only)"
        f"{''.join(f' [{a} < {t}]' for a, t in goal.guard)}; cases {'; '.join(done)}{read}",
        padding=(PaddingValue(goal.label, goal.padded, rep.label),),
    )


__all__ = ["prove_padding"]
