(** Theorem 6 in the kernel, seventh stage (compact U): the attention logits.  U's own exported
    node [attn.logit] (D times the mean of Q.biased * K.biased over the K columns of head t, times
    the [scale] gate, plus the float mask read at the mask_add block), at every query of the
    attention grid (head t, query row i, key j), equals EncoderLayer.v's [scores P M n Z t i j]
    (scale * q_i . k_j + additive i j, the float mask added after scaling), Z = norm1 X when
    pre-norm, else X, for rows i, j < n and every capacity N, D, H, K, F (generated statement:
    UniversalScoresStatement.v).  The Q and K stages are its lemmas, applied to the layer with
    d_head widened to K ([wide]): U sums over all K columns, the layer over d_head; Wq and bq zero
    beyond d_head (U's input map pads them so) make the two sums equal.  The shallow variant has no
    Q or K node (its scores come straight from X in one spread product): not stated here. *)
From mathcomp Require Import all_ssreflect all_algebra.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas UniversalLemmas UniversalCompact UniversalShallow EncoderLayer.
From Attnsim Require Import UniversalRowMean UniversalRowStats UniversalLayerNorm1Statement UniversalLayerNorm1.
From Attnsim Require Import UniversalQProjStatement UniversalQProj UniversalKProjStatement UniversalKProj.
From Attnsim Require Import UniversalVProjStatement UniversalScoresStatement.
Import GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Lemma compact_scores_sel (R : realFieldType) (expf sqrtf geluf gelu_tanhf : R -> R) (N D H K F : Z)
  (x : seq R) (q k : nat) :
  seval expf sqrtf geluf gelu_tanhf (U_compact_scores_sum N D H K F) x q k =
  ((if ((0 <=? Z.of_nat k) && (Z.of_nat k <? H * N * N * K))%Z then Z.of_nat k / K else (-1))
   =? (if ((0 <=? Z.of_nat q) && (Z.of_nat q <? H * N * N * D))%Z then Z.of_nat q / D else (-2)))%Z.
Proof.
have -> : seval expf sqrtf geluf gelu_tanhf (U_compact_scores_sum N D H K F) x q k =
  (iif (iand (ile 0 (Z.of_nat k)) (ilt (Z.of_nat k) (0 + H * N * N * K)))
     (((0 * H + (Z.of_nat k - 0) / K / N / N) * N + ((Z.of_nat k - 0) / K / N) mod N) * N
        + ((Z.of_nat k - 0) / K) mod N) (-1)
   =? iif (iand (ile 0 (Z.of_nat q)) (ilt (Z.of_nat q) (0 + H * N * N * D)))
     (((0 * H + (Z.of_nat q - 0) / D / N / N) * N + ((Z.of_nat q - 0) / D / N) mod N) * N
        + ((Z.of_nat q - 0) / D) mod N) (-2))%Z by [].
by rewrite !iif_range !Z.sub_0_r !Z.mul_0_l !Z.add_0_l !Zdivmod_id.
Qed.

Section Scores.
Local Open Scope ring_scope.

(** The layer with d_head widened to the capacity K: everything else as in [P]. *)
Definition wide (R : realFieldType) (D H K F : nat) (P : params R D H K F) : params R D H K F :=
  @Params R D H K F (d_model P) (nhead P) K (dim_ff P) (Wq P) (Wk P) (Wv P) (bq P) (bk P) (bv P)
    (Wo P) (bo P) (W1 P) (b1 P) (W2 P) (b2 P) (norm1_w P) (norm1_b P) (norm2_w P) (norm2_b P)
    (eps P) (scale P) (activation P) (residual P) (norm P) (has_ffn P).

(** Projections of the widened layer at any column c < K: the unblocked sum of [P]. *)
Lemma proj_wide (R : realFieldType) (sqrtf : R -> R) (N D H K F : nat) (P : params R D H K F)
  (W : 'I_H -> 'M[R]_(D, K)) (b : 'I_H -> 'rV[R]_K) (X : 'M[R]_(N, D)) n t (i : 'I_N) (c : 'I_K) :
  (i < n)%nat ->
  proj (wide P) n W b (if norm (wide P) is PreNorm then norm1 sqrtf (wide P) n X else X) t i c
  = \sum_(j < D | (j < d_model P)%nat) (if norm P is PreNorm then norm1 sqrtf P n X else X) i j * W t j c
    + b t 0 c.
Proof.
move=> Hin; rewrite /proj /block mxE.
have -> : (c < d_head (wide P))%nat = true := ltn_ord c.
by rewrite Hin mxE.
Qed.

Theorem U_compact_scores_spec : U_compact_scores_spec_statement.
Proof.
move=> R expf sqrtf geluf gelu_tanhf N D H K F P M X x q i t j n HX Hd He Hg Hb Hpre Hsc Hm.
move=> Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hq Ht Hi Hj Hin Hjn.
have HD : (0 < D)%nat by apply: leq_trans HdD.
have HN : (0 < N)%nat := leq_ltn_trans (leq0n i) (ltn_ord i).
set Z := (if norm P is PreNorm then norm1 sqrtf P n X else X).
set G := ((t * N + i) * N + j)%nat.
have HqG : (q %/ D = G)%nat by rewrite /G -Hj -Hi -Ht -!divn_eq.
(* the specification's side: the unblocked sums of the projections, scaled, plus the mask *)
have -> : scores P M n Z t i j
  = scale P * (\sum_(c < K | (c < d_head P)%nat)
                 (\sum_(l < D | (l < d_model P)%nat) Z i l * Wq P t l c + bq P t 0 c)
               * (\sum_(l < D | (l < d_model P)%nat) Z j l * Wk P t l c + bk P t 0 c))
    + additive M i j.
  rewrite /scores /block !mxE Hin Hjn /=; congr (_ * _ + _); apply: eq_bigr => c Hc.
  by rewrite /proj /block !mxE Hin Hjn Hc.
rewrite /U_compact_attn_logit eval_add /U_compact_n102 eval_mul.
rewrite /U_compact_scores eval_scale cst_nat /U_compact_scores_mean.
(* the scale gate and the float mask *)
have [Hgs _] := encodes_row (Ordinal HD) Hg.
have Hqb : ((0 <=? Z.of_nat q) && (Z.of_nat q <? 0 + Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hq; lia.
have -> : eval expf sqrtf geluf gelu_tanhf
    (U_compact_scale (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)) x q = scale P.
  rewrite /U_compact_scale /U_compact_scale_gather /U_compact_scale_source /U_compact_indices /U_compact_tokens.
  rewrite (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x q (U_compact_gates_offset N D H K F + 6)); last first.
  - clear -Hgs; move: Hgs; rewrite /U_compact_g1_offset /U_compact_gates_offset.
    set a := (N * D + _ + _ + _)%nat; move=> Hgs; apply: leq_ltn_trans Hgs; rewrite -!addnA leq_add2l; lia.
  - by cbv beta; rewrite /U_compact_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
  by rewrite eval_tokens Hsc.
have -> : eval expf sqrtf geluf gelu_tanhf
    (U_compact_mask_add (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)) x q = additive M i j.
  have [HmL HmV] := Hm ord0 i j.
  rewrite /U_compact_mask_add /U_compact_mask_add_gather /U_compact_mask_add_source /U_compact_indices.
  rewrite /U_compact_tokens (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x q (pos (U_compact_mask_add_offset N D H K F) N N 0 i j)) //.
  cbv beta; rewrite iif_range Hqb Z.sub_0_r !zdiv_nat !zmod_nat Hi Hj.
  by rewrite /pos /U_compact_mask_add_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
rewrite mulrC; congr (_ * _ + _).
(* the scores node: K times the mean over the K columns of head t's (query i, key j) group *)
case: (posnP K) => [HK0|HK].
  have -> : K%:R = 0 :> R by rewrite HK0.
  by rewrite mul0r big1 // => -[c Hc]; exfalso; move: Hc; rewrite HK0.
have Hsel : forall k, (k < size x)%nat ->
    seval expf sqrtf geluf gelu_tanhf
      (U_compact_scores_sum (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)) x q k
    = (G * K <= k < G * K + K)%nat.
  move=> k _; rewrite compact_scores_sel.
  have -> : ((0 <=? Z.of_nat q) && (Z.of_nat q <? Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat D))%Z = true.
    by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hq; lia.
  rewrite (zdiv_nat q D) HqG.
  have -> : (Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat K)%Z = Z.of_nat (H * N * N * K).
    by rewrite !Nat2Z.inj_mul.
  apply: row_group_eqb => //.
  have HGlt : (G < H * N * N)%nat.
    by rewrite -HqG ltn_divLR // -!mulnA; move: Hq; rewrite !mulnA.
  by rewrite -mulSnr leq_mul2r HGlt orbT.
have HGK : (G * K + K <= H * N * N * K)%nat.
  have HGlt : (G < H * N * N)%nat by rewrite -HqG ltn_divLR // -!mulnA; move: Hq; rewrite !mulnA.
  by rewrite -mulSnr leq_mul2r HGlt orbT.
rewrite (@agg_sum _ expf sqrtf geluf gelu_tanhf _ _ x q (G * K) K HK Hsel); last by apply: leq_trans HLK.
rewrite [RHS]big_mkcond; apply: eq_bigr => c _.
have Hk : (G * K + c < H * N * N * K)%nat by apply: leq_trans HGK; rewrite ltn_add2l ltn_ord.
have HkK : ((G * K + c) %/ K = G)%nat by rewrite divnMDl // divn_small ?addn0.
have Hkc : ((G * K + c) %% K = c)%nat by rewrite modnMDl modn_small.
have HGN : (G %/ N = t * N + i)%nat by rewrite /G divnMDl // divn_small ?addn0.
have HGj : (G %% N = j)%nat by rewrite /G modnMDl modn_small.
have HtN : ((t * N + i) %/ N = t)%nat by rewrite divnMDl // divn_small ?addn0.
have HiN : ((t * N + i) %% N = i)%nat by rewrite modnMDl modn_small.
have Ht' : ((G * K + c) %/ K %/ N %/ N = t)%nat by rewrite HkK HGN HtN.
have Hi' : ((G * K + c) %/ K %/ N %% N = i)%nat by rewrite HkK HGN HiN.
have Hj' : ((G * K + c) %/ K %% N = j)%nat by rewrite HkK HGj.
have Hk' : (G * K + c < H * N * N * K)%nat := Hk.
rewrite /U_compact_scores_prod eval_mul.
have EQ := @U_compact_q_spec R expf sqrtf geluf gelu_tanhf N D H K F (wide P) X x (G * K + c)%nat i t c n
  HX Hd He Hg Hb Hpre Hwq Hbq HL Hwqpad Hd0 HdD (Hpad i) Hk' Ht' Hi' Hkc Hin (ltn_ord c).
have EK := @U_compact_k_spec R expf sqrtf geluf gelu_tanhf N D H K F (wide P) X x (G * K + c)%nat j t c n
  HX Hd He Hg Hb Hpre Hwk Hbk HL Hwkpad Hd0 HdD (Hpad j) Hk' Ht' Hj' Hkc Hjn (ltn_ord c).
rewrite EQ EK !proj_wide //.
case: (ltnP c (d_head P)) => Hc //.
rewrite big1 ?add0r ?Hbqk ?mul0r //.
by move=> l _; rewrite Hwqk // mulr0.
Qed.
End Scores.
