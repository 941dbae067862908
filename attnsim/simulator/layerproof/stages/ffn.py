"""Stage ``ffn`` (Theorem 6, attention layer 6 of U and its MLP): R, LayerNorm 1, FFN 1.

Over the attention stage's head outputs (read as opaque O(h, i, e)), for i < n: U's Y1 (R = the
residual sum, LayerNorm 1 when post-norm) equals [e < d] y1(i, e) where it is held (``ffn2.Y1`` at
ffn2.products, ``out.Y1`` at out), and U's FFN 1 activation equals [g < f] act(i, g) (``ffn2.u.act``
at ffn2.products, ``gram.u.act`` and ``gram.u2.act`` at ln2.gram_terms, g its f or f2 axis), the
spec's own y1 and act (LayerNorm 2 folded in when pre-norm).

How it is proven (:func:`prove`): U's node is executed at a symbolic entry in every option case
that changes it (:data:`CASES`: residual and post for Y1; residual, pre/post and gelu/gelu_tanh for act; the
other options stay symbols), the head outputs read as the attention stage's cut O(h, i, e) with
its guard flags [h < hh] [e < d].  R = sum_{h<H} (O_h + [h = 0] c) is split into its terms, the
residual terms' Kronecker delta [h = 0] summed out and the head terms truncated to h < hh
(:meth:`attnsim.simulator.layerproof.truncation.Truncation.retruncate`, :mod:`attnsim.symbolic.sumsplit`);
LayerNorm's divisor sqrt(E[R^2] - E[R]^2 + eps) is shown > 0 by writing the variance as a mean of
squares over the row (:func:`attnsim.symbolic.sumsplit.row_variance_nonnegative`; U's E[R^2] is a
sum over (e, h, h'), the spec's square of a sum over h: copies of a power of a sum in
:mod:`attnsim.symbolic.sums`); ReLU is max(x, 0) = (x + |x|) / 2, the spec's form, and the 0/1 guard
flags of the argument come out of the activation (:mod:`attnsim.simulator.layerproof.activation`).  The
statement is the spec's own y1 / act built over the opaque O
(:func:`attnsim.symbolic.encoder_layer_spec.encoder_layer_parts` with ``given={"head": O}``), checked to be, once
O is unfolded to the attention stage's statement, the spec's y1 / act up to the names of bound
variables (:mod:`attnsim.symbolic.alpha_equivalence`; ``StageProofOptions(spec_once=True)``: once, the options left
as operands).  A divisor not shown > 0 in a wrong U is searched past for a counterexample
(``past_divisors_search``).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from typing import Any

import sympy as sp

from attnsim.proofs.obligation import Outcome, Premise
from attnsim.proofs.solver_work import sharing_answers
from attnsim.simulator.layerproof.cut import Cut, part_cut
from attnsim.simulator.layerproof.encoder_spec import SIZE
from attnsim.simulator.layerproof.padding import prove_padding
from attnsim.simulator.layerproof.stage_proof import StageProofOptions, prove_stage
from attnsim.simulator.layerproof.stages import Stage
from attnsim.symbolic.encoder_layer_spec import ENCODER_LAYER, encoder_layer_parts
from attnsim.symbolic.spec_language import SymbolicAlg

# U's nodes: label, grid, the axes of the statement's arguments (row, feature)
Y1 = (("ffn2.Y1", "ffn2.products", ("i", "e")), ("out.Y1", "out", ("i", "e")))
ACT = (
    ("ffn2.u.act", "ffn2.products", ("i", "f")),
    ("gram.u.act", "ln2.gram_terms", ("i", "f")),
    ("gram.u2.act", "ln2.gram_terms", ("i", "f2")),
)
HEAD = sp.Function("O")  # the attention stage's opaque name for a head output O(h, i, e)

# the option cases that change each statement (the other options stay symbols: any value)
CASES = {
    "Y1": [{"residual": r, "post": p} for r in (0, 1) for p in (0, 1)],
    "act": [
        {"residual": r, "pre": pre, "post": post, "gelu": g, "gelu_tanh": gt}
        for r in (0, 1)
        for pre, post in ((0, 0), (1, 0), (0, 1))
        for g, gt in ((0, 0), (1, 0), (0, 1))
    ],
}


def goals(u: Any) -> list[Cut]:
    """U's Y1 and FFN 1 activations where they are held."""
    grids = {g.name: g for g in u.stage_grids}
    out = [part_cut(lb, grids[g], (("i", "n"),), "y1", "Y1", a, "ffn", ((a[1], "d"),), "Y1~") for lb, g, a in Y1]
    out += [part_cut(lb, grids[g], (("i", "n"),), "act", "act", a, "ffn", ((a[1], "f"),), "act~") for lb, g, a in ACT]
    return out


@functools.cache
def over_heads() -> dict[str, Any]:
    """ENCODER_LAYER's intermediate quantities with each head's term of attn read as the opaque
    O(h, i, e) (the attention stage's statement); its bound variables are named apart from
    :func:`spec_parts`' (prefix ``y!``), so unfolding O cannot capture one."""
    ops = {name: sp.IndexedBase(name) for name in ENCODER_LAYER.operands}
    return encoder_layer_parts(SymbolicAlg("y!"), ops, SIZE, given={"head": lambda hd, r, t: HEAD(hd, r, t)})


@sharing_answers  # the main and the padding rows' proofs share their decided Z3 answers
def prove(
    u: Any, goal: Cut, cuts: Mapping[str, Cut], timeout: float, cases: list[dict[str, int]] | None = None
) -> Outcome:
    """One Y1 or activation node in every option case of :data:`CASES` (``cases``: a subset, for
    tests), over the attention stage's cut (see the module docstring)."""
    parts = over_heads()
    t0 = time.perf_counter()
    a, b = goal.args
    name = "y1" if goal.name == "Y1" else "act"
    out = prove_stage(
        u,
        goal,
        cases or CASES[goal.name],
        timeout,
        cuts=cuts,
        statement=lambda cs: goal.flags(cs) * parts[name](cs[a], cs[b]),
        options=StageProofOptions(
            step_cap=120.0,
            past_divisors_search=True,  # a wrong U's divisor not shown > 0: a counterexample past it
            spec_once=cases is None,  # every case: one check of the statement, with the options as operands
        ),
    )
    if out.ok is not True:
        return out
    # the padding rows: every node of the name holds Y1~(i, e) / act~(i, g), the value of the first there
    rep = next(g for g in goals(u) if g.name == goal.name)
    left = max(0.5, timeout - (time.perf_counter() - t0))
    pad = prove_padding(u, goal, rep, cases or CASES[goal.name], left, cuts=cuts)
    if pad.ok is not True:
        return pad
    split = sorted({k for c in cases or CASES[goal.name] for k in c})
    both: tuple[Premise, ...] = ()
    if {"pre", "post"} <= set(split):
        both = (Premise("pre and post are not both 1 (TransformerLayer enforces it)"),)
    if {"gelu", "gelu_tanh"} <= set(split):
        both += (Premise("gelu and gelu_tanh are not both 1 (T has one activation)"),)
    told = "".join(f"; premise: {p.text}" for p in both)
    return out.joined(pad).joined(
        Outcome(True, stated=both),
        detail=f"{out.detail}; {pad.detail}{told}; the options other than {', '.join(split)} and the scalars "
        "scale, eps stay symbols (any value, eps > 0)",
    )


FFN = Stage("ffn", goals, ("attention",), prove)

__all__ = ["ACT", "CASES", "FFN", "HEAD", "Y1", "goals", "over_heads"]
