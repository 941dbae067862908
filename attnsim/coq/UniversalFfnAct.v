(** Theorem 6 in the kernel, twelfth stage: the FFN's first linear layer and its activation.  U's
    own exported node [ffn2.u.act] at every query of the grid ffn2.products (row i < n, column e,
    feature f) is EncoderLayer.v's [activation P (\sum_(j' < D | j' < d_model) Z2 i j' * W1 P j' f +
    b1 P 0 f)], Z2 the FFN's input: norm2 X1 when pre-norm, norm1 X1 when post-norm, else X1
    (X1 = add_residual P X (self_attn expR P M n Z)), for every capacity N, D, H, K, F, both
    variants (generated statements: UniversalFfnActStatement.v).

    U folds the FFN-input LayerNorm into three sums over (h, e') of the grid ffn1.products:
    [ffn1.rgw] = (O_h + [h = 0] c) gamma W1, [ffn1.gw] = [h = 0] gamma W1 and [ffn1.bw] = [h = 0]
    beta W1 (gamma, beta: norm1's when post-norm, norm2's when pre-norm, gamma 1 without a norm), then
    rstd (sum rgw - mu sum gw) + sum bw = sum_e' ((R - mu) rstd gamma + beta) W1.  R's statistics on
    this grid select the keys [out.R_sum] and [out.R_sq] select at the row's column 0 ([agg_same]),
    so the x1 stage's sums give them; [ffn1.o] selects the keys of [attn.o] ([head_same]).  U sums
    over D columns, the layer over d_model: W1 is zero beyond d_model rows.  The activation is the
    one U's gelu and gelu_tanh gates select (a premise: [activation P] is that function). *)
From mathcomp Require Import all_ssreflect all_algebra.
From mathcomp Require Import reals sequences exp.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From mathcomp Require Import ring.
From Attnsim Require Import Semantics Lemmas UniversalLemmas UniversalFfnActNodes EncoderLayer.
From Attnsim Require Import UniversalRowMean UniversalRowStats UniversalLayerNorm1Statement UniversalLayerNorm1.
From Attnsim Require Import UniversalQProjStatement UniversalQProj UniversalVProjStatement UniversalVProj.
From Attnsim Require Import UniversalScoresStatement UniversalScores UniversalSoftmaxStatement UniversalSoftmax.
From Attnsim Require Import UniversalHeadsStatement UniversalHeads UniversalAttnOutStatement UniversalAttnOut.
From Attnsim Require Import UniversalY1Statement UniversalY1 UniversalFfnActStatement.
Import GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

Lemma ne00 (T : realFieldType) : ((0 : T) != 0) = false. Proof. by rewrite eqxx. Qed.
Lemma ne10 (T : realFieldType) : ((1 : T) != 0) = true. Proof. exact: oner_neq0. Qed.

(** The folded LayerNorm: rstd (sum r gamma W - mu sum gamma W) + sum beta W. *)
Lemma fold_norm (R : realFieldType) (D : nat) (r g b w : 'I_D -> R) (mu rstd : R) :
  rstd * (\sum_(e < D) r e * (g e * w e) - mu * \sum_(e < D) g e * w e) + \sum_(e < D) b e * w e
  = \sum_(e < D) ((r e - mu) * rstd * g e + b e) * w e.
Proof.
rewrite mulr_sumr -sumrB mulr_sumr -big_split /=; apply: eq_bigr => e _; ring.
Qed.

(** * Compact U *)
Section Compact.
Variables (R : realType) (sqrtf geluf gelu_tanhf : R -> R) (N D H K F : nat) (P : params R D H K F)
  (M : mask R N) (X : 'M[R]_(N, D)) (x : seq R) (i : 'I_N) (f : 'I_F) (n q : nat).
Local Notation Z5 g := (g (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)).
Local Notation ev a k := (eval (@expR R) sqrtf geluf gelu_tanhf (Z5 a) x k).
Local Notation Zin := (if norm P is PreNorm then norm1 sqrtf P n X else X).
Local Notation X1 := (add_residual P X (self_attn (@expR R) P M n Zin)).
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
  (Hq : (q < (N * D * F)%nat)%nat) (Hqi : (q %/ F %/ D)%nat = i) (Hqf : (q %% F)%nat = f).

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

Let o (e' : 'I_D) (h : 'I_H) : R := \sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n Zin h i c * Wo P h c e'.
Let cc (e' : 'I_D) : R := bo P 0 e' + (if residual P then 1 else 0) * X i e'.
Let Rv (e' : 'I_D) : R := \sum_(h < H) o e' h + cc e'.

Let Hg3 (k : nat) : (k < N * D * F)%nat ->
  ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat N * Z.of_nat D * Z.of_nat F))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

Let Hg4 (k : nat) : (k < N * F * H * D)%nat ->
  ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat N * Z.of_nat F * Z.of_nat H * Z.of_nat D))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

Let Hg3' (k : nat) : (k < N * D * H)%nat ->
  ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat N * Z.of_nat D * Z.of_nat H))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

Let Hqi' : (q %/ F %/ D %% N)%nat = i.
Proof. by rewrite Hqi modn_small. Qed.

(** R's statistics on this grid: the x1 stage's sums at the row's column 0. *)
Lemma compact_ffn_rsum_same : seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_ffn2_R_sum_sum) x q
  =1 seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_out_R_sum_sum) x p0.
Proof.
have [Hp1 Hp2 Hp3 Hp4] := Hp0.
move=> k; rewrite /U_compact_ffn2_R_sum_sum /U_compact_out_R_sum_sum /=; congr (_ =? _)%Z.
rewrite !iif_range (Hg3 Hq) !Z.sub_0_r !zdiv_nat Hqi.
have -> : ((0 <=? Z.of_nat p0) && (Z.of_nat p0 <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp1; lia.
by rewrite -{1}Hp2 modn_small // ltn_divLR //; move: Hp1; rewrite mul1n.
Qed.

Lemma compact_ffn_rsq_same : seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_ffn2_R_sq_sum) x q
  =1 seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_out_R_sq_sum) x p0.
Proof.
have [Hp1 Hp2 Hp3 Hp4] := Hp0.
move=> k; rewrite /U_compact_ffn2_R_sq_sum /U_compact_out_R_sq_sum /=; congr (_ =? _)%Z.
rewrite !iif_range (Hg3 Hq) !Z.sub_0_r !zdiv_nat Hqi.
have -> : ((0 <=? Z.of_nat p0) && (Z.of_nat p0 <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp1; lia.
by rewrite -{1}Hp2 modn_small // ltn_divLR //; move: Hp1; rewrite mul1n.
Qed.

Lemma compact_ffn_d : ev U_compact_d q = (d_model P)%:R.
Proof. by rewrite /U_compact_d /U_compact_tokens (read_d Hd Hd0) // => k; rewrite compact_d_sel. Qed.

Lemma compact_ffn_mu : ev U_compact_ffn2_mu1 q = row_mean P X1 i.
Proof.
have [Hp1 Hp2 Hp3 Hp4] := Hp0.
have -> : ev U_compact_ffn2_mu1 q = cst_sem R (CQ (Z.of_nat D * Z.of_nat H) 1)
  * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_compact_ffn2_R_sum_sum) (Z5 U_compact_attn_r_terms)) x q
  / ev U_compact_d q by [].
rewrite (agg_same _ compact_ffn_rsum_same) -Nat2Z.inj_mul cst_nat.
rewrite (compact_sum_r sqrtf geluf gelu_tanhf HX Hd He Hg Hb Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk
  Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV Hres Hbo HH HLH Hp1 Hp2 Hp3 Hin Hp4 HLQ).
rewrite compact_ffn_d /row_mean [in RHS]big_mkcond /=; congr (_ / _); apply: eq_bigr => e' _.
exact: (compact_Rv sqrtf M Hpad Hwoh Hin Hwoe Hboe e').
Qed.

Lemma compact_ffn_rstd :
  ev U_compact_ffn2_ln1_rstd q = (sqrtf (row_var P X1 i + eps P))^-1.
Proof.
have [Hp1 Hp2 Hp3 Hp4] := Hp0.
have -> : ev U_compact_ffn2_ln1_rstd q
  = (sqrtf (cst_sem R (CQ (Z.of_nat D * Z.of_nat H * Z.of_nat H) 1)
       * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_compact_ffn2_R_sq_sum) (Z5 U_compact_ln1_square_terms)) x q
       / ev U_compact_d q - ev U_compact_ffn2_mu1 q * ev U_compact_ffn2_mu1 q + ev U_compact_eps q))^-1 by [].
rewrite (agg_same _ compact_ffn_rsq_same) -!Nat2Z.inj_mul cst_nat compact_ffn_mu compact_ffn_d.
rewrite (compact_sum_sq sqrtf geluf gelu_tanhf HX Hd He Hg Hb Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk
  Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV Hres Hbo HH HLH Hp1 Hp2 Hp3 Hin Hp4 HLQ).
rewrite (compact_eps sqrtf geluf gelu_tanhf e0 q He Hbo).
have -> : \sum_(e' < D) Rv e' ^+ 2 = \sum_(j < D | (j < d_model P)%nat) X1 i j ^+ 2.
  rewrite [RHS]big_mkcond; apply: eq_bigr => e' _.
  have /= E := compact_Rv sqrtf M Hpad Hwoh Hin Hwoe Hboe e'; rewrite /Rv /o /cc E.
  by case: ifP => // _; rewrite expr2 mulr0.
by rewrite /row_var /row_mean var_identity.
Qed.

(** The sums over (h, e') of ffn1.products at q: the keys (i, f, h, e'). *)
Lemma compact_rgw_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_ffn2_u_rgw_sum) x q k
  = ((k < N * F * (H * D)) && (k %/ (H * D) == i * F + f))%nat.
Proof.
rewrite /U_compact_ffn2_u_rgw_sum /U_compact_ffn2_u_rgw_key_group /U_compact_ffn2_u_rgw_query_group /U_compact_indices /=.
rewrite !iif_range (Hg3 Hq) !Z.sub_0_r !zdiv_nat !zmod_nat Hqi Hqf (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) andTb.
have -> : (Z.of_nat i * Z.of_nat F + Z.of_nat f)%Z = Z.of_nat (i * F + f) by rewrite Nat2Z.inj_add Nat2Z.inj_mul.
have -> : (Z.of_nat N * Z.of_nat F * Z.of_nat H * Z.of_nat D)%Z = Z.of_nat (N * F * (H * D)) by rewrite !mulnA !Nat2Z.inj_mul.
rewrite ltb_nat; case: ltnP => Hk /=.
  2: by case E: (Z.of_nat (i * F + f)) => [|z|z] //; have := Nat2Z.is_nonneg (i * F + f); rewrite E; lia.
have -> : (Z.of_nat (k %/ D %/ H %/ F) * Z.of_nat F + Z.of_nat (k %/ D %/ H %% F))%Z = Z.of_nat (k %/ D %/ H).
  by rewrite [in RHS](divn_eq (k %/ D %/ H) F) Nat2Z.inj_add Nat2Z.inj_mul.
by rewrite eqb_of_nat -divnMA [(D * H)%nat]mulnC.
Qed.

Lemma compact_gw_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_ffn2_u_gw_sum) x q k
  = ((k < N * F * (H * D)) && (k %/ (H * D) == i * F + f))%nat.
Proof. by rewrite -compact_rgw_sel. Qed.

Lemma compact_bw_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_ffn2_u_bw_sum) x q k
  = ((k < N * F * (H * D)) && (k %/ (H * D) == i * F + f))%nat.
Proof. by rewrite -compact_rgw_sel. Qed.

Lemma compact_sum_fp (s : sel) (v : sop) :
  (forall k, seval (@expR R) sqrtf geluf gelu_tanhf s x q k = ((k < N * F * (H * D)) && (k %/ (H * D) == i * F + f))%nat) ->
  (H * D)%:R * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate s v) x q
  = \sum_(e' < D) \sum_(h < H) eval (@expR R) sqrtf geluf gelu_tanhf v x ((((i * F + f) * H + h) * D + e'))%nat.
Proof.
move=> Hs.
have HLF' : (N * F * (H * D) <= size x)%nat by rewrite !mulnA.
rewrite (@agg_last _ _ _ _ _ _ _ x q (N * F) (H * D) (i * F + f) (lin_lt (ltn_ord i) (ltn_ord f)) HLF'); last first.
  by move=> k _; exact: Hs.
rewrite (@sum_split _ (fun j => eval (@expR R) sqrtf geluf gelu_tanhf v x ((i * F + f) * (H * D) + j)%nat) H D).
rewrite exchange_big /=; apply: eq_bigr => e' _; apply: eq_bigr => h _.
by rewrite mulnA addnA -mulnDl.
Qed.

Let gam (e' : 'I_D) : R := if (if norm P is PostNorm then 1 else 0 : R) != 0 then norm1_w P 0 e'
  else if (if norm P is PreNorm then 1 else 0 : R) != 0 then norm2_w P 0 e' else 1.
Let bet (e' : 'I_D) : R := if (if norm P is PostNorm then 1 else 0 : R) != 0 then norm1_b P 0 e' else norm2_b P 0 e'.

(** A gather of the gates (any query). *)
Lemma compact_gate (g : nat) (src : Z -> Z) (k : nat) : (g < 8)%nat ->
  src (Z.of_nat k) = Z.of_nat (U_compact_gates_offset N D H K F + g) ->
  eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Select Indices (IMap1 src Indices) CEq) Tokens) x k
  = nth 0 x (U_compact_gates_offset N D H K F + g).
Proof.
move=> Hg8 Hsrc; have [HoL _] := Hbo ord0 ord0 e0.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_compact_gates_offset N D H K F + g)) //.
apply: leq_ltn_trans HoL.
by rewrite /pos /U_compact_bo_offset /U_compact_gates_offset; clear -Hg8; lia.
Qed.

Section Term.
Variables (e' : 'I_D) (h : 'I_H).
Let q' := ((((i * F + f) * H + h) * D + e'))%nat.
Let G4 := grid4 (ltn_ord i) (ltn_ord f) (ltn_ord h) (ltn_ord e').

Lemma compact_fo : ev U_compact_ffn1_o q' = o e' h.
Proof.
have [Hq' Hti Htf Hth Hte] := G4.
have Hl : (i * D + e' < N * D)%nat by exact: lin_lt.
have Hq1 : (i * D + e' < 1 * N * D)%nat by rewrite mul1n.
have Hq2 : ((i * D + e') %/ D %% N)%nat = i by rewrite divnMDl // divn_small // addn0 modn_small.
have Hq3 : ((i * D + e') %% D)%nat = e' by rewrite modnMDl modn_small.
have [Hp1 Hp1h Hp1i Hp1e] := compact_q Hd0 HdD HH Hq1 Hq2 Hq3 h.
have := compact_o_at sqrtf geluf gelu_tanhf HX Hd He Hg Hb Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk
  Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV HH Hin e' h.
rewrite /o => <-.
rewrite /U_compact_ffn1_o /U_compact_ffn1_o_num /U_compact_ffn1_o_num_mean /U_compact_ffn1_o_den /U_compact_ffn1_o_den_mean.
rewrite /U_compact_attn_o /U_compact_attn_o_num /U_compact_attn_o_num_mean /U_compact_attn_o_den /U_compact_attn_o_den_mean.
apply: head_same => k.
  rewrite /U_compact_ffn1_o_num_sum /U_compact_attn_o_num_sum /=; congr (_ =? _)%Z.
  rewrite !iif_range (Hg4 Hq') (Hg3' Hp1) !Z.sub_0_r !zdiv_nat !zmod_nat.
  by rewrite Hth Hti Hte Hp1h Hp1i Hp1e.
rewrite /U_compact_ffn1_o_den_sum /U_compact_attn_o_den_sum /=; congr (_ =? _)%Z.
rewrite !iif_range (Hg4 Hq') (Hg3' Hp1) !Z.sub_0_r !zdiv_nat !zmod_nat.
by rewrite Hth Hti Hp1h Hp1i.
Qed.

Lemma compact_fc : ev U_compact_ffn1_c q' = cc e'.
Proof.
have [Hq' Hti Htf Hth Hte] := G4.
rewrite /U_compact_ffn1_c eval_add eval_mul /cc.
have [HoL HoV] := Hbo ord0 ord0 e'.
have [HxL HxV] := HX ord0 i e'.
congr (_ + _ * _).
- rewrite /U_compact_ffn1_bo /U_compact_ffn1_bo_gather /U_compact_ffn1_bo_source /U_compact_indices /U_compact_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos (U_compact_bo_offset N D H K F) 1 D 0 0 e')) //.
  cbv beta; rewrite iif_range (Hg4 Hq') Z.sub_0_r !zmod_nat Hte.
  by rewrite /pos /U_compact_bo_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
- rewrite /U_compact_residual /U_compact_residual_gather /U_compact_residual_source /U_compact_indices /U_compact_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_compact_gates_offset N D H K F + 0)) //.
    by rewrite /U_compact_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
  apply: leq_ltn_trans HoL.
  by rewrite /pos /U_compact_bo_offset /U_compact_gates_offset; clear; lia.
- rewrite /U_compact_ffn1_x /U_compact_ffn1_x_gather /U_compact_ffn1_x_source /U_compact_indices /U_compact_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos 0 N D 0 i e')) //.
  cbv beta; rewrite iif_range (Hg4 Hq') Z.sub_0_r !zdiv_nat !zmod_nat Hti Hte.
  by rewrite /pos !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

Lemma compact_fh0 : eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_compact_ffn1_h0)) x q'
  = if h == 0%nat :> nat then 1 else 0.
Proof.
have [Hq' Hti Htf Hth Hte] := G4.
rewrite /U_compact_ffn1_h0 /U_compact_indices /= Z.sub_0_r zdiv_nat zmod_nat Hth.
rewrite /iif /iand /ile /ilt /ieq /zb.
have [/andP[-> ->]] := Hg4 Hq'.
have -> : (Z.of_nat h =? 0)%Z = (h == 0%nat :> nat) by exact: (eqb_of_nat h 0).
by case: (h == 0%nat :> nat); rewrite /zR /= ?subr0.
Qed.

Lemma compact_frow (src : Z -> Z) (o1 : nat) (w : 'rV[R]_D) :
  encodes x o1 1 1 D (fun _ => w) -> src (Z.of_nat q') = Z.of_nat (o1 + e') ->
  eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Select Indices (IMap1 src Indices) CEq) Tokens) x q' = w 0 e'.
Proof.
move=> Hw Hs; have [Hs1 Hs2] := encodes_row e' Hw.
by rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (o1 + e')).
Qed.

Let Hsrc (o1 : nat) (Zo : Z) : Zo = Z.of_nat o1 ->
  iif (iand (ile 0 (Z.of_nat q')) (ilt (Z.of_nat q') (0 + Z.of_nat N * Z.of_nat F * Z.of_nat H * Z.of_nat D)))
    (Zo + (Z.of_nat q' - 0) mod Z.of_nat D) (-1) = Z.of_nat (o1 + e').
Proof.
have [Hq' Hti Htf Hth Hte] := G4.
move=> ->; rewrite iif_range (Hg4 Hq') Z.sub_0_r zmod_nat Hte; lia.
Qed.

Lemma compact_fgam : ev U_compact_ffn1_gamma q' = gam e'.
Proof.
have -> : ev U_compact_ffn1_gamma q'
  = if ev U_compact_post q' != 0 then ev U_compact_ffn1_g1 q'
    else if ev U_compact_pre q' != 0 then ev U_compact_ffn1_g2 q' else zR R 1 by [].
have -> : zR R 1 = 1 by rewrite /zR /= subr0.
rewrite (compact_post sqrtf geluf gelu_tanhf e' q' Hbo Hpost).
rewrite /U_compact_pre /U_compact_pre_gather /U_compact_pre_source /U_compact_indices /U_compact_tokens.
rewrite (@compact_gate 1) //; last by rewrite /U_compact_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
rewrite Hpre.
rewrite /U_compact_ffn1_g1 /U_compact_ffn1_g1_gather /U_compact_ffn1_g1_source /U_compact_indices /U_compact_tokens.
rewrite (compact_frow Hg); last by apply: Hsrc; rewrite /U_compact_g1_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
rewrite /U_compact_ffn1_g2 /U_compact_ffn1_g2_gather /U_compact_ffn1_g2_source /U_compact_indices /U_compact_tokens.
rewrite (compact_frow Hg2) //.
by apply: Hsrc; rewrite /U_compact_g2_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

Lemma compact_fbet : ev U_compact_ffn1_beta q' = bet e'.
Proof.
have -> : ev U_compact_ffn1_beta q'
  = if ev U_compact_post q' != 0 then ev U_compact_ffn1_be1 q' else ev U_compact_ffn1_be2 q' by [].
rewrite (compact_post sqrtf geluf gelu_tanhf e' q' Hbo Hpost).
rewrite /U_compact_ffn1_be1 /U_compact_ffn1_be1_gather /U_compact_ffn1_be1_source /U_compact_indices /U_compact_tokens.
rewrite (compact_frow Hb); last by apply: Hsrc; rewrite /U_compact_be1_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
rewrite /U_compact_ffn1_be2 /U_compact_ffn1_be2_gather /U_compact_ffn1_be2_source /U_compact_indices /U_compact_tokens.
rewrite (compact_frow Hb2) //.
by apply: Hsrc; rewrite /U_compact_be2_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

Lemma compact_fw1 : ev U_compact_ffn1_w1 q' = W1 P e' f.
Proof.
have [Hq' Hti Htf Hth Hte] := G4.
have [HwL HwV] := Hw1 ord0 e' f.
rewrite /U_compact_ffn1_w1 /U_compact_ffn1_w1_gather /U_compact_ffn1_w1_source /U_compact_indices /U_compact_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos (U_compact_w1_offset N D H K F) D F 0 e' f)) //.
cbv beta; rewrite iif_range (Hg4 Hq') Z.sub_0_r !zdiv_nat !zmod_nat Hte Htf.
by rewrite /pos /U_compact_w1_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

Lemma compact_rgw_at : ev U_compact_ffn1_rgw q' = (o e' h + (if h == 0%nat :> nat then cc e' else 0)) * (gam e' * W1 P e' f).
Proof.
have -> : ev U_compact_ffn1_rgw q'
  = (ev U_compact_ffn1_o q' + eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_compact_ffn1_h0)) x q' * ev U_compact_ffn1_c q')
    * (ev U_compact_ffn1_gamma q' * ev U_compact_ffn1_w1 q') by [].
rewrite compact_fo compact_fc compact_fh0 compact_fgam compact_fw1.
by case: (h == 0%nat :> nat); rewrite ?mul1r ?mul0r.
Qed.

Lemma compact_gw_at : ev U_compact_ffn1_gw q' = if h == 0%nat :> nat then gam e' * W1 P e' f else 0.
Proof.
have -> : ev U_compact_ffn1_gw q'
  = ev U_compact_ffn1_gamma q' * ev U_compact_ffn1_w1 q' * eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_compact_ffn1_h0)) x q' by [].
rewrite compact_fh0 compact_fgam compact_fw1.
by case: (h == 0%nat :> nat); rewrite ?mulr1 ?mulr0.
Qed.

Lemma compact_bw_at : ev U_compact_ffn1_bw q' = if h == 0%nat :> nat then bet e' * W1 P e' f else 0.
Proof.
have -> : ev U_compact_ffn1_bw q'
  = ev U_compact_ffn1_beta q' * ev U_compact_ffn1_w1 q' * eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_compact_ffn1_h0)) x q' by [].
rewrite compact_fh0 compact_fbet compact_fw1.
by case: (h == 0%nat :> nat); rewrite ?mulr1 ?mulr0.
Qed.

End Term.

Lemma compact_gate_at (g : nat) (src : Z -> Z) : (g < 8)%nat ->
  src (Z.of_nat q) = Z.of_nat (U_compact_gates_offset N D H K F + g) ->
  eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Select Indices (IMap1 src Indices) CEq) Tokens) x q
  = nth 0 x (U_compact_gates_offset N D H K F + g).
Proof. exact: compact_gate. Qed.

Lemma compact_fb1 : ev U_compact_ffn2_u_b1 q = b1 P 0 f.
Proof.
have [Hs1 Hs2] := encodes_row f Hb1.
rewrite /U_compact_ffn2_u_b1 /U_compact_ffn2_u_b1_gather /U_compact_ffn2_u_b1_source /U_compact_indices /U_compact_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_compact_b1_offset N D H K F + f)) //.
cbv beta; rewrite iif_range (Hg3 Hq) Z.sub_0_r zmod_nat Hqf.
by rewrite /U_compact_b1_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

(** The FFN-1 pre-activation: the folded LayerNorm of R (or R) times W1, plus b1. *)
Lemma compact_pre_act :
  ev U_compact_ffn2_u_pre q
  = \sum_(j' < D | (j' < d_model P)%nat)
      (match norm P with PreNorm => norm2 sqrtf P n X1 | PostNorm => norm1 sqrtf P n X1 | NoNorm => X1 end) i j'
      * W1 P j' f + b1 P 0 f.
Proof.
have -> : ev U_compact_ffn2_u_pre q
  = (if ev U_compact_norm_on q != 0
     then ev U_compact_ffn2_ln1_rstd q * (ev U_compact_ffn2_u_rgw q - ev U_compact_ffn2_mu1 q * ev U_compact_ffn2_u_gw q)
          + ev U_compact_ffn2_u_bw q
     else ev U_compact_ffn2_u_rgw q) + ev U_compact_ffn2_u_b1 q by [].
have Ergw : ev U_compact_ffn2_u_rgw q
  = \sum_(e' < D) (if (e' < d_model P)%nat then X1 i e' else 0) * (gam e' * W1 P e' f).
  have -> : ev U_compact_ffn2_u_rgw q = cst_sem R (CQ (Z.of_nat H * Z.of_nat D) 1)
    * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_compact_ffn2_u_rgw_sum) (Z5 U_compact_ffn1_rgw)) x q by [].
  rewrite -Nat2Z.inj_mul cst_nat (compact_sum_fp _ compact_rgw_sel); apply: eq_bigr => e' _.
  under eq_bigr => h _ do rewrite compact_rgw_at.
  rewrite -mulr_suml big_split /= (sum_if0 HH).
  have /= E := compact_Rv sqrtf M Hpad Hwoh Hin Hwoe Hboe e'.
  by rewrite -E.
have Egw : ev U_compact_ffn2_u_gw q = \sum_(e' < D) gam e' * W1 P e' f.
  have -> : ev U_compact_ffn2_u_gw q = cst_sem R (CQ (Z.of_nat H * Z.of_nat D) 1)
    * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_compact_ffn2_u_gw_sum) (Z5 U_compact_ffn1_gw)) x q by [].
  rewrite -Nat2Z.inj_mul cst_nat (compact_sum_fp _ compact_gw_sel); apply: eq_bigr => e' _.
  under eq_bigr => h _ do rewrite compact_gw_at.
  exact: sum_if0.
have Ebw : ev U_compact_ffn2_u_bw q = \sum_(e' < D) bet e' * W1 P e' f.
  have -> : ev U_compact_ffn2_u_bw q = cst_sem R (CQ (Z.of_nat H * Z.of_nat D) 1)
    * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_compact_ffn2_u_bw_sum) (Z5 U_compact_ffn1_bw)) x q by [].
  rewrite -Nat2Z.inj_mul cst_nat (compact_sum_fp _ compact_bw_sel); apply: eq_bigr => e' _.
  under eq_bigr => h _ do rewrite compact_bw_at.
  exact: sum_if0.
have Eon : ev U_compact_norm_on q = (if norm P is PreNorm then 1 else 0) + (if norm P is PostNorm then 1 else 0).
  have -> : ev U_compact_norm_on q = ev U_compact_pre q + ev U_compact_post q by [].
  rewrite (compact_post sqrtf geluf gelu_tanhf e0 q Hbo Hpost).
  rewrite /U_compact_pre /U_compact_pre_gather /U_compact_pre_source /U_compact_indices /U_compact_tokens.
  rewrite (@compact_gate_at 1) //; last by rewrite /U_compact_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
  by rewrite Hpre.
rewrite Ergw Egw Ebw Eon compact_ffn_rstd compact_ffn_mu compact_fb1; congr (_ + _).
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

(** [ffn2.u.act] at q: the activation the gates select, of the pre-activation. *)
Lemma compact_act :
  ev U_compact_ffn2_u_act q
  = activation P (\sum_(j' < D | (j' < d_model P)%nat)
      (match norm P with PreNorm => norm2 sqrtf P n X1 | PostNorm => norm1 sqrtf P n X1 | NoNorm => X1 end) i j'
      * W1 P j' f + b1 P 0 f).
Proof.
have -> : ev U_compact_ffn2_u_act q
  = if ev U_compact_gelu q != 0 then geluf (ev U_compact_ffn2_u_pre q)
    else if ev U_compact_gelu_tanh q != 0 then gelu_tanhf (ev U_compact_ffn2_u_pre q)
    else Num.max (ev U_compact_ffn2_u_pre q) 0 by [].
rewrite Hact compact_pre_act.
rewrite /U_compact_gelu /U_compact_gelu_gather /U_compact_gelu_source /U_compact_indices /U_compact_tokens.
rewrite (@compact_gate_at 3) //; last by rewrite /U_compact_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
rewrite /U_compact_gelu_tanh /U_compact_gelu_tanh_gather /U_compact_gelu_tanh_source /U_compact_indices /U_compact_tokens.
rewrite (@compact_gate_at 4) //.
by rewrite /U_compact_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

End Compact.

Theorem U_compact_ffn_act_spec : U_compact_ffn_act_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i f n q.
do 50 move=> ?; apply: compact_act; assumption.
Qed.

(** * Shallow U: the same nodes (its own node numbers). *)
Section Shallow.
Variables (R : realType) (sqrtf geluf gelu_tanhf : R -> R) (N D H K F : nat) (P : params R D H K F)
  (M : mask R N) (X : 'M[R]_(N, D)) (x : seq R) (i : 'I_N) (f : 'I_F) (n q : nat).
Local Notation Z5 g := (g (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)).
Local Notation ev a k := (eval (@expR R) sqrtf geluf gelu_tanhf (Z5 a) x k).
Local Notation Zin := (if norm P is PreNorm then norm1 sqrtf P n X else X).
Local Notation X1 := (add_residual P X (self_attn (@expR R) P M n Zin)).
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
  (Hq : (q < (N * D * F)%nat)%nat) (Hqi : (q %/ F %/ D)%nat = i) (Hqf : (q %% F)%nat = f).

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

Let o (e' : 'I_D) (h : 'I_H) : R := \sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n Zin h i c * Wo P h c e'.
Let cc (e' : 'I_D) : R := bo P 0 e' + (if residual P then 1 else 0) * X i e'.
Let Rv (e' : 'I_D) : R := \sum_(h < H) o e' h + cc e'.

Let Hg3 (k : nat) : (k < N * D * F)%nat ->
  ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat N * Z.of_nat D * Z.of_nat F))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

Let Hg4 (k : nat) : (k < N * F * H * D)%nat ->
  ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat N * Z.of_nat F * Z.of_nat H * Z.of_nat D))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

Let Hg3' (k : nat) : (k < N * D * H)%nat ->
  ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat N * Z.of_nat D * Z.of_nat H))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

Let Hqi' : (q %/ F %/ D %% N)%nat = i.
Proof. by rewrite Hqi modn_small. Qed.

(** R's statistics on this grid: the x1 stage's sums at the row's column 0. *)
Lemma shallow_ffn_rsum_same : seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_ffn2_R_sum_sum) x q
  =1 seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_out_R_sum_sum) x p0.
Proof.
have [Hp1 Hp2 Hp3 Hp4] := Hp0.
move=> k; rewrite /U_shallow_ffn2_R_sum_sum /U_shallow_out_R_sum_sum /=; congr (_ =? _)%Z.
rewrite !iif_range (Hg3 Hq) !Z.sub_0_r !zdiv_nat Hqi.
have -> : ((0 <=? Z.of_nat p0) && (Z.of_nat p0 <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp1; lia.
by rewrite -{1}Hp2 modn_small // ltn_divLR //; move: Hp1; rewrite mul1n.
Qed.

Lemma shallow_ffn_rsq_same : seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_ffn2_R_sq_sum) x q
  =1 seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_out_R_sq_sum) x p0.
Proof.
have [Hp1 Hp2 Hp3 Hp4] := Hp0.
move=> k; rewrite /U_shallow_ffn2_R_sq_sum /U_shallow_out_R_sq_sum /=; congr (_ =? _)%Z.
rewrite !iif_range (Hg3 Hq) !Z.sub_0_r !zdiv_nat Hqi.
have -> : ((0 <=? Z.of_nat p0) && (Z.of_nat p0 <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp1; lia.
by rewrite -{1}Hp2 modn_small // ltn_divLR //; move: Hp1; rewrite mul1n.
Qed.

Lemma shallow_ffn_d : ev U_shallow_d q = (d_model P)%:R.
Proof. by rewrite /U_shallow_d /U_shallow_tokens (read_d Hd Hd0) // => k; rewrite shallow_d_sel. Qed.

Lemma shallow_ffn_mu : ev U_shallow_ffn2_mu1 q = row_mean P X1 i.
Proof.
have [Hp1 Hp2 Hp3 Hp4] := Hp0.
have -> : ev U_shallow_ffn2_mu1 q = cst_sem R (CQ (Z.of_nat D * Z.of_nat H) 1)
  * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_shallow_ffn2_R_sum_sum) (Z5 U_shallow_attn_r_terms)) x q
  / ev U_shallow_d q by [].
rewrite (agg_same _ shallow_ffn_rsum_same) -Nat2Z.inj_mul cst_nat.
rewrite (shallow_sum_r sqrtf geluf gelu_tanhf HX Hd He Hg Hb Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk
  Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV Hres Hbo HH HLH Hp1 Hp2 Hp3 Hin Hp4 HLQ).
rewrite shallow_ffn_d /row_mean [in RHS]big_mkcond /=; congr (_ / _); apply: eq_bigr => e' _.
exact: (shallow_Rv sqrtf M Hpad Hwoh Hin Hwoe Hboe e').
Qed.

Lemma shallow_ffn_rstd :
  ev U_shallow_ffn2_ln1_rstd q = (sqrtf (row_var P X1 i + eps P))^-1.
Proof.
have [Hp1 Hp2 Hp3 Hp4] := Hp0.
have -> : ev U_shallow_ffn2_ln1_rstd q
  = (sqrtf (cst_sem R (CQ (Z.of_nat D * Z.of_nat H * Z.of_nat H) 1)
       * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_shallow_ffn2_R_sq_sum) (Z5 U_shallow_ln1_square_terms)) x q
       / ev U_shallow_d q - ev U_shallow_ffn2_mu1 q * ev U_shallow_ffn2_mu1 q + ev U_shallow_eps q))^-1 by [].
rewrite (agg_same _ shallow_ffn_rsq_same) -!Nat2Z.inj_mul cst_nat shallow_ffn_mu shallow_ffn_d.
rewrite (shallow_sum_sq sqrtf geluf gelu_tanhf HX Hd He Hg Hb Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk
  Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV Hres Hbo HH HLH Hp1 Hp2 Hp3 Hin Hp4 HLQ).
rewrite (shallow_eps sqrtf geluf gelu_tanhf e0 q He Hbo).
have -> : \sum_(e' < D) Rv e' ^+ 2 = \sum_(j < D | (j < d_model P)%nat) X1 i j ^+ 2.
  rewrite [RHS]big_mkcond; apply: eq_bigr => e' _.
  have /= E := shallow_Rv sqrtf M Hpad Hwoh Hin Hwoe Hboe e'; rewrite /Rv /o /cc E.
  by case: ifP => // _; rewrite expr2 mulr0.
by rewrite /row_var /row_mean var_identity.
Qed.

(** The sums over (h, e') of ffn1.products at q: the keys (i, f, h, e'). *)
Lemma shallow_rgw_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_ffn2_u_rgw_sum) x q k
  = ((k < N * F * (H * D)) && (k %/ (H * D) == i * F + f))%nat.
Proof.
rewrite /U_shallow_ffn2_u_rgw_sum /U_shallow_ffn2_u_rgw_key_group /U_shallow_ffn2_u_rgw_query_group /U_shallow_indices /=.
rewrite !iif_range (Hg3 Hq) !Z.sub_0_r !zdiv_nat !zmod_nat Hqi Hqf (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) andTb.
have -> : (Z.of_nat i * Z.of_nat F + Z.of_nat f)%Z = Z.of_nat (i * F + f) by rewrite Nat2Z.inj_add Nat2Z.inj_mul.
have -> : (Z.of_nat N * Z.of_nat F * Z.of_nat H * Z.of_nat D)%Z = Z.of_nat (N * F * (H * D)) by rewrite !mulnA !Nat2Z.inj_mul.
rewrite ltb_nat; case: ltnP => Hk /=.
  2: by case E: (Z.of_nat (i * F + f)) => [|z|z] //; have := Nat2Z.is_nonneg (i * F + f); rewrite E; lia.
have -> : (Z.of_nat (k %/ D %/ H %/ F) * Z.of_nat F + Z.of_nat (k %/ D %/ H %% F))%Z = Z.of_nat (k %/ D %/ H).
  by rewrite [in RHS](divn_eq (k %/ D %/ H) F) Nat2Z.inj_add Nat2Z.inj_mul.
by rewrite eqb_of_nat -divnMA [(D * H)%nat]mulnC.
Qed.

Lemma shallow_gw_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_ffn2_u_gw_sum) x q k
  = ((k < N * F * (H * D)) && (k %/ (H * D) == i * F + f))%nat.
Proof. by rewrite -shallow_rgw_sel. Qed.

Lemma shallow_bw_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_ffn2_u_bw_sum) x q k
  = ((k < N * F * (H * D)) && (k %/ (H * D) == i * F + f))%nat.
Proof. by rewrite -shallow_rgw_sel. Qed.

Lemma shallow_sum_fp (s : sel) (v : sop) :
  (forall k, seval (@expR R) sqrtf geluf gelu_tanhf s x q k = ((k < N * F * (H * D)) && (k %/ (H * D) == i * F + f))%nat) ->
  (H * D)%:R * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate s v) x q
  = \sum_(e' < D) \sum_(h < H) eval (@expR R) sqrtf geluf gelu_tanhf v x ((((i * F + f) * H + h) * D + e'))%nat.
Proof.
move=> Hs.
have HLF' : (N * F * (H * D) <= size x)%nat by rewrite !mulnA.
rewrite (@agg_last _ _ _ _ _ _ _ x q (N * F) (H * D) (i * F + f) (lin_lt (ltn_ord i) (ltn_ord f)) HLF'); last first.
  by move=> k _; exact: Hs.
rewrite (@sum_split _ (fun j => eval (@expR R) sqrtf geluf gelu_tanhf v x ((i * F + f) * (H * D) + j)%nat) H D).
rewrite exchange_big /=; apply: eq_bigr => e' _; apply: eq_bigr => h _.
by rewrite mulnA addnA -mulnDl.
Qed.

Let gam (e' : 'I_D) : R := if (if norm P is PostNorm then 1 else 0 : R) != 0 then norm1_w P 0 e'
  else if (if norm P is PreNorm then 1 else 0 : R) != 0 then norm2_w P 0 e' else 1.
Let bet (e' : 'I_D) : R := if (if norm P is PostNorm then 1 else 0 : R) != 0 then norm1_b P 0 e' else norm2_b P 0 e'.

(** A gather of the gates (any query). *)
Lemma shallow_gate (g : nat) (src : Z -> Z) (k : nat) : (g < 8)%nat ->
  src (Z.of_nat k) = Z.of_nat (U_shallow_gates_offset N D H K F + g) ->
  eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Select Indices (IMap1 src Indices) CEq) Tokens) x k
  = nth 0 x (U_shallow_gates_offset N D H K F + g).
Proof.
move=> Hg8 Hsrc; have [HoL _] := Hbo ord0 ord0 e0.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_shallow_gates_offset N D H K F + g)) //.
apply: leq_ltn_trans HoL.
by rewrite /pos /U_shallow_bo_offset /U_shallow_gates_offset; clear -Hg8; lia.
Qed.

Section Term.
Variables (e' : 'I_D) (h : 'I_H).
Let q' := ((((i * F + f) * H + h) * D + e'))%nat.
Let G4 := grid4 (ltn_ord i) (ltn_ord f) (ltn_ord h) (ltn_ord e').

Lemma shallow_fo : ev U_shallow_ffn1_o q' = o e' h.
Proof.
have [Hq' Hti Htf Hth Hte] := G4.
have Hl : (i * D + e' < N * D)%nat by exact: lin_lt.
have Hq1 : (i * D + e' < 1 * N * D)%nat by rewrite mul1n.
have Hq2 : ((i * D + e') %/ D %% N)%nat = i by rewrite divnMDl // divn_small // addn0 modn_small.
have Hq3 : ((i * D + e') %% D)%nat = e' by rewrite modnMDl modn_small.
have [Hp1 Hp1h Hp1i Hp1e] := shallow_q Hd0 HdD HH Hq1 Hq2 Hq3 h.
have := shallow_o_at sqrtf geluf gelu_tanhf HX Hd He Hg Hb Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk
  Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV HH Hin e' h.
rewrite /o => <-.
rewrite /U_shallow_ffn1_o /U_shallow_ffn1_o_num /U_shallow_ffn1_o_num_mean /U_shallow_ffn1_o_den /U_shallow_ffn1_o_den_mean.
rewrite /U_shallow_attn_o /U_shallow_attn_o_num /U_shallow_attn_o_num_mean /U_shallow_attn_o_den /U_shallow_attn_o_den_mean.
apply: head_same => k.
  rewrite /U_shallow_ffn1_o_num_sum /U_shallow_attn_o_num_sum /=; congr (_ =? _)%Z.
  rewrite !iif_range (Hg4 Hq') (Hg3' Hp1) !Z.sub_0_r !zdiv_nat !zmod_nat.
  by rewrite Hth Hti Hte Hp1h Hp1i Hp1e.
rewrite /U_shallow_ffn1_o_den_sum /U_shallow_attn_o_den_sum /=; congr (_ =? _)%Z.
rewrite !iif_range (Hg4 Hq') (Hg3' Hp1) !Z.sub_0_r !zdiv_nat !zmod_nat.
by rewrite Hth Hti Hp1h Hp1i.
Qed.

Lemma shallow_fc : ev U_shallow_ffn1_c q' = cc e'.
Proof.
have [Hq' Hti Htf Hth Hte] := G4.
rewrite /U_shallow_ffn1_c eval_add eval_mul /cc.
have [HoL HoV] := Hbo ord0 ord0 e'.
have [HxL HxV] := HX ord0 i e'.
congr (_ + _ * _).
- rewrite /U_shallow_ffn1_bo /U_shallow_ffn1_bo_gather /U_shallow_ffn1_bo_source /U_shallow_indices /U_shallow_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos (U_shallow_bo_offset N D H K F) 1 D 0 0 e')) //.
  cbv beta; rewrite iif_range (Hg4 Hq') Z.sub_0_r !zmod_nat Hte.
  by rewrite /pos /U_shallow_bo_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
- rewrite /U_shallow_residual /U_shallow_residual_gather /U_shallow_residual_source /U_shallow_indices /U_shallow_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_shallow_gates_offset N D H K F + 0)) //.
    by rewrite /U_shallow_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
  apply: leq_ltn_trans HoL.
  by rewrite /pos /U_shallow_bo_offset /U_shallow_gates_offset; clear; lia.
- rewrite /U_shallow_ffn1_x /U_shallow_ffn1_x_gather /U_shallow_ffn1_x_source /U_shallow_indices /U_shallow_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos 0 N D 0 i e')) //.
  cbv beta; rewrite iif_range (Hg4 Hq') Z.sub_0_r !zdiv_nat !zmod_nat Hti Hte.
  by rewrite /pos !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

Lemma shallow_fh0 : eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_shallow_ffn1_h0)) x q'
  = if h == 0%nat :> nat then 1 else 0.
Proof.
have [Hq' Hti Htf Hth Hte] := G4.
rewrite /U_shallow_ffn1_h0 /U_shallow_indices /= Z.sub_0_r zdiv_nat zmod_nat Hth.
rewrite /iif /iand /ile /ilt /ieq /zb.
have [/andP[-> ->]] := Hg4 Hq'.
have -> : (Z.of_nat h =? 0)%Z = (h == 0%nat :> nat) by exact: (eqb_of_nat h 0).
by case: (h == 0%nat :> nat); rewrite /zR /= ?subr0.
Qed.

Lemma shallow_frow (src : Z -> Z) (o1 : nat) (w : 'rV[R]_D) :
  encodes x o1 1 1 D (fun _ => w) -> src (Z.of_nat q') = Z.of_nat (o1 + e') ->
  eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Select Indices (IMap1 src Indices) CEq) Tokens) x q' = w 0 e'.
Proof.
move=> Hw Hs; have [Hs1 Hs2] := encodes_row e' Hw.
by rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (o1 + e')).
Qed.

Let Hsrc (o1 : nat) (Zo : Z) : Zo = Z.of_nat o1 ->
  iif (iand (ile 0 (Z.of_nat q')) (ilt (Z.of_nat q') (0 + Z.of_nat N * Z.of_nat F * Z.of_nat H * Z.of_nat D)))
    (Zo + (Z.of_nat q' - 0) mod Z.of_nat D) (-1) = Z.of_nat (o1 + e').
Proof.
have [Hq' Hti Htf Hth Hte] := G4.
move=> ->; rewrite iif_range (Hg4 Hq') Z.sub_0_r zmod_nat Hte; lia.
Qed.

Lemma shallow_fgam : ev U_shallow_ffn1_gamma q' = gam e'.
Proof.
have -> : ev U_shallow_ffn1_gamma q'
  = if ev U_shallow_post q' != 0 then ev U_shallow_ffn1_g1 q'
    else if ev U_shallow_pre q' != 0 then ev U_shallow_ffn1_g2 q' else zR R 1 by [].
have -> : zR R 1 = 1 by rewrite /zR /= subr0.
rewrite (shallow_post sqrtf geluf gelu_tanhf e' q' Hbo Hpost).
rewrite /U_shallow_pre /U_shallow_pre_gather /U_shallow_pre_source /U_shallow_indices /U_shallow_tokens.
rewrite (@shallow_gate 1) //; last by rewrite /U_shallow_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
rewrite Hpre.
rewrite /U_shallow_ffn1_g1 /U_shallow_ffn1_g1_gather /U_shallow_ffn1_g1_source /U_shallow_indices /U_shallow_tokens.
rewrite (shallow_frow Hg); last by apply: Hsrc; rewrite /U_shallow_g1_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
rewrite /U_shallow_ffn1_g2 /U_shallow_ffn1_g2_gather /U_shallow_ffn1_g2_source /U_shallow_indices /U_shallow_tokens.
rewrite (shallow_frow Hg2) //.
by apply: Hsrc; rewrite /U_shallow_g2_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

Lemma shallow_fbet : ev U_shallow_ffn1_beta q' = bet e'.
Proof.
have -> : ev U_shallow_ffn1_beta q'
  = if ev U_shallow_post q' != 0 then ev U_shallow_ffn1_be1 q' else ev U_shallow_ffn1_be2 q' by [].
rewrite (shallow_post sqrtf geluf gelu_tanhf e' q' Hbo Hpost).
rewrite /U_shallow_ffn1_be1 /U_shallow_ffn1_be1_gather /U_shallow_ffn1_be1_source /U_shallow_indices /U_shallow_tokens.
rewrite (shallow_frow Hb); last by apply: Hsrc; rewrite /U_shallow_be1_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
rewrite /U_shallow_ffn1_be2 /U_shallow_ffn1_be2_gather /U_shallow_ffn1_be2_source /U_shallow_indices /U_shallow_tokens.
rewrite (shallow_frow Hb2) //.
by apply: Hsrc; rewrite /U_shallow_be2_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

Lemma shallow_fw1 : ev U_shallow_ffn1_w1 q' = W1 P e' f.
Proof.
have [Hq' Hti Htf Hth Hte] := G4.
have [HwL HwV] := Hw1 ord0 e' f.
rewrite /U_shallow_ffn1_w1 /U_shallow_ffn1_w1_gather /U_shallow_ffn1_w1_source /U_shallow_indices /U_shallow_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos (U_shallow_w1_offset N D H K F) D F 0 e' f)) //.
cbv beta; rewrite iif_range (Hg4 Hq') Z.sub_0_r !zdiv_nat !zmod_nat Hte Htf.
by rewrite /pos /U_shallow_w1_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

Lemma shallow_rgw_at : ev U_shallow_ffn1_rgw q' = (o e' h + (if h == 0%nat :> nat then cc e' else 0)) * (gam e' * W1 P e' f).
Proof.
have -> : ev U_shallow_ffn1_rgw q'
  = (ev U_shallow_ffn1_o q' + eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_shallow_ffn1_h0)) x q' * ev U_shallow_ffn1_c q')
    * (ev U_shallow_ffn1_gamma q' * ev U_shallow_ffn1_w1 q') by [].
rewrite shallow_fo shallow_fc shallow_fh0 shallow_fgam shallow_fw1.
by case: (h == 0%nat :> nat); rewrite ?mul1r ?mul0r.
Qed.

Lemma shallow_gw_at : ev U_shallow_ffn1_gw q' = if h == 0%nat :> nat then gam e' * W1 P e' f else 0.
Proof.
have -> : ev U_shallow_ffn1_gw q'
  = ev U_shallow_ffn1_gamma q' * ev U_shallow_ffn1_w1 q' * eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_shallow_ffn1_h0)) x q' by [].
rewrite shallow_fh0 shallow_fgam shallow_fw1.
by case: (h == 0%nat :> nat); rewrite ?mulr1 ?mulr0.
Qed.

Lemma shallow_bw_at : ev U_shallow_ffn1_bw q' = if h == 0%nat :> nat then bet e' * W1 P e' f else 0.
Proof.
have -> : ev U_shallow_ffn1_bw q'
  = ev U_shallow_ffn1_beta q' * ev U_shallow_ffn1_w1 q' * eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_shallow_ffn1_h0)) x q' by [].
rewrite shallow_fh0 shallow_fbet shallow_fw1.
by case: (h == 0%nat :> nat); rewrite ?mulr1 ?mulr0.
Qed.

End Term.

Lemma shallow_gate_at (g : nat) (src : Z -> Z) : (g < 8)%nat ->
  src (Z.of_nat q) = Z.of_nat (U_shallow_gates_offset N D H K F + g) ->
  eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Select Indices (IMap1 src Indices) CEq) Tokens) x q
  = nth 0 x (U_shallow_gates_offset N D H K F + g).
Proof. exact: shallow_gate. Qed.

Lemma shallow_fb1 : ev U_shallow_ffn2_u_b1 q = b1 P 0 f.
Proof.
have [Hs1 Hs2] := encodes_row f Hb1.
rewrite /U_shallow_ffn2_u_b1 /U_shallow_ffn2_u_b1_gather /U_shallow_ffn2_u_b1_source /U_shallow_indices /U_shallow_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_shallow_b1_offset N D H K F + f)) //.
cbv beta; rewrite iif_range (Hg3 Hq) Z.sub_0_r zmod_nat Hqf.
by rewrite /U_shallow_b1_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

(** The FFN-1 pre-activation: the folded LayerNorm of R (or R) times W1, plus b1. *)
Lemma shallow_pre_act :
  ev U_shallow_ffn2_u_pre q
  = \sum_(j' < D | (j' < d_model P)%nat)
      (match norm P with PreNorm => norm2 sqrtf P n X1 | PostNorm => norm1 sqrtf P n X1 | NoNorm => X1 end) i j'
      * W1 P j' f + b1 P 0 f.
Proof.
have -> : ev U_shallow_ffn2_u_pre q
  = (if ev U_shallow_norm_on q != 0
     then ev U_shallow_ffn2_ln1_rstd q * (ev U_shallow_ffn2_u_rgw q - ev U_shallow_ffn2_mu1 q * ev U_shallow_ffn2_u_gw q)
          + ev U_shallow_ffn2_u_bw q
     else ev U_shallow_ffn2_u_rgw q) + ev U_shallow_ffn2_u_b1 q by [].
have Ergw : ev U_shallow_ffn2_u_rgw q
  = \sum_(e' < D) (if (e' < d_model P)%nat then X1 i e' else 0) * (gam e' * W1 P e' f).
  have -> : ev U_shallow_ffn2_u_rgw q = cst_sem R (CQ (Z.of_nat H * Z.of_nat D) 1)
    * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_shallow_ffn2_u_rgw_sum) (Z5 U_shallow_ffn1_rgw)) x q by [].
  rewrite -Nat2Z.inj_mul cst_nat (shallow_sum_fp _ shallow_rgw_sel); apply: eq_bigr => e' _.
  under eq_bigr => h _ do rewrite shallow_rgw_at.
  rewrite -mulr_suml big_split /= (sum_if0 HH).
  have /= E := shallow_Rv sqrtf M Hpad Hwoh Hin Hwoe Hboe e'.
  by rewrite -E.
have Egw : ev U_shallow_ffn2_u_gw q = \sum_(e' < D) gam e' * W1 P e' f.
  have -> : ev U_shallow_ffn2_u_gw q = cst_sem R (CQ (Z.of_nat H * Z.of_nat D) 1)
    * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_shallow_ffn2_u_gw_sum) (Z5 U_shallow_ffn1_gw)) x q by [].
  rewrite -Nat2Z.inj_mul cst_nat (shallow_sum_fp _ shallow_gw_sel); apply: eq_bigr => e' _.
  under eq_bigr => h _ do rewrite shallow_gw_at.
  exact: sum_if0.
have Ebw : ev U_shallow_ffn2_u_bw q = \sum_(e' < D) bet e' * W1 P e' f.
  have -> : ev U_shallow_ffn2_u_bw q = cst_sem R (CQ (Z.of_nat H * Z.of_nat D) 1)
    * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_shallow_ffn2_u_bw_sum) (Z5 U_shallow_ffn1_bw)) x q by [].
  rewrite -Nat2Z.inj_mul cst_nat (shallow_sum_fp _ shallow_bw_sel); apply: eq_bigr => e' _.
  under eq_bigr => h _ do rewrite shallow_bw_at.
  exact: sum_if0.
have Eon : ev U_shallow_norm_on q = (if norm P is PreNorm then 1 else 0) + (if norm P is PostNorm then 1 else 0).
  have -> : ev U_shallow_norm_on q = ev U_shallow_pre q + ev U_shallow_post q by [].
  rewrite (shallow_post sqrtf geluf gelu_tanhf e0 q Hbo Hpost).
  rewrite /U_shallow_pre /U_shallow_pre_gather /U_shallow_pre_source /U_shallow_indices /U_shallow_tokens.
  rewrite (@shallow_gate_at 1) //; last by rewrite /U_shallow_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
  by rewrite Hpre.
rewrite Ergw Egw Ebw Eon shallow_ffn_rstd shallow_ffn_mu shallow_fb1; congr (_ + _).
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

(** [ffn2.u.act] at q: the activation the gates select, of the pre-activation. *)
Lemma shallow_act :
  ev U_shallow_ffn2_u_act q
  = activation P (\sum_(j' < D | (j' < d_model P)%nat)
      (match norm P with PreNorm => norm2 sqrtf P n X1 | PostNorm => norm1 sqrtf P n X1 | NoNorm => X1 end) i j'
      * W1 P j' f + b1 P 0 f).
Proof.
have -> : ev U_shallow_ffn2_u_act q
  = if ev U_shallow_gelu q != 0 then geluf (ev U_shallow_ffn2_u_pre q)
    else if ev U_shallow_gelu_tanh q != 0 then gelu_tanhf (ev U_shallow_ffn2_u_pre q)
    else Num.max (ev U_shallow_ffn2_u_pre q) 0 by [].
rewrite Hact shallow_pre_act.
rewrite /U_shallow_gelu /U_shallow_gelu_gather /U_shallow_gelu_source /U_shallow_indices /U_shallow_tokens.
rewrite (@shallow_gate_at 3) //; last by rewrite /U_shallow_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
rewrite /U_shallow_gelu_tanh /U_shallow_gelu_tanh_gather /U_shallow_gelu_tanh_source /U_shallow_indices /U_shallow_tokens.
rewrite (@shallow_gate_at 4) //.
by rewrite /U_shallow_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

End Shallow.

Theorem U_shallow_ffn_act_spec : U_shallow_ffn_act_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i f n q.
do 50 move=> ?; apply: shallow_act; assumption.
Qed.
