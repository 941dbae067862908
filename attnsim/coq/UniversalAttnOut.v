(** Theorem 6 in the kernel, tenth stage: R before LayerNorm.  U's own exported node [out.R] (H
    times the mean over the heads h of [attn.r_terms]: attn.o plus, at h = 0, bo and the residual
    gate times X) at every query of the out grid (row i < n, column e < d_model) is EncoderLayer.v's
    [add_residual P X (self_attn expR P M n Z) i e], Z = norm1 X when pre-norm, else X, for every
    capacity N, D, H, K, F, both variants (generated statements: UniversalAttnOutStatement.v).

    Each head's term is the heads stage's theorem; U sums every head H, the layer nhead: Wo is
    zero beyond nhead heads (U's input map pads it so).  The sum over h is [agg_last] (a sum node
    over the last coordinate of its grid, the heads stage's [agg_stride] with a unit axis). *)
From mathcomp Require Import all_ssreflect all_algebra.
From mathcomp Require Import reals sequences exp.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas UniversalLemmas UniversalAttnOutNodes EncoderLayer.
From Attnsim Require Import UniversalRowMean UniversalRowStats UniversalLayerNorm1Statement UniversalLayerNorm1.
From Attnsim Require Import UniversalQProjStatement UniversalQProj UniversalVProjStatement UniversalVProj.
From Attnsim Require Import UniversalScoresStatement UniversalScores UniversalSoftmaxStatement UniversalSoftmax.
From Attnsim Require Import UniversalHeadsStatement UniversalHeads UniversalAttnOutStatement.
Import GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

(** A sum node over the last coordinate of its grid (B, C): the keys (b, h), h < C. *)
Lemma agg_last (R : realFieldType) (expf sqrtf geluf gelu_tanhf : R -> R) (s : sel) (v : sop) (x : seq R)
  (p B C b : nat) : (b < B)%nat -> (B * C <= size x)%nat ->
  (forall k, (k < size x)%nat -> seval expf sqrtf geluf gelu_tanhf s x p k = ((k < B * C) && (k %/ C == b))%nat) ->
  (C%:R * eval expf sqrtf geluf gelu_tanhf (Aggregate s v) x p
  = \sum_(h < C) eval expf sqrtf geluf gelu_tanhf v x (b * C + h)%nat)%R.
Proof.
move=> Hb HL Hs.
have HL' : (B * (C * 1) <= size x)%nat by rewrite muln1.
rewrite (@agg_stride _ _ _ _ _ s v x p B C 1 b 0 (ltn0Sn 0) Hb HL'); last first.
  by move=> k Hk; rewrite Hs // muln1 divn1 modn1 eqxx andbT.
by apply: eq_bigr => h _; rewrite muln1 addn0.
Qed.

(** * Compact U *)
Section Compact.
Local Open Scope ring_scope.
Variables (R : realType) (sqrtf geluf gelu_tanhf : R -> R) (N D H K F : nat) (P : params R D H K F)
  (M : mask R N) (X : 'M[R]_(N, D)) (x : seq R) (i : 'I_N) (e : 'I_D) (n p : nat).
Local Notation Z5 f := (f (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)).
Local Notation ev a k := (eval (@expR R) sqrtf geluf gelu_tanhf (Z5 a) x k).
Local Notation Zin := (if norm P is PreNorm then norm1 sqrtf P n X else X).
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
  (Hin : (i < n)%nat) (Hed : (e < d_model P)%nat).

Let HD : (0 < D)%nat. Proof. exact: leq_trans Hd0 HdD. Qed.
Let Hp' : (p < N * D)%nat. Proof. by move: Hp; rewrite mul1n. Qed.
Let Hpi' : (p %/ D)%nat = i.
Proof. by rewrite -Hpi modn_small // ltn_divLR. Qed.

(** [out.R]'s selector at p: the keys (i, e, h), h < H, of the head grid. *)
Lemma compact_out_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_out_R_sum) x p k = ((k < N * D * H) && (k %/ H == p))%nat.
Proof.
rewrite /U_compact_out_R_sum /U_compact_out_R_key_group /U_compact_out_R_query_group /U_compact_indices /=.
rewrite !iif_range !Z.sub_0_r.
have -> : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia.
rewrite !zdiv_nat !zmod_nat.
have -> : (Z.of_nat (p %/ D) * Z.of_nat D + Z.of_nat (p %% D))%Z = Z.of_nat p.
  by rewrite [in RHS](divn_eq p D) Nat2Z.inj_add Nat2Z.inj_mul.
rewrite (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) /=.
have -> : (Z.of_nat N * Z.of_nat D * Z.of_nat H)%Z = Z.of_nat (N * D * H) by rewrite !Nat2Z.inj_mul.
rewrite ltb_nat; case: ltnP => Hk /=; last by case E: (Z.of_nat p) => [|q|q] //; have := Nat2Z.is_nonneg p; rewrite E; lia.
have -> : (Z.of_nat (k %/ H %/ D) * Z.of_nat D + Z.of_nat (k %/ H %% D))%Z = Z.of_nat (k %/ H).
  by rewrite [in RHS](divn_eq (k %/ H) D) Nat2Z.inj_add Nat2Z.inj_mul.
by rewrite eqb_of_nat.
Qed.

Let Hkb (k : nat) : (k < N * D * H)%nat ->
  ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat N * Z.of_nat D * Z.of_nat H))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

(** The query (i, e, h) of the head grid that R sums. *)
Lemma compact_q (h : 'I_H) :
  [/\ (p * H + h < N * D * H)%nat, ((p * H + h) %% H)%nat = h, ((p * H + h) %/ H %/ D)%nat = i
    & ((p * H + h) %/ H %% D)%nat = e].
Proof.
have Hph : ((p * H + h) %/ H)%nat = p by rewrite divnMDl // divn_small // addn0.
split; rewrite ?Hph //; first exact: lin_lt Hp' (ltn_ord h).
by rewrite modnMDl modn_small.
Qed.

Lemma compact_o (h : 'I_H) :
  ev U_compact_attn_o (p * H + h)%nat = \sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n Zin h i c * Wo P h c e.
Proof.
have [Hq Hqt Hqi Hqe] := compact_q h.
exact: (@U_compact_head_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i h e n (p * H + h)%nat HX Hd He Hg Hb
  Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hq Hqt Hqi
  Hwv Hbv Hwvpad Hwo Hwopad HLV Hqe Hin).
Qed.

(** c = bo + residual X at (i, e, h), and the h = 0 flag. *)
Lemma compact_r (h : 'I_H) :
  ev U_compact_attn_r_terms (p * H + h)%nat
  = ev U_compact_attn_o (p * H + h)%nat
    + (if h == 0%nat :> nat then bo P 0 e + (if residual P then 1 else 0) * X i e else 0).
Proof.
have [Hq Hqt Hqi Hqe] := compact_q h.
rewrite /U_compact_attn_r_terms eval_add eval_mul; congr (_ + _).
have -> : eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_compact_attn_h0)) x (p * H + h)%nat
          = if h == 0%nat :> nat then 1 else 0.
  rewrite /U_compact_attn_h0 /U_compact_indices /= Z.sub_0_r zmod_nat Hqt.
  rewrite /iif /iand /ile /ilt /ieq /zb.
  have [/andP[-> ->]] : ((0 <=? Z.of_nat (p * H + h)) && (Z.of_nat (p * H + h) <? Z.of_nat N * Z.of_nat D * Z.of_nat H))%Z
    by exact: Hkb.
  have -> : (Z.of_nat h =? 0)%Z = (h == 0%nat :> nat) by exact: (eqb_of_nat h 0).
  by case: (h == 0%nat :> nat); rewrite /zR /= ?subr0.
case: (h == 0%nat :> nat); last by rewrite mul0r.
rewrite mul1r /U_compact_attn_c eval_add eval_mul.
have [HoL HoV] := Hbo ord0 ord0 e.
have [HxL HxV] := HX ord0 i e.
congr (_ + _ * _).
- rewrite /U_compact_attn_bo /U_compact_attn_bo_gather /U_compact_attn_bo_source /U_compact_indices /U_compact_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos (U_compact_bo_offset N D H K F) 1 D 0 0 e)) //.
  cbv beta; rewrite iif_range (Hkb Hq) Z.sub_0_r !zdiv_nat !zmod_nat Hqe.
  by rewrite /pos /U_compact_bo_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
- rewrite /U_compact_residual /U_compact_residual_gather /U_compact_residual_source /U_compact_indices /U_compact_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_compact_gates_offset N D H K F + 0)) //.
    by rewrite /U_compact_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
  apply: leq_ltn_trans HoL.
  by rewrite /pos /U_compact_bo_offset /U_compact_gates_offset; clear; lia.
- rewrite /U_compact_attn_x /U_compact_attn_x_gather /U_compact_attn_x_source /U_compact_indices /U_compact_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos 0 N D 0 i e)) //.
  cbv beta; rewrite iif_range (Hkb Hq) Z.sub_0_r !zdiv_nat !zmod_nat Hqi Hqe.
  by rewrite /pos !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

(** [out.R] at p: the sum over the heads of attn.o, plus bo and the residual. *)
Lemma compact_attn_out :
  ev U_compact_out_R p = add_residual P X (self_attn (@expR R) P M n Zin) i e.
Proof.
rewrite /U_compact_out_R eval_scale cst_nat /U_compact_out_R_mean.
rewrite (@agg_last _ _ _ _ _ _ _ x p (N * D) H p Hp' HLH); last by move=> k _; exact: compact_out_sel.
under eq_bigr => h _ do rewrite compact_r compact_o.
rewrite big_split /= [X in _ + X](bigD1 (Ordinal HH)) //= ?eqxx [X in _ + (_ + X)]big1 ?addr0; last first.
  by move=> h /negbTE Hh; have -> : (h == 0%nat :> nat) = false by exact: Hh.
rewrite /add_residual /self_attn /block.
have Hie : ((i < n) && (e < d_model P))%nat by rewrite Hin Hed.
have Hsum : \sum_(h < H) \sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n Zin h i c * Wo P h c e
  = \sum_(t < H | (t < nhead P)%nat) \sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n Zin t i c * Wo P t c e.
  rewrite [RHS]big_mkcond; apply: eq_bigr => t _; case: ltnP => Ht //.
  by apply: big1 => c _; rewrite Hwoh // mulr0.
case: (residual P); rewrite !mxE Hie Hsum ?mul1r ?mul0r ?addr0 //.
by rewrite addrA [X i e + _]addrC.
Qed.

End Compact.

Theorem U_compact_attn_out_spec : U_compact_attn_out_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p.
do 40 move=> ?; apply: compact_attn_out; assumption.
Qed.

(** * Shallow U: the same nodes (its own node numbers). *)
Section Shallow.
Local Open Scope ring_scope.
Variables (R : realType) (sqrtf geluf gelu_tanhf : R -> R) (N D H K F : nat) (P : params R D H K F)
  (M : mask R N) (X : 'M[R]_(N, D)) (x : seq R) (i : 'I_N) (e : 'I_D) (n p : nat).
Local Notation Z5 f := (f (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)).
Local Notation ev a k := (eval (@expR R) sqrtf geluf gelu_tanhf (Z5 a) x k).
Local Notation Zin := (if norm P is PreNorm then norm1 sqrtf P n X else X).
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
  (Hin : (i < n)%nat) (Hed : (e < d_model P)%nat).

Let HD : (0 < D)%nat. Proof. exact: leq_trans Hd0 HdD. Qed.
Let Hp' : (p < N * D)%nat. Proof. by move: Hp; rewrite mul1n. Qed.
Let Hpi' : (p %/ D)%nat = i.
Proof. by rewrite -Hpi modn_small // ltn_divLR. Qed.

(** [out.R]'s selector at p: the keys (i, e, h), h < H, of the head grid. *)
Lemma shallow_out_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_out_R_sum) x p k = ((k < N * D * H) && (k %/ H == p))%nat.
Proof.
rewrite /U_shallow_out_R_sum /U_shallow_out_R_key_group /U_shallow_out_R_query_group /U_shallow_indices /=.
rewrite !iif_range !Z.sub_0_r.
have -> : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia.
rewrite !zdiv_nat !zmod_nat.
have -> : (Z.of_nat (p %/ D) * Z.of_nat D + Z.of_nat (p %% D))%Z = Z.of_nat p.
  by rewrite [in RHS](divn_eq p D) Nat2Z.inj_add Nat2Z.inj_mul.
rewrite (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) /=.
have -> : (Z.of_nat N * Z.of_nat D * Z.of_nat H)%Z = Z.of_nat (N * D * H) by rewrite !Nat2Z.inj_mul.
rewrite ltb_nat; case: ltnP => Hk /=; last by case E: (Z.of_nat p) => [|q|q] //; have := Nat2Z.is_nonneg p; rewrite E; lia.
have -> : (Z.of_nat (k %/ H %/ D) * Z.of_nat D + Z.of_nat (k %/ H %% D))%Z = Z.of_nat (k %/ H).
  by rewrite [in RHS](divn_eq (k %/ H) D) Nat2Z.inj_add Nat2Z.inj_mul.
by rewrite eqb_of_nat.
Qed.

Let Hkb (k : nat) : (k < N * D * H)%nat ->
  ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat N * Z.of_nat D * Z.of_nat H))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

(** The query (i, e, h) of the head grid that R sums. *)
Lemma shallow_q (h : 'I_H) :
  [/\ (p * H + h < N * D * H)%nat, ((p * H + h) %% H)%nat = h, ((p * H + h) %/ H %/ D)%nat = i
    & ((p * H + h) %/ H %% D)%nat = e].
Proof.
have Hph : ((p * H + h) %/ H)%nat = p by rewrite divnMDl // divn_small // addn0.
split; rewrite ?Hph //; first exact: lin_lt Hp' (ltn_ord h).
by rewrite modnMDl modn_small.
Qed.

Lemma shallow_o (h : 'I_H) :
  ev U_shallow_attn_o (p * H + h)%nat = \sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n Zin h i c * Wo P h c e.
Proof.
have [Hq Hqt Hqi Hqe] := shallow_q h.
exact: (@U_shallow_head_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i h e n (p * H + h)%nat HX Hd He Hg Hb
  Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hq Hqt Hqi
  Hwv Hbv Hwvpad Hwo Hwopad HLV Hqe Hin).
Qed.

(** c = bo + residual X at (i, e, h), and the h = 0 flag. *)
Lemma shallow_r (h : 'I_H) :
  ev U_shallow_attn_r_terms (p * H + h)%nat
  = ev U_shallow_attn_o (p * H + h)%nat
    + (if h == 0%nat :> nat then bo P 0 e + (if residual P then 1 else 0) * X i e else 0).
Proof.
have [Hq Hqt Hqi Hqe] := shallow_q h.
rewrite /U_shallow_attn_r_terms eval_add eval_mul; congr (_ + _).
have -> : eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_shallow_attn_h0)) x (p * H + h)%nat
          = if h == 0%nat :> nat then 1 else 0.
  rewrite /U_shallow_attn_h0 /U_shallow_indices /= Z.sub_0_r zmod_nat Hqt.
  rewrite /iif /iand /ile /ilt /ieq /zb.
  have [/andP[-> ->]] : ((0 <=? Z.of_nat (p * H + h)) && (Z.of_nat (p * H + h) <? Z.of_nat N * Z.of_nat D * Z.of_nat H))%Z
    by exact: Hkb.
  have -> : (Z.of_nat h =? 0)%Z = (h == 0%nat :> nat) by exact: (eqb_of_nat h 0).
  by case: (h == 0%nat :> nat); rewrite /zR /= ?subr0.
case: (h == 0%nat :> nat); last by rewrite mul0r.
rewrite mul1r /U_shallow_attn_c eval_add eval_mul.
have [HoL HoV] := Hbo ord0 ord0 e.
have [HxL HxV] := HX ord0 i e.
congr (_ + _ * _).
- rewrite /U_shallow_attn_bo /U_shallow_attn_bo_gather /U_shallow_attn_bo_source /U_shallow_indices /U_shallow_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos (U_shallow_bo_offset N D H K F) 1 D 0 0 e)) //.
  cbv beta; rewrite iif_range (Hkb Hq) Z.sub_0_r !zdiv_nat !zmod_nat Hqe.
  by rewrite /pos /U_shallow_bo_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
- rewrite /U_shallow_residual /U_shallow_residual_gather /U_shallow_residual_source /U_shallow_indices /U_shallow_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_shallow_gates_offset N D H K F + 0)) //.
    by rewrite /U_shallow_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
  apply: leq_ltn_trans HoL.
  by rewrite /pos /U_shallow_bo_offset /U_shallow_gates_offset; clear; lia.
- rewrite /U_shallow_attn_x /U_shallow_attn_x_gather /U_shallow_attn_x_source /U_shallow_indices /U_shallow_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos 0 N D 0 i e)) //.
  cbv beta; rewrite iif_range (Hkb Hq) Z.sub_0_r !zdiv_nat !zmod_nat Hqi Hqe.
  by rewrite /pos !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

(** [out.R] at p: the sum over the heads of attn.o, plus bo and the residual. *)
Lemma shallow_attn_out :
  ev U_shallow_out_R p = add_residual P X (self_attn (@expR R) P M n Zin) i e.
Proof.
rewrite /U_shallow_out_R eval_scale cst_nat /U_shallow_out_R_mean.
rewrite (@agg_last _ _ _ _ _ _ _ x p (N * D) H p Hp' HLH); last by move=> k _; exact: shallow_out_sel.
under eq_bigr => h _ do rewrite shallow_r shallow_o.
rewrite big_split /= [X in _ + X](bigD1 (Ordinal HH)) //= ?eqxx [X in _ + (_ + X)]big1 ?addr0; last first.
  by move=> h /negbTE Hh; have -> : (h == 0%nat :> nat) = false by exact: Hh.
rewrite /add_residual /self_attn /block.
have Hie : ((i < n) && (e < d_model P))%nat by rewrite Hin Hed.
have Hsum : \sum_(h < H) \sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n Zin h i c * Wo P h c e
  = \sum_(t < H | (t < nhead P)%nat) \sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n Zin t i c * Wo P t c e.
  rewrite [RHS]big_mkcond; apply: eq_bigr => t _; case: ltnP => Ht //.
  by apply: big1 => c _; rewrite Hwoh // mulr0.
case: (residual P); rewrite !mxE Hie Hsum ?mul1r ?mul0r ?addr0 //.
by rewrite addrA [X i e + _]addrC.
Qed.

End Shallow.

Theorem U_shallow_attn_out_spec : U_shallow_attn_out_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p.
do 40 move=> ?; apply: shallow_attn_out; assumption.
Qed.
