(** Theorem 6 in the kernel, fifth stage (compact U): the K projection.  U's own exported node
    [K.biased], at every query of the scores grid (head t, key token i, column c), equals
    EncoderLayer.v's [proj P n (Wk P) (bk P) Z t i c], Z = norm1 X when pre-norm, else X, for every
    capacity; the K weights are the matrices [H, 2 H) of the wqkv block (generated statement:
    UniversalKProjStatement.v). *)
From mathcomp Require Import all_ssreflect all_algebra.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas UniversalLemmas UniversalKProjNodes EncoderLayer.
From Attnsim Require Import UniversalRowMean UniversalRowStats UniversalLayerNorm1Statement UniversalLayerNorm1.
From Attnsim Require Import UniversalQProjStatement UniversalQProj UniversalKProjStatement.
Import GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Lemma compact_k_sel (R : realFieldType) (expf sqrtf geluf gelu_tanhf : R -> R) (N D H K F : Z)
  (x : seq R) (q k : nat) :
  seval expf sqrtf geluf gelu_tanhf (U_compact_K_sum N D H K F) x q k =
  ((if ((0 <=? Z.of_nat k) && (Z.of_nat k <? 3 * H * N * K * D))%Z then Z.of_nat k / D else (-1))
   =? (if ((0 <=? Z.of_nat q) && (Z.of_nat q <? H * N * N * K))%Z
       then ((H + Z.of_nat q / K / N / N) * N + (Z.of_nat q / K) mod N) * K + Z.of_nat q mod K else (-2)))%Z.
Proof.
have -> : seval expf sqrtf geluf gelu_tanhf (U_compact_K_sum N D H K F) x q k =
  (iif (iand (ile 0 (Z.of_nat k)) (ilt (Z.of_nat k) (0 + 3 * H * N * K * D)))
     ((((0 * 3 + (Z.of_nat k - 0) / D / K / N / H) * H + ((Z.of_nat k - 0) / D / K / N) mod H) * N
        + ((Z.of_nat k - 0) / D / K) mod N) * K + ((Z.of_nat k - 0) / D) mod K) (-1)
   =? iif (iand (ile 0 (Z.of_nat q)) (ilt (Z.of_nat q) (0 + H * N * N * K)))
     ((((0 * 3 + 1) * H + (Z.of_nat q - 0) / K / N / N) * N + ((Z.of_nat q - 0) / K) mod N) * K
        + (Z.of_nat q - 0) mod K) (-2))%Z by [].
by rewrite !iif_range !Z.sub_0_r !Z.add_0_l !Zdivmod_id Z.mul_1_l.
Qed.

Section K.
Local Open Scope ring_scope.

Theorem U_compact_k_spec : U_compact_k_spec_statement.
Proof.
move=> R expf sqrtf geluf gelu_tanhf N D H K F P X x q i t c n HX Hd He Hg Hb Hpre Hw Hbq HL.
move=> Hwpad Hd0 HdD Hpad Hq Ht Hi Hc Hin Hck.
have HD : (0 < D)%nat by apply: leq_trans HdD.
have HK : (0 < K)%nat := leq_ltn_trans (leq0n c) (ltn_ord c).
have HN : (0 < N)%nat := leq_ltn_trans (leq0n i) (ltn_ord i).
set G := (((H + t) * N + i) * K + c)%nat.
have h1 : ((H + t) * N + i < 3 * H * N)%nat.
  apply: (@leq_trans ((H + t).+1 * N)); first by rewrite mulSnr ltn_add2l ltn_ord.
  rewrite leq_mul2r; apply/orP; right; have := ltn_ord t; clear; lia.
have HGlt : (G < 3 * H * N * K)%nat.
  apply: (@leq_trans (((H + t) * N + i).+1 * K)); first by rewrite mulSnr ltn_add2l ltn_ord.
  by rewrite leq_mul2r h1 orbT.
have HGD : (G * D + D <= 3 * H * N * K * D)%nat by rewrite -mulSnr leq_mul2r HGlt orbT.
(* the specification's side *)
have -> : proj P n (Wk P) (bk P) (if norm P is PreNorm then norm1 sqrtf P n X else X) t i c
  = \sum_(j < D | (j < d_model P)%nat) (if norm P is PreNorm then norm1 sqrtf P n X else X) i j * Wk P t j c
    + bk P t 0 c by rewrite /proj /block !mxE Hin Hck.
rewrite /U_compact_K_biased eval_add /U_compact_Q eval_scale cst_nat /U_compact_K_mean.
have EqG : (((Z.of_nat H + Z.of_nat q / Z.of_nat K / Z.of_nat N / Z.of_nat N) * Z.of_nat N
              + (Z.of_nat q / Z.of_nat K) mod Z.of_nat N) * Z.of_nat K + Z.of_nat q mod Z.of_nat K)%Z
            = Z.of_nat G.
  rewrite !zdiv_nat !zmod_nat Ht Hi Hc /G !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
have Hsel : forall k, (k < size x)%nat ->
    seval expf sqrtf geluf gelu_tanhf
      (U_compact_K_sum (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)) x q k
    = (G * D <= k < G * D + D)%nat.
  move=> k _; rewrite compact_k_sel.
  have -> : ((0 <=? Z.of_nat q) && (Z.of_nat q <? Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat K))%Z = true.
    by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hq; lia.
  rewrite EqG.
  have -> : (3 * Z.of_nat H * Z.of_nat N * Z.of_nat K * Z.of_nat D)%Z = Z.of_nat (3 * H * N * K * D).
    by rewrite !Nat2Z.inj_mul.
  exact: row_group_eqb.
rewrite (@agg_sum _ expf sqrtf geluf gelu_tanhf _ _ x q (G * D) D HD Hsel); last by apply: leq_trans HL.
have Hqb : ((0 <=? Z.of_nat q) && (Z.of_nat q <? 0 + Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat K))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hq; lia.
congr (_ + _).
  rewrite [RHS]big_mkcond; apply: eq_bigr => l _.
  have Hk : (G * D + l < 3 * H * N * K * D)%nat by apply: leq_trans HGD; rewrite ltn_add2l ltn_ord.
  have HkD : ((G * D + l) %/ D = G)%nat by rewrite divnMDl // divn_small ?addn0.
  have Hkl : ((G * D + l) %% D = l)%nat by rewrite modnMDl modn_small.
  have HGK : (G %/ K = (H + t) * N + i)%nat by rewrite /G divnMDl // divn_small ?addn0.
  have HGc : (G %% K = c)%nat by rewrite /G modnMDl modn_small.
  have HtN : (((H + t) * N + i) %/ N = H + t)%nat by rewrite divnMDl // divn_small ?addn0.
  have HiN : (((H + t) * N + i) %% N = i)%nat by rewrite modnMDl modn_small.
  have Hki : ((G * D + l) %/ D %/ K %% N = i)%nat by rewrite HkD HGK HiN.
  rewrite /U_compact_proj_prod eval_mul.
  have [HwL HwV] := Hw t l c.
  rewrite /U_compact_proj_w /U_compact_proj_w_gather /U_compact_proj_w_source /U_compact_indices.
  rewrite /U_compact_tokens.
  rewrite (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x _ (pos (U_compact_wqkv_offset N D H K F + H * D * K) D K t l c)) //; last first.
    cbv beta; rewrite iif_range.
    have -> : ((0 <=? Z.of_nat (G * D + l)) &&
               (Z.of_nat (G * D + l) <? 0 + 3 * Z.of_nat H * Z.of_nat N * Z.of_nat K * Z.of_nat D))%Z = true.
      by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia.
    rewrite Z.sub_0_r Zdivmod_id !zdiv_nat !zmod_nat HkD Hkl HGK HGc HtN.
    rewrite /pos /U_compact_wqkv_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
  rewrite eval_tokens HwV.
  case: (ltnP l (d_model P)) => Hld; last by rewrite (Hwpad t l c Hld) mulr0.
  rewrite /U_compact_proj_z eval_where.
  rewrite /U_compact_pre /U_compact_pre_gather /U_compact_pre_source /U_compact_indices /U_compact_tokens.
  have [Hgs _] := encodes_row l Hg.
  rewrite (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x _ (U_compact_gates_offset N D H K F + 1)); last first.
  - clear -Hgs; move: Hgs; rewrite /U_compact_g1_offset /U_compact_gates_offset.
    set a := (N * D + _ + _ + _)%nat; move=> Hgs; apply: leq_ltn_trans Hgs; rewrite -!addnA leq_add2l; lia.
  - by cbv beta; rewrite /U_compact_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
  rewrite eval_tokens Hpre.
  have Ex : eval expf sqrtf geluf gelu_tanhf
      (U_compact_proj_x (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)) x (G * D + l) = X i l.
    rewrite /U_compact_proj_x (read_x HX Hk Hki Hkl) // => k'.
    by rewrite compact_x_sel !Nat2Z.inj_mul.
  have El := U_compact_ln1_spec expf sqrtf geluf gelu_tanhf HX Hd He Hg Hb Hd0 HdD Hpad Hk Hki Hkl Hin Hld.
  rewrite Ex El.
  by case: (norm P); rewrite /= ?oner_eq0 ?eqxx.
rewrite /U_compact_K_bias /U_compact_K_bias_gather /U_compact_K_bias_source /U_compact_indices /U_compact_tokens.
have [HbL HbV] := Hbq ord0 t c.
rewrite (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x q (pos (U_compact_bqkv_offset N D H K F + H * K) H K 0 t c)) //.
  by rewrite eval_tokens HbV mxE.
cbv beta; rewrite iif_range Hqb Z.sub_0_r !zdiv_nat !zmod_nat Ht Hc.
by rewrite /pos /U_compact_bqkv_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.
End K.
