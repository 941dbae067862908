(** Theorem 6 in the kernel, fourteenth stage: the FFN-1 activations and the Gram matrix on the grid
    of LayerNorm 2's Gram terms.  On the grid ln2.gram_terms (row i < n, features f, f2), U's own
    exported nodes [gram.u.act] (at f) and [gram.u2.act] (at f2) are EncoderLayer.v's [activation P
    (\sum_(j' < D | j' < d_model) Z2 i j' * W1 P j' g + b1 P 0 g)] (g = f, f2), Z2 the FFN's input
    as in the FFN-1 stage, and U's [gram] (D times the mean over the keys (f, f2, e) of
    gram.products of W2[f, e] W2[f2, e]) is [\sum_(e < D) W2 P f e * W2 P f2 e], for every capacity
    N, D, H, K, F, both variants (generated statements: UniversalGramActStatement.v).

    U recomputes R's statistics on this grid ([gram1.R_sum], [gram1.R_sq]: the keys [out.R_sum] and
    [out.R_sq] select at the row's column 0, [agg_same]) and folds the FFN-input LayerNorm into the
    sums over (h, e') of ffn1.products as on the FFN-1 grid.  The terms of those sums are the FFN-1
    stage's lemmas ([compact_rgw_at], [compact_gw_at], [compact_bw_at], [compact_sum_fp]): they are
    about positions of ffn1.products, stated at a query of ffn2.products only through the section's
    premises, which a query on row i at feature g (column 0) meets. *)
From mathcomp Require Import all_ssreflect all_algebra.
From mathcomp Require Import reals sequences exp.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From mathcomp Require Import ring.
From Attnsim Require Import Semantics Lemmas UniversalLemmas UniversalGramActNodes EncoderLayer.
From Attnsim Require Import UniversalRowMean UniversalRowStats UniversalLayerNorm1Statement UniversalLayerNorm1.
From Attnsim Require Import UniversalQProjStatement UniversalQProj UniversalVProjStatement UniversalVProj.
From Attnsim Require Import UniversalScoresStatement UniversalScores UniversalSoftmaxStatement UniversalSoftmax.
From Attnsim Require Import UniversalHeadsStatement UniversalHeads UniversalAttnOutStatement UniversalAttnOut.
From Attnsim Require Import UniversalY1Statement UniversalY1 UniversalFfnActStatement UniversalFfnAct.
From Attnsim Require Import UniversalFfnOutStatement UniversalGramActStatement.
Import GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

(** * Compact U *)
Section Compact.
Variables (R : realType) (sqrtf geluf gelu_tanhf : R -> R) (N D H K F : nat) (P : params R D H K F)
  (M : mask R N) (X : 'M[R]_(N, D)) (x : seq R) (i : 'I_N) (f f2 : 'I_F) (n q : nat).
Local Notation Z5 g := (g (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)).
Local Notation ev a k := (eval (@expR R) sqrtf geluf gelu_tanhf (Z5 a) x k).
Local Notation Zin := (if norm P is PreNorm then norm1 sqrtf P n X else X).
Local Notation X1 := (add_residual P X (self_attn (@expR R) P M n Zin)).
Local Notation Z2 := (match norm P with PreNorm => norm2 sqrtf P n X1 | PostNorm => norm1 sqrtf P n X1 | NoNorm => X1 end).
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
  (Hin : (i < n)%nat)
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
  (Hq : (q < (N * F * F)%nat)%nat) (Hqi : (q %/ F %/ F)%nat = i) (Hqf : (q %/ F %% F)%nat = f)
  (Hqf2 : (q %% F)%nat = f2).

Let HD : (0 < D)%nat. Proof. exact: leq_trans Hd0 HdD. Qed.
Let e0 : 'I_D := Ordinal HD.
Let p0 := (i * D + e0)%nat.
Let Hp0 : [/\ (p0 < 1 * N * D)%nat, (p0 %/ D %% N)%nat = i, (p0 %% D)%nat = e0 & (e0 < d_model P)%nat].
Proof.
have Hl : (i * D + e0 < N * D)%nat by exact: lin_lt.
rewrite /p0; split => //; first by rewrite mul1n.
  by rewrite divnMDl // divn_small // addn0 modn_small.
by rewrite modnMDl modn_small.
Qed.

(** A query of the FFN-1 grid ffn2.products on row i at feature g: the FFN-1 stage's lemmas about
    the terms of ffn1.products hold at it, whatever its column. *)
Let q0 (g : 'I_F) := (i * D * F + g)%nat.
Let Hq0 (g : 'I_F) : [/\ (q0 g < N * D * F)%nat, (q0 g %/ F %/ D)%nat = i & (q0 g %% F)%nat = g].
Proof.
have Hl : (i * D < N * D)%nat by rewrite ltn_mul2r HD ltn_ord.
have HF : (0 < F)%nat by apply: leq_ltn_trans (ltn_ord g).
have E : ((i * D * F + g) %/ F = i * D)%nat by rewrite divnMDl // divn_small ?addn0.
rewrite /q0 E mulnK //; split => //; first exact: lin_lt.
by rewrite modnMDl modn_small.
Qed.

Let o (e' : 'I_D) (h : 'I_H) : R := \sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n Zin h i c * Wo P h c e'.
Let cc (e' : 'I_D) : R := bo P 0 e' + (if residual P then 1 else 0) * X i e'.
Let gam (e' : 'I_D) : R := if (if norm P is PostNorm then 1 else 0 : R) != 0 then norm1_w P 0 e'
  else if (if norm P is PreNorm then 1 else 0 : R) != 0 then norm2_w P 0 e' else 1.
Let bet (e' : 'I_D) : R := if (if norm P is PostNorm then 1 else 0 : R) != 0 then norm1_b P 0 e' else norm2_b P 0 e'.

Lemma compact_g_rgw (g : 'I_F) (e' : 'I_D) (h : 'I_H) :
  ev U_compact_ffn1_rgw ((((i * F + g) * H + h) * D + e'))%nat
  = (o e' h + (if h == 0%nat :> nat then cc e' else 0)) * (gam e' * W1 P e' g).
Proof.
have [A B C] := Hq0 g.
exact: (@compact_rgw_at R sqrtf geluf gelu_tanhf N D H K F P M X x i g n (q0 g) HX Hd He Hg Hb Hpre Hsc Hm
  Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad
  HLV Hres Hbo HH HLH Hin Hpost HLQ Hg2 Hw1 HLF A B C e' h).
Qed.

Lemma compact_g_gw (g : 'I_F) (e' : 'I_D) (h : 'I_H) :
  ev U_compact_ffn1_gw ((((i * F + g) * H + h) * D + e'))%nat = if h == 0%nat :> nat then gam e' * W1 P e' g else 0.
Proof.
have [A B C] := Hq0 g.
exact: (@compact_gw_at R sqrtf geluf gelu_tanhf N D H K F P x i g n (q0 g) Hg Hpre HL HLK Hd0 HdD HLD HLV Hbo
  HH HLH Hin Hpost HLQ Hg2 Hw1 HLF A B C e' h).
Qed.

Lemma compact_g_bw (g : 'I_F) (e' : 'I_D) (h : 'I_H) :
  ev U_compact_ffn1_bw ((((i * F + g) * H + h) * D + e'))%nat = if h == 0%nat :> nat then bet e' * W1 P e' g else 0.
Proof.
have [A B C] := Hq0 g.
exact: (@compact_bw_at R sqrtf geluf gelu_tanhf N D H K F P x i g n (q0 g) Hb HL HLK Hd0 HdD HLD HLV Hbo
  HH HLH Hin Hpost HLQ Hb2 Hw1 HLF A B C e' h).
Qed.

Let HgG (k : nat) : (k < N * F * F)%nat ->
  ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat N * Z.of_nat F * Z.of_nat F))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

(** R's statistics on the Gram grid (the gram1 nodes): the x1 stage's sums at the row's column 0. *)
Lemma compact_gram_rsum_same : seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_gram1_R_sum_sum) x q
  =1 seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_out_R_sum_sum) x p0.
Proof.
have [Hp1 Hp2 Hp3 Hp4] := Hp0.
move=> k; rewrite /U_compact_gram1_R_sum_sum /U_compact_out_R_sum_sum /=; congr (_ =? _)%Z.
rewrite !iif_range (HgG Hq) !Z.sub_0_r !zdiv_nat Hqi.
have -> : ((0 <=? Z.of_nat p0) && (Z.of_nat p0 <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp1; lia.
by rewrite -{1}Hp2 modn_small // ltn_divLR //; move: Hp1; rewrite mul1n.
Qed.

Lemma compact_gram_rsq_same : seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_gram1_R_sq_sum) x q
  =1 seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_out_R_sq_sum) x p0.
Proof.
have [Hp1 Hp2 Hp3 Hp4] := Hp0.
move=> k; rewrite /U_compact_gram1_R_sq_sum /U_compact_out_R_sq_sum /=; congr (_ =? _)%Z.
rewrite !iif_range (HgG Hq) !Z.sub_0_r !zdiv_nat Hqi.
have -> : ((0 <=? Z.of_nat p0) && (Z.of_nat p0 <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp1; lia.
by rewrite -{1}Hp2 modn_small // ltn_divLR //; move: Hp1; rewrite mul1n.
Qed.

Lemma compact_gram_mu : ev U_compact_gram1_mu1 q = row_mean P X1 i.
Proof.
have [Hp1 Hp2 Hp3 Hp4] := Hp0.
have -> : ev U_compact_gram1_mu1 q = cst_sem R (CQ (Z.of_nat D * Z.of_nat H) 1)
  * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_compact_gram1_R_sum_sum) (Z5 U_compact_attn_r_terms)) x q
  / ev U_compact_d q by [].
rewrite (agg_same _ compact_gram_rsum_same) -Nat2Z.inj_mul cst_nat.
rewrite (compact_sum_r sqrtf geluf gelu_tanhf HX Hd He Hg Hb Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk
  Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV Hres Hbo HH HLH Hp1 Hp2 Hp3 Hin Hp4 HLQ).
rewrite (compact_ffn_d sqrtf geluf gelu_tanhf q Hd Hd0) /row_mean [in RHS]big_mkcond /=; congr (_ / _).
apply: eq_bigr => e' _; exact: (compact_Rv sqrtf M Hpad Hwoh Hin Hwoe Hboe e').
Qed.

Lemma compact_gram_rstd :
  ev U_compact_gram1_ln1_rstd q = (sqrtf (row_var P X1 i + eps P))^-1.
Proof.
have [Hp1 Hp2 Hp3 Hp4] := Hp0.
have -> : ev U_compact_gram1_ln1_rstd q
  = (sqrtf (cst_sem R (CQ (Z.of_nat D * Z.of_nat H * Z.of_nat H) 1)
       * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_compact_gram1_R_sq_sum) (Z5 U_compact_ln1_square_terms)) x q
       / ev U_compact_d q - ev U_compact_gram1_mu1 q * ev U_compact_gram1_mu1 q + ev U_compact_eps q))^-1 by [].
rewrite (agg_same _ compact_gram_rsq_same) -!Nat2Z.inj_mul cst_nat compact_gram_mu.
rewrite (compact_ffn_d sqrtf geluf gelu_tanhf q Hd Hd0).
rewrite (compact_sum_sq sqrtf geluf gelu_tanhf HX Hd He Hg Hb Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk
  Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV Hres Hbo HH HLH Hp1 Hp2 Hp3 Hin Hp4 HLQ).
rewrite (compact_eps sqrtf geluf gelu_tanhf e0 q He Hbo).
have -> : \sum_(e' < D) (\sum_(h < H) o e' h + cc e') ^+ 2 = \sum_(j < D | (j < d_model P)%nat) X1 i j ^+ 2.
  rewrite [RHS]big_mkcond; apply: eq_bigr => e' _.
  have /= E := compact_Rv sqrtf M Hpad Hwoh Hin Hwoe Hboe e'; rewrite /o /cc E.
  by case: ifP => // _; rewrite expr2 mulr0.
by rewrite /row_var /row_mean var_identity.
Qed.

(** The sums over (h, e') of ffn1.products at q: the keys (i, g, h, e'), g = f (gram.u), f2 (gram.u2). *)
Lemma compact_gram_u_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_gram_u_rgw_sum) x q k
  = ((k < N * F * (H * D)) && (k %/ (H * D) == i * F + f))%nat.
Proof.
rewrite /U_compact_gram_u_rgw_sum /U_compact_gram_u_rgw_key_group /U_compact_gram_u_rgw_query_group /U_compact_indices /=.
rewrite !iif_range (HgG Hq) !Z.sub_0_r !zdiv_nat !zmod_nat Hqi Hqf (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) andTb.
have -> : (Z.of_nat i * Z.of_nat F + Z.of_nat f)%Z = Z.of_nat (i * F + f) by rewrite Nat2Z.inj_add Nat2Z.inj_mul.
have -> : (Z.of_nat N * Z.of_nat F * Z.of_nat H * Z.of_nat D)%Z = Z.of_nat (N * F * (H * D)) by rewrite !mulnA !Nat2Z.inj_mul.
rewrite ltb_nat; case: ltnP => Hk /=.
  2: by case E: (Z.of_nat (i * F + f)) => [|z|z] //; have := Nat2Z.is_nonneg (i * F + f); rewrite E; lia.
have -> : (Z.of_nat (k %/ D %/ H %/ F) * Z.of_nat F + Z.of_nat (k %/ D %/ H %% F))%Z = Z.of_nat (k %/ D %/ H).
  by rewrite [in RHS](divn_eq (k %/ D %/ H) F) Nat2Z.inj_add Nat2Z.inj_mul.
by rewrite eqb_of_nat -divnMA [(D * H)%nat]mulnC.
Qed.

Lemma compact_gram_u2_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_gram_u2_rgw_sum) x q k
  = ((k < N * F * (H * D)) && (k %/ (H * D) == i * F + f2))%nat.
Proof.
rewrite /U_compact_gram_u2_rgw_sum /U_compact_gram_u2_rgw_key_group /U_compact_gram_u2_rgw_query_group /U_compact_indices /=.
rewrite !iif_range (HgG Hq) !Z.sub_0_r !zdiv_nat !zmod_nat Hqi Hqf2 (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) andTb.
have -> : (Z.of_nat i * Z.of_nat F + Z.of_nat f2)%Z = Z.of_nat (i * F + f2) by rewrite Nat2Z.inj_add Nat2Z.inj_mul.
have -> : (Z.of_nat N * Z.of_nat F * Z.of_nat H * Z.of_nat D)%Z = Z.of_nat (N * F * (H * D)) by rewrite !mulnA !Nat2Z.inj_mul.
rewrite ltb_nat; case: ltnP => Hk /=.
  2: by case E: (Z.of_nat (i * F + f2)) => [|z|z] //; have := Nat2Z.is_nonneg (i * F + f2); rewrite E; lia.
have -> : (Z.of_nat (k %/ D %/ H %/ F) * Z.of_nat F + Z.of_nat (k %/ D %/ H %% F))%Z = Z.of_nat (k %/ D %/ H).
  by rewrite [in RHS](divn_eq (k %/ D %/ H) F) Nat2Z.inj_add Nat2Z.inj_mul.
by rewrite eqb_of_nat -divnMA [(D * H)%nat]mulnC.
Qed.

Lemma compact_gate_q (g : nat) (src : Z -> Z) : (g < 8)%nat ->
  src (Z.of_nat q) = Z.of_nat (U_compact_gates_offset N D H K F + g) ->
  eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Select Indices (IMap1 src Indices) CEq) Tokens) x q
  = nth 0 x (U_compact_gates_offset N D H K F + g).
Proof. exact: (compact_gate sqrtf geluf gelu_tanhf Hd0 HdD Hbo). Qed.

(** The FFN-1 pre-activation at feature g from its three sums over ffn1.products and b1. *)
Lemma compact_gram_pre (g : 'I_F) (s1 s2 s3 : sel) (v1 : R) :
  (forall k, seval (@expR R) sqrtf geluf gelu_tanhf s1 x q k = ((k < N * F * (H * D)) && (k %/ (H * D) == i * F + g))%nat) ->
  (forall k, seval (@expR R) sqrtf geluf gelu_tanhf s2 x q k = ((k < N * F * (H * D)) && (k %/ (H * D) == i * F + g))%nat) ->
  (forall k, seval (@expR R) sqrtf geluf gelu_tanhf s3 x q k = ((k < N * F * (H * D)) && (k %/ (H * D) == i * F + g))%nat) ->
  v1 = b1 P 0 g ->
  (if ev U_compact_norm_on q != 0
   then ev U_compact_gram1_ln1_rstd q
          * (cst_sem R (CQ (Z.of_nat H * Z.of_nat D) 1)
               * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate s1 (Z5 U_compact_ffn1_rgw)) x q
             - ev U_compact_gram1_mu1 q * (cst_sem R (CQ (Z.of_nat H * Z.of_nat D) 1)
               * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate s2 (Z5 U_compact_ffn1_gw)) x q))
        + cst_sem R (CQ (Z.of_nat H * Z.of_nat D) 1)
            * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate s3 (Z5 U_compact_ffn1_bw)) x q
   else cst_sem R (CQ (Z.of_nat H * Z.of_nat D) 1)
          * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate s1 (Z5 U_compact_ffn1_rgw)) x q) + v1
  = \sum_(j' < D | (j' < d_model P)%nat) Z2 i j' * W1 P j' g + b1 P 0 g.
Proof.
move=> Hs1 Hs2 Hs3 ->.
have Ergw : cst_sem R (CQ (Z.of_nat H * Z.of_nat D) 1)
    * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate s1 (Z5 U_compact_ffn1_rgw)) x q
  = \sum_(e' < D) (if (e' < d_model P)%nat then X1 i e' else 0) * (gam e' * W1 P e' g).
  rewrite -Nat2Z.inj_mul cst_nat (@compact_sum_fp R sqrtf geluf gelu_tanhf N D H F x i g q HLF _ _ Hs1).
  apply: eq_bigr => e' _.
  under eq_bigr => h _ do rewrite compact_g_rgw.
  rewrite -mulr_suml big_split /= (sum_if0 HH).
  have /= E := compact_Rv sqrtf M Hpad Hwoh Hin Hwoe Hboe e'.
  by rewrite -E.
have Egw : cst_sem R (CQ (Z.of_nat H * Z.of_nat D) 1)
    * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate s2 (Z5 U_compact_ffn1_gw)) x q
  = \sum_(e' < D) gam e' * W1 P e' g.
  rewrite -Nat2Z.inj_mul cst_nat (@compact_sum_fp R sqrtf geluf gelu_tanhf N D H F x i g q HLF _ _ Hs2).
  apply: eq_bigr => e' _.
  under eq_bigr => h _ do rewrite compact_g_gw.
  exact: sum_if0.
have Ebw : cst_sem R (CQ (Z.of_nat H * Z.of_nat D) 1)
    * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate s3 (Z5 U_compact_ffn1_bw)) x q
  = \sum_(e' < D) bet e' * W1 P e' g.
  rewrite -Nat2Z.inj_mul cst_nat (@compact_sum_fp R sqrtf geluf gelu_tanhf N D H F x i g q HLF _ _ Hs3).
  apply: eq_bigr => e' _.
  under eq_bigr => h _ do rewrite compact_g_bw.
  exact: sum_if0.
have Eon : ev U_compact_norm_on q = (if norm P is PreNorm then 1 else 0) + (if norm P is PostNorm then 1 else 0).
  have -> : ev U_compact_norm_on q = ev U_compact_pre q + ev U_compact_post q by [].
  rewrite (compact_post sqrtf geluf gelu_tanhf e0 q Hbo Hpost).
  rewrite /U_compact_pre /U_compact_pre_gather /U_compact_pre_source /U_compact_indices /U_compact_tokens.
  rewrite (@compact_gate_q 1) //; last by rewrite /U_compact_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
  by rewrite Hpre.
rewrite Ergw Egw Ebw Eon compact_gram_rstd compact_gram_mu; congr (_ + _).
rewrite /gam /bet /norm1 /norm2.
set A := add_residual _ _ _.
have Hln (w b : 'rV[R]_D) (j : 'I_D) : (j < d_model P)%nat ->
  layer_norm sqrtf P n w b A i j = (A i j - row_mean P A i) / sqrtf (row_var P A i + eps P) * w 0 j + b 0 j.
  by move=> Hj; rewrite /layer_norm /block !mxE Hin Hj.
case: (norm P); cbv iota beta.
-   rewrite addr0 !ne00 [RHS]big_mkcond; apply: eq_bigr => j _.
  by case: ifP => _; rewrite ?mul1r ?mul0r.
-   rewrite add0r ?ne10 ?ne00 fold_norm [RHS]big_mkcond; apply: eq_bigr => j _.
  case: ltnP => Hj /=; first by rewrite Hln.
  by rewrite Hw1pad ?mulr0.
-   rewrite addr0 ?ne10 ?ne00 fold_norm [RHS]big_mkcond; apply: eq_bigr => j _.
  case: ltnP => Hj /=; first by rewrite Hln.
  by rewrite Hw1pad ?mulr0.
Qed.

(** The activation the gates select, of a pre-activation. *)
Lemma compact_gram_act_of (pre : sop) (v : R) :
  eval (@expR R) sqrtf geluf gelu_tanhf pre x q = v ->
  (if ev U_compact_gelu q != 0 then geluf (eval (@expR R) sqrtf geluf gelu_tanhf pre x q)
   else if ev U_compact_gelu_tanh q != 0 then gelu_tanhf (eval (@expR R) sqrtf geluf gelu_tanhf pre x q)
   else Num.max (eval (@expR R) sqrtf geluf gelu_tanhf pre x q) 0) = activation P v.
Proof.
move=> ->; rewrite Hact.
rewrite /U_compact_gelu /U_compact_gelu_gather /U_compact_gelu_source /U_compact_indices /U_compact_tokens.
rewrite (@compact_gate_q 3) //; last by rewrite /U_compact_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
rewrite /U_compact_gelu_tanh /U_compact_gelu_tanh_gather /U_compact_gelu_tanh_source /U_compact_indices /U_compact_tokens.
rewrite (@compact_gate_q 4) //.
by rewrite /U_compact_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

Lemma compact_gram_b1 (src : Z -> Z) (g : 'I_F) : src (Z.of_nat q) = Z.of_nat (U_compact_b1_offset N D H K F + g) ->
  eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Select Indices (IMap1 src Indices) CEq) Tokens) x q = b1 P 0 g.
Proof.
move=> Hs; have [Hs1 Hs2] := encodes_row g Hb1.
by rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_compact_b1_offset N D H K F + g)).
Qed.

Lemma compact_gram_u_pre :
  ev U_compact_gram_u_pre q = \sum_(j' < D | (j' < d_model P)%nat) Z2 i j' * W1 P j' f + b1 P 0 f.
Proof.
have E : ev U_compact_gram_u_b1 q = b1 P 0 f.
  rewrite /U_compact_gram_u_b1 /U_compact_gram_u_b1_gather /U_compact_gram_u_b1_source /U_compact_indices /U_compact_tokens.
  apply: compact_gram_b1; cbv beta; rewrite iif_range (HgG Hq) Z.sub_0_r !zdiv_nat !zmod_nat Hqf.
  by rewrite /U_compact_b1_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
by rewrite -(compact_gram_pre compact_gram_u_sel compact_gram_u_sel compact_gram_u_sel E).
Qed.

Lemma compact_gram_u2_pre :
  ev U_compact_gram_u2_pre q = \sum_(j' < D | (j' < d_model P)%nat) Z2 i j' * W1 P j' f2 + b1 P 0 f2.
Proof.
have E : ev U_compact_gram_u2_b1 q = b1 P 0 f2.
  rewrite /U_compact_gram_u2_b1 /U_compact_gram_u2_b1_gather /U_compact_gram_u2_b1_source /U_compact_indices /U_compact_tokens.
  apply: compact_gram_b1; cbv beta; rewrite iif_range (HgG Hq) Z.sub_0_r !zmod_nat Hqf2.
  by rewrite /U_compact_b1_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
by rewrite -(compact_gram_pre compact_gram_u2_sel compact_gram_u2_sel compact_gram_u2_sel E).
Qed.

(** [gram.u.act] and [gram.u2.act] at q: the activation the gates select, of the pre-activation. *)
Lemma compact_gram_u_act :
  ev U_compact_gram_u_act q = activation P (\sum_(j' < D | (j' < d_model P)%nat) Z2 i j' * W1 P j' f + b1 P 0 f).
Proof. by rewrite -(compact_gram_act_of compact_gram_u_pre). Qed.

Lemma compact_gram_u2_act :
  ev U_compact_gram_u2_act q = activation P (\sum_(j' < D | (j' < d_model P)%nat) Z2 i j' * W1 P j' f2 + b1 P 0 f2).
Proof. by rewrite -(compact_gram_act_of compact_gram_u2_pre). Qed.

End Compact.

Theorem U_compact_gram_act_spec : U_compact_gram_act_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i f f2 n q.
do 51 move=> ?; apply: (@compact_gram_u_act R sqrtf geluf gelu_tanhf N D H K F P M X x i f f2 n q); assumption.
Qed.

Theorem U_compact_gram_act2_spec : U_compact_gram_act2_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i f f2 n q.
do 51 move=> ?; apply: (@compact_gram_u2_act R sqrtf geluf gelu_tanhf N D H K F P M X x i f f2 n q); assumption.
Qed.

(** [gram] at q: D times the mean over the keys (f, f2, e) of gram.products of W2[f, e] W2[f2, e]. *)
Section CompactGram.
Variables (R : realType) (sqrtf geluf gelu_tanhf : R -> R) (N D H K F : nat) (P : params R D H K F)
  (x : seq R) (i : 'I_N) (f f2 : 'I_F) (q : nat).
Local Notation Z5 g := (g (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)).
Local Notation ev a k := (eval (@expR R) sqrtf geluf gelu_tanhf (Z5 a) x k).
Hypotheses (Hw2 : encodes x (U_compact_w2_offset N D H K F) 1 F D (fun _ => W2 P))
  (HLG : ((F * F * D)%nat <= size x)%nat)
  (Hq : (q < (N * F * F)%nat)%nat) (Hqi : (q %/ F %/ F)%nat = i) (Hqf : (q %/ F %% F)%nat = f)
  (Hqf2 : (q %% F)%nat = f2).

Let HgG : ((0 <=? Z.of_nat q) && (Z.of_nat q <? Z.of_nat N * Z.of_nat F * Z.of_nat F))%Z = true.
Proof. by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hq; lia. Qed.

Lemma compact_gram_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_gram_sum) x q k
  = ((k < F * F * D) && (k %/ D == f * F + f2))%nat.
Proof.
rewrite /U_compact_gram_sum /U_compact_gram_key_group /U_compact_gram_query_group /U_compact_indices /=.
rewrite !iif_range HgG !Z.sub_0_r !zdiv_nat !zmod_nat Hqf Hqf2 (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) andTb.
have -> : (Z.of_nat f * Z.of_nat F + Z.of_nat f2)%Z = Z.of_nat (f * F + f2) by rewrite Nat2Z.inj_add Nat2Z.inj_mul.
have -> : (Z.of_nat F * Z.of_nat F * Z.of_nat D)%Z = Z.of_nat (F * F * D) by rewrite !Nat2Z.inj_mul.
rewrite ltb_nat; case: ltnP => Hk /=.
  2: by case E: (Z.of_nat (f * F + f2)) => [|z|z] //; have := Nat2Z.is_nonneg (f * F + f2); rewrite E; lia.
have -> : (Z.of_nat (k %/ D %/ F) * Z.of_nat F + Z.of_nat (k %/ D %% F))%Z = Z.of_nat (k %/ D).
  by rewrite [in RHS](divn_eq (k %/ D) F) Nat2Z.inj_add Nat2Z.inj_mul.
by rewrite eqb_of_nat.
Qed.

Lemma compact_gram_at : ev U_compact_gram q = \sum_(e < D) W2 P f e * W2 P f2 e.
Proof.
have -> : ev U_compact_gram q = cst_sem R (CQ (Z.of_nat D) 1)
  * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_compact_gram_sum) (Z5 U_compact_gram_prod)) x q by [].
rewrite cst_nat (@agg_last _ _ _ _ _ _ _ x q (F * F) D (f * F + f2) (lin_lt (ltn_ord f) (ltn_ord f2)) HLG); last first.
  by move=> k _; exact: compact_gram_sel.
apply: eq_bigr => e _.
have [G1 G2 G3] : [/\ ((f * F + f2) * D + e < F * F * D)%nat, ((f * F + f2) * D + e) %/ D %/ F = f
  & (((f * F + f2) * D + e) %/ D %% F = f2 /\ ((f * F + f2) * D + e) %% D = e)]%nat.
  have Hl := lin_lt (lin_lt (ltn_ord f) (ltn_ord f2)) (ltn_ord e).
  have Hde : (((f * F + f2) * D + e) %/ D = f * F + f2)%nat.
    by rewrite divnMDl ?divn_small ?addn0 //; apply: leq_ltn_trans (ltn_ord e).
  split => //; rewrite Hde; first by rewrite divnMDl ?divn_small ?addn0 //; apply: leq_ltn_trans (ltn_ord f2).
  by split; [rewrite modnMDl modn_small | rewrite modnMDl modn_small].
case: G3 => G3 G4.
have Hb : ((0 <=? Z.of_nat ((f * F + f2) * D + e)) && (Z.of_nat ((f * F + f2) * D + e) <? 0 + Z.of_nat F * Z.of_nat F * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -G1; lia.
rewrite /U_compact_gram_prod eval_mul; congr (_ * _).
- have [HwL HwV] := Hw2 ord0 f e.
  rewrite /U_compact_gram_a /U_compact_gram_a_gather /U_compact_gram_a_source /U_compact_indices /U_compact_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos (U_compact_w2_offset N D H K F) F D 0 f e)) //.
  cbv beta; rewrite iif_range Hb Z.sub_0_r !zdiv_nat !zmod_nat G2 G4.
  by rewrite /pos /U_compact_w2_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
- have [HwL HwV] := Hw2 ord0 f2 e.
  rewrite /U_compact_gram_b /U_compact_gram_b_gather /U_compact_gram_b_source /U_compact_indices /U_compact_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos (U_compact_w2_offset N D H K F) F D 0 f2 e)) //.
  cbv beta; rewrite iif_range Hb Z.sub_0_r !zdiv_nat !zmod_nat G3 G4.
  by rewrite /pos /U_compact_w2_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

End CompactGram.

Theorem U_compact_gram_spec : U_compact_gram_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P x i f f2 q.
move=> Hw2 HLG Hq Hqi Hqf Hqf2; exact: (compact_gram_at sqrtf geluf gelu_tanhf Hw2 HLG Hq Hqi Hqf Hqf2).
Qed.

(** * Shallow U: the same nodes (its own node numbers). *)
Section Shallow.
Variables (R : realType) (sqrtf geluf gelu_tanhf : R -> R) (N D H K F : nat) (P : params R D H K F)
  (M : mask R N) (X : 'M[R]_(N, D)) (x : seq R) (i : 'I_N) (f f2 : 'I_F) (n q : nat).
Local Notation Z5 g := (g (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)).
Local Notation ev a k := (eval (@expR R) sqrtf geluf gelu_tanhf (Z5 a) x k).
Local Notation Zin := (if norm P is PreNorm then norm1 sqrtf P n X else X).
Local Notation X1 := (add_residual P X (self_attn (@expR R) P M n Zin)).
Local Notation Z2 := (match norm P with PreNorm => norm2 sqrtf P n X1 | PostNorm => norm1 sqrtf P n X1 | NoNorm => X1 end).
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
  (Hin : (i < n)%nat)
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
  (Hq : (q < (N * F * F)%nat)%nat) (Hqi : (q %/ F %/ F)%nat = i) (Hqf : (q %/ F %% F)%nat = f)
  (Hqf2 : (q %% F)%nat = f2).

Let HD : (0 < D)%nat. Proof. exact: leq_trans Hd0 HdD. Qed.
Let e0 : 'I_D := Ordinal HD.
Let p0 := (i * D + e0)%nat.
Let Hp0 : [/\ (p0 < 1 * N * D)%nat, (p0 %/ D %% N)%nat = i, (p0 %% D)%nat = e0 & (e0 < d_model P)%nat].
Proof.
have Hl : (i * D + e0 < N * D)%nat by exact: lin_lt.
rewrite /p0; split => //; first by rewrite mul1n.
  by rewrite divnMDl // divn_small // addn0 modn_small.
by rewrite modnMDl modn_small.
Qed.

(** A query of the FFN-1 grid ffn2.products on row i at feature g: the FFN-1 stage's lemmas about
    the terms of ffn1.products hold at it, whatever its column. *)
Let q0 (g : 'I_F) := (i * D * F + g)%nat.
Let Hq0 (g : 'I_F) : [/\ (q0 g < N * D * F)%nat, (q0 g %/ F %/ D)%nat = i & (q0 g %% F)%nat = g].
Proof.
have Hl : (i * D < N * D)%nat by rewrite ltn_mul2r HD ltn_ord.
have HF : (0 < F)%nat by apply: leq_ltn_trans (ltn_ord g).
have E : ((i * D * F + g) %/ F = i * D)%nat by rewrite divnMDl // divn_small ?addn0.
rewrite /q0 E mulnK //; split => //; first exact: lin_lt.
by rewrite modnMDl modn_small.
Qed.

Let o (e' : 'I_D) (h : 'I_H) : R := \sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n Zin h i c * Wo P h c e'.
Let cc (e' : 'I_D) : R := bo P 0 e' + (if residual P then 1 else 0) * X i e'.
Let gam (e' : 'I_D) : R := if (if norm P is PostNorm then 1 else 0 : R) != 0 then norm1_w P 0 e'
  else if (if norm P is PreNorm then 1 else 0 : R) != 0 then norm2_w P 0 e' else 1.
Let bet (e' : 'I_D) : R := if (if norm P is PostNorm then 1 else 0 : R) != 0 then norm1_b P 0 e' else norm2_b P 0 e'.

Lemma shallow_g_rgw (g : 'I_F) (e' : 'I_D) (h : 'I_H) :
  ev U_shallow_ffn1_rgw ((((i * F + g) * H + h) * D + e'))%nat
  = (o e' h + (if h == 0%nat :> nat then cc e' else 0)) * (gam e' * W1 P e' g).
Proof.
have [A B C] := Hq0 g.
exact: (@shallow_rgw_at R sqrtf geluf gelu_tanhf N D H K F P M X x i g n (q0 g) HX Hd He Hg Hb Hpre Hsc Hm
  Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad
  HLV Hres Hbo HH HLH Hin Hpost HLQ Hg2 Hw1 HLF A B C e' h).
Qed.

Lemma shallow_g_gw (g : 'I_F) (e' : 'I_D) (h : 'I_H) :
  ev U_shallow_ffn1_gw ((((i * F + g) * H + h) * D + e'))%nat = if h == 0%nat :> nat then gam e' * W1 P e' g else 0.
Proof.
have [A B C] := Hq0 g.
exact: (@shallow_gw_at R sqrtf geluf gelu_tanhf N D H K F P x i g n (q0 g) Hg Hpre HL HLK Hd0 HdD HLD HLV Hbo
  HH HLH Hin Hpost HLQ Hg2 Hw1 HLF A B C e' h).
Qed.

Lemma shallow_g_bw (g : 'I_F) (e' : 'I_D) (h : 'I_H) :
  ev U_shallow_ffn1_bw ((((i * F + g) * H + h) * D + e'))%nat = if h == 0%nat :> nat then bet e' * W1 P e' g else 0.
Proof.
have [A B C] := Hq0 g.
exact: (@shallow_bw_at R sqrtf geluf gelu_tanhf N D H K F P x i g n (q0 g) Hb HL HLK Hd0 HdD HLD HLV Hbo
  HH HLH Hin Hpost HLQ Hb2 Hw1 HLF A B C e' h).
Qed.

Let HgG (k : nat) : (k < N * F * F)%nat ->
  ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat N * Z.of_nat F * Z.of_nat F))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

(** R's statistics on the Gram grid (the gram1 nodes): the x1 stage's sums at the row's column 0. *)
Lemma shallow_gram_rsum_same : seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_gram1_R_sum_sum) x q
  =1 seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_out_R_sum_sum) x p0.
Proof.
have [Hp1 Hp2 Hp3 Hp4] := Hp0.
move=> k; rewrite /U_shallow_gram1_R_sum_sum /U_shallow_out_R_sum_sum /=; congr (_ =? _)%Z.
rewrite !iif_range (HgG Hq) !Z.sub_0_r !zdiv_nat Hqi.
have -> : ((0 <=? Z.of_nat p0) && (Z.of_nat p0 <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp1; lia.
by rewrite -{1}Hp2 modn_small // ltn_divLR //; move: Hp1; rewrite mul1n.
Qed.

Lemma shallow_gram_rsq_same : seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_gram1_R_sq_sum) x q
  =1 seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_out_R_sq_sum) x p0.
Proof.
have [Hp1 Hp2 Hp3 Hp4] := Hp0.
move=> k; rewrite /U_shallow_gram1_R_sq_sum /U_shallow_out_R_sq_sum /=; congr (_ =? _)%Z.
rewrite !iif_range (HgG Hq) !Z.sub_0_r !zdiv_nat Hqi.
have -> : ((0 <=? Z.of_nat p0) && (Z.of_nat p0 <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp1; lia.
by rewrite -{1}Hp2 modn_small // ltn_divLR //; move: Hp1; rewrite mul1n.
Qed.

Lemma shallow_gram_mu : ev U_shallow_gram1_mu1 q = row_mean P X1 i.
Proof.
have [Hp1 Hp2 Hp3 Hp4] := Hp0.
have -> : ev U_shallow_gram1_mu1 q = cst_sem R (CQ (Z.of_nat D * Z.of_nat H) 1)
  * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_shallow_gram1_R_sum_sum) (Z5 U_shallow_attn_r_terms)) x q
  / ev U_shallow_d q by [].
rewrite (agg_same _ shallow_gram_rsum_same) -Nat2Z.inj_mul cst_nat.
rewrite (shallow_sum_r sqrtf geluf gelu_tanhf HX Hd He Hg Hb Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk
  Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV Hres Hbo HH HLH Hp1 Hp2 Hp3 Hin Hp4 HLQ).
rewrite (shallow_ffn_d sqrtf geluf gelu_tanhf q Hd Hd0) /row_mean [in RHS]big_mkcond /=; congr (_ / _).
apply: eq_bigr => e' _; exact: (shallow_Rv sqrtf M Hpad Hwoh Hin Hwoe Hboe e').
Qed.

Lemma shallow_gram_rstd :
  ev U_shallow_gram1_ln1_rstd q = (sqrtf (row_var P X1 i + eps P))^-1.
Proof.
have [Hp1 Hp2 Hp3 Hp4] := Hp0.
have -> : ev U_shallow_gram1_ln1_rstd q
  = (sqrtf (cst_sem R (CQ (Z.of_nat D * Z.of_nat H * Z.of_nat H) 1)
       * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_shallow_gram1_R_sq_sum) (Z5 U_shallow_ln1_square_terms)) x q
       / ev U_shallow_d q - ev U_shallow_gram1_mu1 q * ev U_shallow_gram1_mu1 q + ev U_shallow_eps q))^-1 by [].
rewrite (agg_same _ shallow_gram_rsq_same) -!Nat2Z.inj_mul cst_nat shallow_gram_mu.
rewrite (shallow_ffn_d sqrtf geluf gelu_tanhf q Hd Hd0).
rewrite (shallow_sum_sq sqrtf geluf gelu_tanhf HX Hd He Hg Hb Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk
  Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV Hres Hbo HH HLH Hp1 Hp2 Hp3 Hin Hp4 HLQ).
rewrite (shallow_eps sqrtf geluf gelu_tanhf e0 q He Hbo).
have -> : \sum_(e' < D) (\sum_(h < H) o e' h + cc e') ^+ 2 = \sum_(j < D | (j < d_model P)%nat) X1 i j ^+ 2.
  rewrite [RHS]big_mkcond; apply: eq_bigr => e' _.
  have /= E := shallow_Rv sqrtf M Hpad Hwoh Hin Hwoe Hboe e'; rewrite /o /cc E.
  by case: ifP => // _; rewrite expr2 mulr0.
by rewrite /row_var /row_mean var_identity.
Qed.

(** The sums over (h, e') of ffn1.products at q: the keys (i, g, h, e'), g = f (gram.u), f2 (gram.u2). *)
Lemma shallow_gram_u_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_gram_u_rgw_sum) x q k
  = ((k < N * F * (H * D)) && (k %/ (H * D) == i * F + f))%nat.
Proof.
rewrite /U_shallow_gram_u_rgw_sum /U_shallow_gram_u_rgw_key_group /U_shallow_gram_u_rgw_query_group /U_shallow_indices /=.
rewrite !iif_range (HgG Hq) !Z.sub_0_r !zdiv_nat !zmod_nat Hqi Hqf (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) andTb.
have -> : (Z.of_nat i * Z.of_nat F + Z.of_nat f)%Z = Z.of_nat (i * F + f) by rewrite Nat2Z.inj_add Nat2Z.inj_mul.
have -> : (Z.of_nat N * Z.of_nat F * Z.of_nat H * Z.of_nat D)%Z = Z.of_nat (N * F * (H * D)) by rewrite !mulnA !Nat2Z.inj_mul.
rewrite ltb_nat; case: ltnP => Hk /=.
  2: by case E: (Z.of_nat (i * F + f)) => [|z|z] //; have := Nat2Z.is_nonneg (i * F + f); rewrite E; lia.
have -> : (Z.of_nat (k %/ D %/ H %/ F) * Z.of_nat F + Z.of_nat (k %/ D %/ H %% F))%Z = Z.of_nat (k %/ D %/ H).
  by rewrite [in RHS](divn_eq (k %/ D %/ H) F) Nat2Z.inj_add Nat2Z.inj_mul.
by rewrite eqb_of_nat -divnMA [(D * H)%nat]mulnC.
Qed.

Lemma shallow_gram_u2_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_gram_u2_rgw_sum) x q k
  = ((k < N * F * (H * D)) && (k %/ (H * D) == i * F + f2))%nat.
Proof.
rewrite /U_shallow_gram_u2_rgw_sum /U_shallow_gram_u2_rgw_key_group /U_shallow_gram_u2_rgw_query_group /U_shallow_indices /=.
rewrite !iif_range (HgG Hq) !Z.sub_0_r !zdiv_nat !zmod_nat Hqi Hqf2 (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) andTb.
have -> : (Z.of_nat i * Z.of_nat F + Z.of_nat f2)%Z = Z.of_nat (i * F + f2) by rewrite Nat2Z.inj_add Nat2Z.inj_mul.
have -> : (Z.of_nat N * Z.of_nat F * Z.of_nat H * Z.of_nat D)%Z = Z.of_nat (N * F * (H * D)) by rewrite !mulnA !Nat2Z.inj_mul.
rewrite ltb_nat; case: ltnP => Hk /=.
  2: by case E: (Z.of_nat (i * F + f2)) => [|z|z] //; have := Nat2Z.is_nonneg (i * F + f2); rewrite E; lia.
have -> : (Z.of_nat (k %/ D %/ H %/ F) * Z.of_nat F + Z.of_nat (k %/ D %/ H %% F))%Z = Z.of_nat (k %/ D %/ H).
  by rewrite [in RHS](divn_eq (k %/ D %/ H) F) Nat2Z.inj_add Nat2Z.inj_mul.
by rewrite eqb_of_nat -divnMA [(D * H)%nat]mulnC.
Qed.

Lemma shallow_gate_q (g : nat) (src : Z -> Z) : (g < 8)%nat ->
  src (Z.of_nat q) = Z.of_nat (U_shallow_gates_offset N D H K F + g) ->
  eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Select Indices (IMap1 src Indices) CEq) Tokens) x q
  = nth 0 x (U_shallow_gates_offset N D H K F + g).
Proof. exact: (shallow_gate sqrtf geluf gelu_tanhf Hd0 HdD Hbo). Qed.

(** The FFN-1 pre-activation at feature g from its three sums over ffn1.products and b1. *)
Lemma shallow_gram_pre (g : 'I_F) (s1 s2 s3 : sel) (v1 : R) :
  (forall k, seval (@expR R) sqrtf geluf gelu_tanhf s1 x q k = ((k < N * F * (H * D)) && (k %/ (H * D) == i * F + g))%nat) ->
  (forall k, seval (@expR R) sqrtf geluf gelu_tanhf s2 x q k = ((k < N * F * (H * D)) && (k %/ (H * D) == i * F + g))%nat) ->
  (forall k, seval (@expR R) sqrtf geluf gelu_tanhf s3 x q k = ((k < N * F * (H * D)) && (k %/ (H * D) == i * F + g))%nat) ->
  v1 = b1 P 0 g ->
  (if ev U_shallow_norm_on q != 0
   then ev U_shallow_gram1_ln1_rstd q
          * (cst_sem R (CQ (Z.of_nat H * Z.of_nat D) 1)
               * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate s1 (Z5 U_shallow_ffn1_rgw)) x q
             - ev U_shallow_gram1_mu1 q * (cst_sem R (CQ (Z.of_nat H * Z.of_nat D) 1)
               * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate s2 (Z5 U_shallow_ffn1_gw)) x q))
        + cst_sem R (CQ (Z.of_nat H * Z.of_nat D) 1)
            * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate s3 (Z5 U_shallow_ffn1_bw)) x q
   else cst_sem R (CQ (Z.of_nat H * Z.of_nat D) 1)
          * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate s1 (Z5 U_shallow_ffn1_rgw)) x q) + v1
  = \sum_(j' < D | (j' < d_model P)%nat) Z2 i j' * W1 P j' g + b1 P 0 g.
Proof.
move=> Hs1 Hs2 Hs3 ->.
have Ergw : cst_sem R (CQ (Z.of_nat H * Z.of_nat D) 1)
    * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate s1 (Z5 U_shallow_ffn1_rgw)) x q
  = \sum_(e' < D) (if (e' < d_model P)%nat then X1 i e' else 0) * (gam e' * W1 P e' g).
  rewrite -Nat2Z.inj_mul cst_nat (@shallow_sum_fp R sqrtf geluf gelu_tanhf N D H F x i g q HLF _ _ Hs1).
  apply: eq_bigr => e' _.
  under eq_bigr => h _ do rewrite shallow_g_rgw.
  rewrite -mulr_suml big_split /= (sum_if0 HH).
  have /= E := shallow_Rv sqrtf M Hpad Hwoh Hin Hwoe Hboe e'.
  by rewrite -E.
have Egw : cst_sem R (CQ (Z.of_nat H * Z.of_nat D) 1)
    * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate s2 (Z5 U_shallow_ffn1_gw)) x q
  = \sum_(e' < D) gam e' * W1 P e' g.
  rewrite -Nat2Z.inj_mul cst_nat (@shallow_sum_fp R sqrtf geluf gelu_tanhf N D H F x i g q HLF _ _ Hs2).
  apply: eq_bigr => e' _.
  under eq_bigr => h _ do rewrite shallow_g_gw.
  exact: sum_if0.
have Ebw : cst_sem R (CQ (Z.of_nat H * Z.of_nat D) 1)
    * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate s3 (Z5 U_shallow_ffn1_bw)) x q
  = \sum_(e' < D) bet e' * W1 P e' g.
  rewrite -Nat2Z.inj_mul cst_nat (@shallow_sum_fp R sqrtf geluf gelu_tanhf N D H F x i g q HLF _ _ Hs3).
  apply: eq_bigr => e' _.
  under eq_bigr => h _ do rewrite shallow_g_bw.
  exact: sum_if0.
have Eon : ev U_shallow_norm_on q = (if norm P is PreNorm then 1 else 0) + (if norm P is PostNorm then 1 else 0).
  have -> : ev U_shallow_norm_on q = ev U_shallow_pre q + ev U_shallow_post q by [].
  rewrite (shallow_post sqrtf geluf gelu_tanhf e0 q Hbo Hpost).
  rewrite /U_shallow_pre /U_shallow_pre_gather /U_shallow_pre_source /U_shallow_indices /U_shallow_tokens.
  rewrite (@shallow_gate_q 1) //; last by rewrite /U_shallow_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
  by rewrite Hpre.
rewrite Ergw Egw Ebw Eon shallow_gram_rstd shallow_gram_mu; congr (_ + _).
rewrite /gam /bet /norm1 /norm2.
set A := add_residual _ _ _.
have Hln (w b : 'rV[R]_D) (j : 'I_D) : (j < d_model P)%nat ->
  layer_norm sqrtf P n w b A i j = (A i j - row_mean P A i) / sqrtf (row_var P A i + eps P) * w 0 j + b 0 j.
  by move=> Hj; rewrite /layer_norm /block !mxE Hin Hj.
case: (norm P); cbv iota beta.
-   rewrite addr0 !ne00 [RHS]big_mkcond; apply: eq_bigr => j _.
  by case: ifP => _; rewrite ?mul1r ?mul0r.
-   rewrite add0r ?ne10 ?ne00 fold_norm [RHS]big_mkcond; apply: eq_bigr => j _.
  case: ltnP => Hj /=; first by rewrite Hln.
  by rewrite Hw1pad ?mulr0.
-   rewrite addr0 ?ne10 ?ne00 fold_norm [RHS]big_mkcond; apply: eq_bigr => j _.
  case: ltnP => Hj /=; first by rewrite Hln.
  by rewrite Hw1pad ?mulr0.
Qed.

(** The activation the gates select, of a pre-activation. *)
Lemma shallow_gram_act_of (pre : sop) (v : R) :
  eval (@expR R) sqrtf geluf gelu_tanhf pre x q = v ->
  (if ev U_shallow_gelu q != 0 then geluf (eval (@expR R) sqrtf geluf gelu_tanhf pre x q)
   else if ev U_shallow_gelu_tanh q != 0 then gelu_tanhf (eval (@expR R) sqrtf geluf gelu_tanhf pre x q)
   else Num.max (eval (@expR R) sqrtf geluf gelu_tanhf pre x q) 0) = activation P v.
Proof.
move=> ->; rewrite Hact.
rewrite /U_shallow_gelu /U_shallow_gelu_gather /U_shallow_gelu_source /U_shallow_indices /U_shallow_tokens.
rewrite (@shallow_gate_q 3) //; last by rewrite /U_shallow_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
rewrite /U_shallow_gelu_tanh /U_shallow_gelu_tanh_gather /U_shallow_gelu_tanh_source /U_shallow_indices /U_shallow_tokens.
rewrite (@shallow_gate_q 4) //.
by rewrite /U_shallow_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

Lemma shallow_gram_b1 (src : Z -> Z) (g : 'I_F) : src (Z.of_nat q) = Z.of_nat (U_shallow_b1_offset N D H K F + g) ->
  eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Select Indices (IMap1 src Indices) CEq) Tokens) x q = b1 P 0 g.
Proof.
move=> Hs; have [Hs1 Hs2] := encodes_row g Hb1.
by rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_shallow_b1_offset N D H K F + g)).
Qed.

Lemma shallow_gram_u_pre :
  ev U_shallow_gram_u_pre q = \sum_(j' < D | (j' < d_model P)%nat) Z2 i j' * W1 P j' f + b1 P 0 f.
Proof.
have E : ev U_shallow_gram_u_b1 q = b1 P 0 f.
  rewrite /U_shallow_gram_u_b1 /U_shallow_gram_u_b1_gather /U_shallow_gram_u_b1_source /U_shallow_indices /U_shallow_tokens.
  apply: shallow_gram_b1; cbv beta; rewrite iif_range (HgG Hq) Z.sub_0_r !zdiv_nat !zmod_nat Hqf.
  by rewrite /U_shallow_b1_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
by rewrite -(shallow_gram_pre shallow_gram_u_sel shallow_gram_u_sel shallow_gram_u_sel E).
Qed.

Lemma shallow_gram_u2_pre :
  ev U_shallow_gram_u2_pre q = \sum_(j' < D | (j' < d_model P)%nat) Z2 i j' * W1 P j' f2 + b1 P 0 f2.
Proof.
have E : ev U_shallow_gram_u2_b1 q = b1 P 0 f2.
  rewrite /U_shallow_gram_u2_b1 /U_shallow_gram_u2_b1_gather /U_shallow_gram_u2_b1_source /U_shallow_indices /U_shallow_tokens.
  apply: shallow_gram_b1; cbv beta; rewrite iif_range (HgG Hq) Z.sub_0_r !zmod_nat Hqf2.
  by rewrite /U_shallow_b1_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
by rewrite -(shallow_gram_pre shallow_gram_u2_sel shallow_gram_u2_sel shallow_gram_u2_sel E).
Qed.

(** [gram.u.act] and [gram.u2.act] at q: the activation the gates select, of the pre-activation. *)
Lemma shallow_gram_u_act :
  ev U_shallow_gram_u_act q = activation P (\sum_(j' < D | (j' < d_model P)%nat) Z2 i j' * W1 P j' f + b1 P 0 f).
Proof. by rewrite -(shallow_gram_act_of shallow_gram_u_pre). Qed.

Lemma shallow_gram_u2_act :
  ev U_shallow_gram_u2_act q = activation P (\sum_(j' < D | (j' < d_model P)%nat) Z2 i j' * W1 P j' f2 + b1 P 0 f2).
Proof. by rewrite -(shallow_gram_act_of shallow_gram_u2_pre). Qed.

End Shallow.

Theorem U_shallow_gram_act_spec : U_shallow_gram_act_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i f f2 n q.
do 51 move=> ?; apply: (@shallow_gram_u_act R sqrtf geluf gelu_tanhf N D H K F P M X x i f f2 n q); assumption.
Qed.

Theorem U_shallow_gram_act2_spec : U_shallow_gram_act2_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i f f2 n q.
do 51 move=> ?; apply: (@shallow_gram_u2_act R sqrtf geluf gelu_tanhf N D H K F P M X x i f f2 n q); assumption.
Qed.

(** [gram] at q: D times the mean over the keys (f, f2, e) of gram.products of W2[f, e] W2[f2, e]. *)
Section ShallowGram.
Variables (R : realType) (sqrtf geluf gelu_tanhf : R -> R) (N D H K F : nat) (P : params R D H K F)
  (x : seq R) (i : 'I_N) (f f2 : 'I_F) (q : nat).
Local Notation Z5 g := (g (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)).
Local Notation ev a k := (eval (@expR R) sqrtf geluf gelu_tanhf (Z5 a) x k).
Hypotheses (Hw2 : encodes x (U_shallow_w2_offset N D H K F) 1 F D (fun _ => W2 P))
  (HLG : ((F * F * D)%nat <= size x)%nat)
  (Hq : (q < (N * F * F)%nat)%nat) (Hqi : (q %/ F %/ F)%nat = i) (Hqf : (q %/ F %% F)%nat = f)
  (Hqf2 : (q %% F)%nat = f2).

Let HgG : ((0 <=? Z.of_nat q) && (Z.of_nat q <? Z.of_nat N * Z.of_nat F * Z.of_nat F))%Z = true.
Proof. by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hq; lia. Qed.

Lemma shallow_gram_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_gram_sum) x q k
  = ((k < F * F * D) && (k %/ D == f * F + f2))%nat.
Proof.
rewrite /U_shallow_gram_sum /U_shallow_gram_key_group /U_shallow_gram_query_group /U_shallow_indices /=.
rewrite !iif_range HgG !Z.sub_0_r !zdiv_nat !zmod_nat Hqf Hqf2 (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) andTb.
have -> : (Z.of_nat f * Z.of_nat F + Z.of_nat f2)%Z = Z.of_nat (f * F + f2) by rewrite Nat2Z.inj_add Nat2Z.inj_mul.
have -> : (Z.of_nat F * Z.of_nat F * Z.of_nat D)%Z = Z.of_nat (F * F * D) by rewrite !Nat2Z.inj_mul.
rewrite ltb_nat; case: ltnP => Hk /=.
  2: by case E: (Z.of_nat (f * F + f2)) => [|z|z] //; have := Nat2Z.is_nonneg (f * F + f2); rewrite E; lia.
have -> : (Z.of_nat (k %/ D %/ F) * Z.of_nat F + Z.of_nat (k %/ D %% F))%Z = Z.of_nat (k %/ D).
  by rewrite [in RHS](divn_eq (k %/ D) F) Nat2Z.inj_add Nat2Z.inj_mul.
by rewrite eqb_of_nat.
Qed.

Lemma shallow_gram_at : ev U_shallow_gram q = \sum_(e < D) W2 P f e * W2 P f2 e.
Proof.
have -> : ev U_shallow_gram q = cst_sem R (CQ (Z.of_nat D) 1)
  * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_shallow_gram_sum) (Z5 U_shallow_gram_prod)) x q by [].
rewrite cst_nat (@agg_last _ _ _ _ _ _ _ x q (F * F) D (f * F + f2) (lin_lt (ltn_ord f) (ltn_ord f2)) HLG); last first.
  by move=> k _; exact: shallow_gram_sel.
apply: eq_bigr => e _.
have [G1 G2 G3] : [/\ ((f * F + f2) * D + e < F * F * D)%nat, ((f * F + f2) * D + e) %/ D %/ F = f
  & (((f * F + f2) * D + e) %/ D %% F = f2 /\ ((f * F + f2) * D + e) %% D = e)]%nat.
  have Hl := lin_lt (lin_lt (ltn_ord f) (ltn_ord f2)) (ltn_ord e).
  have Hde : (((f * F + f2) * D + e) %/ D = f * F + f2)%nat.
    by rewrite divnMDl ?divn_small ?addn0 //; apply: leq_ltn_trans (ltn_ord e).
  split => //; rewrite Hde; first by rewrite divnMDl ?divn_small ?addn0 //; apply: leq_ltn_trans (ltn_ord f2).
  by split; [rewrite modnMDl modn_small | rewrite modnMDl modn_small].
case: G3 => G3 G4.
have Hb : ((0 <=? Z.of_nat ((f * F + f2) * D + e)) && (Z.of_nat ((f * F + f2) * D + e) <? 0 + Z.of_nat F * Z.of_nat F * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -G1; lia.
rewrite /U_shallow_gram_prod eval_mul; congr (_ * _).
- have [HwL HwV] := Hw2 ord0 f e.
  rewrite /U_shallow_gram_a /U_shallow_gram_a_gather /U_shallow_gram_a_source /U_shallow_indices /U_shallow_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos (U_shallow_w2_offset N D H K F) F D 0 f e)) //.
  cbv beta; rewrite iif_range Hb Z.sub_0_r !zdiv_nat !zmod_nat G2 G4.
  by rewrite /pos /U_shallow_w2_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
- have [HwL HwV] := Hw2 ord0 f2 e.
  rewrite /U_shallow_gram_b /U_shallow_gram_b_gather /U_shallow_gram_b_source /U_shallow_indices /U_shallow_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos (U_shallow_w2_offset N D H K F) F D 0 f2 e)) //.
  cbv beta; rewrite iif_range Hb Z.sub_0_r !zdiv_nat !zmod_nat G3 G4.
  by rewrite /pos /U_shallow_w2_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

End ShallowGram.

Theorem U_shallow_gram_spec : U_shallow_gram_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P x i f f2 q.
move=> Hw2 HLG Hq Hqi Hqf Hqf2; exact: (shallow_gram_at sqrtf geluf gelu_tanhf Hw2 HLG Hq Hqi Hqf Hqf2).
Qed.
