(** Theorem 6 in the kernel, fifteenth stage: LayerNorm 2, U's output before the write.  U's own
    exported node [out.Y2] at every query of the out grid (row i < n, column e < d_model) is
    EncoderLayer.v's [norm2 sqrtf P n X2 i e] when post-norm, else [X2 i e], X2 = add_residual P x1
    (ff_block P n Z2) as in the R2 stage, for every capacity N, D, H, K, F, both variants
    (generated statements: UniversalY2Statement.v).

    R2's statistics: [out.R2_sum] sums ln2.sum_terms = ffn2.prod + [f = 0] c2 over the keys (i, e',
    f) of ffn2.products, i.e. the sum over e' < D of c2 + sum_f act_f W2[f, e'] = R2[i, e'];
    [out.R2_sq] sums ln2.sq_terms = 2 c2 ffn2.prod + [f = 0] c2^2 and [out.R2_gram] the Gram terms
    act_f act_f2 gram[f, f2] over (f, f2): with gram[f, f2] = sum_e' W2[f, e'] W2[f2, e'] (the Gram
    stage), sum_(f, f2) act_f act_f2 gram[f, f2] = sum_e' (sum_f act_f W2[f, e'])^2, so the two
    sum R2[i, e']^2 over e' < D.  U sums D columns, the layer d_model: R2 is zero beyond d_model
    when norm1's weight and bias, b2 and W2 are (premises); a feature at all (0 < F) keeps the
    [f = 0] terms.  c2 on the grid ffn2.products is recomputed there (ffn2.R, ffn2.Y1): the R
    stage's terms, the FFN-1 stage's statistics. *)
From mathcomp Require Import all_ssreflect all_algebra.
From mathcomp Require Import reals sequences exp.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From mathcomp Require Import ring.
From Attnsim Require Import Semantics Lemmas UniversalLemmas UniversalY2Nodes EncoderLayer.
From Attnsim Require Import UniversalRowMean UniversalRowStats UniversalLayerNorm1Statement UniversalLayerNorm1.
From Attnsim Require Import UniversalQProjStatement UniversalQProj UniversalVProjStatement UniversalVProj.
From Attnsim Require Import UniversalScoresStatement UniversalScores UniversalSoftmaxStatement UniversalSoftmax.
From Attnsim Require Import UniversalHeadsStatement UniversalHeads UniversalAttnOutStatement UniversalAttnOut.
From Attnsim Require Import UniversalY1Statement UniversalY1 UniversalFfnActStatement UniversalFfnAct.
From Attnsim Require Import UniversalFfnOutStatement UniversalFfnOut UniversalGramActStatement UniversalGramAct.
From Attnsim Require Import UniversalY2Statement.
Import GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.


(** * Compact U *)
Section Compact.
Variables (R : realType) (sqrtf geluf gelu_tanhf : R -> R) (N D H K F : nat) (P : params R D H K F)
  (M : mask R N) (X : 'M[R]_(N, D)) (x : seq R) (i : 'I_N) (e : 'I_D) (n p : nat).
Local Notation Z5 g := (g (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)).
Local Notation ev a k := (eval (@expR R) sqrtf geluf gelu_tanhf (Z5 a) x k).
Local Notation Zin := (if norm P is PreNorm then norm1 sqrtf P n X else X).
Local Notation X1 := (add_residual P X (self_attn (@expR R) P M n Zin)).
Local Notation Z2 := (match norm P with PreNorm => norm2 sqrtf P n X1 | PostNorm => norm1 sqrtf P n X1 | NoNorm => X1 end).
Local Notation x1 := (if norm P is PostNorm then norm1 sqrtf P n X1 else X1).
Local Notation X2 := (add_residual P x1 (ff_block P n Z2)).
Hypotheses (HX : encodes x 0 1 N D (fun _ => X))
  (Hd : nth 0 x ((N * D)%nat + 1)%nat = (d_model P)%:R)
  (He : nth 0 x (U_compact_gates_offset N D H K F + 7)%nat = eps P)
  (Hg : encodes x (U_compact_g1_offset N D H K F) 1 1 D (fun _ => norm1_w P))
  (Hb : encodes x (U_compact_be1_offset N D H K F) 1 1 D (fun _ => norm1_b P))
  (Hpre : nth 0 x (U_compact_gates_offset N D H K F + 1)%nat = (if norm P is PreNorm then 1 else 0))
  (Hsc : nth 0 x (U_compact_gates_offset N D H K F + 6)%nat = scale P)
  (Hm : encodes x (U_compact_mask_add_offset N D H K F) 1 N N (fun _ => additive M))
  (Hwq : encodes x (U_compact_wqkv_offset N D H K F) H D K (Wq P))
  (Hwk : encodes x (U_compact_wqkv_offset N D H K F + H * D * K)%nat H D K (Wk P))
  (Hbq : encodes x (U_compact_bqkv_offset N D H K F) 1 H K (fun _ => \matrix_(t, c) bq P t 0 c))
  (Hbk : encodes x (U_compact_bqkv_offset N D H K F + H * K)%nat 1 H K (fun _ => \matrix_(t, c) bk P t 0 c))
  (HL : ((((3 * H)%nat * N)%nat * K * D)%nat <= size x)%nat)
  (HLK : (((H * N)%nat * N * K)%nat <= size x)%nat)
  (Hwqpad : forall (t : 'I_H) (j : 'I_D) (c : 'I_K), (d_model P <= j)%nat -> Wq P t j c = 0)
  (Hwkpad : forall (t : 'I_H) (j : 'I_D) (c : 'I_K), (d_model P <= j)%nat -> Wk P t j c = 0)
  (Hwqk : forall (t : 'I_H) (j : 'I_D) (c : 'I_K), (d_head P <= c)%nat -> Wq P t j c = 0)
  (Hbqk : forall (t : 'I_H) (c : 'I_K), (d_head P <= c)%nat -> bq P t 0 c = 0)
  (Hd0 : (0 < d_model P)%nat) (HdD : (d_model P <= D)%nat)
  (Hpad : forall (i : 'I_N) (j : 'I_D), (d_model P <= j)%nat -> X i j = 0)
  (Hn : nth 0 x (N * D)%nat = n%:R)
  (Hblk : encodes x (U_compact_mask_blocked_offset N D H K F) 1 N N
            (fun _ => \matrix_(i, j) if blocked M i j then 1 else 0))
  (HLD : (((H * N)%nat * N * D)%nat <= size x)%nat)
  (Hwv : encodes x (U_compact_wqkv_offset N D H K F + 2 * H * D * K)%nat H D K (Wv P))
  (Hbv : encodes x (U_compact_bqkv_offset N D H K F + 2 * H * K)%nat 1 H K (fun _ => \matrix_(t, c) bv P t 0 c))
  (Hwvpad : forall (t : 'I_H) (j : 'I_D) (c : 'I_K), (d_model P <= j)%nat -> Wv P t j c = 0)
  (Hwo : encodes x (U_compact_wo_offset N D H K F) H K D (Wo P))
  (Hwopad : forall (t : 'I_H) (c : 'I_K) (e : 'I_D), (d_head P <= c)%nat -> Wo P t c e = 0)
  (HLV : (((H * N)%nat * K * D)%nat <= size x)%nat)
  (Hres : nth 0 x (U_compact_gates_offset N D H K F + 0)%nat = (if residual P then 1 else 0))
  (Hbo : encodes x (U_compact_bo_offset N D H K F) 1 1 D (fun _ => bo P))
  (Hwoh : forall (t : 'I_H) (c : 'I_K) (e : 'I_D), (nhead P <= t)%nat -> Wo P t c e = 0)
  (HH : (0 < H)%nat) (HLH : ((N * D * H)%nat <= size x)%nat)
  (Hp : (p < (1 * N * D)%nat)%nat) (Hpi : (p %/ D %% N)%nat = i) (Hpe : (p %% D)%nat = e)
  (Hin : (i < n)%nat) (Hed : (e < d_model P)%nat)
  (Hpost : nth 0 x (U_compact_gates_offset N D H K F + 2)%nat = (if norm P is PostNorm then 1 else 0))
  (Hwoe : forall (t : 'I_H) (c : 'I_K) (e : 'I_D), (d_model P <= e)%nat -> Wo P t c e = 0)
  (Hboe : forall e : 'I_D, (d_model P <= e)%nat -> bo P 0 e = 0)
  (HLQ : (((N * D)%nat * H * H)%nat <= size x)%nat)
  (Hg2 : encodes x (U_compact_g2_offset N D H K F) 1 1 D (fun _ => norm2_w P))
  (Hb2 : encodes x (U_compact_be2_offset N D H K F) 1 1 D (fun _ => norm2_b P))
  (Hw1 : encodes x (U_compact_w1_offset N D H K F) 1 D F (fun _ => W1 P))
  (Hb1 : encodes x (U_compact_b1_offset N D H K F) 1 1 F (fun _ => b1 P))
  (Hw1pad : forall (j : 'I_D) (f : 'I_F), (d_model P <= j)%nat -> W1 P j f = 0)
  (HLF : (((N * F)%nat * H * D)%nat <= size x)%nat)
  (Hact : forall v : R, activation P v = if nth 0 x (U_compact_gates_offset N D H K F + 3)%nat != 0 then geluf v
    else if nth 0 x (U_compact_gates_offset N D H K F + 4)%nat != 0 then gelu_tanhf v else Num.max v 0)
  (Hw2 : encodes x (U_compact_w2_offset N D H K F) 1 F D (fun _ => W2 P))
  (Hbb2 : encodes x (U_compact_b2_offset N D H K F) 1 1 D (fun _ => b2 P))
  (Hw2pad : forall (f : 'I_F) (e : 'I_D), (dim_ff P <= f)%nat -> W2 P f e = 0)
  (HLE : ((N * D * F)%nat <= size x)%nat)
  (Hg1e : forall e : 'I_D, (d_model P <= e)%nat -> norm1_w P 0 e = 0)
  (Hbe1e : forall e : 'I_D, (d_model P <= e)%nat -> norm1_b P 0 e = 0)
  (Hb2e : forall e : 'I_D, (d_model P <= e)%nat -> b2 P 0 e = 0)
  (Hw2e : forall (f : 'I_F) (e : 'I_D), (d_model P <= e)%nat -> W2 P f e = 0)
  (HF : (0 < F)%nat) (HLG : ((F * F * D)%nat <= size x)%nat) (HLT : ((N * F * F)%nat <= size x)%nat).

Let HD : (0 < D)%nat. Proof. exact: leq_trans Hd0 HdD. Qed.
Let Hp' : (p < N * D)%nat. Proof. by move: Hp; rewrite mul1n. Qed.
Let Hpi' : (p %/ D)%nat = i.
Proof. by rewrite -Hpi modn_small // ltn_divLR. Qed.

Let o (e' : 'I_D) (h : 'I_H) : R := \sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n Zin h i c * Wo P h c e'.
Let cc (e' : 'I_D) : R := bo P 0 e' + (if residual P then 1 else 0) * X i e'.
Let Rv (e' : 'I_D) : R := \sum_(h < H) o e' h + cc e'.
Let act (g : 'I_F) : R := activation P (\sum_(j' < D | (j' < d_model P)%nat) Z2 i j' * W1 P j' g + b1 P 0 g).
Let y1v (e' : 'I_D) : R := if norm P is PostNorm
  then (Rv e' - row_mean P X1 i) * (sqrtf (row_var P X1 i + eps P))^-1 * norm1_w P 0 e' + norm1_b P 0 e' else Rv e'.
Let c2v (e' : 'I_D) : R := (if residual P then 1 else 0) * y1v e' + b2 P 0 e'.
Let r2 (e' : 'I_D) : R := if (e' < d_model P)%nat then X2 i e' else 0.

Let Hgz (k L : nat) : (k < L)%nat -> ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat L))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

Let Hg3 (k : nat) : (k < N * D * F)%nat ->
  ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat N * Z.of_nat D * Z.of_nat F))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

(** The out grid's query on row i at column e', and the query (i, e', g) of ffn2.products. *)
Lemma compact_pp (e' : 'I_D) :
  [/\ (i * D + e' < 1 * N * D)%nat, ((i * D + e') %/ D %% N)%nat = i & ((i * D + e') %% D)%nat = e'].
Proof.
have Hl : (i * D + e' < N * D)%nat by exact: lin_lt.
split; first by rewrite mul1n.
  by rewrite divnMDl // divn_small // addn0 modn_small.
by rewrite modnMDl modn_small.
Qed.

Lemma compact_qq (e' : 'I_D) (g : 'I_F) :
  [/\ ((i * D + e') * F + g < N * D * F)%nat, (((i * D + e') * F + g) %/ F %/ D)%nat = i,
      (((i * D + e') * F + g) %% F)%nat = g, (((i * D + e') * F + g) %/ F)%nat = (i * D + e')%nat
    & (((i * D + e') * F + g) %/ F %% D)%nat = e'].
Proof.
have Hl : (i * D + e' < N * D)%nat by exact: lin_lt.
have E : (((i * D + e') * F + g) %/ F)%nat = (i * D + e')%nat by rewrite divnMDl // divn_small ?addn0.
split => //; first exact: lin_lt.
- by rewrite E divnMDl // divn_small // addn0.
- by rewrite modnMDl modn_small.
- by rewrite E modnMDl modn_small.
Qed.

Lemma compact_act_at (e' : 'I_D) (g : 'I_F) :
  ev U_compact_ffn2_prod ((i * D + e') * F + g)%nat = act g * W2 P g e'.
Proof.
have [P1 P2 P3] := compact_pp e'.
exact: (@compact_prod R sqrtf geluf gelu_tanhf N D H K F P M X x i e' n (i * D + e')%nat HX Hd He Hg Hb Hpre
  Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV
  Hres Hbo Hwoh HH HLH P1 P2 P3 Hin Hpost Hwoe Hboe HLQ Hg2 Hb2 Hw1 Hb1 Hw1pad HLF Hact Hw2 g).
Qed.

(** A gather of a row block at the query's column e' (any grid whose column is e'). *)
Lemma compact_row_at (src : Z -> Z) (o1 k : nat) (w : 'rV[R]_D) (e' : 'I_D) :
  encodes x o1 1 1 D (fun _ => w) -> src (Z.of_nat k) = Z.of_nat (o1 + e') ->
  eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Select Indices (IMap1 src Indices) CEq) Tokens) x k = w 0 e'.
Proof.
move=> Hw Hs; have [Hs1 Hs2] := encodes_row e' Hw.
by rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (o1 + e')).
Qed.

Lemma compact_res_at (k : nat) : ev U_compact_residual k = if residual P then 1 else 0.
Proof.
have [HoL _] := Hbo ord0 ord0 (Ordinal HD).
rewrite /U_compact_residual /U_compact_residual_gather /U_compact_residual_source /U_compact_indices /U_compact_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_compact_gates_offset N D H K F + 0)) //.
  by rewrite /U_compact_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
apply: leq_ltn_trans HoL.
by rewrite /pos /U_compact_bo_offset /U_compact_gates_offset; clear; lia.
Qed.

(** R on the grid ffn2.products: the sum over the heads of attn.r_terms at (i, e'). *)
Lemma compact_ffn2_R (e' : 'I_D) (g : 'I_F) : ev U_compact_ffn2_R ((i * D + e') * F + g)%nat = Rv e'.
Proof.
have [Q1 Q2 Q3 Q4 Q5] := compact_qq e' g.
have -> : ev U_compact_ffn2_R ((i * D + e') * F + g)%nat = cst_sem R (CQ (Z.of_nat H) 1)
  * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_compact_ffn2_R_sum_347) (Z5 U_compact_attn_r_terms)) x
      ((i * D + e') * F + g)%nat by [].
have HLH' : (N * D * H <= size x)%nat by [].
rewrite cst_nat (@agg_last _ _ _ _ _ _ _ x _ (N * D) H (i * D + e') (lin_lt (ltn_ord i) (ltn_ord e')) HLH'); last first.
  move=> k _; rewrite /U_compact_ffn2_R_sum_347 /U_compact_ffn2_R_key_group /U_compact_ffn2_R_query_group /U_compact_indices /=.
  rewrite !iif_range (Hg3 Q1) !Z.sub_0_r !zdiv_nat !zmod_nat Q2 Q5 (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) andTb.
  have -> : (Z.of_nat i * Z.of_nat D + Z.of_nat e')%Z = Z.of_nat (i * D + e') by rewrite Nat2Z.inj_add Nat2Z.inj_mul.
  have -> : (Z.of_nat N * Z.of_nat D * Z.of_nat H)%Z = Z.of_nat (N * D * H) by rewrite !Nat2Z.inj_mul.
  rewrite ltb_nat; case: ltnP => Hk /=.
    have -> : (Z.of_nat (k %/ H %/ D) * Z.of_nat D + Z.of_nat (k %/ H %% D))%Z = Z.of_nat (k %/ H).
      by rewrite [in RHS](divn_eq (k %/ H) D) Nat2Z.inj_add Nat2Z.inj_mul.
    by rewrite eqb_of_nat.
  by case E: (Z.of_nat (i * D + e')) => [|z|z] //; have := Nat2Z.is_nonneg (i * D + e'); rewrite E; lia.
under eq_bigr => h _ do rewrite (compact_r_at sqrtf geluf gelu_tanhf HX Hd He Hg Hb Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK
  Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV Hres Hbo HH Hin e' h).
by rewrite big_split /= (sum_if0 HH).
Qed.

Lemma compact_y1_at (e' : 'I_D) (g : 'I_F) : ev U_compact_ffn2_Y1 ((i * D + e') * F + g)%nat = y1v e'.
Proof.
have [Q1 Q2 Q3 Q4 Q5] := compact_qq e' g.
set k := ((i * D + e') * F + g)%nat.
have -> : ev U_compact_ffn2_Y1 k = if ev U_compact_post k != 0
  then (ev U_compact_ffn2_R k - ev U_compact_ffn2_mu1 k) * ev U_compact_ffn2_ln1_rstd k * ev U_compact_ffn2_g1 k
       + ev U_compact_ffn2_be1 k
  else ev U_compact_ffn2_R k by [].
rewrite (compact_post sqrtf geluf gelu_tanhf e' k Hbo Hpost) compact_ffn2_R.
rewrite (compact_ffn_mu sqrtf geluf gelu_tanhf HX Hd He Hg Hb Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk
  Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV Hres Hbo Hwoh HH HLH Hin Hwoe Hboe HLQ Q1 Q2).
rewrite (compact_ffn_rstd sqrtf geluf gelu_tanhf HX Hd He Hg Hb Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk
  Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV Hres Hbo Hwoh HH HLH Hin Hwoe Hboe HLQ Q1 Q2).
have Eg : ev U_compact_ffn2_g1 k = norm1_w P 0 e'.
  rewrite /U_compact_ffn2_g1 /U_compact_ffn2_g1_gather /U_compact_ffn2_g1_source /U_compact_indices /U_compact_tokens.
  apply: (compact_row_at Hg); cbv beta; rewrite iif_range (Hg3 Q1) Z.sub_0_r !zdiv_nat !zmod_nat Q5.
  by rewrite /U_compact_g1_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
have Eb : ev U_compact_ffn2_be1 k = norm1_b P 0 e'.
  rewrite /U_compact_ffn2_be1 /U_compact_ffn2_be1_gather /U_compact_ffn2_be1_source /U_compact_indices /U_compact_tokens.
  apply: (compact_row_at Hb); cbv beta; rewrite iif_range (Hg3 Q1) Z.sub_0_r !zdiv_nat !zmod_nat Q5.
  by rewrite /U_compact_be1_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
by rewrite Eg Eb /y1v; case: (norm P) => /=; rewrite ?eqxx ?oner_neq0.
Qed.

Lemma compact_c2_at (e' : 'I_D) (g : 'I_F) : ev U_compact_ffn2_c2 ((i * D + e') * F + g)%nat = c2v e'.
Proof.
have [Q1 Q2 Q3 Q4 Q5] := compact_qq e' g.
have -> : ev U_compact_ffn2_c2 ((i * D + e') * F + g)%nat
  = ev U_compact_residual ((i * D + e') * F + g)%nat * ev U_compact_ffn2_Y1 ((i * D + e') * F + g)%nat
    + ev U_compact_ffn2_b2 ((i * D + e') * F + g)%nat by [].
rewrite compact_res_at compact_y1_at /c2v; congr (_ + _).
rewrite /U_compact_ffn2_b2 /U_compact_ffn2_b2_gather /U_compact_ffn2_b2_source /U_compact_indices /U_compact_tokens.
apply: (compact_row_at Hbb2); cbv beta; rewrite iif_range (Hg3 Q1) Z.sub_0_r !zdiv_nat !zmod_nat Q5.
by rewrite /U_compact_b2_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

Lemma compact_f0_at (e' : 'I_D) (g : 'I_F) :
  eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_compact_ffn2_f0)) x ((i * D + e') * F + g)%nat
  = if g == 0%nat :> nat then 1 else 0.
Proof.
have [Q1 Q2 Q3 Q4 Q5] := compact_qq e' g.
rewrite /U_compact_ffn2_f0 /U_compact_indices /= Z.sub_0_r zmod_nat Q3.
rewrite /iif /iand /ile /ilt /ieq /zb.
have /andP[-> ->] := Hg3 Q1.
have -> : (Z.of_nat g =? 0)%Z = (g == 0%nat :> nat) by exact: (eqb_of_nat g 0).
by case: (g == 0%nat :> nat); rewrite /zR /= ?subr0.
Qed.

(** R2 at column e': c2 plus the FFN's sum, the layer's X2 inside d_model, 0 beyond. *)
Lemma compact_r2v (e' : 'I_D) : c2v e' + \sum_(g < F) act g * W2 P g e' = r2 e'.
Proof.
have /= E := compact_Rv sqrtf M Hpad Hwoh Hin Hwoe Hboe e'.
rewrite /r2 /c2v /y1v; case: ltnP => He'.
- have Ey : (if norm P is PostNorm
    then (Rv e' - row_mean P X1 i) * (sqrtf (row_var P X1 i + eps P))^-1 * norm1_w P 0 e' + norm1_b P 0 e'
    else Rv e') = x1 i e'.
    rewrite /Rv /o /cc E He'; case: (norm P) => //.
    by rewrite /norm1 /layer_norm /block !mxE Hin He'.
  rewrite Ey.
  have Eff : ff_block P n Z2 i e' = \sum_(g < F) act g * W2 P g e' + b2 P 0 e'.
    rewrite /ff_block /block !mxE Hin He' /=; congr (_ + _).
    rewrite [RHS](bigID (fun g : 'I_F => (g < dim_ff P)%nat)) /= [X in _ = _ + X]big1 ?addr0 //.
    by move=> g; rewrite -leqNgt => Hg'; rewrite Hw2pad // mulr0.
  have -> : X2 i e' = (if residual P then 1 else 0) * x1 i e' + ff_block P n Z2 i e'.
    by rewrite /add_residual; case: (residual P); rewrite ?mxE ?mul1r ?mul0r ?add0r.
  by rewrite Eff addrA [_ + b2 P 0 e' + _]addrAC.
- have Ey : (if norm P is PostNorm
    then (Rv e' - row_mean P X1 i) * (sqrtf (row_var P X1 i + eps P))^-1 * norm1_w P 0 e' + norm1_b P 0 e'
    else Rv e') = 0.
    have -> : Rv e' = 0 by rewrite /Rv /o /cc E ltnNge He'.
    by case: (norm P) => //; rewrite Hg1e // Hbe1e // mulr0 addr0.
  rewrite Ey mulr0 add0r Hb2e // add0r big1 // => g _.
  by rewrite Hw2e // mulr0.
Qed.

(** The sums over (e', f) of ffn2.products of the out grid's query p: the keys (i, e', f). *)
Lemma compact_sum_ef (s : sel) (v : sop) :
  (forall k, seval (@expR R) sqrtf geluf gelu_tanhf s x p k = ((k < N * D * F) && (k %/ F %/ D == i))%nat) ->
  cst_sem R (CQ (Z.of_nat D * Z.of_nat F) 1) * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate s v) x p
  = \sum_(e' < D) \sum_(g < F) eval (@expR R) sqrtf geluf gelu_tanhf v x ((i * D + e') * F + g)%nat.
Proof.
move=> Hs.
have HLE' : (N * (D * F) <= size x)%nat by rewrite mulnA.
rewrite -Nat2Z.inj_mul cst_nat (@agg_last _ _ _ _ _ _ _ x p N (D * F) i (ltn_ord i) HLE'); last first.
  by move=> k _; rewrite Hs mulnA -divnMA [(F * D)%nat]mulnC.
rewrite (@sum_split _ (fun j => eval (@expR R) sqrtf geluf gelu_tanhf v x (i * (D * F) + j)%nat) D F).
apply: eq_bigr => e' _; apply: eq_bigr => g _.
by rewrite mulnDl addnA mulnA.
Qed.

Let Hpz : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 0 + 1 * Z.of_nat N * Z.of_nat D))%Z = true.
Proof. by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia. Qed.

Lemma compact_r2sum_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_out_R2_sum_sum) x p k = ((k < N * D * F) && (k %/ F %/ D == i))%nat.
Proof.
rewrite /U_compact_out_R2_sum_sum /U_compact_out_R2_sum_key_group /U_compact_out_R2_sum_query_group /U_compact_indices /=.
rewrite !iif_range !Z.sub_0_r.
have -> : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia.
rewrite !zdiv_nat Hpi' (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) /=.
have -> : (Z.of_nat N * Z.of_nat D * Z.of_nat F)%Z = Z.of_nat (N * D * F) by rewrite !Nat2Z.inj_mul.
rewrite ltb_nat; case: ltnP => Hk /=; first by rewrite eqb_of_nat.
by case E: (Z.of_nat i) => [|z|z] //; have := Nat2Z.is_nonneg i; rewrite E; lia.
Qed.

Lemma compact_r2sq_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_out_R2_sq_sum) x p k = ((k < N * D * F) && (k %/ F %/ D == i))%nat.
Proof.
rewrite /U_compact_out_R2_sq_sum /U_compact_out_R2_sq_key_group /U_compact_out_R2_sq_query_group /U_compact_indices /=.
rewrite !iif_range !Z.sub_0_r.
have -> : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia.
rewrite !zdiv_nat Hpi' (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) /=.
have -> : (Z.of_nat N * Z.of_nat D * Z.of_nat F)%Z = Z.of_nat (N * D * F) by rewrite !Nat2Z.inj_mul.
rewrite ltb_nat; case: ltnP => Hk /=; first by rewrite eqb_of_nat.
by case E: (Z.of_nat i) => [|z|z] //; have := Nat2Z.is_nonneg i; rewrite E; lia.
Qed.

Lemma compact_r2sum :
  ev U_compact_out_R2_sum p = \sum_(e' < D) r2 e'.
Proof.
have -> : ev U_compact_out_R2_sum p = cst_sem R (CQ (Z.of_nat D * Z.of_nat F) 1)
  * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_compact_out_R2_sum_sum) (Z5 U_compact_ln2_sum_terms)) x p by [].
rewrite (compact_sum_ef _ compact_r2sum_sel).
apply: eq_bigr => e' _.
have E (g : 'I_F) : eval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_ln2_sum_terms) x ((i * D + e') * F + g)%nat
  = ev U_compact_ffn2_prod ((i * D + e') * F + g)%nat
    + eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_compact_ffn2_f0)) x ((i * D + e') * F + g)%nat
      * ev U_compact_ffn2_c2 ((i * D + e') * F + g)%nat by [].
under eq_bigr => g _ do rewrite E compact_act_at compact_f0_at compact_c2_at.
by rewrite big_split /= -mulr_suml (sum_if0 HF) mul1r addrC compact_r2v.
Qed.

Lemma compact_r2sq :
  ev U_compact_out_R2_sq p = \sum_(e' < D) (2%:R * c2v e' * (\sum_(g < F) act g * W2 P g e') + c2v e' ^+ 2).
Proof.
have -> : ev U_compact_out_R2_sq p = cst_sem R (CQ (Z.of_nat D * Z.of_nat F) 1)
  * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_compact_out_R2_sq_sum) (Z5 U_compact_ln2_sq_terms)) x p by [].
rewrite (compact_sum_ef _ compact_r2sq_sel).
apply: eq_bigr => e' _.
have E (g : 'I_F) : eval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_ln2_sq_terms) x ((i * D + e') * F + g)%nat
  = cst_sem R (CQ 2 1) * ev U_compact_ffn2_c2 ((i * D + e') * F + g)%nat * ev U_compact_ffn2_prod ((i * D + e') * F + g)%nat
    + eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_compact_ffn2_f0)) x ((i * D + e') * F + g)%nat
      * (ev U_compact_ffn2_c2 ((i * D + e') * F + g)%nat * ev U_compact_ffn2_c2 ((i * D + e') * F + g)%nat) by [].
under eq_bigr => g _ do rewrite E compact_act_at compact_f0_at compact_c2_at cst_two.
by rewrite big_split /= -mulr_suml (sum_if0 HF) mul1r -mulr_sumr expr2.
Qed.

Lemma compact_r2gram :
  ev U_compact_out_R2_gram p = \sum_(e' < D) (\sum_(g < F) act g * W2 P g e') ^+ 2.
Proof.
have -> : ev U_compact_out_R2_gram p = cst_sem R (CQ (Z.of_nat F * Z.of_nat F) 1)
  * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_compact_out_R2_gram_sum) (Z5 U_compact_ln2_gram_terms)) x p by [].
have HLT' : (N * (F * F) <= size x)%nat by rewrite mulnA.
rewrite -Nat2Z.inj_mul cst_nat (@agg_last _ _ _ _ _ _ _ x p N (F * F) i (ltn_ord i) HLT'); last first.
  move=> k _; rewrite /U_compact_out_R2_gram_sum /U_compact_out_R2_gram_key_group /U_compact_out_R2_gram_query_group.
  rewrite /U_compact_indices /= !iif_range !Z.sub_0_r.
  have -> : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
    by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia.
  rewrite !zdiv_nat Hpi' (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) /=.
  have -> : (Z.of_nat N * Z.of_nat F * Z.of_nat F)%Z = Z.of_nat (N * (F * F)) by rewrite !Nat2Z.inj_mul Z.mul_assoc.
  rewrite ltb_nat; case: ltnP => _ /=; first by rewrite eqb_of_nat -divnMA.
  by case E: (Z.of_nat i) => [|z|z] //; have := Nat2Z.is_nonneg i; rewrite E; lia.
rewrite (@sum_split _ (fun j => eval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_ln2_gram_terms) x (i * (F * F) + j)%nat) F F).
have Et (g g2 : 'I_F) : eval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_ln2_gram_terms) x (i * (F * F) + (g * F + g2))%nat
  = act g * act g2 * \sum_(e' < D) W2 P g e' * W2 P g2 e'.
  have Eq : (i * (F * F) + (g * F + g2) = (i * F + g) * F + g2)%nat by rewrite mulnDl addnA mulnA.
  have [Q1 Q2 Q3 Q4] : [/\ ((i * F + g) * F + g2 < N * F * F)%nat, (((i * F + g) * F + g2) %/ F %/ F)%nat = i,
    (((i * F + g) * F + g2) %/ F %% F)%nat = g & (((i * F + g) * F + g2) %% F)%nat = g2].
    have E1 : (((i * F + g) * F + g2) %/ F = i * F + g)%nat by rewrite divnMDl // divn_small ?addn0.
    split; first exact: (lin_lt (lin_lt (ltn_ord i) (ltn_ord g)) (ltn_ord g2)).
    - by rewrite E1 divnMDl // divn_small ?addn0.
    - by rewrite E1 modnMDl modn_small.
    - by rewrite modnMDl modn_small.
  rewrite Eq.
  have -> : eval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_ln2_gram_terms) x ((i * F + g) * F + g2)%nat
    = ev U_compact_gram_u_act ((i * F + g) * F + g2)%nat * ev U_compact_gram_u2_act ((i * F + g) * F + g2)%nat
      * ev U_compact_gram ((i * F + g) * F + g2)%nat by [].
  rewrite (@U_compact_gram_act_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i g g2 n _ HX Hd He Hg Hb Hpre
    Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV
    Hres Hbo Hwoh HH HLH Hin Hpost Hwoe Hboe HLQ Hg2 Hb2 Hw1 Hb1 Hw1pad HLF Hact Q1 Q2 Q3 Q4).
  rewrite (@U_compact_gram_act2_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i g g2 n _ HX Hd He Hg Hb Hpre
    Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV
    Hres Hbo Hwoh HH HLH Hin Hpost Hwoe Hboe HLQ Hg2 Hb2 Hw1 Hb1 Hw1pad HLF Hact Q1 Q2 Q3 Q4).
  by rewrite (@U_compact_gram_spec R sqrtf geluf gelu_tanhf N D H K F P x i g g2 _ Hw2 HLG Q1 Q2 Q3 Q4).
have -> : \sum_(g < F) \sum_(g2 < F)
    eval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_ln2_gram_terms) x (i * (F * F) + (g * F + g2))%nat
  = \sum_(g < F) \sum_(g2 < F) act g * act g2 * \sum_(e' < D) W2 P g e' * W2 P g2 e'.
  by apply: eq_bigr => g _; apply: eq_bigr => g2 _; exact: Et.
(* the Gram identity *)
rewrite [RHS](eq_bigr (fun e' : 'I_D => \sum_(g < F) \sum_(g2 < F) act g * W2 P g e' * (act g2 * W2 P g2 e'))); last first.
  by move=> e' _; rewrite expr2 mulr_suml; apply: eq_bigr => g _; rewrite mulr_sumr.
rewrite [RHS]exchange_big /=; apply: eq_bigr => g _.
rewrite [RHS]exchange_big /=; apply: eq_bigr => g2 _.
by rewrite mulr_sumr; apply: eq_bigr => e' _; rewrite mulrACA.
Qed.

Lemma compact_g2_at : ev U_compact_out_g2 p = norm2_w P 0 e.
Proof.
rewrite /U_compact_out_g2 /U_compact_out_g2_gather /U_compact_out_g2_source /U_compact_indices /U_compact_tokens.
apply: (compact_row_at Hg2); cbv beta; rewrite iif_range Hpz Z.sub_0_r zmod_nat Hpe.
by rewrite /U_compact_g2_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

Lemma compact_be2_at : ev U_compact_out_be2 p = norm2_b P 0 e.
Proof.
rewrite /U_compact_out_be2 /U_compact_out_be2_gather /U_compact_out_be2_source /U_compact_indices /U_compact_tokens.
apply: (compact_row_at Hb2); cbv beta; rewrite iif_range Hpz Z.sub_0_r zmod_nat Hpe.
by rewrite /U_compact_be2_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

(** [out.Y2] at p from R2 and its sums: LayerNorm 2 of R2 (post-norm), else R2. *)
Lemma compact_y2_of (Y : 'M[R]_(N, D)) :
  ev U_compact_out_R2 p = Y i e ->
  ev U_compact_out_R2_sum p = \sum_(j < D | (j < d_model P)%nat) Y i j ->
  ev U_compact_out_R2_sq p + ev U_compact_out_R2_gram p = \sum_(j < D | (j < d_model P)%nat) Y i j ^+ 2 ->
  ev U_compact_out_Y2 p = (if norm P is PostNorm then norm2 sqrtf P n Y else Y) i e.
Proof.
move=> E1 E2 E3.
have -> : ev U_compact_out_Y2 p = if ev U_compact_post p != 0
  then (ev U_compact_out_R2 p - ev U_compact_out_R2_sum p / ev U_compact_d p)
       * (sqrtf ((ev U_compact_out_R2_sq p + ev U_compact_out_R2_gram p) / ev U_compact_d p
          - ev U_compact_out_R2_sum p / ev U_compact_d p * (ev U_compact_out_R2_sum p / ev U_compact_d p)
          + ev U_compact_eps p))^-1 * ev U_compact_out_g2 p + ev U_compact_out_be2 p
  else ev U_compact_out_R2 p by [].
rewrite (compact_post sqrtf geluf gelu_tanhf e p Hbo Hpost) E1 E2 E3 compact_g2_at compact_be2_at.
rewrite (compact_ffn_d sqrtf geluf gelu_tanhf p Hd Hd0) (compact_eps sqrtf geluf gelu_tanhf e p He Hbo).
case: (norm P) => /=; rewrite ?eqxx ?oner_neq0 //=.
by rewrite /norm2 /layer_norm /block !mxE Hin Hed /= /row_var /row_mean var_identity // expr2.
Qed.

(** [out.Y2] at p: LayerNorm 2 of R2 (post-norm), its mean and second moment from U's sums, or R2. *)
Lemma compact_y2 : ev U_compact_out_Y2 p = (if norm P is PostNorm then norm2 sqrtf P n X2 else X2) i e.
Proof.
apply: compact_y2_of.
- exact: (@U_compact_ffn_out_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p HX Hd He Hg Hb Hpre Hsc Hm
  Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV
  Hres Hbo Hwoh HH HLH Hp Hpi Hpe Hin Hed Hpost Hwoe Hboe HLQ Hg2 Hb2 Hw1 Hb1 Hw1pad HLF Hact Hw2 Hbb2 Hw2pad HLE).
- by rewrite compact_r2sum [RHS]big_mkcond; apply: eq_bigr => e' _; rewrite /r2.
rewrite compact_r2sq compact_r2gram -big_split [RHS]big_mkcond; apply: eq_bigr => e' _ /=.
have E2 := compact_r2v e'; rewrite /r2 in E2.
have -> : 2%:R * c2v e' * (\sum_(g < F) act g * W2 P g e') + c2v e' ^+ 2 + (\sum_(g < F) act g * W2 P g e') ^+ 2
  = (c2v e' + \sum_(g < F) act g * W2 P g e') ^+ 2 by ring.
by rewrite E2; case: ifP => _ //; rewrite expr2 mul0r.
Qed.

End Compact.

Theorem U_compact_y2_spec : U_compact_y2_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p.
do 62 move=> ?; apply: compact_y2; assumption.
Qed.

(** * Shallow U: the same nodes (its own node numbers). *)
Section Shallow.
Variables (R : realType) (sqrtf geluf gelu_tanhf : R -> R) (N D H K F : nat) (P : params R D H K F)
  (M : mask R N) (X : 'M[R]_(N, D)) (x : seq R) (i : 'I_N) (e : 'I_D) (n p : nat).
Local Notation Z5 g := (g (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)).
Local Notation ev a k := (eval (@expR R) sqrtf geluf gelu_tanhf (Z5 a) x k).
Local Notation Zin := (if norm P is PreNorm then norm1 sqrtf P n X else X).
Local Notation X1 := (add_residual P X (self_attn (@expR R) P M n Zin)).
Local Notation Z2 := (match norm P with PreNorm => norm2 sqrtf P n X1 | PostNorm => norm1 sqrtf P n X1 | NoNorm => X1 end).
Local Notation x1 := (if norm P is PostNorm then norm1 sqrtf P n X1 else X1).
Local Notation X2 := (add_residual P x1 (ff_block P n Z2)).
Hypotheses (HX : encodes x 0 1 N D (fun _ => X))
  (Hd : nth 0 x ((N * D)%nat + 1)%nat = (d_model P)%:R)
  (He : nth 0 x (U_shallow_gates_offset N D H K F + 7)%nat = eps P)
  (Hg : encodes x (U_shallow_g1_offset N D H K F) 1 1 D (fun _ => norm1_w P))
  (Hb : encodes x (U_shallow_be1_offset N D H K F) 1 1 D (fun _ => norm1_b P))
  (Hpre : nth 0 x (U_shallow_gates_offset N D H K F + 1)%nat = (if norm P is PreNorm then 1 else 0))
  (Hsc : nth 0 x (U_shallow_gates_offset N D H K F + 6)%nat = scale P)
  (Hm : encodes x (U_shallow_mask_add_offset N D H K F) 1 N N (fun _ => additive M))
  (Hwq : encodes x (U_shallow_wqkv_offset N D H K F) H D K (Wq P))
  (Hwk : encodes x (U_shallow_wqkv_offset N D H K F + H * D * K)%nat H D K (Wk P))
  (Hbq : encodes x (U_shallow_bqkv_offset N D H K F) 1 H K (fun _ => \matrix_(t, c) bq P t 0 c))
  (Hbk : encodes x (U_shallow_bqkv_offset N D H K F + H * K)%nat 1 H K (fun _ => \matrix_(t, c) bk P t 0 c))
  (HL : (((H * N)%nat * K * D)%nat <= size x)%nat)
  (HLK : (((((H * N)%nat * N)%nat * K)%nat * (D + 1)%nat * (D + 1)%nat)%nat <= size x)%nat)
  (Hwqpad : forall (t : 'I_H) (j : 'I_D) (c : 'I_K), (d_model P <= j)%nat -> Wq P t j c = 0)
  (Hwkpad : forall (t : 'I_H) (j : 'I_D) (c : 'I_K), (d_model P <= j)%nat -> Wk P t j c = 0)
  (Hwqk : forall (t : 'I_H) (j : 'I_D) (c : 'I_K), (d_head P <= c)%nat -> Wq P t j c = 0)
  (Hbqk : forall (t : 'I_H) (c : 'I_K), (d_head P <= c)%nat -> bq P t 0 c = 0)
  (Hd0 : (0 < d_model P)%nat) (HdD : (d_model P <= D)%nat)
  (Hpad : forall (i : 'I_N) (j : 'I_D), (d_model P <= j)%nat -> X i j = 0)
  (Hn : nth 0 x (N * D)%nat = n%:R)
  (Hblk : encodes x (U_shallow_mask_blocked_offset N D H K F) 1 N N
            (fun _ => \matrix_(i, j) if blocked M i j then 1 else 0))
  (HLD : (((H * N)%nat * N * D)%nat <= size x)%nat)
  (Hwv : encodes x (U_shallow_wqkv_offset N D H K F + 2 * H * D * K)%nat H D K (Wv P))
  (Hbv : encodes x (U_shallow_bqkv_offset N D H K F + 2 * H * K)%nat 1 H K (fun _ => \matrix_(t, c) bv P t 0 c))
  (Hwvpad : forall (t : 'I_H) (j : 'I_D) (c : 'I_K), (d_model P <= j)%nat -> Wv P t j c = 0)
  (Hwo : encodes x (U_shallow_wo_offset N D H K F) H K D (Wo P))
  (Hwopad : forall (t : 'I_H) (c : 'I_K) (e : 'I_D), (d_head P <= c)%nat -> Wo P t c e = 0)
  (HLV : (((H * N)%nat * K * D)%nat <= size x)%nat)
  (Hres : nth 0 x (U_shallow_gates_offset N D H K F + 0)%nat = (if residual P then 1 else 0))
  (Hbo : encodes x (U_shallow_bo_offset N D H K F) 1 1 D (fun _ => bo P))
  (Hwoh : forall (t : 'I_H) (c : 'I_K) (e : 'I_D), (nhead P <= t)%nat -> Wo P t c e = 0)
  (HH : (0 < H)%nat) (HLH : ((N * D * H)%nat <= size x)%nat)
  (Hp : (p < (1 * N * D)%nat)%nat) (Hpi : (p %/ D %% N)%nat = i) (Hpe : (p %% D)%nat = e)
  (Hin : (i < n)%nat) (Hed : (e < d_model P)%nat)
  (Hpost : nth 0 x (U_shallow_gates_offset N D H K F + 2)%nat = (if norm P is PostNorm then 1 else 0))
  (Hwoe : forall (t : 'I_H) (c : 'I_K) (e : 'I_D), (d_model P <= e)%nat -> Wo P t c e = 0)
  (Hboe : forall e : 'I_D, (d_model P <= e)%nat -> bo P 0 e = 0)
  (HLQ : (((N * D)%nat * H * H)%nat <= size x)%nat)
  (Hg2 : encodes x (U_shallow_g2_offset N D H K F) 1 1 D (fun _ => norm2_w P))
  (Hb2 : encodes x (U_shallow_be2_offset N D H K F) 1 1 D (fun _ => norm2_b P))
  (Hw1 : encodes x (U_shallow_w1_offset N D H K F) 1 D F (fun _ => W1 P))
  (Hb1 : encodes x (U_shallow_b1_offset N D H K F) 1 1 F (fun _ => b1 P))
  (Hw1pad : forall (j : 'I_D) (f : 'I_F), (d_model P <= j)%nat -> W1 P j f = 0)
  (HLF : (((N * F)%nat * H * D)%nat <= size x)%nat)
  (Hact : forall v : R, activation P v = if nth 0 x (U_shallow_gates_offset N D H K F + 3)%nat != 0 then geluf v
    else if nth 0 x (U_shallow_gates_offset N D H K F + 4)%nat != 0 then gelu_tanhf v else Num.max v 0)
  (Hw2 : encodes x (U_shallow_w2_offset N D H K F) 1 F D (fun _ => W2 P))
  (Hbb2 : encodes x (U_shallow_b2_offset N D H K F) 1 1 D (fun _ => b2 P))
  (Hw2pad : forall (f : 'I_F) (e : 'I_D), (dim_ff P <= f)%nat -> W2 P f e = 0)
  (HLE : ((N * D * F)%nat <= size x)%nat)
  (Hg1e : forall e : 'I_D, (d_model P <= e)%nat -> norm1_w P 0 e = 0)
  (Hbe1e : forall e : 'I_D, (d_model P <= e)%nat -> norm1_b P 0 e = 0)
  (Hb2e : forall e : 'I_D, (d_model P <= e)%nat -> b2 P 0 e = 0)
  (Hw2e : forall (f : 'I_F) (e : 'I_D), (d_model P <= e)%nat -> W2 P f e = 0)
  (HF : (0 < F)%nat) (HLG : ((F * F * D)%nat <= size x)%nat) (HLT : ((N * F * F)%nat <= size x)%nat).

Let HD : (0 < D)%nat. Proof. exact: leq_trans Hd0 HdD. Qed.
Let Hp' : (p < N * D)%nat. Proof. by move: Hp; rewrite mul1n. Qed.
Let Hpi' : (p %/ D)%nat = i.
Proof. by rewrite -Hpi modn_small // ltn_divLR. Qed.

Let o (e' : 'I_D) (h : 'I_H) : R := \sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n Zin h i c * Wo P h c e'.
Let cc (e' : 'I_D) : R := bo P 0 e' + (if residual P then 1 else 0) * X i e'.
Let Rv (e' : 'I_D) : R := \sum_(h < H) o e' h + cc e'.
Let act (g : 'I_F) : R := activation P (\sum_(j' < D | (j' < d_model P)%nat) Z2 i j' * W1 P j' g + b1 P 0 g).
Let y1v (e' : 'I_D) : R := if norm P is PostNorm
  then (Rv e' - row_mean P X1 i) * (sqrtf (row_var P X1 i + eps P))^-1 * norm1_w P 0 e' + norm1_b P 0 e' else Rv e'.
Let c2v (e' : 'I_D) : R := (if residual P then 1 else 0) * y1v e' + b2 P 0 e'.
Let r2 (e' : 'I_D) : R := if (e' < d_model P)%nat then X2 i e' else 0.

Let Hgz (k L : nat) : (k < L)%nat -> ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat L))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

Let Hg3 (k : nat) : (k < N * D * F)%nat ->
  ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat N * Z.of_nat D * Z.of_nat F))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

(** The out grid's query on row i at column e', and the query (i, e', g) of ffn2.products. *)
Lemma shallow_pp (e' : 'I_D) :
  [/\ (i * D + e' < 1 * N * D)%nat, ((i * D + e') %/ D %% N)%nat = i & ((i * D + e') %% D)%nat = e'].
Proof.
have Hl : (i * D + e' < N * D)%nat by exact: lin_lt.
split; first by rewrite mul1n.
  by rewrite divnMDl // divn_small // addn0 modn_small.
by rewrite modnMDl modn_small.
Qed.

Lemma shallow_qq (e' : 'I_D) (g : 'I_F) :
  [/\ ((i * D + e') * F + g < N * D * F)%nat, (((i * D + e') * F + g) %/ F %/ D)%nat = i,
      (((i * D + e') * F + g) %% F)%nat = g, (((i * D + e') * F + g) %/ F)%nat = (i * D + e')%nat
    & (((i * D + e') * F + g) %/ F %% D)%nat = e'].
Proof.
have Hl : (i * D + e' < N * D)%nat by exact: lin_lt.
have E : (((i * D + e') * F + g) %/ F)%nat = (i * D + e')%nat by rewrite divnMDl // divn_small ?addn0.
split => //; first exact: lin_lt.
- by rewrite E divnMDl // divn_small // addn0.
- by rewrite modnMDl modn_small.
- by rewrite E modnMDl modn_small.
Qed.

Lemma shallow_act_at (e' : 'I_D) (g : 'I_F) :
  ev U_shallow_ffn2_prod ((i * D + e') * F + g)%nat = act g * W2 P g e'.
Proof.
have [P1 P2 P3] := shallow_pp e'.
exact: (@shallow_prod R sqrtf geluf gelu_tanhf N D H K F P M X x i e' n (i * D + e')%nat HX Hd He Hg Hb Hpre
  Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV
  Hres Hbo Hwoh HH HLH P1 P2 P3 Hin Hpost Hwoe Hboe HLQ Hg2 Hb2 Hw1 Hb1 Hw1pad HLF Hact Hw2 g).
Qed.

(** A gather of a row block at the query's column e' (any grid whose column is e'). *)
Lemma shallow_row_at (src : Z -> Z) (o1 k : nat) (w : 'rV[R]_D) (e' : 'I_D) :
  encodes x o1 1 1 D (fun _ => w) -> src (Z.of_nat k) = Z.of_nat (o1 + e') ->
  eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Select Indices (IMap1 src Indices) CEq) Tokens) x k = w 0 e'.
Proof.
move=> Hw Hs; have [Hs1 Hs2] := encodes_row e' Hw.
by rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (o1 + e')).
Qed.

Lemma shallow_res_at (k : nat) : ev U_shallow_residual k = if residual P then 1 else 0.
Proof.
have [HoL _] := Hbo ord0 ord0 (Ordinal HD).
rewrite /U_shallow_residual /U_shallow_residual_gather /U_shallow_residual_source /U_shallow_indices /U_shallow_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_shallow_gates_offset N D H K F + 0)) //.
  by rewrite /U_shallow_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
apply: leq_ltn_trans HoL.
by rewrite /pos /U_shallow_bo_offset /U_shallow_gates_offset; clear; lia.
Qed.

(** R on the grid ffn2.products: the sum over the heads of attn.r_terms at (i, e'). *)
Lemma shallow_ffn2_R (e' : 'I_D) (g : 'I_F) : ev U_shallow_ffn2_R ((i * D + e') * F + g)%nat = Rv e'.
Proof.
have [Q1 Q2 Q3 Q4 Q5] := shallow_qq e' g.
have -> : ev U_shallow_ffn2_R ((i * D + e') * F + g)%nat = cst_sem R (CQ (Z.of_nat H) 1)
  * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_shallow_ffn2_R_sum_403) (Z5 U_shallow_attn_r_terms)) x
      ((i * D + e') * F + g)%nat by [].
have HLH' : (N * D * H <= size x)%nat by [].
rewrite cst_nat (@agg_last _ _ _ _ _ _ _ x _ (N * D) H (i * D + e') (lin_lt (ltn_ord i) (ltn_ord e')) HLH'); last first.
  move=> k _; rewrite /U_shallow_ffn2_R_sum_403 /U_shallow_ffn2_R_key_group /U_shallow_ffn2_R_query_group /U_shallow_indices /=.
  rewrite !iif_range (Hg3 Q1) !Z.sub_0_r !zdiv_nat !zmod_nat Q2 Q5 (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) andTb.
  have -> : (Z.of_nat i * Z.of_nat D + Z.of_nat e')%Z = Z.of_nat (i * D + e') by rewrite Nat2Z.inj_add Nat2Z.inj_mul.
  have -> : (Z.of_nat N * Z.of_nat D * Z.of_nat H)%Z = Z.of_nat (N * D * H) by rewrite !Nat2Z.inj_mul.
  rewrite ltb_nat; case: ltnP => Hk /=.
    have -> : (Z.of_nat (k %/ H %/ D) * Z.of_nat D + Z.of_nat (k %/ H %% D))%Z = Z.of_nat (k %/ H).
      by rewrite [in RHS](divn_eq (k %/ H) D) Nat2Z.inj_add Nat2Z.inj_mul.
    by rewrite eqb_of_nat.
  by case E: (Z.of_nat (i * D + e')) => [|z|z] //; have := Nat2Z.is_nonneg (i * D + e'); rewrite E; lia.
under eq_bigr => h _ do rewrite (shallow_r_at sqrtf geluf gelu_tanhf HX Hd He Hg Hb Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK
  Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV Hres Hbo HH Hin e' h).
by rewrite big_split /= (sum_if0 HH).
Qed.

Lemma shallow_y1_at (e' : 'I_D) (g : 'I_F) : ev U_shallow_ffn2_Y1 ((i * D + e') * F + g)%nat = y1v e'.
Proof.
have [Q1 Q2 Q3 Q4 Q5] := shallow_qq e' g.
set k := ((i * D + e') * F + g)%nat.
have -> : ev U_shallow_ffn2_Y1 k = if ev U_shallow_post k != 0
  then (ev U_shallow_ffn2_R k - ev U_shallow_ffn2_mu1 k) * ev U_shallow_ffn2_ln1_rstd k * ev U_shallow_ffn2_g1 k
       + ev U_shallow_ffn2_be1 k
  else ev U_shallow_ffn2_R k by [].
rewrite (shallow_post sqrtf geluf gelu_tanhf e' k Hbo Hpost) shallow_ffn2_R.
rewrite (shallow_ffn_mu sqrtf geluf gelu_tanhf HX Hd He Hg Hb Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk
  Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV Hres Hbo Hwoh HH HLH Hin Hwoe Hboe HLQ Q1 Q2).
rewrite (shallow_ffn_rstd sqrtf geluf gelu_tanhf HX Hd He Hg Hb Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk
  Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV Hres Hbo Hwoh HH HLH Hin Hwoe Hboe HLQ Q1 Q2).
have Eg : ev U_shallow_ffn2_g1 k = norm1_w P 0 e'.
  rewrite /U_shallow_ffn2_g1 /U_shallow_ffn2_g1_gather /U_shallow_ffn2_g1_source /U_shallow_indices /U_shallow_tokens.
  apply: (shallow_row_at Hg); cbv beta; rewrite iif_range (Hg3 Q1) Z.sub_0_r !zdiv_nat !zmod_nat Q5.
  by rewrite /U_shallow_g1_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
have Eb : ev U_shallow_ffn2_be1 k = norm1_b P 0 e'.
  rewrite /U_shallow_ffn2_be1 /U_shallow_ffn2_be1_gather /U_shallow_ffn2_be1_source /U_shallow_indices /U_shallow_tokens.
  apply: (shallow_row_at Hb); cbv beta; rewrite iif_range (Hg3 Q1) Z.sub_0_r !zdiv_nat !zmod_nat Q5.
  by rewrite /U_shallow_be1_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
by rewrite Eg Eb /y1v; case: (norm P) => /=; rewrite ?eqxx ?oner_neq0.
Qed.

Lemma shallow_c2_at (e' : 'I_D) (g : 'I_F) : ev U_shallow_ffn2_c2 ((i * D + e') * F + g)%nat = c2v e'.
Proof.
have [Q1 Q2 Q3 Q4 Q5] := shallow_qq e' g.
have -> : ev U_shallow_ffn2_c2 ((i * D + e') * F + g)%nat
  = ev U_shallow_residual ((i * D + e') * F + g)%nat * ev U_shallow_ffn2_Y1 ((i * D + e') * F + g)%nat
    + ev U_shallow_ffn2_b2 ((i * D + e') * F + g)%nat by [].
rewrite shallow_res_at shallow_y1_at /c2v; congr (_ + _).
rewrite /U_shallow_ffn2_b2 /U_shallow_ffn2_b2_gather /U_shallow_ffn2_b2_source /U_shallow_indices /U_shallow_tokens.
apply: (shallow_row_at Hbb2); cbv beta; rewrite iif_range (Hg3 Q1) Z.sub_0_r !zdiv_nat !zmod_nat Q5.
by rewrite /U_shallow_b2_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

Lemma shallow_f0_at (e' : 'I_D) (g : 'I_F) :
  eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_shallow_ffn2_f0)) x ((i * D + e') * F + g)%nat
  = if g == 0%nat :> nat then 1 else 0.
Proof.
have [Q1 Q2 Q3 Q4 Q5] := shallow_qq e' g.
rewrite /U_shallow_ffn2_f0 /U_shallow_indices /= Z.sub_0_r zmod_nat Q3.
rewrite /iif /iand /ile /ilt /ieq /zb.
have /andP[-> ->] := Hg3 Q1.
have -> : (Z.of_nat g =? 0)%Z = (g == 0%nat :> nat) by exact: (eqb_of_nat g 0).
by case: (g == 0%nat :> nat); rewrite /zR /= ?subr0.
Qed.

(** R2 at column e': c2 plus the FFN's sum, the layer's X2 inside d_model, 0 beyond. *)
Lemma shallow_r2v (e' : 'I_D) : c2v e' + \sum_(g < F) act g * W2 P g e' = r2 e'.
Proof.
have /= E := shallow_Rv sqrtf M Hpad Hwoh Hin Hwoe Hboe e'.
rewrite /r2 /c2v /y1v; case: ltnP => He'.
- have Ey : (if norm P is PostNorm
    then (Rv e' - row_mean P X1 i) * (sqrtf (row_var P X1 i + eps P))^-1 * norm1_w P 0 e' + norm1_b P 0 e'
    else Rv e') = x1 i e'.
    rewrite /Rv /o /cc E He'; case: (norm P) => //.
    by rewrite /norm1 /layer_norm /block !mxE Hin He'.
  rewrite Ey.
  have Eff : ff_block P n Z2 i e' = \sum_(g < F) act g * W2 P g e' + b2 P 0 e'.
    rewrite /ff_block /block !mxE Hin He' /=; congr (_ + _).
    rewrite [RHS](bigID (fun g : 'I_F => (g < dim_ff P)%nat)) /= [X in _ = _ + X]big1 ?addr0 //.
    by move=> g; rewrite -leqNgt => Hg'; rewrite Hw2pad // mulr0.
  have -> : X2 i e' = (if residual P then 1 else 0) * x1 i e' + ff_block P n Z2 i e'.
    by rewrite /add_residual; case: (residual P); rewrite ?mxE ?mul1r ?mul0r ?add0r.
  by rewrite Eff addrA [_ + b2 P 0 e' + _]addrAC.
- have Ey : (if norm P is PostNorm
    then (Rv e' - row_mean P X1 i) * (sqrtf (row_var P X1 i + eps P))^-1 * norm1_w P 0 e' + norm1_b P 0 e'
    else Rv e') = 0.
    have -> : Rv e' = 0 by rewrite /Rv /o /cc E ltnNge He'.
    by case: (norm P) => //; rewrite Hg1e // Hbe1e // mulr0 addr0.
  rewrite Ey mulr0 add0r Hb2e // add0r big1 // => g _.
  by rewrite Hw2e // mulr0.
Qed.

(** The sums over (e', f) of ffn2.products of the out grid's query p: the keys (i, e', f). *)
Lemma shallow_sum_ef (s : sel) (v : sop) :
  (forall k, seval (@expR R) sqrtf geluf gelu_tanhf s x p k = ((k < N * D * F) && (k %/ F %/ D == i))%nat) ->
  cst_sem R (CQ (Z.of_nat D * Z.of_nat F) 1) * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate s v) x p
  = \sum_(e' < D) \sum_(g < F) eval (@expR R) sqrtf geluf gelu_tanhf v x ((i * D + e') * F + g)%nat.
Proof.
move=> Hs.
have HLE' : (N * (D * F) <= size x)%nat by rewrite mulnA.
rewrite -Nat2Z.inj_mul cst_nat (@agg_last _ _ _ _ _ _ _ x p N (D * F) i (ltn_ord i) HLE'); last first.
  by move=> k _; rewrite Hs mulnA -divnMA [(F * D)%nat]mulnC.
rewrite (@sum_split _ (fun j => eval (@expR R) sqrtf geluf gelu_tanhf v x (i * (D * F) + j)%nat) D F).
apply: eq_bigr => e' _; apply: eq_bigr => g _.
by rewrite mulnDl addnA mulnA.
Qed.

Let Hpz : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 0 + 1 * Z.of_nat N * Z.of_nat D))%Z = true.
Proof. by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia. Qed.

Lemma shallow_r2sum_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_out_R2_sum_sum) x p k = ((k < N * D * F) && (k %/ F %/ D == i))%nat.
Proof.
rewrite /U_shallow_out_R2_sum_sum /U_shallow_out_R2_sum_key_group /U_shallow_out_R2_sum_query_group /U_shallow_indices /=.
rewrite !iif_range !Z.sub_0_r.
have -> : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia.
rewrite !zdiv_nat Hpi' (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) /=.
have -> : (Z.of_nat N * Z.of_nat D * Z.of_nat F)%Z = Z.of_nat (N * D * F) by rewrite !Nat2Z.inj_mul.
rewrite ltb_nat; case: ltnP => Hk /=; first by rewrite eqb_of_nat.
by case E: (Z.of_nat i) => [|z|z] //; have := Nat2Z.is_nonneg i; rewrite E; lia.
Qed.

Lemma shallow_r2sq_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_out_R2_sq_sum) x p k = ((k < N * D * F) && (k %/ F %/ D == i))%nat.
Proof.
rewrite /U_shallow_out_R2_sq_sum /U_shallow_out_R2_sq_key_group /U_shallow_out_R2_sq_query_group /U_shallow_indices /=.
rewrite !iif_range !Z.sub_0_r.
have -> : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia.
rewrite !zdiv_nat Hpi' (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) /=.
have -> : (Z.of_nat N * Z.of_nat D * Z.of_nat F)%Z = Z.of_nat (N * D * F) by rewrite !Nat2Z.inj_mul.
rewrite ltb_nat; case: ltnP => Hk /=; first by rewrite eqb_of_nat.
by case E: (Z.of_nat i) => [|z|z] //; have := Nat2Z.is_nonneg i; rewrite E; lia.
Qed.

Lemma shallow_r2sum :
  ev U_shallow_out_R2_sum p = \sum_(e' < D) r2 e'.
Proof.
have -> : ev U_shallow_out_R2_sum p = cst_sem R (CQ (Z.of_nat D * Z.of_nat F) 1)
  * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_shallow_out_R2_sum_sum) (Z5 U_shallow_ln2_sum_terms)) x p by [].
rewrite (shallow_sum_ef _ shallow_r2sum_sel).
apply: eq_bigr => e' _.
have E (g : 'I_F) : eval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_ln2_sum_terms) x ((i * D + e') * F + g)%nat
  = ev U_shallow_ffn2_prod ((i * D + e') * F + g)%nat
    + eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_shallow_ffn2_f0)) x ((i * D + e') * F + g)%nat
      * ev U_shallow_ffn2_c2 ((i * D + e') * F + g)%nat by [].
under eq_bigr => g _ do rewrite E shallow_act_at shallow_f0_at shallow_c2_at.
by rewrite big_split /= -mulr_suml (sum_if0 HF) mul1r addrC shallow_r2v.
Qed.

Lemma shallow_r2sq :
  ev U_shallow_out_R2_sq p = \sum_(e' < D) (2%:R * c2v e' * (\sum_(g < F) act g * W2 P g e') + c2v e' ^+ 2).
Proof.
have -> : ev U_shallow_out_R2_sq p = cst_sem R (CQ (Z.of_nat D * Z.of_nat F) 1)
  * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_shallow_out_R2_sq_sum) (Z5 U_shallow_ln2_sq_terms)) x p by [].
rewrite (shallow_sum_ef _ shallow_r2sq_sel).
apply: eq_bigr => e' _.
have E (g : 'I_F) : eval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_ln2_sq_terms) x ((i * D + e') * F + g)%nat
  = cst_sem R (CQ 2 1) * ev U_shallow_ffn2_c2 ((i * D + e') * F + g)%nat * ev U_shallow_ffn2_prod ((i * D + e') * F + g)%nat
    + eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_shallow_ffn2_f0)) x ((i * D + e') * F + g)%nat
      * (ev U_shallow_ffn2_c2 ((i * D + e') * F + g)%nat * ev U_shallow_ffn2_c2 ((i * D + e') * F + g)%nat) by [].
under eq_bigr => g _ do rewrite E shallow_act_at shallow_f0_at shallow_c2_at cst_two.
by rewrite big_split /= -mulr_suml (sum_if0 HF) mul1r -mulr_sumr expr2.
Qed.

Lemma shallow_r2gram :
  ev U_shallow_out_R2_gram p = \sum_(e' < D) (\sum_(g < F) act g * W2 P g e') ^+ 2.
Proof.
have -> : ev U_shallow_out_R2_gram p = cst_sem R (CQ (Z.of_nat F * Z.of_nat F) 1)
  * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_shallow_out_R2_gram_sum) (Z5 U_shallow_ln2_gram_terms)) x p by [].
have HLT' : (N * (F * F) <= size x)%nat by rewrite mulnA.
rewrite -Nat2Z.inj_mul cst_nat (@agg_last _ _ _ _ _ _ _ x p N (F * F) i (ltn_ord i) HLT'); last first.
  move=> k _; rewrite /U_shallow_out_R2_gram_sum /U_shallow_out_R2_gram_key_group /U_shallow_out_R2_gram_query_group.
  rewrite /U_shallow_indices /= !iif_range !Z.sub_0_r.
  have -> : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
    by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia.
  rewrite !zdiv_nat Hpi' (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) /=.
  have -> : (Z.of_nat N * Z.of_nat F * Z.of_nat F)%Z = Z.of_nat (N * (F * F)) by rewrite !Nat2Z.inj_mul Z.mul_assoc.
  rewrite ltb_nat; case: ltnP => _ /=; first by rewrite eqb_of_nat -divnMA.
  by case E: (Z.of_nat i) => [|z|z] //; have := Nat2Z.is_nonneg i; rewrite E; lia.
rewrite (@sum_split _ (fun j => eval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_ln2_gram_terms) x (i * (F * F) + j)%nat) F F).
have Et (g g2 : 'I_F) : eval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_ln2_gram_terms) x (i * (F * F) + (g * F + g2))%nat
  = act g * act g2 * \sum_(e' < D) W2 P g e' * W2 P g2 e'.
  have Eq : (i * (F * F) + (g * F + g2) = (i * F + g) * F + g2)%nat by rewrite mulnDl addnA mulnA.
  have [Q1 Q2 Q3 Q4] : [/\ ((i * F + g) * F + g2 < N * F * F)%nat, (((i * F + g) * F + g2) %/ F %/ F)%nat = i,
    (((i * F + g) * F + g2) %/ F %% F)%nat = g & (((i * F + g) * F + g2) %% F)%nat = g2].
    have E1 : (((i * F + g) * F + g2) %/ F = i * F + g)%nat by rewrite divnMDl // divn_small ?addn0.
    split; first exact: (lin_lt (lin_lt (ltn_ord i) (ltn_ord g)) (ltn_ord g2)).
    - by rewrite E1 divnMDl // divn_small ?addn0.
    - by rewrite E1 modnMDl modn_small.
    - by rewrite modnMDl modn_small.
  rewrite Eq.
  have -> : eval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_ln2_gram_terms) x ((i * F + g) * F + g2)%nat
    = ev U_shallow_gram_u_act ((i * F + g) * F + g2)%nat * ev U_shallow_gram_u2_act ((i * F + g) * F + g2)%nat
      * ev U_shallow_gram ((i * F + g) * F + g2)%nat by [].
  rewrite (@U_shallow_gram_act_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i g g2 n _ HX Hd He Hg Hb Hpre
    Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV
    Hres Hbo Hwoh HH HLH Hin Hpost Hwoe Hboe HLQ Hg2 Hb2 Hw1 Hb1 Hw1pad HLF Hact Q1 Q2 Q3 Q4).
  rewrite (@U_shallow_gram_act2_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i g g2 n _ HX Hd He Hg Hb Hpre
    Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV
    Hres Hbo Hwoh HH HLH Hin Hpost Hwoe Hboe HLQ Hg2 Hb2 Hw1 Hb1 Hw1pad HLF Hact Q1 Q2 Q3 Q4).
  by rewrite (@U_shallow_gram_spec R sqrtf geluf gelu_tanhf N D H K F P x i g g2 _ Hw2 HLG Q1 Q2 Q3 Q4).
have -> : \sum_(g < F) \sum_(g2 < F)
    eval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_ln2_gram_terms) x (i * (F * F) + (g * F + g2))%nat
  = \sum_(g < F) \sum_(g2 < F) act g * act g2 * \sum_(e' < D) W2 P g e' * W2 P g2 e'.
  by apply: eq_bigr => g _; apply: eq_bigr => g2 _; exact: Et.
(* the Gram identity *)
rewrite [RHS](eq_bigr (fun e' : 'I_D => \sum_(g < F) \sum_(g2 < F) act g * W2 P g e' * (act g2 * W2 P g2 e'))); last first.
  by move=> e' _; rewrite expr2 mulr_suml; apply: eq_bigr => g _; rewrite mulr_sumr.
rewrite [RHS]exchange_big /=; apply: eq_bigr => g _.
rewrite [RHS]exchange_big /=; apply: eq_bigr => g2 _.
by rewrite mulr_sumr; apply: eq_bigr => e' _; rewrite mulrACA.
Qed.

Lemma shallow_g2_at : ev U_shallow_out_g2 p = norm2_w P 0 e.
Proof.
rewrite /U_shallow_out_g2 /U_shallow_out_g2_gather /U_shallow_out_g2_source /U_shallow_indices /U_shallow_tokens.
apply: (shallow_row_at Hg2); cbv beta; rewrite iif_range Hpz Z.sub_0_r zmod_nat Hpe.
by rewrite /U_shallow_g2_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

Lemma shallow_be2_at : ev U_shallow_out_be2 p = norm2_b P 0 e.
Proof.
rewrite /U_shallow_out_be2 /U_shallow_out_be2_gather /U_shallow_out_be2_source /U_shallow_indices /U_shallow_tokens.
apply: (shallow_row_at Hb2); cbv beta; rewrite iif_range Hpz Z.sub_0_r zmod_nat Hpe.
by rewrite /U_shallow_be2_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

(** [out.Y2] at p from R2 and its sums: LayerNorm 2 of R2 (post-norm), else R2. *)
Lemma shallow_y2_of (Y : 'M[R]_(N, D)) :
  ev U_shallow_out_R2 p = Y i e ->
  ev U_shallow_out_R2_sum p = \sum_(j < D | (j < d_model P)%nat) Y i j ->
  ev U_shallow_out_R2_sq p + ev U_shallow_out_R2_gram p = \sum_(j < D | (j < d_model P)%nat) Y i j ^+ 2 ->
  ev U_shallow_out_Y2 p = (if norm P is PostNorm then norm2 sqrtf P n Y else Y) i e.
Proof.
move=> E1 E2 E3.
have -> : ev U_shallow_out_Y2 p = if ev U_shallow_post p != 0
  then (ev U_shallow_out_R2 p - ev U_shallow_out_R2_sum p / ev U_shallow_d p)
       * (sqrtf ((ev U_shallow_out_R2_sq p + ev U_shallow_out_R2_gram p) / ev U_shallow_d p
          - ev U_shallow_out_R2_sum p / ev U_shallow_d p * (ev U_shallow_out_R2_sum p / ev U_shallow_d p)
          + ev U_shallow_eps p))^-1 * ev U_shallow_out_g2 p + ev U_shallow_out_be2 p
  else ev U_shallow_out_R2 p by [].
rewrite (shallow_post sqrtf geluf gelu_tanhf e p Hbo Hpost) E1 E2 E3 shallow_g2_at shallow_be2_at.
rewrite (shallow_ffn_d sqrtf geluf gelu_tanhf p Hd Hd0) (shallow_eps sqrtf geluf gelu_tanhf e p He Hbo).
case: (norm P) => /=; rewrite ?eqxx ?oner_neq0 //=.
by rewrite /norm2 /layer_norm /block !mxE Hin Hed /= /row_var /row_mean var_identity // expr2.
Qed.

(** [out.Y2] at p: LayerNorm 2 of R2 (post-norm), its mean and second moment from U's sums, or R2. *)
Lemma shallow_y2 : ev U_shallow_out_Y2 p = (if norm P is PostNorm then norm2 sqrtf P n X2 else X2) i e.
Proof.
apply: shallow_y2_of.
- exact: (@U_shallow_ffn_out_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p HX Hd He Hg Hb Hpre Hsc Hm
  Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV
  Hres Hbo Hwoh HH HLH Hp Hpi Hpe Hin Hed Hpost Hwoe Hboe HLQ Hg2 Hb2 Hw1 Hb1 Hw1pad HLF Hact Hw2 Hbb2 Hw2pad HLE).
- by rewrite shallow_r2sum [RHS]big_mkcond; apply: eq_bigr => e' _; rewrite /r2.
rewrite shallow_r2sq shallow_r2gram -big_split [RHS]big_mkcond; apply: eq_bigr => e' _ /=.
have E2 := shallow_r2v e'; rewrite /r2 in E2.
have -> : 2%:R * c2v e' * (\sum_(g < F) act g * W2 P g e') + c2v e' ^+ 2 + (\sum_(g < F) act g * W2 P g e') ^+ 2
  = (c2v e' + \sum_(g < F) act g * W2 P g e') ^+ 2 by ring.
by rewrite E2; case: ifP => _ //; rewrite expr2 mul0r.
Qed.

End Shallow.

Theorem U_shallow_y2_spec : U_shallow_y2_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p.
do 62 move=> ?; apply: shallow_y2; assumption.
Qed.
