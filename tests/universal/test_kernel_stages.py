"""Theorem 6 in the kernel, stage by stage: U's ln_x.mean node == d_model * EncoderLayer's row_mean,
LayerNorm 1's centred value and variance == X i j - row_mean and row_var, LayerNorm 1's value ==
norm1, U's Q, K and V projections == EncoderLayer's proj, attn.logit == scores, attn.exp over the
row sum attn.o.den == softmax_rows over expR (and the row sum positive), the head output attn.o ==
head t's term of self_attn, R (out.R) == add_residual X (self_attn Z), x1 (out.Y1) == norm1 of that
when post-norm, else that, the FFN-1 activation (ffn2.u.act) == activation of the FFN input's first
linear layer, R2 (out.R2) == add_residual x1 (ff_block Z2), on the Gram grid gram.u.act and
gram.u2.act == that activation at f and f2 and gram == sum_e W2[f, e] W2[f2, e], out.Y2 == norm2
of X2 when post-norm, else X2, U's output Y == encoder_layer at every query of the out grid (every
layer but post-norm with an FFN), every capacity, through the kernel gate;
a mutated node, a mutated exporter, a wrong eps, a max shift that does not cancel, a row sum over
one key fewer, a numerator summed at column 0, every head reading head 0's Wo, the residual added at
every head, bo read at the head index, the square terms' cross term counted once, ln1.o2 reading the
first head, the post gate read at the pre gate, W1 read transposed, norm1's bias in the pre-norm
FFN, the gelu gate read at gelu_tanh's index, W2 read transposed, x1 added without the residual gate,
a Gram entry reading W2 at f twice, gram.u2's b1 read at f, LayerNorm 2's cross term counted once,
norm1's bias added by LayerNorm 2, the row mask compared with d, Y reading out.Y2 without an FFN,
a column mask one position off and a statement from another layout are each refused; no
obligation claims Theorem 6.  Stacks by looping (U's pass m times == EncoderLayer's m-layer
encoder) are one kernel row of the frame construction; a record queue moved one position past the
next record is refused."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from attnsim.proofs.obligation import Outcome, Result, settle
from attnsim.universal import kernel_export as KE
from attnsim.universal import kernel_stages as UK

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed")


def _mutate(variant: str, node: str, old: str, new: str) -> dict[str, KE.CoqProgram]:
    """U's export of ``variant`` with ``old`` replaced by ``new`` in the definition of ``node`` only."""
    good = KE.export_universal(variant)
    name = f"{KE.program_name(variant)}_{node}"
    m = re.search(rf"^Definition {name} \(.*?\.\n", good.text, re.S | re.M)
    assert m is not None and m.group(0).count(old) == 1, (name, old)
    text = good.text[: m.start()] + m.group(0).replace(old, new) + good.text[m.end() :]
    return {variant: replace(good, text=text)}


def test_a_statement_naming_a_node_two_labels_print_alike_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exporter prints ``out.R_sum`` and ``out.R.sum`` both as ``out_R_sum`` (suffixing the later):
    a statement naming such a node is refused, not pointed at whichever node took the plain name."""
    with pytest.raises(ValueError, match=r"labelled 'out.R.sum' and 'out.R_sum' both print as U_compact_out_R_sum"):
        UK._call("compact", "U_compact_out_R_sum")
    good = KE.export_universal("compact")
    clash = "(* attn.o *)\nDefinition U_compact_attn_o_999 (N D H K F : Z) : sop :=\n  (Const 0).\n"
    monkeypatch.setattr(
        UK,
        "export_universal",
        lambda v: replace(good, text=good.text + clash) if v == "compact" else KE.export_universal(v),
    )
    with pytest.raises(ValueError, match="both print as U_compact_attn_o"):
        UK.heads_theorems("compact")
    out = UK.check(stage=UK.HEADS)(0.0)
    assert out.ok is False and "both print as U_compact_attn_o" in out.detail, out.detail


def test_the_shipped_sources_pass_the_source_check() -> None:
    assert UK.source_problems() == []


def test_an_encoder_layer_other_than_the_reviewed_one_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """EncoderLayer.v's digest is pinned beside its Python transcription: one byte more is refused."""
    shutil.copytree(UK.coq_sources(), tmp_path, dirs_exist_ok=True)
    (tmp_path / "EncoderLayer.v").write_text((tmp_path / "EncoderLayer.v").read_text() + "\n")
    monkeypatch.setattr(UK, "coq_sources", lambda: tmp_path)
    problems = UK.source_problems()
    assert len(problems) == 1 and problems[0].startswith("EncoderLayer.v is not the one its Python"), problems
    out = UK.check()(0.0)
    assert out.ok is not True


def test_the_statement_is_read_from_us_layout() -> None:
    """X where U's layout puts it, the query grid's extent, U's own node, EncoderLayer's row_mean."""
    st = UK.statement("compact")
    assert "encodes x 0 1 N D (fun _ => X)" in st
    assert "(q < (((3 * H)%nat * N)%nat * K * D)%nat)%nat" in st
    assert "U_compact_ln_x_mean (Z.of_nat N)" in st and "row_mean P X i" in st
    assert "(q < ((H * N)%nat * K * D)%nat)%nat" in UK.statement("shallow")
    assert "Definition U_compact_ln_x_mean (N D H K F : Z) : sop" in KE.export_universal("compact").text


def test_the_stage_obligations_are_stages_and_one_is_theorem_6() -> None:
    """Sixteen stages of construction simulator-stages (under --deep), then U's whole layer as two
    rows of U's own construction (simulator, the default run), backing Theorem 6 and Theorem 9 (the
    same theorems, H a variable); the U constants named here are the catalogue's."""
    from attnsim.universal import obligations as UO

    *obs, whole, multi, _stack = list(UK.universal_kernel_obligations())
    assert whole.id == "simulator/kernel/UniversalTheorem6" and whole.method == "kernel"
    assert (whole.construction, whole.paper_ref) == (UO.CID, UO.THM6) and "one stage" not in whole.statement
    assert multi.id == "simulator/kernel/UniversalTheorem6/multi-head" and multi.paper_ref == UO.THM9
    assert UK.THEOREM6.theorem and not any(s.theorem for s in UK.STAGES[:-2])
    assert UK.STAGES[-2:] == (UK.THEOREM6, UK.STACK)
    stages = (
        "UniversalRowMean",
        "UniversalRowStats",
        "UniversalLayerNorm1",
        "UniversalQProj",
        "UniversalKProj",
        "UniversalVProj",
        "UniversalScores",
        "UniversalSoftmax",
        "UniversalHeads",
        "UniversalAttnOut",
        "UniversalY1",
        "UniversalFfnAct",
        "UniversalFfnOut",
        "UniversalGramAct",
        "UniversalY2",
        "UniversalLayer",
    )
    assert [o.id for o in obs] == [f"simulator-stages/kernel/{s}" for s in stages]
    for ob in obs:
        assert ob.method == "kernel" and ob.construction == "simulator-stages" and ob.tools == ("coqc",)
        assert "one stage" in ob.statement and ob.deep
    assert not whole.deep and not multi.deep  # the default run's: Theorem 6 builds every stage
    assert multi.requires == (whole.id,)


def test_theorem_6_starts_first_in_the_default_run() -> None:
    """Theorem 6's row has the largest budget of the default run, so the runner starts it first: its
    serial Coq build (every stage, cold) then overlaps the rest of the run instead of ending it."""
    from attnsim.proofs import registry
    from attnsim.verify.budgets import budget

    default = [o for o in registry.all_obligations() if not o.deep]
    (whole,) = [o for o in default if o.id == "simulator/kernel/UniversalTheorem6"]
    assert budget(whole) > max(budget(o) for o in default if o is not whole)


def test_theorem_9_is_theorem_6s_theorems_over_every_head_count() -> None:
    """Theorem 9's row: Theorem 6's statements bind H and bound it by nothing but 0 < H; a statement
    that fixes H (H = 1), bounds it (H <= 2) or does not bind it is refused; the row rests on
    Theorem 6's and is conditional when that one does not hold."""
    assert UK.heads_bound_problems() == []
    *_, whole, multi, _ = UK.universal_kernel_obligations()
    good = multi.check(1.0)
    assert good.ok and good.kernel is not None and good.kernel.registered and "H" in good.kernel.sizes
    assert good.kernel.via == whole.id and good.kernel.assumptions == ()  # Theorem 6's row lists them

    def with_text(edit: Callable[[str], str]) -> UK.Stage:
        return replace(UK.THEOREM6, theorems=lambda v: [(n, edit(t)) for n, t in UK.theorem6_theorems(v)])

    fixed = with_text(lambda t: t.replace("(0 < H)%nat ->", "(0 < H)%nat -> (H = 1)%nat ->"))
    assert any("fixes H" in p for p in UK.heads_bound_problems(fixed))
    bounded = with_text(lambda t: t.replace("(0 < H)%nat ->", "(0 < H)%nat -> (H <= 2)%nat ->"))
    assert any("fixes H" in p for p in UK.heads_bound_problems(bounded))
    unbound = with_text(lambda t: t.replace("(N D H K F : nat)", "(N D K F : nat)"))
    assert any("does not bind H" in p for p in UK.heads_bound_problems(unbound))
    rows = [Result.of(whole, Outcome.unknown("coqc stopped"), 0.0), Result.of(multi, good, 0.0)]
    assert [r.status for r in settle(rows)] == ["unknown", "conditional"]


def test_the_stats_statements_name_us_nodes_by_their_terms() -> None:
    """The centred value and the variance are unlabelled nodes: found by their terms, d read from
    the header's d (token N D + 1 in U's layout)."""
    (_, centred), (_, var) = UK.row_stats_theorems("compact")
    assert "(U_compact_n51 (Z.of_nat N)" in centred and "= X i j - row_mean P X i" in centred
    assert "(U_compact_n60 (Z.of_nat N)" in var and "= row_var P X i" in var
    assert "nth 0 x ((N * D)%nat + 1)%nat = (d_model P)%:R" in var
    text = KE.export_universal("compact").text
    assert "Definition U_compact_n51 (N D H K F : Z) : sop :=\n  (Map2 PSub (U_compact_proj_x N D H K F)" in text
    with pytest.raises(ValueError, match="has 0 nodes"):
        UK.node_by_term("compact", "(Map2 PAdd {a} {b})", a="U_compact_proj_x", b="U_compact_ln_x_mean_per_d")


@needs_coq
@pytest.mark.kernel_stages
def test_u_row_sum_is_d_model_times_the_layers_row_mean() -> None:
    out = UK.check()(0.0)
    assert out.ok is True, out.detail
    assert out.kernel is not None and out.kernel.assumptions == () and out.kernel.registered is False
    assert set(out.kernel.theorems) == {"U_compact_ln_x_mean_spec", "U_shallow_ln_x_mean_spec"}
    assert "closed under the global context" in out.detail


@needs_coq
def test_a_node_reading_one_position_off_is_refused() -> None:
    """The key group of ln_x.mean shifted by one position: the proof no longer goes through."""
    bad = _mutate("compact", "ln_x_mean_key_group", "(Z.div (Z.sub x0 (0)%Z) D)", "(Z.div (Z.sub x0 (1)%Z) D)")
    out = UK.check(bad)(0.0)
    assert out.ok is False and "UniversalRowMean.v: Coq rejects it" in out.detail, out.detail


@needs_coq
def test_an_exporter_scaling_by_another_constant_is_refused() -> None:
    """ln_x.mean's scale D printed as D / 2 (an exporter mistake on PScale's constant)."""
    bad = _mutate("shallow", "ln_x_mean", "(PScale (CQ D (1)%Z))", "(PScale (CQ D (2)%Z))")
    out = UK.check(bad)(0.0)
    assert out.ok is False and "UniversalRowMean.v: Coq rejects it" in out.detail, out.detail


@needs_coq
def test_a_statement_from_another_layout_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate types the theorem by the generated statement: X placed one token later (as a layout
    with a changed offset would generate) does not type-check against the proof."""
    real = UK._block
    moved = lambda v, name: replace(real(v, name), offset=real(v, name).offset + 1) if name == "X" else real(v, name)
    monkeypatch.setattr(UK, "_block", moved)
    assert "encodes x 1 1 N D" in UK.statement("compact")
    out = UK.check()(0.0)
    assert out.ok is False and "not their generated statements" in out.detail, out.detail


@needs_coq
@pytest.mark.kernel_stages
def test_layer_norm_1s_centred_value_and_variance_are_the_layers() -> None:
    out = UK.check(stage=UK.ROW_STATS)(0.0)
    assert out.ok is True, out.detail
    assert out.kernel is not None and out.kernel.assumptions == () and out.kernel.registered is False
    assert len(out.kernel.theorems) == 4


@needs_coq
def test_d_read_from_the_header_s_pointer_is_refused() -> None:
    """d gathered from the header's next token (ptr, not d): the variance proof no longer goes through."""
    bad = _mutate("shallow", "d_source", "(1)%Z) (0)%Z)", "(2)%Z) (0)%Z)")
    out = UK.check(bad, UK.ROW_STATS)(0.0)
    assert out.ok is False and "UniversalRowStats.v: Coq rejects it" in out.detail, out.detail


@needs_coq
@pytest.mark.kernel_stages
def test_layer_norm_1_is_the_layers_norm1() -> None:
    out = UK.check(stage=UK.LAYER_NORM1)(0.0)
    assert out.ok is True, out.detail
    assert out.kernel is not None and out.kernel.assumptions == () and out.kernel.registered is False
    assert set(out.kernel.theorems) == {"U_compact_ln1_spec", "U_shallow_ln1_spec"}


def test_the_layer_norm_1_statement_reads_eps_and_norm1_where_us_layout_puts_them() -> None:
    ((_, st),) = UK.layer_norm1_theorems("compact")
    assert "nth 0 x (U_compact_gates_offset N D H K F + 7)%nat = eps P" in st
    assert "encodes x (U_compact_g1_offset N D H K F) 1 1 D (fun _ => norm1_w P)" in st
    assert "(U_compact_n75 (Z.of_nat N)" in st and st.endswith("= norm1 sqrtf P n X i j")
    defs = UK.layer_norm1_definitions("shallow")
    assert defs[0].startswith("Definition U_shallow_gates_offset (N D H K F : nat) : nat :=")


@needs_coq
def test_a_wrong_layer_norm_eps_is_refused() -> None:
    """eps gathered from the gate before it (scale): the LayerNorm-1 proof no longer goes through."""
    bad = _mutate("compact", "eps_source", "(7)%Z) (0)%Z)", "(6)%Z) (0)%Z)")
    out = UK.check(bad, UK.LAYER_NORM1)(0.0)
    assert out.ok is False and "UniversalLayerNorm1.v: Coq rejects it" in out.detail, out.detail


@needs_coq
@pytest.mark.kernel_stages
def test_compact_us_q_projection_is_the_layers() -> None:
    out = UK.check(stage=UK.Q_PROJ)(0.0)
    assert out.ok is True, out.detail
    assert out.kernel is not None and out.kernel.assumptions == () and out.kernel.theorems == ("U_compact_q_spec",)


@needs_coq
def test_a_q_weight_read_transposed_is_refused() -> None:
    """The Q weight gathered with its row and column strides swapped (W^T's layout): refused by Coq."""
    row, col = ") D) (Z.modulo (Z.sub x0 (0)%Z) D)) K)", ") K) (Z.modulo (Z.sub x0 (0)%Z) D)) D)"
    bad = _mutate("compact", "proj_w_source", row, col)
    out = UK.check(bad, UK.Q_PROJ)(0.0)
    assert out.ok is False and "UniversalQProj.v: Coq rejects it" in out.detail, out.detail


@needs_coq
@pytest.mark.kernel_stages
def test_compact_us_k_projection_is_the_layers() -> None:
    out = UK.check(stage=UK.K_PROJ)(0.0)
    assert out.ok is True, out.detail
    assert out.kernel is not None and out.kernel.assumptions == () and out.kernel.theorems == ("U_compact_k_spec",)


@needs_coq
def test_a_k_bias_read_from_the_q_row_is_refused() -> None:
    """K's bias gathered from the bqkv row of Q (part 0 instead of 1): refused by Coq."""
    bad = _mutate("compact", "K_bias_source", "(Z.add (Z.mul (1)%Z H)", "(Z.add (Z.mul (0)%Z H)")
    out = UK.check(bad, UK.K_PROJ)(0.0)
    assert out.ok is False and "UniversalKProj.v: Coq rejects it" in out.detail, out.detail


def test_the_v_statement_reads_wv_and_bv_where_us_layout_puts_them() -> None:
    """V's weights are the matrices [2 H, 3 H) of wqkv, its bias row block 2 of bqkv; V is read on
    the vwo grid (head, value token, column), both variants."""
    for variant in ("compact", "shallow"):
        ((_, st),) = UK.v_proj_theorems(variant)
        pre = KE.program_name(variant)
        assert f"encodes x ({pre}_wqkv_offset N D H K F + 2 * H * D * K)%nat H D K (Wv P)" in st
        assert f"encodes x ({pre}_bqkv_offset N D H K F + 2 * H * K)%nat 1 H K" in st
        assert "(q %/ D %/ K %% N)%nat = i" in st and "(q %/ D %% K)%nat = c" in st
        assert st.endswith("= proj P n (Wv P) (bv P) (if norm P is PreNorm then norm1 sqrtf P n X else X) t i c")
    assert UK.v_proj_definitions("compact") == [] and len(UK.v_proj_definitions("shallow")) == 2


@needs_coq
@pytest.mark.kernel_stages
def test_us_v_projection_is_the_layers() -> None:
    out = UK.check(stage=UK.V_PROJ)(0.0)
    assert out.ok is True, out.detail
    assert out.kernel is not None and out.kernel.assumptions == () and out.kernel.registered is False
    assert out.kernel.theorems == ("U_compact_v_spec", "U_shallow_v_spec")


@needs_coq
def test_a_v_node_reading_one_column_off_is_refused() -> None:
    """V's query group reading column c of the position one before (x0 - 1): refused by Coq."""
    column = "(Z.modulo (Z.div (Z.sub x0 ({})%Z) D) K)"
    bad = _mutate("compact", "V_query_group", column.format(0), column.format(1))
    out = UK.check(bad, UK.V_PROJ)(0.0)
    assert out.ok is False and "UniversalVProj.v: Coq rejects it" in out.detail, out.detail


def test_the_scores_statement_reads_the_scale_and_the_mask_where_us_layout_puts_them() -> None:
    """attn.logit against EncoderLayer's scores: the scale gate, the float mask's block, Wq and bq
    zero beyond d_head; the sequence covering the grid each variant's scores sum."""
    ((_, st),) = UK.scores_theorems("compact")
    assert "nth 0 x (U_compact_gates_offset N D H K F + 6)%nat = scale P" in st
    assert "encodes x (U_compact_mask_add_offset N D H K F) 1 N N (fun _ => additive M)" in st
    assert "(d_head P <= c)%nat -> Wq P t j c = 0" in st and "(d_head P <= c)%nat -> bq P t 0 c = 0" in st
    assert "(U_compact_attn_logit (Z.of_nat N)" in st
    assert st.endswith("= scores P M n (if norm P is PreNorm then norm1 sqrtf P n X else X) t i j")
    ((_, shallow),) = UK.scores_theorems("shallow")
    assert "(((((H * N)%nat * N)%nat * K)%nat * (D + 1)%nat * (D + 1)%nat)%nat <= size x)%nat" in shallow
    assert "(U_shallow_attn_logit (Z.of_nat N)" in shallow
    assert UK.scores_definitions("compact") == [
        "Definition U_compact_mask_add_offset (N D H K F : nat) : nat :=\n  ((N * D)%nat + (1 * 3)%nat)%nat."
    ]


@needs_coq
@pytest.mark.kernel_stages
def test_us_attention_logit_is_the_layers_scores() -> None:
    out = UK.check(stage=UK.SCORES)(0.0)
    assert out.ok is True, out.detail
    assert out.kernel is not None and out.kernel.assumptions == () and out.kernel.registered is False
    assert out.kernel.theorems == ("U_compact_scores_spec", "U_shallow_scores_spec")


@needs_coq
@pytest.mark.kernel_mutants
def test_scores_scaled_by_eps_are_refused() -> None:
    """The scale gathered from the gate after it (eps): refused by Coq."""
    bad = _mutate("compact", "scale_source", "(6)%Z) (0)%Z)", "(7)%Z) (0)%Z)")
    out = UK.check(bad, UK.SCORES)(0.0)
    assert out.ok is False and "UniversalScores.v: Coq rejects it" in out.detail, out.detail


@needs_coq
@pytest.mark.kernel_mutants
def test_a_float_mask_read_transposed_is_refused() -> None:
    """The float mask gathered at (key, query) instead of (query, key): refused by Coq."""
    row = "(Z.modulo (Z.div (Z.div (Z.sub x0 (0)%Z) D) N) N)"
    col = "(Z.modulo (Z.div (Z.sub x0 (0)%Z) D) N)"
    bad = _mutate("compact", "mask_add_source", f"(Z.mul {row} N) {col}", f"(Z.mul {col} N) {row}")
    out = UK.check(bad, UK.SCORES)(0.0)
    assert out.ok is False and "UniversalScores.v: Coq rejects it" in out.detail, out.detail


@needs_coq
@pytest.mark.kernel_mutants
def test_a_shallow_spread_reading_the_keys_row_for_the_query_is_refused() -> None:
    """The shallow spread's query side gathering X at the key's row (one division by N left out)."""
    e = "(Z.add D (1)%Z)"
    rows = f"(Z.div (Z.div (Z.div (Z.sub x0 (0)%Z) {e}) {e}) K)"
    bad = _mutate("shallow", "spread_q_x_source", f"(Z.modulo (Z.div {rows} N) N)", f"(Z.modulo {rows} N)")
    out = UK.check(bad, UK.SCORES)(0.0)
    assert out.ok is False and "UniversalScores.v: Coq rejects it" in out.detail, out.detail


def test_the_softmax_statements_are_over_expr_and_read_from_us_layout() -> None:
    """Over MathComp-analysis' expR; n at the header's n (token N D), the boolean mask's flags at the
    mask_blocked block, the row sum read on the head grid (i, e, h); EncoderLayer's softmax_rows and
    allowed."""
    (_, weight), (_, positive) = UK.softmax_theorems("compact")
    assert weight.startswith("  forall (R : realType) (sqrtf geluf gelu_tanhf : R -> R)")
    assert "nth 0 x (N * D)%nat = n%:R" in weight
    assert (
        "encodes x (U_compact_mask_blocked_offset N D H K F) 1 N N "
        "(fun _ => \\matrix_(i, j) if blocked M i j then 1 else 0)" in weight
    )
    assert "(p < (N * D * H)%nat)%nat -> (p %% H)%nat = t -> (p %/ H %/ D)%nat = i" in weight
    assert "eval (@expR R) sqrtf geluf gelu_tanhf (U_compact_attn_exp (Z.of_nat N)" in weight
    assert "/ eval (@expR R) sqrtf geluf gelu_tanhf (U_compact_attn_o_den (Z.of_nat N)" in weight
    assert weight.endswith(
        "= softmax_rows (@expR R) M n (scores P M n (if norm P is PreNorm then norm1 sqrtf P n X else X) t) i j"
    )
    assert "(exists j : 'I_N, allowed M n i j) ->\n  0 < eval (@expR R)" in positive and "(q : nat)" not in positive
    assert "From mathcomp Require Import reals sequences exp." in UK.statement_text(UK.SOFTMAX)
    assert "reals" not in UK.statement_text(UK.SCORES)


def _mutate_term(variant: str, term: str, old: str, new: str, **nodes: str) -> dict[str, KE.CoqProgram]:
    """:func:`_mutate` on the one node of ``variant`` whose term is ``term`` (see node_by_term)."""
    name = UK.node_by_term(variant, term, **nodes)
    return _mutate(variant, name.removeprefix(f"{KE.program_name(variant)}_"), old, new)


@needs_coq
@pytest.mark.kernel_stages
def test_us_softmax_is_the_layers_softmax_rows_over_expr() -> None:
    out = UK.check(stage=UK.SOFTMAX)(0.0)
    assert out.ok is True, out.detail
    assert out.kernel is not None and out.kernel.registered is False
    assert out.kernel.theorems == (
        "U_compact_softmax_spec",
        "U_compact_softmax_den_pos",
        "U_shallow_softmax_spec",
        "U_shallow_softmax_den_pos",
    )
    # expR's MathComp-analysis foundations, by full path, nothing else
    assert set(out.kernel.assumptions) <= UK.G.ALLOWED_AXIOMS and out.kernel.assumptions, out.kernel.assumptions


@needs_coq
def test_a_max_shift_that_does_not_cancel_is_refused() -> None:
    """exp(logit - logit) (each key shifted by its own logit, not the row's max): uniform weights,
    refused by Coq."""
    pre = KE.program_name("compact")
    bad = _mutate_term(
        "compact",
        "(Map2 PSub {a} {b})",
        f"({pre}_attn_max N D H K F)",
        f"({pre}_attn_logit N D H K F)",
        a=f"{pre}_attn_logit",
        b=f"{pre}_attn_max",
    )
    out = UK.check(bad, UK.SOFTMAX)(0.0)
    assert out.ok is False and "UniversalSoftmax.v: Coq rejects it" in out.detail, out.detail


@needs_coq
@pytest.mark.kernel_mutants
def test_a_row_sum_over_one_key_fewer_is_refused() -> None:
    """The row sum's key group ending D positions early: the last row (head H - 1, query N - 1) sums
    N - 1 keys, its last key (N - 1, 0) left out."""
    end = "(Z.add (0)%Z (Z.mul (Z.mul (Z.mul H N) N) D))"
    bad = _mutate("compact", "attn_o_den_key_group", f"(ilt x0 {end})", f"(ilt x0 (Z.sub {end} D))")
    out = UK.check(bad, UK.SOFTMAX)(0.0)
    assert out.ok is False and "UniversalSoftmax.v: Coq rejects it" in out.detail, out.detail


def test_the_heads_statement_reads_wo_and_the_head_grid_from_us_layout() -> None:
    """Wo at U's wo block (H matrices K x D), zero beyond d_head rows; the query p on the head grid
    (i, e, h): e = p / H mod D; EncoderLayer's head times Wo, summed over c < d_head."""
    [(name, st)], [(name_s, st_s)] = UK.heads_theorems("compact"), UK.heads_theorems("shallow")
    assert (name, name_s) == ("U_compact_head_spec", "U_shallow_head_spec")
    assert "encodes x (U_compact_wo_offset N D H K F) H K D (Wo P)" in st
    assert "(forall (t : 'I_H) (c : 'I_K) (e : 'I_D), (d_head P <= c)%nat -> Wo P t c e = 0)" in st
    assert "encodes x (U_compact_wqkv_offset N D H K F + 2 * H * D * K)%nat H D K (Wv P)" in st
    assert "(p %/ H %% D)%nat = e -> (i < n)%nat" in st and "exists j" not in st
    assert "eval (@expR R) sqrtf geluf gelu_tanhf (U_compact_attn_o (Z.of_nat N)" in st
    assert st.endswith(
        "= \\sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n "
        "(if norm P is PreNorm then norm1 sqrtf P n X else X) t i c * Wo P t c e"
    )
    assert "U_shallow_wo_offset" in st_s
    assert "Definition U_compact_wo_offset (N D H K F : nat) : nat :=" in UK.statement_text(UK.HEADS)


@needs_coq
@pytest.mark.kernel_stages
def test_us_head_output_is_the_layers_head_times_wo() -> None:
    out = UK.check(stage=UK.HEADS)(0.0)
    assert out.ok is True, out.detail
    assert out.kernel is not None and out.kernel.registered is False
    assert out.kernel.theorems == ("U_compact_head_spec", "U_shallow_head_spec")
    assert set(out.kernel.assumptions) <= UK.G.ALLOWED_AXIOMS and out.kernel.assumptions, out.kernel.assumptions


@needs_coq
@pytest.mark.kernel_mutants
def test_a_numerator_summed_at_column_0_is_refused() -> None:
    """attn.o's numerator grouped as its denominator is (column 0 for every e): every column of the
    head output reads column 0's V W_O, refused by Coq."""
    bad = _mutate("compact", "attn_o_num_query_group", "(Z.modulo (Z.div (Z.sub x0 (0)%Z) H) D)", "(0)%Z")
    out = UK.check(bad, UK.HEADS)(0.0)
    assert out.ok is False and "UniversalHeads.v: Coq rejects it" in out.detail, out.detail


@needs_coq
@pytest.mark.kernel_mutants
def test_every_head_reading_head_0s_wo_is_refused() -> None:
    """The shallow variant's vwo.wo gathering Wo's matrix 0 for every head h: refused by Coq."""
    head = "(Z.mul (Z.div (Z.div (Z.div (Z.sub x0 (0)%Z) D) K) N) K)"
    bad = _mutate("shallow", "vwo_wo_source", head, "(Z.mul (0)%Z K)")
    out = UK.check(bad, UK.HEADS)(0.0)
    assert out.ok is False and "UniversalHeads.v: Coq rejects it" in out.detail, out.detail


def test_the_attn_out_statement_reads_the_residual_gate_and_bo_from_us_layout() -> None:
    """The residual gate, bo at U's bo block, Wo zero beyond nhead heads, the query on the out grid
    (i, e); EncoderLayer's add_residual of self_attn."""
    [(name, st)] = UK.attn_out_theorems("compact")
    assert name == "U_compact_attn_out_spec"
    assert "nth 0 x (U_compact_gates_offset N D H K F + 0)%nat = (if residual P then 1 else 0)" in st
    assert "encodes x (U_compact_bo_offset N D H K F) 1 1 D (fun _ => bo P)" in st
    assert "(forall (t : 'I_H) (c : 'I_K) (e : 'I_D), (nhead P <= t)%nat -> Wo P t c e = 0)" in st
    assert "(p < (1 * N * D)%nat)%nat -> (p %/ D %% N)%nat = i -> (p %% D)%nat = e" in st
    assert "(t : 'I_H)" not in st.split(",")[0]
    assert st.endswith(
        "= add_residual P X (self_attn (@expR R) P M n (if norm P is PreNorm then norm1 sqrtf P n X else X)) i e"
    )


@needs_coq
@pytest.mark.kernel_stages
def test_us_r_is_the_layers_residual_plus_self_attention() -> None:
    out = UK.check(stage=UK.ATTN_OUT)(0.0)
    assert out.ok is True, out.detail
    assert out.kernel is not None and out.kernel.registered is False
    assert out.kernel.theorems == ("U_compact_attn_out_spec", "U_shallow_attn_out_spec")
    assert set(out.kernel.assumptions) <= UK.G.ALLOWED_AXIOMS and out.kernel.assumptions, out.kernel.assumptions


@needs_coq
@pytest.mark.kernel_mutants
def test_the_residual_added_at_every_head_is_refused() -> None:
    """attn.h0 true at every head (not only h = 0): R holds H copies of bo + X, refused by Coq."""
    bad = _mutate("compact", "attn_h0", "(ieq (Z.modulo (Z.sub x0 (0)%Z) H) (0)%Z)", "(ieq (0)%Z (0)%Z)")
    out = UK.check(bad, UK.ATTN_OUT)(0.0)
    assert out.ok is False and "UniversalAttnOut.v: Coq rejects it" in out.detail, out.detail


@needs_coq
@pytest.mark.kernel_mutants
def test_bo_read_at_the_head_index_is_refused() -> None:
    """The shallow variant's attn.bo gathering bo at the head h instead of the column e: refused."""
    bad = _mutate(
        "shallow", "attn_bo_source", "(Z.modulo (Z.div (Z.sub x0 (0)%Z) H) D)", "(Z.modulo (Z.sub x0 (0)%Z) H)"
    )
    out = UK.check(bad, UK.ATTN_OUT)(0.0)
    assert out.ok is False and "UniversalAttnOut.v: Coq rejects it" in out.detail, out.detail


def test_the_y1_statement_reads_the_post_gate_and_the_square_grid_from_us_layout() -> None:
    """The R stage's premises, the post gate, Wo and bo zero beyond d_model columns, the square-terms
    grid's extent; EncoderLayer's norm1 of add_residual X (self_attn Z) when post-norm, else that."""
    [(name, st)] = UK.y1_theorems("compact")
    assert name == "U_compact_y1_spec"
    [(_, r_stage)] = UK.attn_out_theorems("compact")
    assert st.startswith(r_stage[: r_stage.index("  eval (@expR R)")])
    assert "nth 0 x (U_compact_gates_offset N D H K F + 2)%nat = (if norm P is PostNorm then 1 else 0)" in st
    assert "(forall (t : 'I_H) (c : 'I_K) (e : 'I_D), (d_model P <= e)%nat -> Wo P t c e = 0)" in st
    assert "(forall e : 'I_D, (d_model P <= e)%nat -> bo P 0 e = 0)" in st
    assert "(((N * D)%nat * H * H)%nat <= size x)%nat" in st
    x1 = "(add_residual P X (self_attn (@expR R) P M n (if norm P is PreNorm then norm1 sqrtf P n X else X)))"
    assert "U_compact_out_Y1 (Z.of_nat N)" in st
    assert st.endswith(f"= (if norm P is PostNorm then norm1 sqrtf P n {x1} else {x1}) i e")
    [(name, _)] = UK.y1_theorems("shallow")
    assert name == "U_shallow_y1_spec"


@needs_coq
@pytest.mark.kernel_stages
def test_us_y1_is_the_layers_x1() -> None:
    out = UK.check(stage=UK.Y1)(0.0)
    assert out.ok is True, out.detail
    assert out.kernel is not None and out.kernel.registered is False
    assert out.kernel.theorems == ("U_compact_y1_spec", "U_shallow_y1_spec")
    assert set(out.kernel.assumptions) <= UK.G.ALLOWED_AXIOMS and out.kernel.assumptions, out.kernel.assumptions


@needs_coq
@pytest.mark.kernel_mutants
def test_square_terms_with_the_cross_term_counted_once_are_refused() -> None:
    """ln1.square_terms' cross term O c scaled by 1, not 2: R_sq is not the sum of R^2, refused by Coq."""
    pre = KE.program_name("compact")
    bad = _mutate_term(
        "compact",
        "(Map1 (PScale (CQ (2)%Z (1)%Z)) {a})",
        "(CQ (2)%Z (1)%Z)",
        "(CQ (1)%Z (1)%Z)",
        a=UK.node_by_term("compact", "(Map2 PMul {a} {b})", a=f"{pre}_ln1_o", b=f"{pre}_ln1_c"),
    )
    out = UK.check(bad, UK.Y1)(0.0)
    assert out.ok is False and "UniversalY1.v: Coq rejects it" in out.detail, out.detail


@needs_coq
@pytest.mark.kernel_mutants
def test_the_second_head_output_read_at_the_first_head_is_refused() -> None:
    """ln1.o2 reading head h (not h2): the square terms sum H O_h^2, not (sum_h O_h)^2, refused."""
    bad = _mutate(
        "compact",
        "ln1_o2_num_query_group",
        "(Z.add (Z.mul (0)%Z H) (Z.modulo (Z.sub x0 (0)%Z) H))",
        "(Z.add (Z.mul (0)%Z H) (Z.modulo (Z.div (Z.sub x0 (0)%Z) H) H))",
    )
    out = UK.check(bad, UK.Y1)(0.0)
    assert out.ok is False and "UniversalY1.v: Coq rejects it" in out.detail, out.detail


@needs_coq
@pytest.mark.kernel_mutants
def test_the_post_gate_read_at_the_pre_gate_is_refused() -> None:
    """The shallow variant's post gate read from the pre gate (index 1, not 2): refused by Coq."""
    bad = _mutate("shallow", "post_source", "(2)%Z) (0)%Z)", "(1)%Z) (0)%Z)")
    out = UK.check(bad, UK.Y1)(0.0)
    assert out.ok is False and "UniversalY1.v: Coq rejects it" in out.detail, out.detail


def test_the_ffn_act_statement_reads_w1_b1_norm2_and_the_gates_from_us_layout() -> None:
    """The x1 stage's premises without its out-grid query, norm2's weight and bias, W1 (D x F) and
    b1 where U's layout puts them, the activation the gates select; EncoderLayer's activation of
    the first linear layer of the FFN's input."""
    [(name, st)] = UK.ffn_act_theorems("compact")
    assert name == "U_compact_ffn_act_spec"
    assert "(p < " not in st and "(e < d_model P)%nat ->" not in st
    assert "nth 0 x (U_compact_gates_offset N D H K F + 2)%nat = (if norm P is PostNorm then 1 else 0)" in st
    assert "encodes x (U_compact_g2_offset N D H K F) 1 1 D (fun _ => norm2_w P)" in st
    assert "encodes x (U_compact_w1_offset N D H K F) 1 D F (fun _ => W1 P)" in st
    assert "encodes x (U_compact_b1_offset N D H K F) 1 1 F (fun _ => b1 P)" in st
    assert "(forall (j : 'I_D) (f : 'I_F), (d_model P <= j)%nat -> W1 P j f = 0)" in st
    assert "activation P v = if nth 0 x (U_compact_gates_offset N D H K F + 3)%nat != 0\n    then geluf v" in st
    assert "(q < (N * D * F)%nat)%nat -> (q %/ F %/ D)%nat = i -> (q %% F)%nat = f" in st
    assert "U_compact_ffn2_u_act (Z.of_nat N)" in st
    assert "match norm P with PreNorm => norm2 sqrtf P n" in st
    assert st.endswith("i j' * W1 P j' f + b1 P 0 f)")
    assert "Definition U_compact_w1_offset (N D H K F : nat) : nat :=" in UK.statement_text(UK.FFN_ACT)


@needs_coq
@pytest.mark.kernel_stages
def test_us_ffn_activation_is_the_layers() -> None:
    out = UK.check(stage=UK.FFN_ACT)(0.0)
    assert out.ok is True, out.detail
    assert out.kernel is not None and out.kernel.registered is False
    assert out.kernel.theorems == ("U_compact_ffn_act_spec", "U_shallow_ffn_act_spec")
    assert set(out.kernel.assumptions) <= UK.G.ALLOWED_AXIOMS and out.kernel.assumptions, out.kernel.assumptions


@needs_coq
@pytest.mark.kernel_mutants
def test_w1_read_transposed_is_refused() -> None:
    """ffn1.w1 reading W1 as if stored F x D (row f, column e): refused by Coq."""
    e_col, f_col = "(Z.modulo (Z.sub x0 (0)%Z) D)", "(Z.modulo (Z.div (Z.div (Z.sub x0 (0)%Z) D) H) F)"
    bad = _mutate(
        "compact", "ffn1_w1_source", f"(Z.add (Z.mul {e_col} F) {f_col})", f"(Z.add (Z.mul {f_col} D) {e_col})"
    )
    out = UK.check(bad, UK.FFN_ACT)(0.0)
    assert out.ok is False and "UniversalFfnAct.v: Coq rejects it" in out.detail, out.detail


@needs_coq
@pytest.mark.kernel_mutants
def test_pre_norm_ffn_reading_norm1s_bias_is_refused() -> None:
    """ffn1.beta reading norm1's bias when pre-norm too (not norm2's): refused by Coq."""
    pre = KE.program_name("shallow")
    bad = _mutate("shallow", "ffn1_beta", f"({pre}_ffn1_be2 N D H K F)", f"({pre}_ffn1_be1 N D H K F)")
    out = UK.check(bad, UK.FFN_ACT)(0.0)
    assert out.ok is False and "UniversalFfnAct.v: Coq rejects it" in out.detail, out.detail


@needs_coq
@pytest.mark.kernel_mutants
def test_the_gelu_gate_read_at_the_gelu_tanh_index_is_refused() -> None:
    """The gelu gate read at gelu_tanh's index (4, not 3): not the activation the layer declares."""
    bad = _mutate("compact", "gelu_source", "(3)%Z) (0)%Z)", "(4)%Z) (0)%Z)")
    out = UK.check(bad, UK.FFN_ACT)(0.0)
    assert out.ok is False and "UniversalFfnAct.v: Coq rejects it" in out.detail, out.detail


def test_the_ffn_out_statement_reads_w2_and_b2_from_us_layout() -> None:
    """The x1 and FFN-1 stages' premises, W2 (F x D, zero beyond dim_ff rows) and b2 where U's layout
    puts them; EncoderLayer's add_residual of x1 and ff_block of the FFN's input."""
    [(name, st)] = UK.ffn_out_theorems("compact")
    assert name == "U_compact_ffn_out_spec"
    assert "(p < (1 * N * D)%nat)%nat -> (p %/ D %% N)%nat = i -> (p %% D)%nat = e" in st
    assert "encodes x (U_compact_w1_offset N D H K F) 1 D F (fun _ => W1 P)" in st and "(q < " not in st
    assert "encodes x (U_compact_w2_offset N D H K F) 1 F D (fun _ => W2 P)" in st
    assert "encodes x (U_compact_b2_offset N D H K F) 1 1 D (fun _ => b2 P)" in st
    assert "(forall (f : 'I_F) (e : 'I_D), (dim_ff P <= f)%nat -> W2 P f e = 0)" in st
    assert "U_compact_out_R2 (Z.of_nat N)" in st
    assert "= add_residual P (if norm P is PostNorm then norm1 sqrtf P n" in st
    assert "(ff_block P n (match norm P with PreNorm => norm2 sqrtf P n" in st and st.endswith(" end)) i e")


@needs_coq
@pytest.mark.kernel_stages
def test_us_r2_is_x1_plus_the_layers_ff_block() -> None:
    out = UK.check(stage=UK.FFN_OUT)(0.0)
    assert out.ok is True, out.detail
    assert out.kernel is not None and out.kernel.registered is False
    assert out.kernel.theorems == ("U_compact_ffn_out_spec", "U_shallow_ffn_out_spec")
    assert set(out.kernel.assumptions) <= UK.G.ALLOWED_AXIOMS and out.kernel.assumptions, out.kernel.assumptions


@needs_coq
@pytest.mark.kernel_mutants
def test_w2_read_transposed_is_refused() -> None:
    """ffn2.w2 reading W2 as if stored D x F (row e, column f): refused by Coq."""
    f_col, e_col = "(Z.modulo (Z.sub x0 (0)%Z) F)", "(Z.modulo (Z.div (Z.sub x0 (0)%Z) F) D)"
    bad = _mutate(
        "compact", "ffn2_w2_source", f"(Z.add (Z.mul {f_col} D) {e_col})", f"(Z.add (Z.mul {e_col} F) {f_col})"
    )
    out = UK.check(bad, UK.FFN_OUT)(0.0)
    assert out.ok is False and "UniversalFfnOut.v: Coq rejects it" in out.detail, out.detail


@needs_coq
@pytest.mark.kernel_mutants
def test_x1_added_without_the_residual_gate_is_refused() -> None:
    """out.c2 adding out.Y1 whatever the residual gate: refused by Coq (a layer without residual)."""
    pre = KE.program_name("shallow")
    gated = UK.node_by_term("shallow", "(Map2 PMul {a} {b})", a=f"{pre}_residual", b=f"{pre}_out_Y1")
    bad = _mutate("shallow", "out_c2", f"({gated} N D H K F)", f"({pre}_out_Y1 N D H K F)")
    out = UK.check(bad, UK.FFN_OUT)(0.0)
    assert out.ok is False and "UniversalFfnOut.v: Coq rejects it" in out.detail, out.detail


def test_the_gram_act_statements_read_the_gram_grid_and_w2_from_us_layout() -> None:
    """The FFN-1 stage's premises with the query on U's grid ln2.gram_terms (row i, features f, f2):
    gram.u.act at f, gram.u2.act at f2; the Gram entry from W2 where U's layout puts it, over the
    grid gram.products, summed over all D columns."""
    [(act, st), (act2, st2), (gram, sg)] = UK.gram_act_theorems("compact")
    assert (act, act2, gram) == ("U_compact_gram_act_spec", "U_compact_gram_act2_spec", "U_compact_gram_spec")
    query = "(q < (N * F * F)%nat)%nat -> (q %/ F %/ F)%nat = i ->\n  (q %/ F %% F)%nat = f -> (q %% F)%nat = f2 ->"
    assert all(query in s for s in (st, st2, sg))
    assert "encodes x (U_compact_w1_offset N D H K F) 1 D F (fun _ => W1 P)" in st and "(p < " not in st
    assert "U_compact_gram_u_act (Z.of_nat N)" in st and st.endswith("i j' * W1 P j' f + b1 P 0 f)")
    assert "U_compact_gram_u2_act (Z.of_nat N)" in st2 and st2.endswith("i j' * W1 P j' f2 + b1 P 0 f2)")
    assert "encodes x (U_compact_w2_offset N D H K F) 1 F D (fun _ => W2 P)" in sg
    assert "((F * F * D)%nat <= size x)%nat" in sg and "U_compact_gram (Z.of_nat N)" in sg
    assert sg.endswith("= \\sum_(e < D) W2 P f e * W2 P f2 e")


@needs_coq
@pytest.mark.kernel_stages
def test_us_gram_grid_activations_and_gram_entry_are_the_layers() -> None:
    out = UK.check(stage=UK.GRAM_ACT)(0.0)
    assert out.ok is True, out.detail
    assert out.kernel is not None and out.kernel.registered is False
    names = ("gram_act_spec", "gram_act2_spec", "gram_spec")
    assert out.kernel.theorems == tuple(f"U_{v}_{n}" for v in ("compact", "shallow") for n in names)
    assert set(out.kernel.assumptions) <= UK.G.ALLOWED_AXIOMS and out.kernel.assumptions, out.kernel.assumptions


@needs_coq
@pytest.mark.kernel_mutants
def test_a_gram_entry_reading_w2_at_f_twice_is_refused() -> None:
    """gram.b reading W2 at row f (not f2): the diagonal sum of squares, refused by Coq."""
    bad = _mutate(
        "compact",
        "gram_b_source",
        "(Z.mul (Z.modulo (Z.div (Z.sub x0 (0)%Z) D) F) D)",
        "(Z.mul (Z.div (Z.div (Z.sub x0 (0)%Z) D) F) D)",
    )
    out = UK.check(bad, UK.GRAM_ACT)(0.0)
    assert out.ok is False and "UniversalGramAct.v: Coq rejects it" in out.detail, out.detail


@needs_coq
@pytest.mark.kernel_mutants
def test_the_second_activation_reading_b1_at_the_first_feature_is_refused() -> None:
    """gram.u2.b1 reading b1 at feature f (gram.u's), not f2: refused by Coq."""
    f2_col, f_col = "(Z.modulo (Z.sub x0 (0)%Z) F)", "(Z.modulo (Z.div (Z.sub x0 (0)%Z) F) F)"
    bad = _mutate("shallow", "gram_u2_b1_source", f2_col, f_col)
    out = UK.check(bad, UK.GRAM_ACT)(0.0)
    assert out.ok is False and "UniversalGramAct.v: Coq rejects it" in out.detail, out.detail


def test_the_y2_statement_reads_the_post_gate_norm2_and_the_padding_premises_from_us_layout() -> None:
    """The R2 stage's premises, norm1's weight and bias, b2 and W2 zero beyond d_model columns, a
    feature at all, the grids gram.products and ln2.gram_terms inside x; EncoderLayer's norm2 of X2
    when post-norm, else X2."""
    [(name, st)] = UK.y2_theorems("compact")
    assert name == "U_compact_y2_spec"
    assert "(p < (1 * N * D)%nat)%nat -> (p %/ D %% N)%nat = i -> (p %% D)%nat = e" in st
    assert "nth 0 x (U_compact_gates_offset N D H K F + 2)%nat = (if norm P is PostNorm then 1 else 0)" in st
    assert "encodes x (U_compact_g2_offset N D H K F) 1 1 D (fun _ => norm2_w P)" in st
    assert "encodes x (U_compact_w2_offset N D H K F) 1 F D (fun _ => W2 P)" in st
    assert "(forall e : 'I_D, (d_model P <= e)%nat -> norm1_w P 0 e = 0)" in st
    assert "(forall e : 'I_D, (d_model P <= e)%nat -> norm1_b P 0 e = 0)" in st
    assert "(forall e : 'I_D, (d_model P <= e)%nat -> b2 P 0 e = 0)" in st
    assert "(forall (f : 'I_F) (e : 'I_D), (d_model P <= e)%nat -> W2 P f e = 0)" in st
    assert "(0 < F)%nat ->" in st
    assert "((F * F * D)%nat <= size x)%nat" in st and "((N * F * F)%nat <= size x)%nat" in st
    assert "U_compact_out_Y2 (Z.of_nat N)" in st
    assert "= (if norm P is PostNorm then norm2 sqrtf P n (add_residual P (if norm P is PostNorm" in st
    assert st.endswith(" end)))) i e")


@needs_coq
@pytest.mark.kernel_stages
def test_us_y2_is_the_layers_output_before_the_write() -> None:
    out = UK.check(stage=UK.Y2)(0.0)
    assert out.ok is True, out.detail
    assert out.kernel is not None and out.kernel.registered is False
    assert out.kernel.theorems == ("U_compact_y2_spec", "U_shallow_y2_spec")
    assert set(out.kernel.assumptions) <= UK.G.ALLOWED_AXIOMS and out.kernel.assumptions, out.kernel.assumptions


@needs_coq
@pytest.mark.kernel_mutants
def test_layer_norm_2s_square_terms_with_the_cross_term_counted_once_are_refused() -> None:
    """ln2.sq_terms scaling c2 by 1, not 2, in 2 c2 ffn2.prod: not R2's second moment, refused by Coq."""
    pre = KE.program_name("compact")
    node = UK.node_by_term("compact", "(Map1 (PScale (CQ (2)%Z (1)%Z)) {a})", a=f"{pre}_ffn2_c2")
    bad = _mutate("compact", node.removeprefix(f"{pre}_"), "(CQ (2)%Z (1)%Z)", "(CQ (1)%Z (1)%Z)")
    out = UK.check(bad, UK.Y2)(0.0)
    assert out.ok is False and "UniversalY2.v: Coq rejects it" in out.detail, out.detail


@needs_coq
@pytest.mark.kernel_mutants
def test_layer_norm_2_adding_norm1s_bias_is_refused() -> None:
    """out.Y2 adding out.be1 (norm1's bias) where norm2's belongs: refused by Coq."""
    pre = KE.program_name("shallow")
    node = UK.node_by_term("shallow", "(Map2 PAdd {a} {b})", a="*", b=f"{pre}_out_be2")
    bad = _mutate("shallow", node.removeprefix(f"{pre}_"), f"({pre}_out_be2 N D H K F)", f"({pre}_out_be1 N D H K F)")
    out = UK.check(bad, UK.Y2)(0.0)
    assert out.ok is False and "UniversalY2.v: Coq rejects it" in out.detail, out.detail


def test_the_layer_statement_reads_the_ffn_gate_and_the_masks_n_and_d_from_us_layout() -> None:
    """FFN_OUT's premises but i < n and e < d_model (every query of the out grid), the ffn gate where
    U's layout puts it, the layers covered; U's masks compare the row with the header's n and the
    column with the header's d (the statement's premises on those tokens)."""
    [(spec, st), (of_y2, given), (out_spec, at_x)] = UK.layer_theorems("compact")
    assert (spec, of_y2, out_spec) == ("U_compact_layer_spec", "U_compact_layer_of_y2", "U_compact_layer_out_spec")
    ffn = "nth 0 x (U_compact_gates_offset N D H K F + 5)%nat = (if has_ffn P then 1 else 0)"
    for s in (st, given, at_x):
        assert ffn in s and "nth 0 x (N * D)%nat = n%:R" in s and "nth 0 x ((N * D)%nat + 1)%nat = (d_model P)%:R" in s
        assert "\n  (i < n)%nat -> (e < d_model P)%nat ->\n" not in s
        assert s.endswith("  = encoder_layer (@expR R) sqrtf P M n X i e")
    assert "(p < (1 * N * D)%nat)%nat -> (p %/ D %% N)%nat = i -> (p %% D)%nat = e" in st
    assert "(norm P = PostNorm -> ~~ has_ffn P)" in st and "(norm P = PostNorm -> ~~ has_ffn P)" in at_x
    assert "U_compact_Y (Z.of_nat N)" in st and "~~ has_ffn P" not in given
    assert "(has_ffn P -> (i < n)%nat -> (e < d_model P)%nat ->\n    eval (@expR R)" in given
    assert "U_compact_out_Y2 (Z.of_nat N)" in given
    assert "= (if norm P is PostNorm then norm2 sqrtf P n (add_residual" in given
    sizes = "(Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)"
    assert "(p < " not in at_x and f"(U_compact {sizes}) x (pos 0 N D 0 i e)" in at_x
    text = KE.export_universal("compact").text
    rows = UK.node_by_term("compact", "(Map2 PLt (OfIdx {a}) {b})", a="U_compact_mask_rows_coord", b="U_compact_n")
    cols = UK.node_by_term("compact", "(Map2 PLt (OfIdx {a}) {b})", a="U_compact_mask_cols_coord", b="U_compact_d")
    assert f"(Map2 PMul ({rows} N D H K F) (OfIdx (U_compact_mask_rows_inside N D H K F)))" in text
    assert f"(Map2 PMul ({cols} N D H K F) (OfIdx (U_compact_mask_cols_inside N D H K F)))" in text
    assert UK.node_by_term(
        "shallow", "(Map3 PWhere {a} {b} {c})", a="U_shallow_ffn", b="U_shallow_out_Y2", c="U_shallow_out_Y1"
    )


@needs_coq
@pytest.mark.kernel_stages
def test_us_output_is_the_encoder_layer_but_post_norm_with_an_ffn() -> None:
    out = UK.check(stage=UK.LAYER)(0.0)
    assert out.ok is True, out.detail
    assert out.kernel is not None and out.kernel.registered is False
    assert "except post-norm with an FFN (not covered" in out.detail
    assert out.kernel.theorems == tuple(
        f"U_{v}_layer_{t}" for v in ("compact", "shallow") for t in ("spec", "of_y2", "out_spec")
    )
    assert set(out.kernel.assumptions) <= UK.G.ALLOWED_AXIOMS and out.kernel.assumptions, out.kernel.assumptions


@needs_coq
@pytest.mark.kernel_mutants
def test_the_row_mask_compared_with_d_is_refused() -> None:
    """mask.rows testing i < d (the header's d) instead of i < n: refused by Coq."""
    pre = KE.program_name("compact")
    rows = UK.node_by_term("compact", "(Map2 PLt (OfIdx {a}) {b})", a=f"{pre}_mask_rows_coord", b=f"{pre}_n")
    bad = _mutate("compact", rows[len(pre) + 1 :], f"({pre}_n N D H K F)", f"({pre}_d N D H K F)")
    out = UK.check(bad, UK.LAYER)(0.0)
    assert out.ok is False and "UniversalLayer.v: Coq rejects it" in out.detail, out.detail


@needs_coq
@pytest.mark.kernel_mutants
def test_y_reading_out_y2_when_the_ffn_gate_is_0_is_refused() -> None:
    """Y = where(ffn, out.Y2, out.Y2): a layer without an FFN gets out.Y2, not x1; refused by Coq."""
    pre = KE.program_name("shallow")
    y = UK.node_by_term("shallow", "(Map3 PWhere {a} {b} {c})", a=f"{pre}_ffn", b=f"{pre}_out_Y2", c=f"{pre}_out_Y1")
    bad = _mutate("shallow", y[len(pre) + 1 :], f"({pre}_out_Y1 N D H K F)", f"({pre}_out_Y2 N D H K F)")
    out = UK.check(bad, UK.LAYER)(0.0)
    assert out.ok is False and "UniversalLayer.v: Coq rejects it" in out.detail, out.detail


@needs_coq
@pytest.mark.kernel_mutants
def test_a_column_mask_one_position_off_is_refused() -> None:
    """mask.cols reading the column of position p - 1: refused by Coq."""
    bad = _mutate("compact", "mask_cols_coord", "(Z.modulo (Z.sub x0 (0)%Z) D)", "(Z.modulo (Z.sub x0 (1)%Z) D)")
    out = UK.check(bad, UK.LAYER)(0.0)
    assert out.ok is False and "UniversalLayer.v: Coq rejects it" in out.detail, out.detail


def test_the_theorem6_statement_is_every_layer_over_the_two_stages_premises() -> None:
    """Theorem 6's statement: no premise restricting the layer (the LAYER stage's post-norm-without-
    FFN premise is gone), LayerNorm 2's padding premises and 0 < F added, every query of the out
    grid (no i < n), and node U at X's entry; both variants."""
    for v in ("compact", "shallow"):
        pre = KE.program_name(v)
        [(name, st), (name_out, st_out)] = UK.theorem6_theorems(v)
        assert (name, name_out) == (f"{pre}_theorem6", f"{pre}_theorem6_out")
        [(_, layer_spec), _, _] = UK.layer_theorems(v)
        assert "PostNorm -> ~~ has_ffn P" in layer_spec and "has_ffn P" in st and "~~ has_ffn" not in st
        for s in (st, st_out):
            assert "(0 < F)%nat ->" in s and "(d_model P <= e)%nat -> W2 P f e = 0" in s
            assert "(i < n)%nat ->" not in s and s.endswith("= encoder_layer (@expR R) sqrtf P M n X i e")
        assert f"({pre}_Y (Z.of_nat N)" in st and f"({pre} (Z.of_nat N)" in st_out and "(pos 0 N D 0 i e)" in st_out


@needs_coq
def test_us_whole_layer_is_the_encoder_layer_theorem_6() -> None:
    """Theorem 6 (and 9: H a variable) in the kernel, both variants, every capacity, every layer."""
    out = UK.check(stage=UK.THEOREM6)(0.0)
    assert out.ok is True, out.detail
    assert out.kernel is not None and out.kernel.registered is True and out.kernel.sizes == KE.SIZES
    assert out.kernel.theorems == tuple(f"U_{v}_theorem6{t}" for v in ("compact", "shallow") for t in ("", "_out"))
    assert set(out.kernel.assumptions) == UK.G.ALLOWED_AXIOMS & set(out.kernel.assumptions)
    assert out.kernel.assumptions and "(Theorem 6)" in out.detail and "not the whole layer" not in out.detail


@needs_coq
def test_theorem_6_fails_on_a_node_reading_one_position_off() -> None:
    """The row mean's key group shifted by one position: Theorem 6's build stops at the first stage."""
    bad = _mutate("compact", "ln_x_mean_key_group", "(Z.div (Z.sub x0 (0)%Z) D)", "(Z.div (Z.sub x0 (1)%Z) D)")
    out = UK.check(bad, UK.THEOREM6)(0.0)
    assert out.ok is False and "UniversalRowMean.v: Coq rejects it" in out.detail, out.detail


@needs_coq
def test_theorem_6_fails_on_a_wrong_layer_norm_eps() -> None:
    """eps gathered from the scale gate."""
    bad = _mutate("compact", "eps_source", "(7)%Z) (0)%Z)", "(6)%Z) (0)%Z)")
    out = UK.check(bad, UK.THEOREM6)(0.0)
    assert out.ok is False and "UniversalLayerNorm1.v: Coq rejects it" in out.detail, out.detail


@needs_coq
def test_theorem_6_fails_on_a_softmax_whose_max_shift_does_not_cancel() -> None:
    """Each key shifted by its own logit, not the row's max (uniform weights)."""
    pre = KE.program_name("compact")
    bad = _mutate_term(
        "compact",
        "(Map2 PSub {a} {b})",
        f"({pre}_attn_max N D H K F)",
        f"({pre}_attn_logit N D H K F)",
        a=f"{pre}_attn_logit",
        b=f"{pre}_attn_max",
    )
    out = UK.check(bad, UK.THEOREM6)(0.0)
    assert out.ok is False and "UniversalSoftmax.v: Coq rejects it" in out.detail, out.detail


def test_stacks_are_one_kernel_row_of_the_frame_construction() -> None:
    """Stacks by looping: a kernel row of simulator-frame (stacks, depth by looping), in the default
    run on the kernel's default budget, so it starts after Theorem 6's and the lemmas' kernel rows
    (its cold build waits on Theorem 6's libraries: started second, it would hold a worker idle)."""
    from attnsim.universal import obligations as UO

    *_, whole, _, stack = list(UK.universal_kernel_obligations())
    assert stack.id == UK.STACK_ID == "simulator-frame/kernel/UniversalStack" and stack.method == "kernel"
    assert (stack.construction, stack.paper_ref) == (UO.FRAME, UO.FRAME_REF) and not stack.deep
    assert stack.tools == ("coqc",) and stack.budget is None and whole.budget is not None
    assert UK.STACK.requires == (UK.THEOREM6,) and UK.STACK.result == UO.FRAME_REF


@pytest.mark.parametrize("variant", ["compact", "shallow"])
def test_the_stack_statement_keeps_theorem_6s_premises_on_every_record(variant: str) -> None:
    """Each record's premises are Theorem 6's at X's entries but X's two, read on the sequence seen t
    records on; X's two are stated once, on layer 0's d_model; the loop is U's own pass."""
    pre = KE.program_name(variant)
    on_x, pad, rest = UK._one_layer_premises(variant)
    [_, (_, out)] = UK.theorem6_theorems(variant)
    body = out.split(",\n", 1)[1].splitlines()[:-2]  # the premises: no binders, no conclusion
    kept = body
    assert [line for line in kept if f"{line}\n" not in rest] == [on_x.rstrip("\n"), pad.rstrip("\n")]
    assert not re.search(r"\bX\b", rest)
    [(name, st)] = UK.stack_theorems(variant)
    assert name == f"{pre}_stack" and on_x in st and pad.replace("d_model P", "d_model (Ps 0)") in st
    assert f"{pre}_layer_premises R sqrtf geluf gelu_tanhf N D H K F (Ps t) M n ({pre}_view R N D H K F x t)" in st
    assert st.endswith(
        f"nth 0 (ssrnat.iter m ({pre}_pass R sqrtf geluf gelu_tanhf N D H K F) x) (pos 0 N D 0 i e)\n"
        "  = encoder_stack R sqrtf N D H K F Ps M n m X i e"
    )
    defs = "\n".join(UK.stack_definitions(variant))
    assert f"mkseq (eval (@expR R) sqrtf geluf gelu_tanhf ({pre} (Z.of_nat N)" in defs and rest in defs


@needs_coq
def test_looping_u_is_the_m_layer_encoder() -> None:
    """Stacks in the kernel, both variants, every capacity, every m and every layer of each record."""
    out = UK.check(stage=UK.STACK)(0.0)
    assert out.ok is True, out.detail
    assert out.kernel is not None and out.kernel.registered is True and out.kernel.sizes == (*KE.SIZES, "m")
    assert out.kernel.theorems == ("U_compact_stack", "U_shallow_stack")
    assert set(out.kernel.assumptions) == UK.G.ALLOWED_AXIOMS & set(out.kernel.assumptions)
    assert "(stacks (depth by looping))" in out.detail


@needs_coq
@pytest.mark.kernel_mutants
def test_a_record_queue_moved_one_past_the_next_record_is_refused() -> None:
    """The queue reading position p + S + 1: pass t would read record t shifted by t positions."""
    bad = _mutate("compact", "queue_source", "(Z.add x0 (Z.sub", "(Z.add (Z.add x0 1) (Z.sub")
    out = UK.check(bad, UK.STACK)(0.0)
    assert out.ok is False and "UniversalStack.v: Coq rejects it" in out.detail, out.detail
