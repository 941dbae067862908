"""Obligations for the universal simulator U (Theorem 6, Corollary 6.1, Theorem 9, Corollary 9.1, hierarchy).

Compositional: every head of U is a gather (Lemma (transpose), generalized), a sum read at its
consumer (Lemma (matmul), generalized), the row-max head, or the record-queue shift; Z3 proves,
for all sizes and U's own layout, that each selector picks exactly the keys its intent states
(decoding prover).  An exhaustive enumeration checks that the MLP masks select exactly the true
sizes for every n <= N, d <= D.  On top: whole-U SymPy checks at n = d_model = 2 and float64
runs up to capacity 32, against the reference and torch's fixtures.  This module declares the
obligations, grouped by what they check; the checks they run are :mod:`attnsim.universal.checks`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from attnsim.proofs.obligation import Obligation
from attnsim.proofs.registry import ConstructionEntry
from attnsim.universal.checks import (
    OPTION_COMBOS,
    SMALL,
    WIDE_CASES,
    WIDE_SCALE,
    coverage_check,
    decoded_intent_check,
    fixture_check,
    layers_check,
    layout_enum_check,
    mask_check,
    masked_key_check,
    numeric_check,
    option_tag,
    stack_check,
    u_at,
    whole_check,
    wide_check,
)
from attnsim.universal.fixtures import FIXTURES, HEAD_WIDTH_FIXTURES, MASK_FIXTURES
from attnsim.universal.universal import UniversalSimulator

CID = "simulator"
THM6 = "Theorem 6"
COR61 = "Corollary 6.1"
THM9 = "Theorem 9 / Corollary 9.1"
HIER = "hierarchy (N >= n)"

FRAME = "simulator-frame"
FRAME_REF = "stacks (depth by looping)"

STAGES = "simulator-stages"
STAGES_REF = "Theorem 6: U's layout and stages (scores, attention, ffn, act, output, write)"


def wide_obligations(variant: str) -> Iterable[Obligation]:
    """The past-capacity-32 float64 runs of one variant (in the default run: a few seconds in all)."""
    prefix = CID if variant == "compact" else SHALLOW
    for case in WIDE_CASES:
        if case.variant != variant:
            continue
        yield Obligation(
            f"{prefix}/numeric/{case.tag}",
            CID,
            COR61,
            "numeric",
            wide_check(case),
            f"float64 {variant} U at capacity (N, D, H, K, F) = {case.capacity} vs the reference: d_model > 32 or "
            f"N > 32, d_head > 8, scale {WIDE_SCALE:g}, {case.masks} mask + key padding, max abs error <= 1e-10",
        )


def simulator_obligations() -> Iterable[Obligation]:
    """U (compact): its stage selectors, layout, coverage and masks, whole-U SymPy checks, numerics
    at capacity 32 and over wide logits, a stack and the torch fixtures."""
    u = u_at(*SMALL)
    yield Obligation(
        f"{CID}/numeric/masked-key-dominates",
        CID,
        COR61,
        "numeric",
        masked_key_check("compact"),
        "causal mask, a blocked key's logit 3,646 above the allowed one: U == T(X) within 1e-12",
    )
    yield from _selector_obligations(u, CID, "compact")
    yield from _structure_obligations()
    yield from _whole_u_obligations()
    yield from _capacity32_obligations()
    yield from wide_obligations("compact")
    yield from _stack_and_torch_obligations()


def _selector_obligations(u: UniversalSimulator, prefix: str, variant: str) -> Iterable[Obligation]:
    """Every head's selector intent, for all sizes (decoding prover): one obligation per stage selector."""
    of = "U" if variant == "compact" else f"{variant} U"
    for name, it in u.intents:
        stmt = f"{it.statement} (stage {name.rsplit('.', 1)[0]} of {of}, {u.fingerprint})"
        yield Obligation(
            f"{prefix}/z3-parametric/{name}", CID, THM9, "z3-parametric", decoded_intent_check(name, variant), stmt
        )


def _structure_obligations() -> Iterable[Obligation]:
    """U's layout at every small capacity, its heads' forms, and its MLP masks at every size."""
    yield Obligation(
        f"{CID}/exact/layout-capacities-2",
        CID,
        "Proposition 1",
        "exact",
        layout_enum_check(2),
        "every block injective, disjoint per channel, inside the sequence: all capacities with sizes in 1..2",
    )
    yield Obligation(
        f"{CID}/exact/layout-capacities-3",
        CID,
        "Proposition 1",
        "exact",
        layout_enum_check(3),
        "every block injective, disjoint per channel, inside the sequence: all capacities with sizes in 1..3",
        deep=True,
    )
    yield Obligation(
        f"{CID}/exact/stage-coverage",
        CID,
        THM9,
        "exact",
        coverage_check,
        "every attention op of U is a gather, a sum read at its consumer, the row max or the record shift",
    )
    yield Obligation(
        f"{CID}/exact/masks-all-sizes",
        CID,
        HIER,
        "exact",
        mask_check(((3, 2, 2, 2, 2), (1, 1, 1, 1, 1), (4, 3, 1, 2, 1))),
        "every MLP mask is 1 exactly on the true n (keys, rows) and d (columns), for every size <= capacity",
    )


def _whole_u_obligations() -> Iterable[Obligation]:
    """Whole-U SymPy checks: U == the reference on symbolic X (and weights), n = d_model = 2."""
    yield Obligation(
        f"{CID}/sympy/attn-h1-n2-d2",
        CID,
        THM6,
        "sympy",
        whole_check((2, 2, 1, 2, None), (2, 2, 1, 2, None), {}),
        "U == softmax attention on symbolic X and weights (1 head)",
    )
    yield Obligation(
        f"{CID}/sympy/attn-h2-n2-d2",
        CID,
        THM9,
        "sympy",
        whole_check((2, 2, 2, 1, None), (2, 2, 2, 1, None), {}),
        "U == 2-head attention on symbolic X and weights",
    )
    yield Obligation(
        f"{CID}/sympy/ffn-res-rational-n2-d2",
        CID,
        COR61,
        "sympy",
        whole_check((2, 2, 1, 2, 2), (2, 2, 1, 2, 2), {"residual": True}, symbolic_weights=False),
        "U == encoder layer with ReLU FFN and residual: symbolic X, random rational weights",
    )
    yield Obligation(
        f"{CID}/sympy/ffn-res-n2-d2",
        CID,
        COR61,
        "sympy",
        whole_check((2, 2, 1, 2, 2), (2, 2, 1, 2, 2), {"residual": True}),
        "U == encoder layer with ReLU FFN and residual, all symbolic",
        deep=True,
    )
    yield Obligation(
        f"{CID}/sympy/hier-attn-N3-n2",
        CID,
        HIER,
        "sympy",
        whole_check((3, 3, 2, 2, None), (2, 2, 1, 1, None), {}),
        "a capacity (N, D, H, K) = (3, 3, 2, 2) U == a smaller symbolic T (n = d = 2, 1 head, d_head 1)",
    )
    yield Obligation(
        f"{CID}/sympy/post-attn-rational-n2-d2",
        CID,
        COR61,
        "sympy",
        whole_check((2, 2, 1, 2, None), (2, 2, 1, 2, None), {"residual": True, "norm": "post"}, symbolic_weights=False),
        "U == post-norm attention layer (LayerNorm by congruence): symbolic X, rational weights",
    )
    for norm, act in (("post", "relu"), ("pre", "gelu")):
        yield Obligation(
            f"{CID}/sympy/{norm}-ffn-{act}-n2-d2",
            CID,
            COR61,
            "sympy",
            whole_check((2, 2, 1, 2, 2), (2, 2, 1, 2, 2), {"residual": True, "norm": norm, "activation": act}),
            f"U == {norm}-norm encoder layer with {act} FFN, all symbolic (congruence)",
            deep=True,
        )
    yield Obligation(
        f"{CID}/sympy/ffn-gelu_tanh-res-rational-n2-d2",
        CID,
        COR61,
        "sympy",
        whole_check(
            (2, 2, 1, 2, 2), (2, 2, 1, 2, 2), {"residual": True, "activation": "gelu_tanh"}, symbolic_weights=False
        ),
        "U == encoder layer with torch's tanh-GELU FFN and residual: symbolic X, rational weights (congruence)",
        deep=True,
    )


def _capacity32_obligations() -> Iterable[Obligation]:
    """float64 U against the reference at capacity 32, every option combination and a smaller T."""
    cap32 = (32, 32, 4, 8, 64)
    for o in OPTION_COMBOS:
        for f in (64, None):
            if f is None and o["activation"] != "relu":  # no FFN: the activation is unread
                continue
            tag = option_tag(o) + ("" if f else "-noffn")
            yield Obligation(
                f"{CID}/numeric/cap32-{tag}",
                CID,
                COR61 if f else THM9,
                "numeric",
                numeric_check(cap32, (32, 32, 4, 8, f), o, 1e-10),
                "float64 U vs reference at full capacity 32 (4 heads), max abs error <= 1e-10",
            )
    yield Obligation(
        f"{CID}/numeric/cap32-hier-small",
        CID,
        HIER,
        "numeric",
        numeric_check(cap32, (7, 20, 3, 5, 33), {"residual": True, "norm": "post", "activation": "gelu"}, 1e-10),
        "capacity-32 U simulates n=7, d=20, h=3, d_head=5, d_ff=33 within 1e-10",
    )


def _stack_and_torch_obligations() -> Iterable[Obligation]:
    """run_stack against composed references, and U against torch's committed float64 fixtures."""
    yield Obligation(
        f"{CID}/numeric/stack-3-layers",
        CID,
        FRAME_REF,
        "numeric",
        stack_check(1e-10),
        "run_stack: one program looped 3 times == composed references (mixed options, sizes)",
    )
    for name in ("encoder_post_relu", "encoder_pre_gelu", "mha"):
        yield Obligation(
            f"{CID}/numeric/torch-{name}",
            CID,
            COR61,
            "numeric",
            fixture_check(name, 1e-10),
            "from_state_dict + reference + U vs torch's float64 output (committed fixture)",
        )

    for name in MASK_FIXTURES:
        yield Obligation(
            f"{CID}/numeric/torch-{name}",
            CID,
            COR61,
            "numeric",
            fixture_check(name, 1e-10),
            "U with torch's mask arguments (causal, additive, key padding), batches and logit rows spread over 2000 "
            "vs torch's float64 output (committed fixture)",
        )
    for name in HEAD_WIDTH_FIXTURES:
        yield Obligation(
            f"{CID}/numeric/torch-{name}",
            CID,
            COR61,
            "numeric",
            fixture_check(name, 1e-12, simulator=False),
            f"the reference T read by from_state_dict, default attention scale, vs torch's float64 output at "
            f"d_head = {name.rsplit('_k', 1)[1]} > 8 (committed fixture; U runs T's scale as given)",
        )
    yield Obligation(
        f"{CID}/numeric/torch-stack2",
        CID,
        FRAME_REF,
        "numeric",
        fixture_check("stack2", 1e-10),
        "run_stack vs torch nn.TransformerEncoder (2 layers), committed fixture",
    )


SHALLOW = f"{CID}/shallow"
SHALLOW_SMALL = (4, 4, 2, 2, 4)  # numeric checks of the shallow build (its spread grid grows as N^2 D^2)


def shallow_obligations() -> Iterable[Obligation]:
    """U with ``variant="shallow"`` (6 attention layers): its own stage selectors, coverage,
    numerics for every option combination, the torch fixtures, a stack and whole-U SymPy checks."""
    v = "shallow"
    u = u_at(*SMALL, variant=v)
    yield Obligation(
        f"{SHALLOW}/numeric/masked-key-dominates",
        CID,
        COR61,
        "numeric",
        masked_key_check(v),
        "causal mask, a blocked key's logit 3,646 above the allowed one: U == T(X) within 1e-12",
    )
    yield from wide_obligations(v)
    yield from _selector_obligations(u, SHALLOW, v)
    yield Obligation(
        f"{SHALLOW}/exact/stage-coverage",
        CID,
        THM9,
        "exact",
        functools.partial(coverage_check, variant=v),
        "every attention op of shallow U is a gather, a sum read at its consumer, the row max or the record shift",
    )
    yield Obligation(
        f"{SHALLOW}/exact/six-layers",
        CID,
        THM9,
        "exact",
        layers_check(v, 6),
        "shallow U has at most 6 attention layers at capacities c = 2, 3, 8, 32, 64 (max_len = d_model = d_ff = c; "
        "the test suite checks every c in 2..64)",
    )
    yield from _shallow_whole_u_obligations()
    yield from _shallow_numeric_obligations()
    for name in FIXTURES:
        yield Obligation(
            f"{SHALLOW}/numeric/torch-{name}",
            CID,
            COR61,
            "numeric",
            fixture_check(name, 1e-10, variant=v),
            "shallow U (with torch's mask arguments where the fixture has them) vs torch's float64 output",
        )


def _shallow_whole_u_obligations() -> Iterable[Obligation]:
    """Whole shallow U SymPy checks at n = d_model = 2: attention, the FFN, pre- and post-norm."""
    v = "shallow"
    yield Obligation(
        f"{SHALLOW}/sympy/attn-h1-n2-d2",
        CID,
        THM6,
        "sympy",
        whole_check((2, 2, 1, 2, None), (2, 2, 1, 2, None), {}, variant=v),
        "shallow U == softmax attention on symbolic X and weights (1 head)",
    )
    yield Obligation(
        f"{SHALLOW}/sympy/ffn-res-rational-n2-d2",
        CID,
        COR61,
        "sympy",
        whole_check((2, 2, 1, 2, 2), (2, 2, 1, 2, 2), {"residual": True}, symbolic_weights=False, variant=v),
        "shallow U == encoder layer with ReLU FFN and residual: symbolic X, random rational weights",
    )
    for norm, how in (("post", "LayerNorm by congruence"), ("pre", "LayerNorm of X in the spread product")):
        yield Obligation(
            f"{SHALLOW}/sympy/{norm}-attn-rational-n2-d2",
            CID,
            COR61,
            "sympy",
            whole_check(
                (2, 2, 1, 2, None),
                (2, 2, 1, 2, None),
                {"residual": True, "norm": norm},
                symbolic_weights=False,
                variant=v,
            ),
            f"shallow U == {norm}-norm attention layer ({how}): symbolic X, rational weights",
        )


def _shallow_numeric_obligations() -> Iterable[Obligation]:
    """float64 shallow U against the reference at (4, 4, 2, 2, 4), every option combination, and a stack."""
    v = "shallow"
    cap = SHALLOW_SMALL
    for o in OPTION_COMBOS:
        for f in (cap[4], None):
            if f is None and o["activation"] != "relu":  # no FFN: the activation is unread
                continue
            tag = option_tag(o) + ("" if f else "-noffn")
            yield Obligation(
                f"{SHALLOW}/numeric/cap4-{tag}",
                CID,
                COR61 if f else THM9,
                "numeric",
                numeric_check(cap, (4, 4, 2, 2, f), o, 1e-10, variant=v),
                "float64 shallow U vs reference at full capacity (4, 4, 2, 2, 4), max abs error <= 1e-10",
            )
    yield Obligation(
        f"{SHALLOW}/numeric/stack-3-layers",
        CID,
        FRAME_REF,
        "numeric",
        stack_check(1e-10, variant=v),
        "shallow run_stack: one program looped 3 times == composed references (mixed options, sizes)",
    )


#: The constructions this module declares (registered by :mod:`attnsim.catalog`).
CONSTRUCTIONS = (
    ConstructionEntry(CID, f"{THM6}, {COR61}, {THM9}, {HIER}", lambda: UniversalSimulator(3, 3, 2, 2, 3)),
    ConstructionEntry(FRAME, FRAME_REF, lambda: UniversalSimulator(3, 3, 2, 2, 3), part_of=CID),
    ConstructionEntry(STAGES, STAGES_REF, lambda: UniversalSimulator(3, 3, 2, 2, 3), part_of=CID),
)


__all__ = ["OPTION_COMBOS", "shallow_obligations", "simulator_obligations"]
