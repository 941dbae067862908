"""U's all-sizes obligations: Theorem 6 and depth by looping, for every capacity and true size.

Our own prover's route, the base case aside, is a second route (``deep_where``): where ``coqc`` is
installed it runs under ``--deep``, and the default run proves the same statements in Coq's kernel
(:mod:`attnsim.universal.kernel_stages`: Theorem 6, 9 and stacks; 0.7 s of check time on a warm
Coq cache against this route's 175 s, 2026-12-08); where it is not, the default run takes this route.

Theorem 6 (and with it Corollary 6.1, Theorem 9 / 9.1 and the hierarchy): U's layout and each
goal of each stage its own obligation, the whole layer their conjunction (``requires``).  Depth by
looping: the frame lemma of a pass, the base case (``encode`` is Enc_0) and the induction step,
which requires both and the layer.  The checks they run are :mod:`attnsim.universal.checks`; the
other obligations of U (selectors, SymPy, numerics, torch): :mod:`attnsim.universal.obligations`.
"""

from __future__ import annotations

from collections.abc import Iterable

from attnsim.proofs.obligation import Obligation
from attnsim.universal.checks import (
    BASE_CAPACITY,
    base_case_check,
    base_case_proof,
    frame_check,
    layer_check,
    layout_check,
    stack_induction_check,
    stage_goal_check,
    stage_goals,
)
from attnsim.universal.layerproof.stages.chain import ORDER
from attnsim.universal.obligations import CID, FRAME, FRAME_REF, STAGES, STAGES_REF, THM6


def frame_obligations() -> Iterable[Obligation]:
    """Depth by looping, per variant (the frame lemma, the base case, the induction step requiring
    both and the layer), then U's layer and its stage goals (:func:`layer_obligations`)."""
    for variant in ("compact", "shallow"):
        tag = "" if variant == "compact" else f"{variant}/"
        yield Obligation(
            f"{FRAME}/{tag}all-sizes/frame",
            FRAME,
            FRAME_REF,
            "all-sizes",
            frame_check(variant),
            f"U ({variant}), every capacity and record count: outside X a pass only advances the pointer and moves "
            "the record queue by one record (so pass t reads record t and keeps the header and masks)",
            deep_where=SECOND_ROUTE,
        )
        base_id = f"{FRAME}/{tag}all-sizes/base-case"
        yield Obligation(
            base_id,
            FRAME,
            FRAME_REF,
            "all-sizes",
            base_case_proof(variant),
            f"U ({variant}), every capacity and record count M >= 1, region by region of Enc_0: encode of M "
            "layers takes X, the pointer and the fixed tokens from layer 0's one-layer encoding at the same place, "
            "record token q from layer q div S's at base + q mod S, and 0 past base + M S; read from the input "
            "map's stacking, the index expressions encode evaluates (the tokens' values are the one-layer encodings')",
        )
        yield Obligation(
            f"{FRAME}/{tag}exact/base-case-{'-'.join(map(str, BASE_CAPACITY))}",
            FRAME,
            FRAME_REF,
            "exact",
            base_case_check(variant),
            f"U ({variant}) at capacity {BASE_CAPACITY}: encode's output for M = 3 random layers is Enc_0 (record l "
            "at base + l S, the pointer 0, zeros past M S), compared exactly with the one-layer encodings (which go "
            "through the same stacking: a check of the multi-layer path, not an independent one)",
        )
        yield Obligation(
            f"{FRAME}/{tag}all-sizes/stack",
            FRAME,
            FRAME_REF,
            "all-sizes",
            stack_induction_check(variant),
            f"U ({variant}), every capacity, record count M >= 1 and pass t < M: the step of the induction that "
            "run_stack on M records is the M-layer encoder: a pass that satisfies the frame lemma's cases keeps the "
            "invariant Enc_t (X block X_t; header and masks kept; pointer t; record slot k holding record t + k, "
            "zeros past the last), the slot holding record t. Conditional on its premises, each its own obligation: "
            "the frame lemma, the layer and the base case",
            requires=(f"{FRAME}/{tag}all-sizes/frame", f"{CID}/{tag}all-sizes/layer", base_id),
            deep_where=SECOND_ROUTE,
        )

    for variant in ("compact", "shallow"):
        yield from layer_obligations(variant)


SECOND_ROUTE = ("coqc",)  # deep where Coq proves the same (the kernel rows of Theorem 6 and stacks)
STAGE_BUDGET = 120.0  # CPU s per stage goal; the largest, an FFN 1 pre-activation (6 option cases): 10-15 s idle


def layer_obligations(variant: str) -> Iterable[Obligation]:
    """Theorem 6 for every capacity and true size, one variant: U's layout and each goal of each
    stage its own obligation (spread over the workers; ``--resume`` reuses each), the layer their
    conjunction (``requires``: proved only when every one of them is)."""
    tag = "" if variant == "compact" else f"{variant}/"
    layout_id = f"{STAGES}/{tag}all-sizes/layout"
    yield Obligation(
        layout_id,
        STAGES,
        STAGES_REF,
        "all-sizes",
        layout_check(variant),
        f"U ({variant}), every capacity: every block of its layout is injective, the blocks are disjoint and in "
        "the sequence (so a token read through the input map is the entry it names)",
        deep_where=SECOND_ROUTE,
    )
    ids: dict[str, list[str]] = {}
    for stage, label in stage_goals(variant):
        oid = f"{STAGES}/{tag}all-sizes/{stage}/{label}"
        ids.setdefault(stage, []).append(oid)
        (st,) = [s for s in ORDER if s.name == stage]
        yield Obligation(
            oid,
            STAGES,
            STAGES_REF,
            "all-sizes",
            stage_goal_check(variant, stage, label),
            f"U ({variant}), every capacity N, D, H, K, F and true size n, d, hh, k, f (eps > 0; every option; "
            f"premises stated in the result): stage {stage}, U's node {label} equals its statement, written from "
            f"ENCODER_LAYER's intermediates, at every entry of its region (and its padding value where it has one), "
            f"by symbolic execution of U's own program"
            + (f", reading the proven statements of {', '.join(st.requires)}" if st.requires else ""),
            requires=(layout_id, *(i for r in st.requires for i in ids[r])),
            budget=STAGE_BUDGET,
            deep_where=SECOND_ROUTE,
        )
    yield Obligation(
        f"{CID}/{tag}all-sizes/layer",
        CID,
        THM6,
        "all-sizes",
        layer_check(variant),
        f"U ({variant}), every capacity N, D, H, K, F and every true size n <= N, d <= D, hh <= H, k <= K, "
        "f <= F (eps > 0; every option; the premises its goals state): U's output at every entry (i, l) of "
        "the X block equals [i < n] [l < d] T(X)[i, l] (ENCODER_LAYER, in T's matrices): the conjunction of "
        "U's layout and the stages scores, attention, ffn, act, output, write, each goal its own obligation "
        "(multi-head and the hierarchy are this statement: h, n, d are symbols)",
        requires=(layout_id, *(i for r in ids.values() for i in r)),
        deep_where=SECOND_ROUTE,
    )


__all__ = ["SECOND_ROUTE", "STAGE_BUDGET", "frame_obligations", "layer_obligations"]
