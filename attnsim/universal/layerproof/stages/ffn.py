"""Stage ``ffn`` (Theorem 6, attention layer 6 of U and its MLP): R, LayerNorm 1, FFN 1's input.

Over the attention stage's head outputs (read as opaque O(h, i, e)), for i < n: U's Y1 (R = the
residual sum, LayerNorm 1 when post-norm) equals [e < d] y1(i, e) where it is held (``ffn2.Y1`` at
ffn2.products, ``out.Y1`` at out), and U's FFN 1 pre-activation equals [g < f] u1(i, g)
(``ffn2.u.pre`` at ffn2.products, ``gram.u.pre`` and ``gram.u2.pre`` at ln2.gram_terms, g its f or
f2 axis), the spec's own y1 and u1 = linear1(z2) (LayerNorm 2 folded in when pre-norm).  The
activation of u1 is the next stage's (:mod:`attnsim.universal.layerproof.stages.act`), so the six
norm cases here are not multiplied by the three activations.

How it is proven (:func:`prove`): U's node is executed at a symbolic entry in every option case
that changes it (:data:`CASES`: residual and post for Y1; residual and pre/post for u1; the other
options stay symbols), the head outputs read as the attention stage's cut O(h, i, e) with its
guard flags [h < hh] [e < d].  R = sum_{h<H} (O_h + [h = 0] c) is split into its terms, the
residual terms' Kronecker delta [h = 0] summed out and the head terms truncated to h < hh
(:meth:`attnsim.universal.layerproof.truncation.Truncation.retruncate`, :mod:`attnsim.symbolic.sumsplit`);
LayerNorm's divisor sqrt(E[R^2] - E[R]^2 + eps) is shown > 0 by writing the variance as a mean of
squares over the row (:func:`attnsim.symbolic.sumsplit.row_variance_nonnegative`; U's E[R^2] is a
sum over (e, h, h'), the spec's square of a sum over h: copies of a power of a sum in
:mod:`attnsim.symbolic.sums`).  The statement is the spec's own y1 / u1 built over the attention
stage's cut O, which states the spec's intermediate head(h, i, e)
(:func:`attnsim.universal.layerproof.cut.statement_over_cuts`, ``spec_over``:
:func:`attnsim.universal.spec.given_parts` with ``given={"head": O}``), so it is the spec's
y1 / u1 once O is unfolded by construction: the whole spec is never built.  A divisor not shown
> 0 in a wrong U is searched past for a counterexample (``past_divisors_search``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from attnsim.proofs.obligation import Outcome, Premise
from attnsim.proofs.solver_work import sharing_answers
from attnsim.universal.layerproof.cut import Cut, part_cut
from attnsim.universal.layerproof.padding import prove_padding
from attnsim.universal.layerproof.stage_proof import StageProofOptions, prove_stage
from attnsim.universal.layerproof.stages import Stage

# U's nodes: label, grid, the axes of the statement's arguments (row, feature)
Y1 = (("ffn2.Y1", "ffn2.products", ("i", "e")), ("out.Y1", "out", ("i", "e")))
PRE = (
    ("ffn2.u.pre", "ffn2.products", ("i", "f")),
    ("gram.u.pre", "ln2.gram_terms", ("i", "f")),
    ("gram.u2.pre", "ln2.gram_terms", ("i", "f2")),
)
HEAD = "O"  # the attention stage's opaque name for a head output O(h, i, e), its cut stating the spec's head

# the option cases that change each statement (the other options stay symbols: any value)
CASES = {
    "Y1": [{"residual": r, "post": p} for r in (0, 1) for p in (0, 1)],
    "U1": [{"residual": r, "pre": pre, "post": post} for r in (0, 1) for pre, post in ((0, 0), (1, 0), (0, 1))],
}


def goals(u: Any) -> list[Cut]:
    """U's Y1 and FFN 1 pre-activations where they are held."""
    grids = {g.name: g for g in u.stage_grids}
    out = [part_cut(lb, grids[g], (("i", "n"),), "y1", "Y1", a, "ffn", ((a[1], "d"),), "Y1~") for lb, g, a in Y1]
    out += [part_cut(lb, grids[g], (("i", "n"),), "u1", "U1", a, "ffn", ((a[1], "f"),), "U1~") for lb, g, a in PRE]
    return out


@sharing_answers  # the main and the padding rows' proofs share their decided Z3 answers
def prove(
    u: Any, goal: Cut, cuts: Mapping[str, Cut], timeout: float, cases: list[dict[str, int]] | None = None
) -> Outcome:
    """One Y1 or pre-activation node in every option case of :data:`CASES` (``cases``: a subset, for
    tests), over the attention stage's cut (see the module docstring)."""
    t0 = time.process_time()
    out = prove_stage(
        u,
        goal,
        cases or CASES[goal.name],
        timeout,
        cuts=cuts,
        spec_over={"head": HEAD},  # the spec's own y1 / u1 over the attention stage's cut O = head
        options=StageProofOptions(
            step_cap=120.0,
            past_divisors_search=True,  # a wrong U's divisor not shown > 0: a counterexample past it
        ),
    )
    if out.ok is not True:
        return out
    # the padding rows: every node of the name holds Y1~(i, e) / U1~(i, g), the value of the first there
    rep = next(g for g in goals(u) if g.name == goal.name)
    left = max(0.5, timeout - (time.process_time() - t0))
    pad = prove_padding(u, goal, rep, cases or CASES[goal.name], left, cuts=cuts)
    if pad.ok is not True:
        return pad
    split = sorted({k for c in cases or CASES[goal.name] for k in c})
    both: tuple[Premise, ...] = ()
    if {"pre", "post"} <= set(split):
        both = (Premise("pre and post are not both 1 (TransformerLayer enforces it)"),)
    told = "".join(f"; premise: {p.text}" for p in both)
    return out.joined(pad).joined(
        Outcome(True, stated=both),
        detail=f"{out.detail}; {pad.detail}{told}; the options other than {', '.join(split)} and the scalars "
        "scale, eps stay symbols (any value, eps > 0)",
    )


FFN = Stage("ffn", goals, ("attention",), prove)

__all__ = ["CASES", "FFN", "HEAD", "PRE", "Y1", "goals"]
