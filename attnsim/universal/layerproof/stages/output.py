"""Stage ``output`` (Theorem 6, attention layer 7 of U and its MLP): FFN 2, LayerNorm 2, Y.

Over the ffn stage's Y1 and the act stage's FFN 1 activations (opaque Y1(i, e), act(i, g)): at every entry (i, e)
of the out grid, U's ``Y`` equals [i < n] [e < d] out(i, e), the spec's output (FFN 2, the
residual, LayerNorm 2 when post-norm with its variance through the Gram matrix W2 W2^T, or y1
without an FFN); padding entries are 0, so the next pass reads a valid encoding.

How it is proven (:func:`prove`, the five cases of :data:`CASES`: ffn = 0, and ffn = 1 for each
residual and post; pre and gelu stay symbols, U's Y reads them only through the cuts): U's program
is executed at a symbolic entry (i, e) of out, every coordinate free (no region: the padding rows
and columns are part of the claim); the statement is the spec's own ``out`` over the opaque Y1 and
act (``prove_stage(spec_over=...)``: the whole spec is never built).  FFN 2's sum over f < F and
LayerNorm 2's sums over (e, f) < (D, F) are truncated to the true sizes, the latter after their
terms are split and U's slot indicator [f = 0] is summed out (:mod:`attnsim.symbolic.sumsplit`);
LayerNorm 2's variance, computed by U as (sum_e (2 c2 F + c2^2) + sum_{g, g'} act_g act_g'
(W2 W2^T)[g, g']) / d - mu^2, is shown a mean of squares (the Gram term is sum_e F_e^2 by copies of
a squared sum), so the divisor sqrt(var + eps) is > 0 (eps > 0) -- at a padding row too: there
the ffn stage's cuts are read as their proven padding values (:mod:`attnsim.universal.layerproof.cut`:
every FFN 1 activation node holds one act~(i, g), 0 for g >= f, every Y1 node one Y1~(i, e), 0
for e >= d, proven by the chain scores -> attention -> ffn -> act on the rows i >= n, where the encoding
holds 0), so the variance is a mean of squares of one row of values; the masks' 0/1 flags
[i < n] [e < d] then absorb the row's values.  No premise on the padding rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attnsim.proofs.obligation import Outcome
from attnsim.universal.layerproof.cut import Cut, part_cut
from attnsim.universal.layerproof.stage_proof import StageProofOptions, prove_stage
from attnsim.universal.layerproof.stages import Stage


def goals(u: Any) -> list[Cut]:
    """U's Y at every entry of its out grid."""
    grid = next(g for g in u.stage_grids if g.name == "out")
    return [part_cut("Y", grid, (), "out", "Y", ("i", "e"), "output", (("i", "n"), ("e", "d")))]


CASES: list[dict[str, int]] = [
    {"ffn": 0},
    {"ffn": 1, "residual": 0, "post": 0},
    {"ffn": 1, "residual": 1, "post": 0},
    {"ffn": 1, "residual": 0, "post": 1},
    {"ffn": 1, "residual": 1, "post": 1},
]
OVER = {"y1": "Y1", "act": "act"}  # the ffn stage's cuts the statement is written over


def prove(
    u: Any, goal: Cut, cuts: Mapping[str, Cut], timeout: float, cases: list[dict[str, int]] | None = None
) -> Outcome:
    """Y in the cases of :data:`CASES` (pre and gelu stay symbols: U's Y reads them only through the
    ffn stage's cuts), the statement the spec's out over the opaque Y1 and act."""
    return prove_stage(
        u,
        goal,
        CASES if cases is None else cases,
        timeout,
        cuts=cuts,
        spec_over=OVER,
        options=StageProofOptions(flags=True, step_cap=120.0, past_divisors_search=True),
    )


OUTPUT = Stage("output", goals, ("ffn", "act"), prove)

__all__ = ["CASES", "OUTPUT", "OVER", "goals"]
