"""Stage ``act`` (Theorem 6, Corollary 6.1: U's FFN 1 activation): act = activation(u1).

Over the ffn stage's pre-activations (read as opaque U1(i, g), with their guard flag [g < f]), for
i < n: U's FFN 1 activation equals [g < f] act(i, g) where it is held (``ffn2.u.act`` at
ffn2.products, ``gram.u.act`` and ``gram.u2.act`` at ln2.gram_terms, g its f or f2 axis): the
spec's own act, ReLU, erf-GELU or tanh-GELU of u1 as the record's gates select.

How it is proven (:func:`prove`, the three activations of :data:`CASES`; every other option a
symbol, U's activation reads them only through the cut): U's node is executed at a symbolic entry,
the pre-activation read as the ffn stage's cut; ReLU is max(x, 0) = (x + |x|) / 2, the spec's
form, and the 0/1 guard flag of the argument comes out of the activation
(:mod:`attnsim.universal.layerproof.activation`).  The statement is the spec's own act over the
opaque U1 (``spec_over={"u1": "U1"}``: the whole spec is never built).  On the padding rows every
node holds one value act~(i, g), the activation of U1~ (:func:`prove_padding`).
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
ACT = (
    ("ffn2.u.act", "ffn2.products", ("i", "f")),
    ("gram.u.act", "ln2.gram_terms", ("i", "f")),
    ("gram.u2.act", "ln2.gram_terms", ("i", "f2")),
)
PRE = "U1"  # the ffn stage's opaque name for FFN 1's pre-activation U1(i, g)

# the option cases that change the statement: ReLU, erf-GELU, tanh-GELU
CASES = [{"gelu": g, "gelu_tanh": gt} for g, gt in ((0, 0), (1, 0), (0, 1))]
ONE_ACTIVATION = Premise("gelu and gelu_tanh are not both 1 (T has one activation)")


def goals(u: Any) -> list[Cut]:
    """U's FFN 1 activations where they are held."""
    grids = {g.name: g for g in u.stage_grids}
    return [part_cut(lb, grids[g], (("i", "n"),), "act", "act", a, "act", ((a[1], "f"),), "act~") for lb, g, a in ACT]


@sharing_answers  # the main and the padding rows' proofs share their decided Z3 answers
def prove(
    u: Any, goal: Cut, cuts: Mapping[str, Cut], timeout: float, cases: list[dict[str, int]] | None = None
) -> Outcome:
    """One activation node in every case of :data:`CASES` (``cases``: a subset, for tests), over the
    ffn stage's cut U1 (see the module docstring)."""
    t0 = time.process_time()
    chosen = cases or CASES
    out = prove_stage(
        u, goal, chosen, timeout, cuts=cuts, spec_over={"u1": PRE}, options=StageProofOptions(step_cap=120.0)
    )
    if out.ok is not True:
        return out
    # the padding rows: every activation node holds act~(i, g), the value of the first there
    rep = goals(u)[0]
    left = max(0.5, timeout - (time.process_time() - t0))
    pad = prove_padding(u, goal, rep, chosen, left, cuts=cuts)
    if pad.ok is not True:
        return pad
    both = (ONE_ACTIVATION,)  # the cases split on both gates: the fourth, both 1, is not T's
    return out.joined(pad).joined(
        Outcome(True, stated=both),
        detail=f"{out.detail}; {pad.detail}"
        + "".join(f"; premise: {p.text}" for p in both)
        + "; the options other than gelu, gelu_tanh stay symbols (any value)",
    )


ACTIVATION = Stage("act", goals, ("ffn",), prove)

__all__ = ["ACT", "ACTIVATION", "CASES", "ONE_ACTIVATION", "PRE", "goals"]
