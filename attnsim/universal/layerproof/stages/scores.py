"""Stage ``scores`` (Theorem 6, attention layers 1-3 of U): the logit U feeds its softmax.

At every attention product (h, i, j, e) with h < hh, i < n, j < n, U's ``attn.logit`` equals the
specification's logit(h, i, j) = scale sum_{c<k} q_h[i, c] k_h[j, c] + additive[i, j], the
projections with LayerNorm 1 when pre-norm (its variance shown a mean of squares), for every
capacity and true size; the options other than pre stay symbols (any value).

Both variants of U hold the logit at the same node and grid.  The compact U sums Q K over c from
its projections; the shallow U sums Z~[i, l] Wq~[h, l, c] Wk~[h, l2, c] Z~[j, l2] over c < K and
l, l2 < D + 1 in one spread product (Z~ = [Z, 1], W~ = [W; b]): the executor splits each gather
with a ``when`` into its two cases and each sum over l <= D into l < D and its last term l = D
(:class:`attnsim.universal.layerproof.executor.LayerExecutor`), so the same statement is proven.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from attnsim.proofs.obligation import Outcome
from attnsim.proofs.solver_work import sharing_answers
from attnsim.universal.layerproof.cut import Cut
from attnsim.universal.layerproof.encoder_spec import spec_parts
from attnsim.universal.layerproof.executor import LayerExecutor
from attnsim.universal.layerproof.padding import prove_padding
from attnsim.universal.layerproof.stage_proof import StageProofOptions, prove_stage
from attnsim.universal.layerproof.stages import Stage

# seconds for one Z3 call (a resource bound: what is proven does not depend on it): the
# executor's default for the compact U; the shallow U's spread sum, over an extent D + 1 in three
# axes, has key listings of ~30 s unloaded
STEP_CAP = {"compact": LayerExecutor.step_cap, "shallow": 120.0}


def goals(u: Any) -> list[Cut]:
    """U's attn.logit at its attention products, stated as the spec's logit(h, i, j)."""
    grid = next(g for g in u.stage_grids if g.name == "attn.products")
    parts = spec_parts()
    return [
        Cut(
            "attn.logit",
            grid,
            (("h", "hh"), ("i", "n"), ("j", "n")),
            lambda cs: parts["logit"](cs["h"], cs["i"], cs["j"]),
            "s",
            ("h", "i", "j"),
            "scores",
            padded="s~",
        )
    ]


@sharing_answers  # the main and the padding rows' proofs share their decided Z3 answers
def prove(u: Any, goal: Cut, cuts: Mapping[str, Cut], timeout: float) -> Outcome:
    """The logit on the true rows, then on the padding rows: one value s~(h, i, j) (not reading e)."""
    t0 = time.process_time()
    out = prove_stage(
        u, goal, [{"pre": 0}, {"pre": 1}], timeout, cuts=cuts, options=StageProofOptions(step_cap=STEP_CAP[u.variant])
    )
    if out.ok is not True:
        return out
    left = max(0.5, timeout - (time.process_time() - t0))
    pad = prove_padding(u, goal, goal, [{"pre": 0}, {"pre": 1}], left, cuts=cuts)
    return pad if pad.ok is not True else out.joined(pad, detail=f"{out.detail}; {pad.detail}")


SCORES = Stage("scores", goals, (), prove)


def prove_scores(u: Any, timeout: float = 120.0, cases: list[dict[str, int]] | None = None) -> Outcome:
    """The stage on its own (tests pick option cases)."""
    (goal,) = goals(u)
    return prove_stage(
        u, goal, cases or [{"pre": 0}, {"pre": 1}], timeout, options=StageProofOptions(step_cap=STEP_CAP[u.variant])
    )


__all__ = ["SCORES", "STEP_CAP", "goals", "prove_scores"]
