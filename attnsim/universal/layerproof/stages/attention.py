"""Stage ``attention`` (Theorem 6 / 9, attention layers 4-5 of U): the row max, the softmax and
the head outputs.

At every entry of a grid where U holds a head output O[h, i, e] (``attn.o`` at attn.heads,
``ffn1.o`` at ffn1.products, ``ln1.o`` and ``ln1.o2`` at ln1.square_terms), with i < n, U's value
equals [h < hh] [e < d] sum_{c<k} out_proj_weight[e, h k + c] sum_{j<n} weight(h, i, j)
proj(2, j, h, c): one head's term of the spec's attn(i, e), its softmax weight the spec's own
([not blocked] / sum_{l<n, not blocked} exp(s_l - s_j)).  The logits are the stage ``scores``'
statement, read as the opaque s(h, i, j); the row max U subtracts cancels.

How it is proven (:func:`prove`, both pre cases, the other options symbols): U's program is
executed at a symbolic entry; the key listings of its sums (V, V W_O, the numerator and the
denominator) and of the row max are proven through their intents; keys j >= n drop out of the sums by
their guard flags (j < n, from ``mask.keys``); a head h >= hh is 0 by the 0/1 flag [h < hh] of its
V and W_O entries, under which the logits (unknown for h >= hh) are read as s(h, i, j); the
denominator is shown > 0 and the row max
finite under the premise :data:`UNBLOCKED` (every query row has an unblocked key: ``AttentionMask``
enforces it), stated in the Outcome; and exp(s_j - M) [allowed_j] / sum_l [allowed_l] exp(s_l - M)
equals the spec's [not blocked_j] / sum_l [not blocked_l] exp(s_l - s_j) in the Sum normal form
(exp(a + b) = exp(a) exp(b), M and s_j constant factors of the sums).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import sympy as sp

from attnsim.proofs.obligation import Outcome
from attnsim.proofs.solver_work import sharing_answers
from attnsim.symbolic.if_then_else import Ite
from attnsim.universal.layerproof.cut import Cut, part_cut
from attnsim.universal.layerproof.divisors import RowWitness
from attnsim.universal.layerproof.encoder_spec import SIZE, spec_parts
from attnsim.universal.layerproof.flags import flag
from attnsim.universal.layerproof.padding import prove_padding
from attnsim.universal.layerproof.stage_proof import StageProofOptions, prove_stage
from attnsim.universal.layerproof.stages import Stage

UNBLOCKED = RowWitness(
    "blocked is 0/1 and every query row i < n has a key j < n with blocked[i, j] = 0 (AttentionMask "
    "enforces both: a bool mask, a row with every key masked is refused); so the row max over the allowed "
    "keys is finite and the softmax denominators are > 0",
    "n",
    "n",
    lambda r, j: sp.Ne(sp.IndexedBase("blocked")[0, r, j], 1),
    (("blocked", 0),),
)
LOGIT = sp.Function("s")  # the scores stage's opaque name for the logit s(h, i, j)

# U's nodes holding a head output: label, grid, the grid's axis that is the head
HEADS = (
    ("attn.o", "attn.heads", "h"),
    ("ffn1.o", "ffn1.products", "h"),
    ("ln1.o", "ln1.square_terms", "h"),
    ("ln1.o2", "ln1.square_terms", "h2"),
)


def softmax_weight(logit: Any, h: Any, i: Any, j: Any) -> Any:
    """The spec's weight(h, i, j) written over an opaque logit: 0 where blocked[i, j], else
    1 / sum_{l<n} [not blocked[i, l]] exp(logit(h, i, l) - logit(h, i, j)) (ENCODER_LAYER's
    ``weight``, its ``if_true`` an ``Ite(Eq(flag, 1), ...)``; checked equal to it once unfolded)."""
    blocked = sp.IndexedBase("blocked")
    lv = sp.Symbol("l!o", integer=True)
    term = Ite(sp.Eq(blocked[0, i, lv], 1), sp.Integer(0), sp.exp(logit(h, i, lv) - logit(h, i, j)))
    return Ite(sp.Eq(blocked[0, i, j], 1), sp.Integer(0), 1 / sp.Sum(term, (lv, 0, SIZE["n"] - 1)))


def head_output(parts: dict[str, Any], h: Any, i: Any, e: Any, logit: Any = None) -> Any:
    """sum_{c<k} out_proj_weight[e, h k + c] sum_{j<n} weight(h, i, j) proj(2, j, h, c) (read where
    h < hh, e < d); with ``logit`` the weight is :func:`softmax_weight` over logit(h, i, l) (an
    opaque function), else the spec's own."""
    n, k = SIZE["n"], SIZE["k"]
    jv, cv = sp.Symbol("j!o", integer=True), sp.Symbol("c!o", integer=True)
    w = parts["weight"](h, i, jv) if logit is None else softmax_weight(logit, h, i, jv)
    head = sp.Sum(sp.sympify(w) * sp.sympify(parts["proj"](2, jv, h, cv)), (jv, 0, n - 1))
    return sp.Sum(sp.IndexedBase("out_proj_weight")[0, e, h * k + cv] * head, (cv, 0, k - 1))


def guarded(h: Any, e: Any, value: Any) -> Any:
    """[h < hh] [e < d] value."""
    return flag(sp.Lt(h, SIZE["hh"])) * flag(sp.Lt(e, SIZE["d"])) * value


def goals(u: Any) -> list[Cut]:
    """U's head outputs at the four grids that hold them: [h < hh] [e < d] times the spec's own
    intermediate head(h, i, e) (ENCODER_LAYER's, so the ffn stage states its claim over it)."""
    grids = {g.name: g for g in u.stage_grids}
    return [
        part_cut(lb, grids[g], (("i", "n"),), "head", "O", (ax, "i", "e"), "attention", ((ax, "hh"), ("e", "d")), "O~")
        for lb, g, ax in HEADS
    ]


@sharing_answers  # the main and the padding rows' proofs share their decided Z3 answers
def prove(u: Any, goal: Cut, cuts: Mapping[str, Cut], timeout: float) -> Outcome:
    """One head-output node in the cases pre = 0 and pre = 1, the logits read as the scores stage's
    cut, under the premise :data:`UNBLOCKED` (see the module docstring)."""
    parts = spec_parts()
    ax = goal.args[0]
    t0 = time.process_time()
    out = prove_stage(
        u,
        goal,
        [{"pre": 0}, {"pre": 1}],
        timeout,
        cuts=cuts,
        statement=lambda cs: guarded(cs[ax], cs["e"], head_output(parts, cs[ax], cs["i"], cs["e"], logit=LOGIT)),
        options=StageProofOptions(
            flags=True,
            step_cap=120.0,  # a refutation on a loaded 2-core machine can pass 60 s (seen: tests in parallel)
            witnesses=(UNBLOCKED,),
            spec_flags=True,
        ),
    )
    if out.ok is not True:
        return out
    # the padding rows: every head-output node holds O~(h, i, e), the value of attn.o there
    rep = goals(u)[0]
    left = max(0.5, timeout - (time.process_time() - t0))
    pad = prove_padding(u, goal, rep, [{"pre": 0}, {"pre": 1}], left, cuts=cuts)
    return pad if pad.ok is not True else out.joined(pad, detail=f"{out.detail}; {pad.detail}")


ATTENTION = Stage("attention", goals, ("scores",), prove)

__all__ = ["ATTENTION", "HEADS", "LOGIT", "UNBLOCKED", "goals", "head_output", "softmax_weight"]
