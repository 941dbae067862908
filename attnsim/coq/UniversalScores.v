(** Theorem 6 in the kernel, seventh stage: the attention logits.  U's own exported node
    [attn.logit] (the scores node, times the [scale] gate, plus the float mask read at the mask_add
    block), at every query of the attention grid (head t, query row i, key j), equals
    EncoderLayer.v's [scores P M n Z t i j] (scale * q_i . k_j + additive i j, the float mask added
    after scaling), Z = norm1 X when pre-norm, else X, for rows i, j < n and every capacity N, D, H,
    K, F, both variants (generated statements: UniversalScoresStatement.v).  U sums over all K
    columns, the layer over d_head: Wq and bq zero beyond d_head (U's input map pads them so) make
    the two sums equal.

    Compact U: the scores node is K times the mean of Q.biased * K.biased over the K columns; the Q
    and K stages are its lemmas, applied to the layer with d_head widened to K ([wide]).
    Shallow U: the scores node is K (D + 1)^2 times the mean over a spread grid whose entry
    (c, a, b) is (z^q_a wq_a) (wk_b z^k_b), z the LayerNorm-1 input (or X) of the query row i
    (resp. key row j) extended by a 1 at a = D (b = D), wq_a the weight Wq t a c for a < D and
    the bias bq t c at a = D; the sum over a and b factors into (q_i . Wq + bq)(k_j . Wk + bk).
    The spread's own LayerNorm-1 nodes are proved here ([shallow_zq_in], [shallow_zk_in]) from
    the generic [ln_shape]. *)
From mathcomp Require Import all_ssreflect all_algebra.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas UniversalLemmas UniversalScoresNodes EncoderLayer.
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

(** * The shallow variant: the scores from one spread product. *)

Section Spread.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.
Local Notation eval := (eval expf sqrtf geluf gelu_tanhf).
Local Notation seval := (seval expf sqrtf geluf gelu_tanhf).
Local Open Scope ring_scope.

(** A gather that selects no key (its source is -1): 0, AHAT's empty mean. *)
Lemma agg_none (s : sel) (v : sop) (x : seq R) (q : nat) :
  (forall k, seval s x q k = false) -> eval (Aggregate s v) x q = 0.
Proof.
by move=> Hs; rewrite eval_aggregate /keys (@eq_filter _ _ pred0) ?filter_pred0.
Qed.

(** A row sum whose query group is row [i]: D times the mean is the sum of the row's D values. *)
Lemma row_sum_at (s : sel) (v : sop) (N D : nat) (x : seq R) (q : nat) (i : 'I_N) :
  (forall k, seval s x q k =
     ((if ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat N * Z.of_nat D))%Z then Z.of_nat k / Z.of_nat D
       else (-1)) =? Z.of_nat i)%Z) ->
  (0 < D)%nat -> (N * D <= size x)%nat ->
  D%:R * eval (Aggregate s v) x q = \sum_(l < D) eval v x (i * D + l)%nat.
Proof.
move=> Hs HD HL.
have HiD : (i * D + D <= N * D)%nat by rewrite -mulSnr leq_mul2r ltn_ord orbT.
apply: agg_sum => //; last by apply: leq_trans HL.
by move=> k _; rewrite Hs -Nat2Z.inj_mul row_group_eqb.
Qed.

(** LayerNorm's value, as U's nodes compute it, from its parts' values. *)
Lemma ln_shape (N D H K F : nat) (P : params R D H K F) (X : 'M[R]_(N, D)) (n : nat) (i : 'I_N) (a : 'I_D)
  (xn mn sqn dn en gn bn : sop) (x : seq R) (p : nat) :
  eval xn x p = X i a ->
  eval mn x p = \sum_(l < D) X i l -> eval sqn x p = \sum_(l < D) X i l * X i l ->
  eval dn x p = (d_model P)%:R -> eval en x p = eps P ->
  eval gn x p = norm1_w P 0 a -> eval bn x p = norm1_b P 0 a ->
  (0 < d_model P)%nat -> (d_model P <= D)%nat -> (forall l : 'I_D, (d_model P <= l)%nat -> X i l = 0) ->
  (i < n)%nat -> (a < d_model P)%nat ->
  eval (Map2 PAdd (Map2 PMul (Map2 PMul (Map2 PSub xn (Map2 PDiv mn dn))
          (Map1 PReciprocal (Map1 PSqrt (Map2 PAdd (Map2 PSub (Map2 PDiv sqn dn)
             (Map1 PSquare (Map2 PDiv mn dn))) en)))) gn) bn) x p
  = norm1 sqrtf P n X i a.
Proof.
move=> Ex Em Esq Ed Ee Eg Eb Hd0 HdD Hpad Hin Ha.
have -> : norm1 sqrtf P n X i a
  = (X i a - row_mean P X i) / sqrtf (row_var P X i + eps P) * norm1_w P 0 a + norm1_b P 0 a.
  by rewrite /norm1 /layer_norm /block !mxE Hin Ha.
by rewrite /= Ex Em Esq Ed Ee Eg Eb (mean_over_d Hpad) -(sq_over_d Hd0 Hpad HdD).
Qed.

(** Sums over a product of ranges. *)
Lemma sum_split (f : nat -> R) (m k : nat) :
  \sum_(l < m * k) f l = \sum_(c < m) \sum_(a < k) f (c * k + a)%nat.
Proof.
elim: m => [|m IH]; first by rewrite mul0n !big_ord0.
rewrite mulSnr big_split_ord IH big_ord_recr /=; congr (_ + _).
Qed.

End Spread.

Lemma ltb_nat (m k : nat) : (Z.of_nat m <? Z.of_nat k)%Z = (m < k)%nat.
Proof. by case: (Z.ltb_spec (Z.of_nat m) (Z.of_nat k)) => H; symmetry; [apply/ltP | apply/negbTE/negP => /ltP]; lia. Qed.

Lemma iif_ilt (u v s w : Z) : iif (ilt u v) s w = if (u <? v)%Z then s else w.
Proof. by rewrite /iif /ilt /zb; case: (u <? v)%Z. Qed.

Lemma iif_ieq (u v s w : Z) : iif (ieq u v) s w = if (u =? v)%Z then s else w.
Proof. by rewrite /iif /ieq /zb; case: (u =? v)%Z. Qed.

Lemma iif_same (c u : Z) : iif c u u = u.
Proof. by rewrite /iif; case: (c =? 0)%Z. Qed.

Lemma eqb_neg1 (k : nat) : (Z.of_nat k =? -1)%Z = false.
Proof. by apply/Z.eqb_neq; lia. Qed.

Lemma zplus1 (D : nat) : (Z.of_nat D + 1)%Z = Z.of_nat D.+1.
Proof. lia. Qed.

Section ZQ.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.
Local Notation eval := (eval expf sqrtf geluf gelu_tanhf).
Local Notation seval := (seval expf sqrtf geluf gelu_tanhf).
Local Open Scope ring_scope.
Variables (N D H K F : nat) (P : params R D H K F) (X : 'M[R]_(N, D)) (x : seq R) (n p a : nat) (i : 'I_N).
Local Notation Z5 f := (f (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)).
Hypotheses (HX : encodes x 0 1 N D (fun _ => X)) (Hd : nth 0 x (N * D + 1) = (d_model P)%:R)
  (He : nth 0 x (U_shallow_gates_offset N D H K F + 7) = eps P)
  (Hg : encodes x (U_shallow_g1_offset N D H K F) 1 1 D (fun _ => norm1_w P))
  (Hb : encodes x (U_shallow_be1_offset N D H K F) 1 1 D (fun _ => norm1_b P))
  (Hpre : nth 0 x (U_shallow_gates_offset N D H K F + 1) = (if norm P is PreNorm then 1 else 0))
  (Hd0 : (0 < d_model P)%nat) (HdD : (d_model P <= D)%nat)
  (Hpad : forall l : 'I_D, (d_model P <= l)%nat -> X i l = 0)
  (Hp : (p < H * N * N * K * D.+1 * D.+1)%nat) (Hin : (i < n)%nat).

Let Hpb : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 0 + Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat K
           * (Z.of_nat D + 1) * (Z.of_nat D + 1)))%Z = true.
Proof. by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp; lia. Qed.

Let Hle : ile 0 (Z.of_nat p) = 1%Z.
Proof. by rewrite /ile /zb (proj2 (Z.leb_le _ _)) //; lia. Qed.
Let Hlt : ilt (Z.of_nat p) (Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat K * (Z.of_nat D + 1) * (Z.of_nat D + 1)) = 1%Z.
Proof. by rewrite /ilt /zb (proj2 (Z.ltb_lt _ _)) //; clear -Hp; lia. Qed.
Let Hlt0 : ilt (Z.of_nat p) (0 + Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat K * (Z.of_nat D + 1) * (Z.of_nat D + 1)) = 1%Z.
Proof. by rewrite /ilt /zb (proj2 (Z.ltb_lt _ _)) //; clear -Hp; lia. Qed.

Let HD : (0 < D)%nat. Proof. exact: leq_trans Hd0 HdD. Qed.

Let Hgs : (U_shallow_gates_offset N D H K F + 8 < size x)%nat.
Proof.
have [Hgs _] := encodes_row (Ordinal HD) Hg; clear -Hgs; move: Hgs.
rewrite /U_shallow_g1_offset /U_shallow_gates_offset.
set o := (N * D + _ + _ + _)%nat; move=> Hgs; apply: leq_ltn_trans Hgs; rewrite -!addnA leq_add2l; lia.
Qed.

Let Epre : eval (Z5 U_shallow_pre) x p = if norm P is PreNorm then 1 else 0.
Proof.
rewrite /U_shallow_pre /U_shallow_pre_gather /U_shallow_pre_source /U_shallow_indices /U_shallow_tokens.
rewrite (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x _ (U_shallow_gates_offset N D H K F + 1)).
- by rewrite eval_tokens Hpre.
- by cbv beta; rewrite /U_shallow_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
- by apply: leq_ltn_trans Hgs; rewrite leq_add2l.
Qed.

Let Eeps : eval (Z5 U_shallow_eps) x p = eps P.
Proof.
rewrite /U_shallow_eps /U_shallow_eps_gather /U_shallow_eps_source /U_shallow_indices /U_shallow_tokens.
rewrite (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x _ (U_shallow_gates_offset N D H K F + 7)).
- by rewrite eval_tokens He.
- by cbv beta; rewrite /U_shallow_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
- by apply: leq_ltn_trans Hgs; rewrite leq_add2l.
Qed.

Hypotheses (Hpi : (p %/ D.+1 %/ D.+1 %/ K %/ N %% N)%nat = i) (Hpa : (p %/ D.+1 %% D.+1)%nat = a).

Lemma iif_11 (u w : Z) : iif (iand 1 1) u w = u. Proof. by []. Qed.

Let Erow (s : sel) (v : sop) : (forall k, seval s x p k =
     (iif (iand (ile 0 (Z.of_nat k)) (ilt (Z.of_nat k) (0 + 1 * Z.of_nat N * Z.of_nat D)))
          (0 * Z.of_nat N + (Z.of_nat k - 0) / Z.of_nat D) (-1)
      =? iif (iand (ile 0 (Z.of_nat p)) (ilt (Z.of_nat p) (0 + Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat K
           * (Z.of_nat D + 1) * (Z.of_nat D + 1))))
          (0 * Z.of_nat N + ((Z.of_nat p - 0) / (Z.of_nat D + 1) / (Z.of_nat D + 1) / Z.of_nat K / Z.of_nat N) mod Z.of_nat N)
          (-2))%Z) ->
  D%:R * eval (Aggregate s v) x p = \sum_(l < D) eval v x (i * D + l)%nat.
Proof.
move=> Hs; apply: row_sum_at => //; last first.
  by apply: leq_trans (ltnW Hgs); rewrite /U_shallow_gates_offset; clear; lia.
move=> k; rewrite Hs Hle Hlt0 iif_11 iif_range !Z.sub_0_r !Z.mul_0_l !Z.add_0_l Z.mul_1_l zplus1.
by rewrite !zdiv_nat zmod_nat Hpi -(zdiv_nat k D).
Qed.

Let EaZ : ((Z.of_nat p - 0) / (Z.of_nat D + 1) mod (Z.of_nat D + 1))%Z = Z.of_nat a.
Proof. by rewrite Z.sub_0_r zplus1 zdiv_nat zmod_nat Hpa. Qed.

Lemma shallow_zq_pad : a = D -> eval (Z5 U_shallow_spread_q_z) x p = 1.
Proof.
move=> HaD.
rewrite /U_shallow_spread_q_z eval_add /U_shallow_n73 eval_where Epre.
have -> : eval (OfIdx (Z5 U_shallow_spread_q_one)) x p = 1.
  by rewrite /= Hle Hlt EaZ HaD /ieq Z.eqb_refl /= /zR /= subr0.
have -> : eval (Z5 U_shallow_spread_q_x) x p = 0.
  rewrite /U_shallow_spread_q_x agg_none // => k.
  by rewrite /= Hle Hlt0 /= iif_ilt EaZ HaD Z.ltb_irrefl /= iif_same eqb_neg1.
rewrite /U_shallow_n72 eval_add /U_shallow_n68 eval_mul.
have -> : eval (Z5 U_shallow_spread_q_ln_g1) x p = 0.
  rewrite /U_shallow_spread_q_ln_g1 agg_none // => k.
  by rewrite /= Hle Hlt0 /= iif_ilt EaZ HaD Z.ltb_irrefl /= iif_same eqb_neg1.
have -> : eval (Z5 U_shallow_spread_q_ln_be1) x p = 0.
  rewrite /U_shallow_spread_q_ln_be1 agg_none // => k.
  by rewrite /= Hle Hlt0 /= iif_ilt EaZ HaD Z.ltb_irrefl /= iif_same eqb_neg1.
by rewrite mulr0 addr0 if_same add0r.
Qed.
Lemma shallow_zq_in (l : 'I_D) : nat_of_ord l = a -> (l < d_model P)%nat ->
  eval (Z5 U_shallow_spread_q_z) x p = (if norm P is PreNorm then norm1 sqrtf P n X else X) i l.
Proof.
move=> Hla Hld.
have HlD : (l < D)%nat := ltn_ord l.
have [HxL HxV] := HX ord0 i l; rewrite /pos /= mul0n !add0n in HxL HxV.
rewrite /U_shallow_spread_q_z eval_add /U_shallow_n73 eval_where Epre.
have -> : eval (OfIdx (Z5 U_shallow_spread_q_one)) x p = 0.
  rewrite /= Hle Hlt EaZ /ieq eqb_of_nat -Hla.
  by rewrite (ltn_eqF HlD) /= /zR /= subr0.
have Ex : eval (Z5 U_shallow_spread_q_x) x p = X i l.
  rewrite /U_shallow_spread_q_x /U_shallow_spread_q_x_gather /U_shallow_spread_q_x_source /U_shallow_indices.
  rewrite /U_shallow_tokens (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x p (i * D + l)) //.
  cbv beta; rewrite iif_range Hpb iif_ilt EaZ -Hla ltb_nat HlD.
  rewrite !Z.sub_0_r !Z.add_0_l zplus1 !zdiv_nat zmod_nat Hpi.
  by rewrite Nat2Z.inj_add Nat2Z.inj_mul.
have El : eval (Z5 U_shallow_n72) x p = norm1 sqrtf P n X i l.
  rewrite /U_shallow_n72 /U_shallow_n68 /U_shallow_n64 /U_shallow_n48 /U_shallow_spread_q_ln_mean_per_d.
  rewrite /U_shallow_spread_q_ln_rstd /U_shallow_n62 /U_shallow_n61 /U_shallow_n57.
  rewrite /U_shallow_spread_q_ln_meansq_per_d /U_shallow_n56.
  apply: ln_shape => //.
  - rewrite /U_shallow_spread_q_ln_mean eval_scale cst_nat /U_shallow_spread_q_ln_mean_mean /U_shallow_tokens.
    rewrite Erow //; apply: eq_bigr => l' _.
    by have [_ <-] := HX ord0 i l'; rewrite /pos /= mul0n add0n.
  - rewrite /U_shallow_spread_q_ln_meansq eval_scale cst_nat /U_shallow_spread_q_ln_meansq_mean.
    rewrite /U_shallow_tokens_sq /U_shallow_tokens Erow //; apply: eq_bigr => l' _.
    by have [_ <-] := HX ord0 i l'; rewrite /pos /= mul0n add0n.
  - by rewrite /U_shallow_d /U_shallow_tokens (read_d Hd Hd0) // => k; rewrite shallow_d_sel.
  - have [HgL HgV] := encodes_row l Hg.
    rewrite /U_shallow_spread_q_ln_g1 /U_shallow_spread_q_ln_g1_gather /U_shallow_spread_q_ln_g1_source.
    rewrite /U_shallow_indices /U_shallow_tokens.
    rewrite (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x p (U_shallow_g1_offset N D H K F + l)) //.
    cbv beta; rewrite iif_range Hpb iif_ilt EaZ -Hla ltb_nat HlD.
    by rewrite /U_shallow_g1_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
  - have [HbL HbV] := encodes_row l Hb.
    rewrite /U_shallow_spread_q_ln_be1 /U_shallow_spread_q_ln_be1_gather /U_shallow_spread_q_ln_be1_source.
    rewrite /U_shallow_indices /U_shallow_tokens.
    rewrite (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x p (U_shallow_be1_offset N D H K F + l)) //.
    cbv beta; rewrite iif_range Hpb iif_ilt EaZ -Hla ltb_nat HlD.
    by rewrite /U_shallow_be1_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
rewrite Ex El addr0.
by case: (norm P); rewrite /= ?oner_eq0 ?eqxx.
Qed.
End ZQ.

Section ZK.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.
Local Notation eval := (eval expf sqrtf geluf gelu_tanhf).
Local Notation seval := (seval expf sqrtf geluf gelu_tanhf).
Local Open Scope ring_scope.
Variables (N D H K F : nat) (P : params R D H K F) (X : 'M[R]_(N, D)) (x : seq R) (n p a : nat) (i : 'I_N).
Local Notation Z5 f := (f (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)).
Hypotheses (HX : encodes x 0 1 N D (fun _ => X)) (Hd : nth 0 x (N * D + 1) = (d_model P)%:R)
  (He : nth 0 x (U_shallow_gates_offset N D H K F + 7) = eps P)
  (Hg : encodes x (U_shallow_g1_offset N D H K F) 1 1 D (fun _ => norm1_w P))
  (Hb : encodes x (U_shallow_be1_offset N D H K F) 1 1 D (fun _ => norm1_b P))
  (Hpre : nth 0 x (U_shallow_gates_offset N D H K F + 1) = (if norm P is PreNorm then 1 else 0))
  (Hd0 : (0 < d_model P)%nat) (HdD : (d_model P <= D)%nat)
  (Hpad : forall l : 'I_D, (d_model P <= l)%nat -> X i l = 0)
  (Hp : (p < H * N * N * K * D.+1 * D.+1)%nat) (Hin : (i < n)%nat).

Let Hpb : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 0 + Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat K
           * (Z.of_nat D + 1) * (Z.of_nat D + 1)))%Z = true.
Proof. by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp; lia. Qed.

Let Hle : ile 0 (Z.of_nat p) = 1%Z.
Proof. by rewrite /ile /zb (proj2 (Z.leb_le _ _)) //; lia. Qed.
Let Hlt : ilt (Z.of_nat p) (Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat K * (Z.of_nat D + 1) * (Z.of_nat D + 1)) = 1%Z.
Proof. by rewrite /ilt /zb (proj2 (Z.ltb_lt _ _)) //; clear -Hp; lia. Qed.
Let Hlt0 : ilt (Z.of_nat p) (0 + Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat K * (Z.of_nat D + 1) * (Z.of_nat D + 1)) = 1%Z.
Proof. by rewrite /ilt /zb (proj2 (Z.ltb_lt _ _)) //; clear -Hp; lia. Qed.

Let HD : (0 < D)%nat. Proof. exact: leq_trans Hd0 HdD. Qed.

Let Hgs : (U_shallow_gates_offset N D H K F + 8 < size x)%nat.
Proof.
have [Hgs _] := encodes_row (Ordinal HD) Hg; clear -Hgs; move: Hgs.
rewrite /U_shallow_g1_offset /U_shallow_gates_offset.
set o := (N * D + _ + _ + _)%nat; move=> Hgs; apply: leq_ltn_trans Hgs; rewrite -!addnA leq_add2l; lia.
Qed.

Let Epre : eval (Z5 U_shallow_pre) x p = if norm P is PreNorm then 1 else 0.
Proof.
rewrite /U_shallow_pre /U_shallow_pre_gather /U_shallow_pre_source /U_shallow_indices /U_shallow_tokens.
rewrite (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x _ (U_shallow_gates_offset N D H K F + 1)).
- by rewrite eval_tokens Hpre.
- by cbv beta; rewrite /U_shallow_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
- by apply: leq_ltn_trans Hgs; rewrite leq_add2l.
Qed.

Let Eeps : eval (Z5 U_shallow_eps) x p = eps P.
Proof.
rewrite /U_shallow_eps /U_shallow_eps_gather /U_shallow_eps_source /U_shallow_indices /U_shallow_tokens.
rewrite (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x _ (U_shallow_gates_offset N D H K F + 7)).
- by rewrite eval_tokens He.
- by cbv beta; rewrite /U_shallow_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
- by apply: leq_ltn_trans Hgs; rewrite leq_add2l.
Qed.

Hypotheses (Hpi : (p %/ D.+1 %/ D.+1 %/ K %% N)%nat = i) (Hpa : (p %% D.+1)%nat = a).


Let Erow (s : sel) (v : sop) : (forall k, seval s x p k =
     (iif (iand (ile 0 (Z.of_nat k)) (ilt (Z.of_nat k) (0 + 1 * Z.of_nat N * Z.of_nat D)))
          (0 * Z.of_nat N + (Z.of_nat k - 0) / Z.of_nat D) (-1)
      =? iif (iand (ile 0 (Z.of_nat p)) (ilt (Z.of_nat p) (0 + Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat K
           * (Z.of_nat D + 1) * (Z.of_nat D + 1))))
          (0 * Z.of_nat N + ((Z.of_nat p - 0) / (Z.of_nat D + 1) / (Z.of_nat D + 1) / Z.of_nat K) mod Z.of_nat N)
          (-2))%Z) ->
  D%:R * eval (Aggregate s v) x p = \sum_(l < D) eval v x (i * D + l)%nat.
Proof.
move=> Hs; apply: row_sum_at => //; last first.
  by apply: leq_trans (ltnW Hgs); rewrite /U_shallow_gates_offset; clear; lia.
move=> k; rewrite Hs Hle Hlt0 iif_11 iif_range !Z.sub_0_r !Z.mul_0_l !Z.add_0_l Z.mul_1_l zplus1.
by rewrite !zdiv_nat zmod_nat Hpi -(zdiv_nat k D).
Qed.

Let EaZ : ((Z.of_nat p - 0) mod (Z.of_nat D + 1))%Z = Z.of_nat a.
Proof. by rewrite Z.sub_0_r zplus1 zmod_nat Hpa. Qed.

Lemma shallow_zk_pad : a = D -> eval (Z5 U_shallow_spread_k_z) x p = 1.
Proof.
move=> HaD.
rewrite /U_shallow_spread_k_z eval_add /U_shallow_n113 eval_where Epre.
have -> : eval (OfIdx (Z5 U_shallow_spread_k_one)) x p = 1.
  by rewrite /= Hle Hlt EaZ HaD /ieq Z.eqb_refl /= /zR /= subr0.
have -> : eval (Z5 U_shallow_spread_k_x) x p = 0.
  rewrite /U_shallow_spread_k_x agg_none // => k.
  by rewrite /= Hle Hlt0 /= iif_ilt EaZ HaD Z.ltb_irrefl /= iif_same eqb_neg1.
rewrite /U_shallow_n112 eval_add /U_shallow_n108 eval_mul.
have -> : eval (Z5 U_shallow_spread_k_ln_g1) x p = 0.
  rewrite /U_shallow_spread_k_ln_g1 agg_none // => k.
  by rewrite /= Hle Hlt0 /= iif_ilt EaZ HaD Z.ltb_irrefl /= iif_same eqb_neg1.
have -> : eval (Z5 U_shallow_spread_k_ln_be1) x p = 0.
  rewrite /U_shallow_spread_k_ln_be1 agg_none // => k.
  by rewrite /= Hle Hlt0 /= iif_ilt EaZ HaD Z.ltb_irrefl /= iif_same eqb_neg1.
by rewrite mulr0 addr0 if_same add0r.
Qed.
Lemma shallow_zk_in (l : 'I_D) : nat_of_ord l = a -> (l < d_model P)%nat ->
  eval (Z5 U_shallow_spread_k_z) x p = (if norm P is PreNorm then norm1 sqrtf P n X else X) i l.
Proof.
move=> Hla Hld.
have HlD : (l < D)%nat := ltn_ord l.
have [HxL HxV] := HX ord0 i l; rewrite /pos /= mul0n !add0n in HxL HxV.
rewrite /U_shallow_spread_k_z eval_add /U_shallow_n113 eval_where Epre.
have -> : eval (OfIdx (Z5 U_shallow_spread_k_one)) x p = 0.
  rewrite /= Hle Hlt EaZ /ieq eqb_of_nat -Hla.
  by rewrite (ltn_eqF HlD) /= /zR /= subr0.
have Ex : eval (Z5 U_shallow_spread_k_x) x p = X i l.
  rewrite /U_shallow_spread_k_x /U_shallow_spread_k_x_gather /U_shallow_spread_k_x_source /U_shallow_indices.
  rewrite /U_shallow_tokens (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x p (i * D + l)) //.
  cbv beta; rewrite iif_range Hpb iif_ilt EaZ -Hla ltb_nat HlD.
  rewrite !Z.sub_0_r !Z.add_0_l zplus1 !zdiv_nat zmod_nat Hpi.
  by rewrite Nat2Z.inj_add Nat2Z.inj_mul.
have El : eval (Z5 U_shallow_n112) x p = norm1 sqrtf P n X i l.
  rewrite /U_shallow_n112 /U_shallow_n108 /U_shallow_n104 /U_shallow_n92 /U_shallow_spread_k_ln_mean_per_d.
  rewrite /U_shallow_spread_k_ln_rstd /U_shallow_n102 /U_shallow_n101 /U_shallow_n100.
  rewrite /U_shallow_spread_k_ln_meansq_per_d /U_shallow_n99.
  apply: ln_shape => //.
  - rewrite /U_shallow_spread_k_ln_mean eval_scale cst_nat /U_shallow_spread_k_ln_mean_mean /U_shallow_tokens.
    rewrite Erow //; apply: eq_bigr => l' _.
    by have [_ <-] := HX ord0 i l'; rewrite /pos /= mul0n add0n.
  - rewrite /U_shallow_spread_k_ln_meansq eval_scale cst_nat /U_shallow_spread_k_ln_meansq_mean.
    rewrite /U_shallow_tokens_sq /U_shallow_tokens Erow //; apply: eq_bigr => l' _.
    by have [_ <-] := HX ord0 i l'; rewrite /pos /= mul0n add0n.
  - by rewrite /U_shallow_d /U_shallow_tokens (read_d Hd Hd0) // => k; rewrite shallow_d_sel.
  - have [HgL HgV] := encodes_row l Hg.
    rewrite /U_shallow_spread_k_ln_g1 /U_shallow_spread_k_ln_g1_gather /U_shallow_spread_k_ln_g1_source.
    rewrite /U_shallow_indices /U_shallow_tokens.
    rewrite (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x p (U_shallow_g1_offset N D H K F + l)) //.
    cbv beta; rewrite iif_range Hpb iif_ilt EaZ -Hla ltb_nat HlD.
    by rewrite /U_shallow_g1_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
  - have [HbL HbV] := encodes_row l Hb.
    rewrite /U_shallow_spread_k_ln_be1 /U_shallow_spread_k_ln_be1_gather /U_shallow_spread_k_ln_be1_source.
    rewrite /U_shallow_indices /U_shallow_tokens.
    rewrite (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x p (U_shallow_be1_offset N D H K F + l)) //.
    cbv beta; rewrite iif_range Hpb iif_ilt EaZ -Hla ltb_nat HlD.
    by rewrite /U_shallow_be1_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
rewrite Ex El addr0.
by case: (norm P); rewrite /= ?oner_eq0 ?eqxx.
Qed.
End ZK.

Lemma shallow_scores_sel (R : realFieldType) (expf sqrtf geluf gelu_tanhf : R -> R) (N D H K F : Z)
  (x : seq R) (q k : nat) :
  seval expf sqrtf geluf gelu_tanhf (U_shallow_scores_sum N D H K F) x q k =
  ((if ((0 <=? Z.of_nat k) && (Z.of_nat k <? H * N * N * K * (D + 1) * (D + 1)))%Z
    then Z.of_nat k / (D + 1) / (D + 1) / K else (-1))
   =? (if ((0 <=? Z.of_nat q) && (Z.of_nat q <? H * N * N * D))%Z then Z.of_nat q / D else (-2)))%Z.
Proof.
have -> : seval expf sqrtf geluf gelu_tanhf (U_shallow_scores_sum N D H K F) x q k =
  (iif (iand (ile 0 (Z.of_nat k)) (ilt (Z.of_nat k) (0 + H * N * N * K * (D + 1) * (D + 1))))
     (((0 * H + (Z.of_nat k - 0) / (D + 1) / (D + 1) / K / N / N) * N
        + ((Z.of_nat k - 0) / (D + 1) / (D + 1) / K / N) mod N) * N
        + ((Z.of_nat k - 0) / (D + 1) / (D + 1) / K) mod N) (-1)
   =? iif (iand (ile 0 (Z.of_nat q)) (ilt (Z.of_nat q) (0 + H * N * N * D)))
     (((0 * H + (Z.of_nat q - 0) / D / N / N) * N + ((Z.of_nat q - 0) / D / N) mod N) * N
        + ((Z.of_nat q - 0) / D) mod N) (-2))%Z by [].
by rewrite !iif_range !Z.sub_0_r !Z.mul_0_l !Z.add_0_l !Zdivmod_id.
Qed.

Section ShallowScores.
Local Open Scope ring_scope.

Theorem U_shallow_scores_spec : U_shallow_scores_spec_statement.
Proof.
move=> R expf sqrtf geluf gelu_tanhf N D H K F P M X x q i t j n HX Hd He Hg Hb Hpre Hsc Hm.
move=> Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hq Ht Hi Hj Hin Hjn.
have HD : (0 < D)%nat by apply: leq_trans HdD.
have HN : (0 < N)%nat := leq_ltn_trans (leq0n i) (ltn_ord i).
rewrite addn1 in HLK.
set Z := (if norm P is PreNorm then norm1 sqrtf P n X else X).
set G := ((t * N + i) * N + j)%nat.
have HqG : (q %/ D = G)%nat by rewrite /G -Hj -Hi -Ht -!divn_eq.
have HGlt : (G < H * N * N)%nat by rewrite -HqG ltn_divLR // -!mulnA; move: Hq; rewrite !mulnA.
have -> : scores P M n Z t i j
  = scale P * (\sum_(c < K | (c < d_head P)%nat)
                 (\sum_(l < D | (l < d_model P)%nat) Z i l * Wq P t l c + bq P t 0 c)
               * (\sum_(l < D | (l < d_model P)%nat) Z j l * Wk P t l c + bk P t 0 c))
    + additive M i j.
  rewrite /scores /block !mxE Hin Hjn /=; congr (_ * _ + _); apply: eq_bigr => c Hc.
  by rewrite /proj /block !mxE Hin Hjn Hc.
rewrite /U_shallow_attn_logit eval_add /U_shallow_n123 eval_mul.
have [Hgs _] := encodes_row (Ordinal HD) Hg.
have Hqb : ((0 <=? Z.of_nat q) && (Z.of_nat q <? 0 + Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hq; lia.
have -> : eval expf sqrtf geluf gelu_tanhf
    (U_shallow_scale (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)) x q = scale P.
  rewrite /U_shallow_scale /U_shallow_scale_gather /U_shallow_scale_source /U_shallow_indices /U_shallow_tokens.
  rewrite (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x q (U_shallow_gates_offset N D H K F + 6)); last first.
  - clear -Hgs; move: Hgs; rewrite /U_shallow_g1_offset /U_shallow_gates_offset.
    set a := (N * D + _ + _ + _)%nat; move=> Hgs; apply: leq_ltn_trans Hgs; rewrite -!addnA leq_add2l; lia.
  - by cbv beta; rewrite /U_shallow_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
  by rewrite eval_tokens Hsc.
have -> : eval expf sqrtf geluf gelu_tanhf
    (U_shallow_mask_add (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)) x q = additive M i j.
  have [HmL HmV] := Hm ord0 i j.
  rewrite /U_shallow_mask_add /U_shallow_mask_add_gather /U_shallow_mask_add_source /U_shallow_indices.
  rewrite /U_shallow_tokens (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x q (pos (U_shallow_mask_add_offset N D H K F) N N 0 i j)) //.
  cbv beta; rewrite iif_range Hqb Z.sub_0_r !zdiv_nat !zmod_nat Hi Hj.
  by rewrite /pos /U_shallow_mask_add_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
rewrite mulrC; congr (_ * _ + _).
(* the scores node: K (D + 1)^2 times the mean over head t's (query i, key j) group of the spread *)
rewrite /U_shallow_scores eval_scale zplus1 /U_shallow_scores_mean.
set E := D.+1.
set C := (E * E * K)%nat.
have -> : cst_sem R (CQ (Z.of_nat K * Z.of_nat E * Z.of_nat E) 1) = C%:R.
  by rewrite -cst_nat /C; congr (cst_sem R (CQ _ 1)); rewrite !Nat2Z.inj_mul; clear; lia.
case: (posnP K) => [HK0|HK].
  have -> : C%:R = 0 :> R by rewrite /C HK0 muln0.
  by rewrite mul0r big1 // => -[c Hc]; exfalso; move: Hc; rewrite HK0.
have HC : (0 < C)%nat by rewrite /C !muln_gt0 HK.
have HGC : (G * C + C <= H * N * N * C)%nat by rewrite -mulSnr leq_mul2r HGlt orbT.
have HNC : (H * N * N * C <= size x)%nat by apply: leq_trans HLK; rewrite /C; clear; lia.
have Hsel : forall k, (k < size x)%nat ->
    seval expf sqrtf geluf gelu_tanhf
      (U_shallow_scores_sum (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)) x q k
    = (G * C <= k < G * C + C)%nat.
  move=> k _; rewrite shallow_scores_sel.
  have -> : ((0 <=? Z.of_nat q) && (Z.of_nat q <? Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat D))%Z = true.
    by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hq; lia.
  rewrite (zdiv_nat q D) HqG zplus1 !zdiv_nat -!divnMA mulnA -/E -/C -(zdiv_nat k C).
  have -> : (Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat K * Z.of_nat E * Z.of_nat E)%Z = Z.of_nat (H * N * N * C).
    by rewrite /C !Nat2Z.inj_mul; clear; lia.
  exact: row_group_eqb.
rewrite (@agg_sum _ expf sqrtf geluf gelu_tanhf _ _ x q (G * C) C HC Hsel); last first.
  by apply: leq_trans HNC.
have Hsplit : forall f : nat -> R,
    \sum_(l < C) f l = \sum_(c < K) \sum_(a < E) \sum_(b < E) f ((c * E + a) * E + b)%nat.
  move=> f; rewrite /C mulnC (sum_split f K (E * E)); apply: eq_bigr => c _; rewrite (sum_split (fun l => f (c * (E * E) + l)%nat) E E); apply: eq_bigr => a _.
  by apply: eq_bigr => b _; rewrite mulnA mulnDl addnA.
rewrite (Hsplit (fun l => eval expf sqrtf geluf gelu_tanhf
  (U_shallow_scores_prod (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)) x (G * C + l)%nat)).
rewrite [RHS]big_mkcond; apply: eq_bigr => c _.
pose d0 := Ordinal HD.
pose lv (a : nat) := if (a < D)%nat then (if (a < d_model P)%nat then Z i (insubd d0 a) * Wq P t (insubd d0 a) c
                                          else 0) else bq P t 0 c.
pose rv (b : nat) := if (b < D)%nat then (if (b < d_model P)%nat then Wk P t (insubd d0 b) c * Z j (insubd d0 b)
                                          else 0) else bk P t 0 c.
have Hterm : forall a b : 'I_E, eval expf sqrtf geluf gelu_tanhf
    (U_shallow_scores_prod (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)) x
    (G * C + ((c * E + a) * E + b))%nat = lv a * rv b.
  move=> a b.
  set p := (G * C + ((c * E + a) * E + b))%nat.
  have HaE := ltn_ord a; have HbE := ltn_ord b; have HcK := ltn_ord c.
  have Ep : p = (((G * K + c) * E + a) * E + b)%nat by rewrite /p /C; clear; lia.
  have Hpb : (p %% E = b)%nat by rewrite Ep modnMDl modn_small.
  have Hp1 : (p %/ E = (G * K + c) * E + a)%nat by rewrite Ep divnMDl // divn_small ?addn0.
  have Hpa : (p %/ E %% E = a)%nat by rewrite Hp1 modnMDl modn_small.
  have Hp2 : (p %/ E %/ E = G * K + c)%nat by rewrite Hp1 divnMDl // divn_small ?addn0.
  have Hpc : (p %/ E %/ E %% K = c)%nat by rewrite Hp2 modnMDl modn_small.
  have Hp3 : (p %/ E %/ E %/ K = G)%nat by rewrite Hp2 divnMDl // divn_small ?addn0.
  have Hpj : (p %/ E %/ E %/ K %% N = j)%nat by rewrite Hp3 /G modnMDl modn_small.
  have Hp4 : (p %/ E %/ E %/ K %/ N = t * N + i)%nat by rewrite Hp3 /G divnMDl // divn_small ?addn0.
  have Hpi : (p %/ E %/ E %/ K %/ N %% N = i)%nat by rewrite Hp4 modnMDl modn_small.
  have Hpt : (p %/ E %/ E %/ K %/ N %/ N = t)%nat by rewrite Hp4 divnMDl // divn_small ?addn0.
  have Hp : (p < H * N * N * K * E * E)%nat.
    have h1 : (G * K + c < H * N * N * K)%nat.
      apply: (@leq_trans (G.+1 * K)); first by rewrite mulSnr ltn_add2l.
      by rewrite leq_mul2r HGlt orbT.
    have h2 : ((G * K + c) * E + a < H * N * N * K * E)%nat.
      apply: (@leq_trans ((G * K + c).+1 * E)); first by rewrite mulSnr ltn_add2l.
      by rewrite leq_mul2r h1 orbT.
    rewrite Ep; apply: (@leq_trans (((G * K + c) * E + a).+1 * E)); first by rewrite mulSnr ltn_add2l.
    by rewrite leq_mul2r h2 orbT.
  have Hrange : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 0 + Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat K
      * (Z.of_nat D + 1) * (Z.of_nat D + 1)))%Z = true.
    by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp; rewrite /E in Hp; lia.
  rewrite /U_shallow_scores_prod eval_mul /U_shallow_spread_left eval_mul /U_shallow_spread_right eval_mul.
  have El : eval expf sqrtf geluf gelu_tanhf
      (U_shallow_spread_q_z (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)) x p *
    eval expf sqrtf geluf gelu_tanhf
      (U_shallow_spread_wq (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)) x p = lv a.
    rewrite /lv /U_shallow_spread_wq /U_shallow_spread_wq_gather /U_shallow_spread_wq_source /U_shallow_indices.
    rewrite /U_shallow_tokens; case: (ltnP a D) => HaD.
    - pose a' := Ordinal HaD.
      have Ea' : insubd d0 a = a' by apply: val_inj; rewrite val_insubd HaD.
      have Ea'n : nat_of_ord a' = a by [].
      have [HwL HwV] := Hwq t a' c.
      rewrite Ea' (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x p (pos (U_shallow_wqkv_offset N D H K F) D K t a' c)) //; last first.
        cbv beta; rewrite iif_range Hrange iif_ilt !Z.sub_0_r zplus1 !zdiv_nat !zmod_nat Hpa Hpc Hpt ltb_nat HaD.
        by rewrite /pos Ea'n /U_shallow_wqkv_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
      rewrite eval_tokens HwV; case: (ltnP a (d_model P)) => Had; last by rewrite (Hwqpad t a' c Had) mulr0.
      by rewrite (@shallow_zq_in R expf sqrtf geluf gelu_tanhf N D H K F P X x n p a i HX Hd He Hg Hb Hpre Hd0 HdD (Hpad i) Hp Hin Hpi Hpa a' erefl Had).
    - have HaD' : nat_of_ord a = D by apply/eqP; rewrite eqn_leq HaD -ltnS HaE.
      have [HbL HbV] := Hbq ord0 t c.
      rewrite (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x p (pos (U_shallow_bqkv_offset N D H K F) H K 0 t c)) //; last first.
        cbv beta; rewrite iif_range Hrange iif_ilt !Z.sub_0_r zplus1 !zdiv_nat !zmod_nat Hpa Hpc Hpt ltb_nat HaD'.
        by rewrite ltnn /pos /U_shallow_bqkv_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
      by rewrite eval_tokens HbV mxE (shallow_zq_pad expf sqrtf geluf gelu_tanhf Hg Hpre Hd0 HdD Hp Hin Hpa HaD') mul1r.
  have Er : eval expf sqrtf geluf gelu_tanhf
      (U_shallow_spread_wk (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)) x p *
    eval expf sqrtf geluf gelu_tanhf
      (U_shallow_spread_k_z (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)) x p = rv b.
    rewrite /rv /U_shallow_spread_wk /U_shallow_spread_wk_gather /U_shallow_spread_wk_source /U_shallow_indices.
    rewrite /U_shallow_tokens; case: (ltnP b D) => HbD.
    - pose b' := Ordinal HbD.
      have Eb' : insubd d0 b = b' by apply: val_inj; rewrite val_insubd HbD.
      have Eb'n : nat_of_ord b' = b by [].
      have [HwL HwV] := Hwk t b' c.
      rewrite Eb' (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x p (pos (U_shallow_wqkv_offset N D H K F + H * D * K) D K t b' c)) //; last first.
        cbv beta; rewrite iif_range Hrange iif_ilt !Z.sub_0_r zplus1 !zdiv_nat !zmod_nat Hpb Hpc Hpt ltb_nat HbD.
        by rewrite /pos Eb'n /U_shallow_wqkv_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
      rewrite eval_tokens HwV; case: (ltnP b (d_model P)) => Hbd; last by rewrite (Hwkpad t b' c Hbd) mul0r.
      by rewrite (@shallow_zk_in R expf sqrtf geluf gelu_tanhf N D H K F P X x n p b j HX Hd He Hg Hb Hpre Hd0 HdD (Hpad j) Hp Hjn Hpj Hpb b' erefl Hbd).
    - have HbD' : nat_of_ord b = D by apply/eqP; rewrite eqn_leq HbD -ltnS HbE.
      have [HbL HbV] := Hbk ord0 t c.
      rewrite (@read_map _ expf sqrtf geluf gelu_tanhf _ Tokens x p (pos (U_shallow_bqkv_offset N D H K F + H * K) H K 0 t c)) //; last first.
        cbv beta; rewrite iif_range Hrange iif_ilt !Z.sub_0_r zplus1 !zdiv_nat !zmod_nat Hpb Hpc Hpt ltb_nat HbD'.
        by rewrite ltnn /pos /U_shallow_bqkv_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
      by rewrite eval_tokens HbV mxE (shallow_zk_pad expf sqrtf geluf gelu_tanhf Hg Hpre Hd0 HdD Hp Hjn Hpb HbD') mulr1.
  by rewrite El Er.
have -> : \sum_(a < E) \sum_(b < E) eval expf sqrtf geluf gelu_tanhf
    (U_shallow_scores_prod (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)) x
    (G * C + ((c * E + a) * E + b))%nat = \sum_(a < E) \sum_(b < E) lv a * rv b.
  by apply: eq_bigr => a _; apply: eq_bigr => b _; exact: Hterm.
under eq_bigr do rewrite -big_distrr.
rewrite -big_distrl /=.
have -> : \sum_(a < E) lv a = \sum_(l < D | (l < d_model P)%nat) Z i l * Wq P t l c + bq P t 0 c.
  rewrite big_ord_recr /= {2}/lv ltnn; congr (_ + _).
  by rewrite [RHS]big_mkcond; apply: eq_bigr => l _; rewrite /lv ltn_ord valKd.
have -> : \sum_(b < E) rv b = \sum_(l < D | (l < d_model P)%nat) Z j l * Wk P t l c + bk P t 0 c.
  rewrite big_ord_recr /= {2}/rv ltnn; congr (_ + _).
  by rewrite [RHS]big_mkcond; apply: eq_bigr => l _; rewrite /rv ltn_ord valKd [in LHS]mulrC.
case: (ltnP c (d_head P)) => Hc //.
rewrite big1 ?add0r ?Hbqk ?mul0r //.
by move=> l _; rewrite Hwqk // mulr0.
Qed.
End ShallowScores.
