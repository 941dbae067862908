(** Theorem 6 in the kernel, third stage: LayerNorm 1.  U's own exported node for LayerNorm 1's
    value (the centred value times 1 / sqrt(variance + eps), times norm1's weight, plus its bias;
    U_compact_n75, U_shallow_n174) equals EncoderLayer.v's [norm1 sqrtf P n X i j] at every query
    of its grid, for every row i < n, column j < d_model and every capacity N, D, H, K, F, both
    variants; eps, the weight and the bias read where U's layout puts them (the generated
    statements, UniversalLayerNorm1Statement.v). *)
From mathcomp Require Import all_ssreflect all_algebra.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas UniversalLemmas UniversalLayerNorm1Nodes EncoderLayer.
From Attnsim Require Import UniversalRowMean UniversalRowStats UniversalLayerNorm1Statement.
Import GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Section Read.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.
Local Notation eval := (eval expf sqrtf geluf gelu_tanhf).
Local Open Scope ring_scope.

(** A gather through an index map reads the position the map gives the query. *)
Lemma read_map (f : Z -> Z) (v : sop) (x : seq R) (q z : nat) :
  f (Z.of_nat q) = Z.of_nat z -> (z < size x)%nat ->
  eval (Aggregate (Select Indices (IMap1 f Indices) CEq) v) x q = eval v x z.
Proof. by move=> Hf Hz; apply: agg_one => // k _ /=; rewrite Hf eqb_of_nat. Qed.

Lemma eval_tokens x p : eval Tokens x p = nth 0 x p. Proof. by []. Qed.
Lemma eval_add (a b : sop) x p : eval (Map2 PAdd a b) x p = eval a x p + eval b x p. Proof. by []. Qed.
Lemma eval_mul (a b : sop) x p : eval (Map2 PMul a b) x p = eval a x p * eval b x p. Proof. by []. Qed.
Lemma eval_rsqrt (a : sop) x p : eval (Map1 PReciprocal (Map1 PSqrt a)) x p = (sqrtf (eval a x p))^-1.
Proof. by []. Qed.

(** A row vector's entry j at offset o. *)
Lemma encodes_row (x : seq R) (o D : nat) (w : 'rV[R]_D) (j : 'I_D) :
  encodes x o 1 1 D (fun _ => w) -> (o + j < size x)%nat /\ nth 0 x (o + j) = w 0 j.
Proof.
move=> Hw; have [HL Hv] := Hw ord0 ord0 j.
have E : pos o 1 D ord0 ord0 j = (o + j)%nat by rewrite /pos /=; lia.
by rewrite E in HL Hv.
Qed.
End Read.

Local Open Scope ring_scope.

Theorem U_compact_ln1_spec : U_compact_ln1_spec_statement.
Proof.
move=> R expf sqrtf geluf gelu_tanhf N D H K F P X x q i j n HX Hd He Hg Hb Hd0 HdD Hpad Hq Hi Hj Hin Hjd.
have HD : (0 < D)%nat by move: Hq; case: (D) => //; rewrite muln0.
have [Hgs Hgv] := encodes_row j Hg; have [Hbs Hbv] := encodes_row j Hb.
have -> : norm1 sqrtf P n X i j
  = (X i j - row_mean P X i) / sqrtf (row_var P X i + eps P) * norm1_w P 0 j + norm1_b P 0 j.
  by rewrite /norm1 /layer_norm /block !mxE Hin Hjd.
rewrite /U_compact_n75 eval_add /U_compact_n71 eval_mul /U_compact_n67 eval_mul.
rewrite (U_compact_ln_x_centered_spec expf sqrtf geluf gelu_tanhf HX Hd Hd0 Hpad Hq Hi Hj).
rewrite /U_compact_ln_x_rstd /U_compact_n65 eval_rsqrt /U_compact_n64 eval_add.
rewrite (U_compact_ln_x_var_spec expf sqrtf geluf gelu_tanhf HX Hd Hd0 HdD Hpad Hq Hi).
rewrite /U_compact_eps /U_compact_eps_gather /U_compact_eps_source /U_compact_indices /U_compact_tokens.
rewrite (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x q (U_compact_gates_offset N D H K F + 7)); last first.
- clear -Hgs; move: Hgs; rewrite /U_compact_g1_offset /U_compact_gates_offset.
  set a := (N * D + _ + _ + _)%nat; move=> Hgs; apply: leq_ltn_trans Hgs; rewrite -!addnA leq_add2l; lia.
- cbv beta; rewrite /U_compact_gates_offset; clear - N D H K F.
  rewrite !Nat2Z.inj_add !Nat2Z.inj_mul; lia.
rewrite eval_tokens He.
rewrite /U_compact_proj_g1 /U_compact_proj_g1_gather /U_compact_proj_g1_source /U_compact_indices /U_compact_tokens.
rewrite (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x q (U_compact_g1_offset N D H K F + j)) //; last first.
  cbv beta; rewrite iif_range.
  have -> : ((0 <=? Z.of_nat q) && (Z.of_nat q <? 0 + 3 * Z.of_nat H * Z.of_nat N * Z.of_nat K * Z.of_nat D))%Z = true.
    by clear -Hq; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; lia.
  rewrite Z.sub_0_r zmod_nat Hj /U_compact_g1_offset; clear - N D H K F j.
  rewrite !Nat2Z.inj_add !Nat2Z.inj_mul; lia.
rewrite /U_compact_proj_be1 /U_compact_proj_be1_gather /U_compact_proj_be1_source /U_compact_indices /U_compact_tokens.
rewrite (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x q (U_compact_be1_offset N D H K F + j)) //; last first.
  cbv beta; rewrite iif_range.
  have -> : ((0 <=? Z.of_nat q) && (Z.of_nat q <? 0 + 3 * Z.of_nat H * Z.of_nat N * Z.of_nat K * Z.of_nat D))%Z = true.
    by clear -Hq; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; lia.
  rewrite Z.sub_0_r zmod_nat Hj /U_compact_be1_offset; clear - N D H K F j.
  rewrite !Nat2Z.inj_add !Nat2Z.inj_mul; lia.
by rewrite !eval_tokens Hgv Hbv.
Qed.

Theorem U_shallow_ln1_spec : U_shallow_ln1_spec_statement.
Proof.
move=> R expf sqrtf geluf gelu_tanhf N D H K F P X x q i j n HX Hd He Hg Hb Hd0 HdD Hpad Hq Hi Hj Hin Hjd.
have HD : (0 < D)%nat by move: Hq; case: (D) => //; rewrite muln0.
have [Hgs Hgv] := encodes_row j Hg; have [Hbs Hbv] := encodes_row j Hb.
have -> : norm1 sqrtf P n X i j
  = (X i j - row_mean P X i) / sqrtf (row_var P X i + eps P) * norm1_w P 0 j + norm1_b P 0 j.
  by rewrite /norm1 /layer_norm /block !mxE Hin Hjd.
rewrite /U_shallow_n174 eval_add /U_shallow_n170 eval_mul /U_shallow_n166 eval_mul.
rewrite (U_shallow_ln_x_centered_spec expf sqrtf geluf gelu_tanhf HX Hd Hd0 Hpad Hq Hi Hj).
rewrite /U_shallow_ln_x_rstd /U_shallow_n164 eval_rsqrt /U_shallow_n163 eval_add.
rewrite (U_shallow_ln_x_var_spec expf sqrtf geluf gelu_tanhf HX Hd Hd0 HdD Hpad Hq Hi).
rewrite /U_shallow_eps /U_shallow_eps_gather /U_shallow_eps_source /U_shallow_indices /U_shallow_tokens.
rewrite (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x q (U_shallow_gates_offset N D H K F + 7)); last first.
- clear -Hgs; move: Hgs; rewrite /U_shallow_g1_offset /U_shallow_gates_offset.
  set a := (N * D + _ + _ + _)%nat; move=> Hgs; apply: leq_ltn_trans Hgs; rewrite -!addnA leq_add2l; lia.
- cbv beta; rewrite /U_shallow_gates_offset; clear - N D H K F.
  rewrite !Nat2Z.inj_add !Nat2Z.inj_mul; lia.
rewrite eval_tokens He.
rewrite /U_shallow_ln_x_g1 /U_shallow_ln_x_g1_gather /U_shallow_ln_x_g1_source /U_shallow_indices /U_shallow_tokens.
rewrite (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x q (U_shallow_g1_offset N D H K F + j)) //; last first.
  cbv beta; rewrite iif_range.
  have -> : ((0 <=? Z.of_nat q) && (Z.of_nat q <? 0 + Z.of_nat H * Z.of_nat N * Z.of_nat K * Z.of_nat D))%Z = true.
    by clear -Hq; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; lia.
  rewrite Z.sub_0_r zmod_nat Hj /U_shallow_g1_offset; clear - N D H K F j.
  rewrite !Nat2Z.inj_add !Nat2Z.inj_mul; lia.
rewrite /U_shallow_ln_x_be1 /U_shallow_ln_x_be1_gather /U_shallow_ln_x_be1_source /U_shallow_indices /U_shallow_tokens.
rewrite (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x q (U_shallow_be1_offset N D H K F + j)) //; last first.
  cbv beta; rewrite iif_range.
  have -> : ((0 <=? Z.of_nat q) && (Z.of_nat q <? 0 + Z.of_nat H * Z.of_nat N * Z.of_nat K * Z.of_nat D))%Z = true.
    by clear -Hq; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; lia.
  rewrite Z.sub_0_r zmod_nat Hj /U_shallow_be1_offset; clear - N D H K F j.
  rewrite !Nat2Z.inj_add !Nat2Z.inj_mul; lia.
by rewrite !eval_tokens Hgv Hbv.
Qed.
