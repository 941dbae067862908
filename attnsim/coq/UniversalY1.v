(** Theorem 6 in the kernel, eleventh stage: x1, the layer's value before the FFN.  U's own exported
    node [out.Y1] at every query of the out grid (row i < n, column e < d_model) is EncoderLayer.v's
    [norm1 sqrtf P n X1 i e] when post-norm, else [X1 i e], X1 = [add_residual P X (self_attn expR
    P M n Z)] (Z = norm1 X when pre-norm, else X), for every capacity N, D, H, K, F, both variants
    (generated statements: UniversalY1Statement.v).

    U's LayerNorm 1 of R reads R's row statistics from two sum nodes: [out.R_sum], the sum over
    (e, h) of [attn.r_terms] (the R stage's terms: R's row sum), and [out.R_sq], the sum over
    (e, h, h2) of [ln1.square_terms], O_h O_h2 + [h2 = 0] 2 O_h c + [h = h2 = 0] c^2 with c = bo +
    residual X: summed over the heads, (sum_h O_h + c)^2 = R^2.  The head outputs [ln1.o], [ln1.o2]
    on the square-terms grid select the keys [attn.o] selects at heads h and h2 ([head_same]), so
    the heads stage gives them.  Beyond d_model columns R is 0 (Wo, bo and X zero there), so the
    sums over D columns are EncoderLayer's over d_model: E[R^2] - mean^2 is [row_var]. *)
From mathcomp Require Import all_ssreflect all_algebra.
From mathcomp Require Import reals sequences exp.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From mathcomp Require Import ring.
From Attnsim Require Import Semantics Lemmas UniversalLemmas UniversalY1Nodes EncoderLayer.
From Attnsim Require Import UniversalRowMean UniversalRowStats UniversalLayerNorm1Statement UniversalLayerNorm1.
From Attnsim Require Import UniversalQProjStatement UniversalQProj UniversalVProjStatement UniversalVProj.
From Attnsim Require Import UniversalScoresStatement UniversalScores UniversalSoftmaxStatement UniversalSoftmax.
From Attnsim Require Import UniversalHeadsStatement UniversalHeads UniversalAttnOutStatement UniversalAttnOut.
From Attnsim Require Import UniversalY1Statement.
Import GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Section Generic.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.
Local Notation eval := (eval expf sqrtf geluf gelu_tanhf).
Local Notation seval := (seval expf sqrtf geluf gelu_tanhf).
Local Open Scope ring_scope.

(** Two aggregates of one value whose queries select the same keys agree. *)
Lemma agg_same (s1 s2 : sel) (v : sop) (x : seq R) (q1 q2 : nat) :
  seval s1 x q1 =1 seval s2 x q2 -> eval (Aggregate s1 v) x q1 = eval (Aggregate s2 v) x q2.
Proof. by move=> E; rewrite !eval_aggregate /keys (eq_filter E). Qed.

(** [_head_out] at two queries (of two grids) whose selectors pick the same keys. *)
Lemma head_same (s1 s2 t1 t2 : sel) (a b : sop) (c1 c2 : cst) (x : seq R) (q1 q2 : nat) :
  seval s1 x q1 =1 seval s2 x q2 -> seval t1 x q1 =1 seval t2 x q2 ->
  eval (Map2 PDiv (Map1 (PScale c1) (Aggregate s1 a)) (Map1 (PScale c2) (Aggregate t1 b))) x q1
  = eval (Map2 PDiv (Map1 (PScale c1) (Aggregate s2 a)) (Map1 (PScale c2) (Aggregate t2 b))) x q2.
Proof. by move=> E1 E2; rewrite eval_div !eval_scale (agg_same a E1) (agg_same b E2). Qed.

(** A sum over the heads of a term that only head 0 has. *)
Lemma sum_if0 (H : nat) (HH : (0 < H)%nat) (v : R) : \sum_(h < H) (if h == 0%nat :> nat then v else 0) = v.
Proof.
rewrite (bigD1 (Ordinal HH)) //= big1 ?addr0 //.
by move=> h /negbTE Hh; have -> : (h == 0%nat :> nat) = false by exact: Hh.
Qed.

(** The square of a sum over the heads plus c, as the sum over (h, h2) of U's square terms. *)
Lemma square_terms (H : nat) (HH : (0 < H)%nat) (o : 'I_H -> R) (c : R) :
  \sum_(h < H) \sum_(h2 < H) (o h * o h2 + (if h2 == 0%nat :> nat then 2%:R * (o h * c) else 0)
     + (if h2 == 0%nat :> nat then (if h == 0%nat :> nat then c * c else 0) else 0))
  = (\sum_(h < H) o h + c) ^+ 2.
Proof.
under eq_bigr => h _ do rewrite !big_split /= !(sum_if0 HH).
rewrite !big_split /= (sum_if0 HH).
set S := \sum_(h < H) o h.
have E1 : \sum_(h < H) \sum_(h2 < H) o h * o h2 = S * S.
  by rewrite mulr_suml; apply: eq_bigr => h _; rewrite mulr_sumr.
have E2 : \sum_(h < H) 2%:R * (o h * c) = 2%:R * (S * c) by rewrite -mulr_sumr -mulr_suml.
by rewrite E1 E2 expr2; ring.
Qed.

End Generic.

Local Open Scope ring_scope.

Lemma cst_two (R : realFieldType) : cst_sem R (CQ 2 1) = (2%:R)%R.
Proof.
rewrite /cst_sem /zR.
have -> : Z.to_nat 2 = 2%N by []. have -> : Z.to_nat (-2) = 0%N by [].
have -> : Z.to_nat 1 = 1%N by []. have -> : Z.to_nat (-1) = 0%N by [].
by rewrite !GRing.subr0 GRing.mulr1n GRing.divr1.
Qed.

(** The sum [\sum_(j < D H H)] of a value at (b, j) split into (e, h, h2). *)
Lemma sum_split3 (R : realFieldType) (f : nat -> R) (D H : nat) :
  \sum_(j < D * H * H) f j = \sum_(e < D) \sum_(h < H) \sum_(h2 < H) f ((e * H + h) * H + h2)%nat.
Proof. by rewrite (@sum_split _ f (D * H) H) (@sum_split _ (fun c => \sum_(a < H) f (c * H + a)%nat) D H). Qed.

(** * Compact U *)
Section Compact.
Local Open Scope ring_scope.
Variables (R : realType) (sqrtf geluf gelu_tanhf : R -> R) (N D H K F : nat) (P : params R D H K F)
  (M : mask R N) (X : 'M[R]_(N, D)) (x : seq R) (i : 'I_N) (e : 'I_D) (n p : nat).
Local Notation Z5 f := (f (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)).
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
  (Hp : (p < (1 * N * D)%nat)%nat) (Hpi : (p %/ D %% N)%nat = i) (Hpe : (p %% D)%nat = e)
  (Hin : (i < n)%nat) (Hed : (e < d_model P)%nat)
  (Hpost : nth 0 x (U_compact_gates_offset N D H K F + 2)%nat = (if norm P is PostNorm then 1 else 0))
  (Hwoe : forall (t : 'I_H) (c : 'I_K) (e : 'I_D), (d_model P <= e)%nat -> Wo P t c e = 0)
  (Hboe : forall e : 'I_D, (d_model P <= e)%nat -> bo P 0 e = 0)
  (HLQ : (((N * D)%nat * H * H)%nat <= size x)%nat).

Let HD : (0 < D)%nat. Proof. exact: leq_trans Hd0 HdD. Qed.
Let Hp' : (p < N * D)%nat. Proof. by move: Hp; rewrite mul1n. Qed.
Let Hpi' : (p %/ D)%nat = i.
Proof. by rewrite -Hpi modn_small // ltn_divLR. Qed.

Let o (e' : 'I_D) (h : 'I_H) : R := \sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n Zin h i c * Wo P h c e'.
Let cc (e' : 'I_D) : R := bo P 0 e' + (if residual P then 1 else 0) * X i e'.
Let Rv (e' : 'I_D) : R := \sum_(h < H) o e' h + cc e'.

Let Hg0 (k L : nat) : (k < L)%nat -> ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat L))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

(** The out grid's query of row i, column e'. *)
Lemma compact_out_pos (e' : 'I_D) :
  [/\ (i * D + e' < 1 * N * D)%nat, ((i * D + e') %/ D %% N)%nat = i & ((i * D + e') %% D)%nat = e'].
Proof.
have Hl : (i * D + e' < N * D)%nat by exact: lin_lt.
split; first by rewrite mul1n.
  by rewrite divnMDl // divn_small // addn0 modn_small.
by rewrite modnMDl modn_small.
Qed.

Lemma compact_o_at (e' : 'I_D) (h : 'I_H) : ev U_compact_attn_o ((i * D + e') * H + h)%nat = o e' h.
Proof.
have [Hq1 Hq2 Hq3] := compact_out_pos e'.
rewrite /o; exact: (compact_o sqrtf geluf gelu_tanhf HX Hd He Hg Hb Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn
  Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV HH Hq1 Hq2 Hq3 Hin h).
Qed.

Lemma compact_r_at (e' : 'I_D) (h : 'I_H) :
  ev U_compact_attn_r_terms ((i * D + e') * H + h)%nat = o e' h + (if h == 0%nat :> nat then cc e' else 0).
Proof.
have [Hq1 Hq2 Hq3] := compact_out_pos e'.
by rewrite (compact_r sqrtf geluf gelu_tanhf HX Hd0 HdD Hres Hbo HH Hq1 Hq2 Hq3 h) compact_o_at.
Qed.

(** R's entry (i, e'), every column: X1's below d_model, 0 beyond (Wo, bo, X zero there). *)
Lemma compact_Rv (e' : 'I_D) : Rv e' = if (e' < d_model P)%nat then X1 i e' else 0.
Proof.
rewrite /Rv /cc /o; case: ltnP => He'.
  have Hsum : \sum_(h < H) \sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n Zin h i c * Wo P h c e'
    = \sum_(t < H | (t < nhead P)%nat) \sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n Zin t i c * Wo P t c e'.
    rewrite [RHS]big_mkcond; apply: eq_bigr => t _; case: ltnP => Ht //.
    by apply: big1 => c _; rewrite Hwoh // mulr0.
  rewrite /add_residual /self_attn /block.
  have Hie : ((i < n) && (e' < d_model P))%nat by rewrite Hin He'.
  case: (residual P); rewrite !mxE Hie Hsum ?mul1r ?mul0r ?addr0 //.
  by rewrite addrA [X i e' + _]addrC.
rewrite big1 ?add0r; last by move=> h _; apply: big1 => c _; rewrite Hwoe // mulr0.
by rewrite Hboe // (@Hpad i e') // mulr0 addr0.
Qed.

(** [out.R_sum]'s selector at p: the keys (i, e', h) of the head grid. *)
Lemma compact_rsum_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_out_R_sum_sum) x p k = ((k < N * (D * H)) && (k %/ (D * H) == i))%nat.
Proof.
rewrite /U_compact_out_R_sum_sum /U_compact_out_R_sum_key_group /U_compact_out_R_sum_query_group /U_compact_indices /=.
rewrite !iif_range !Z.sub_0_r.
have -> : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia.
rewrite !zdiv_nat Hpi' (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) /=.
have -> : (Z.of_nat N * Z.of_nat D * Z.of_nat H)%Z = Z.of_nat (N * (D * H)) by rewrite mulnA !Nat2Z.inj_mul.
rewrite ltb_nat; case: ltnP => Hk /=; last by case E: (Z.of_nat i) => [|q|q] //; have := Nat2Z.is_nonneg i; rewrite E; lia.
by rewrite eqb_of_nat [(D * H)%nat]mulnC divnMA.
Qed.

(** [out.R_sq]'s selector at p: the keys (i, e', h, h2) of the square-terms grid. *)
Lemma compact_rsq_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_out_R_sq_sum) x p k
  = ((k < N * (D * H * H)) && (k %/ (D * H * H) == i))%nat.
Proof.
rewrite /U_compact_out_R_sq_sum /U_compact_out_R_sq_key_group /U_compact_out_R_sq_query_group /U_compact_indices /=.
rewrite !iif_range !Z.sub_0_r.
have -> : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia.
rewrite !zdiv_nat Hpi' (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) /=.
have -> : (Z.of_nat N * Z.of_nat D * Z.of_nat H * Z.of_nat H)%Z = Z.of_nat (N * (D * H * H)).
  by rewrite !mulnA !Nat2Z.inj_mul.
rewrite ltb_nat; case: ltnP => Hk /=; last by case E: (Z.of_nat i) => [|q|q] //; have := Nat2Z.is_nonneg i; rewrite E; lia.
have -> : (D * H * H = H * H * D)%nat by rewrite [RHS]mulnC mulnA.
by rewrite eqb_of_nat !divnMA.
Qed.

(** R's row sum: (D H) times out.R_sum's mean is the sum over the columns of R. *)
Lemma compact_sum_r :
  (D * H)%:R * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_compact_out_R_sum_sum) (Z5 U_compact_attn_r_terms)) x p
  = \sum_(e' < D) Rv e'.
Proof.
have HLH' : (N * (D * H) <= size x)%nat by rewrite mulnA.
rewrite (@agg_last _ _ _ _ _ _ _ x p N (D * H) i (ltn_ord i) HLH'); last by move=> k _; exact: compact_rsum_sel.
rewrite (@sum_split _ (fun j => ev U_compact_attn_r_terms (i * (D * H) + j)%nat) D H); apply: eq_bigr => e' _.
have Epos (h : 'I_H) : (i * (D * H) + (e' * H + h))%nat = ((i * D + e') * H + h)%nat.
  by rewrite !mulnDl !mulnA !addnA.
under eq_bigr => h _ do rewrite Epos compact_r_at.
by rewrite big_split /= (sum_if0 HH).
Qed.

Lemma compact_mu : ev U_compact_out_mu1 p = row_mean P X1 i.
Proof.
have -> : ev U_compact_out_mu1 p = cst_sem R (CQ (Z.of_nat D * Z.of_nat H) 1)
  * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_compact_out_R_sum_sum) (Z5 U_compact_attn_r_terms)) x p
  / ev U_compact_d p by [].
rewrite -Nat2Z.inj_mul cst_nat compact_sum_r.
rewrite /U_compact_d /U_compact_tokens (read_d Hd Hd0); last by move=> k; rewrite compact_d_sel.
rewrite /row_mean [in RHS]big_mkcond /=; congr (_ / _); apply: eq_bigr => e' _; exact: compact_Rv.
Qed.

Let Hg3 (k : nat) : (k < N * D * H)%nat ->
  ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat N * Z.of_nat D * Z.of_nat H))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

Let Hg4 (k : nat) : (k < N * D * H * H)%nat ->
  ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat N * Z.of_nat D * Z.of_nat H * Z.of_nat H))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

(** [ln1.o] at the query (i, e', h, h2) of the square-terms grid selects the keys [attn.o] selects
    at (i, e', h): head h's output. *)
Lemma compact_o1 (e' : 'I_D) (h h2 : 'I_H) : ev U_compact_ln1_o (((i * D + e') * H + h) * H + h2)%nat = o e' h.
Proof.
have [Hq Hqi Hqe Hqh Hqh2] := grid4 (ltn_ord i) (ltn_ord e') (ltn_ord h) (ltn_ord h2).
have [Hq1 Hq2 Hq3] := compact_out_pos e'.
have [Hp1 Hp1h Hp1i Hp1e] := compact_q Hd0 HdD HH Hq1 Hq2 Hq3 h.
rewrite -compact_o_at.
rewrite /U_compact_ln1_o /U_compact_ln1_o_num /U_compact_ln1_o_num_mean /U_compact_ln1_o_den /U_compact_ln1_o_den_mean.
rewrite /U_compact_attn_o /U_compact_attn_o_num /U_compact_attn_o_num_mean /U_compact_attn_o_den /U_compact_attn_o_den_mean.
apply: head_same => k.
  rewrite /U_compact_ln1_o_num_sum /U_compact_attn_o_num_sum /=; congr (_ =? _)%Z.
  rewrite !iif_range (Hg4 Hq) (Hg3 Hp1) !Z.sub_0_r !zdiv_nat !zmod_nat.
  by rewrite Hqh Hqi Hqe Hp1h Hp1i Hp1e.
rewrite /U_compact_ln1_o_den_sum /U_compact_attn_o_den_sum /=; congr (_ =? _)%Z.
rewrite !iif_range (Hg4 Hq) (Hg3 Hp1) !Z.sub_0_r !zdiv_nat !zmod_nat.
by rewrite Hqh Hqi Hp1h Hp1i.
Qed.

(** [ln1.o2] at (i, e', h, h2): head h2's output. *)
Lemma compact_o2 (e' : 'I_D) (h h2 : 'I_H) : ev U_compact_ln1_o2 (((i * D + e') * H + h) * H + h2)%nat = o e' h2.
Proof.
have [Hq Hqi Hqe Hqh Hqh2] := grid4 (ltn_ord i) (ltn_ord e') (ltn_ord h) (ltn_ord h2).
have [Hq1 Hq2 Hq3] := compact_out_pos e'.
have [Hp1 Hp1h Hp1i Hp1e] := compact_q Hd0 HdD HH Hq1 Hq2 Hq3 h2.
rewrite -compact_o_at.
rewrite /U_compact_ln1_o2 /U_compact_ln1_o2_num /U_compact_ln1_o2_num_mean /U_compact_ln1_o2_den /U_compact_ln1_o2_den_mean.
rewrite /U_compact_attn_o /U_compact_attn_o_num /U_compact_attn_o_num_mean /U_compact_attn_o_den /U_compact_attn_o_den_mean.
apply: head_same => k.
  rewrite /U_compact_ln1_o2_num_sum /U_compact_attn_o_num_sum /=; congr (_ =? _)%Z.
  rewrite !iif_range (Hg4 Hq) (Hg3 Hp1) !Z.sub_0_r !zdiv_nat !zmod_nat.
  by rewrite Hqh2 Hqi Hqe Hp1h Hp1i Hp1e.
rewrite /U_compact_ln1_o2_den_sum /U_compact_attn_o_den_sum /=; congr (_ =? _)%Z.
rewrite !iif_range (Hg4 Hq) (Hg3 Hp1) !Z.sub_0_r !zdiv_nat !zmod_nat.
by rewrite Hqh2 Hqi Hp1h Hp1i.
Qed.

(** [ln1.c] at (i, e', h, h2): bo + residual X at (i, e'). *)
Lemma compact_c_sq (e' : 'I_D) (h h2 : 'I_H) : ev U_compact_ln1_c (((i * D + e') * H + h) * H + h2)%nat = cc e'.
Proof.
have [Hq Hqi Hqe Hqh Hqh2] := grid4 (ltn_ord i) (ltn_ord e') (ltn_ord h) (ltn_ord h2).
rewrite /U_compact_ln1_c eval_add eval_mul /cc.
have [HoL HoV] := Hbo ord0 ord0 e'.
have [HxL HxV] := HX ord0 i e'.
congr (_ + _ * _).
- rewrite /U_compact_ln1_bo /U_compact_ln1_bo_gather /U_compact_ln1_bo_source /U_compact_indices /U_compact_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos (U_compact_bo_offset N D H K F) 1 D 0 0 e')) //.
  cbv beta; rewrite iif_range (Hg4 Hq) Z.sub_0_r !zdiv_nat !zmod_nat Hqe.
  by rewrite /pos /U_compact_bo_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
- rewrite /U_compact_residual /U_compact_residual_gather /U_compact_residual_source /U_compact_indices /U_compact_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_compact_gates_offset N D H K F + 0)) //.
    by rewrite /U_compact_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
  apply: leq_ltn_trans HoL.
  by rewrite /pos /U_compact_bo_offset /U_compact_gates_offset; clear; lia.
- rewrite /U_compact_ln1_x /U_compact_ln1_x_gather /U_compact_ln1_x_source /U_compact_indices /U_compact_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos 0 N D 0 i e')) //.
  cbv beta; rewrite iif_range (Hg4 Hq) Z.sub_0_r !zdiv_nat !zmod_nat Hqi Hqe.
  by rewrite /pos !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

(** U's square term at (i, e', h, h2). *)
Lemma compact_sq_at (e' : 'I_D) (h h2 : 'I_H) :
  ev U_compact_ln1_square_terms (((i * D + e') * H + h) * H + h2)%nat
  = o e' h * o e' h2 + (if h2 == 0%nat :> nat then 2%:R * (o e' h * cc e') else 0)
    + (if h2 == 0%nat :> nat then (if h == 0%nat :> nat then cc e' * cc e' else 0) else 0).
Proof.
have [Hq Hqi Hqe Hqh Hqh2] := grid4 (ltn_ord i) (ltn_ord e') (ltn_ord h) (ltn_ord h2).
set q := (((i * D + e') * H + h) * H + h2)%nat.
have -> : ev U_compact_ln1_square_terms q
  = ev U_compact_ln1_o q * ev U_compact_ln1_o2 q
    + eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_compact_ln1_h2_0)) x q
      * (cst_sem R (CQ 2 1) * (ev U_compact_ln1_o q * ev U_compact_ln1_c q))
    + eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_compact_ln1_h_0)) x q
      * (ev U_compact_ln1_c q * ev U_compact_ln1_c q) by [].
rewrite /q compact_o1 compact_o2 compact_c_sq cst_two -/q.
have -> : eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_compact_ln1_h2_0)) x q
          = if h2 == 0%nat :> nat then 1 else 0.
  rewrite /U_compact_ln1_h2_0 /U_compact_indices /= Z.sub_0_r zmod_nat Hqh2.
  rewrite /iif /iand /ile /ilt /ieq /zb.
  have [/andP[-> ->]] := Hg4 Hq.
  have -> : (Z.of_nat h2 =? 0)%Z = (h2 == 0%nat :> nat) by exact: (eqb_of_nat h2 0).
  by case: (h2 == 0%nat :> nat); rewrite /zR /= ?subr0.
have -> : eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_compact_ln1_h_0)) x q
          = if (h == 0%nat :> nat) && (h2 == 0%nat :> nat) then 1 else 0.
  rewrite /U_compact_ln1_h_0 /U_compact_indices /= !Z.sub_0_r !zdiv_nat !zmod_nat Hqh Hqh2.
  rewrite /iif /iand /ile /ilt /ieq /zb.
  have [/andP[-> ->]] := Hg4 Hq.
  have -> : (Z.of_nat h2 =? 0)%Z = (h2 == 0%nat :> nat) by exact: (eqb_of_nat h2 0).
  have -> : (Z.of_nat h =? 0)%Z = (h == 0%nat :> nat) by exact: (eqb_of_nat h 0).
  by case: (h == 0%nat :> nat); case: (h2 == 0%nat :> nat); rewrite /zR /= ?subr0.
by case: (h2 == 0%nat :> nat); case: (h == 0%nat :> nat); rewrite /= ?mul1r ?mul0r ?addr0.
Qed.

(** R's sum of squares: (D H H) times out.R_sq's mean is the sum over the columns of R^2. *)
Lemma compact_sum_sq :
  (D * H * H)%:R * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_compact_out_R_sq_sum) (Z5 U_compact_ln1_square_terms)) x p
  = \sum_(e' < D) Rv e' ^+ 2.
Proof.
have HLQ' : (N * (D * H * H) <= size x)%nat by rewrite !mulnA.
rewrite (@agg_last _ _ _ _ _ _ _ x p N (D * H * H) i (ltn_ord i) HLQ'); last by move=> k _; exact: compact_rsq_sel.
rewrite (sum_split3 (fun j => ev U_compact_ln1_square_terms (i * (D * H * H) + j)%nat) D H); apply: eq_bigr => e' _.
have Epos (h h2 : 'I_H) : (i * (D * H * H) + ((e' * H + h) * H + h2))%nat = (((i * D + e') * H + h) * H + h2)%nat.
  by rewrite !mulnDl !mulnA !addnA.
under eq_bigr => h _ do under eq_bigr => h2 _ do rewrite Epos compact_sq_at.
exact: square_terms.
Qed.

Lemma compact_var :
  ev U_compact_out_R_sq p / ev U_compact_d p - ev U_compact_out_mu1 p * ev U_compact_out_mu1 p = row_var P X1 i.
Proof.
have -> : ev U_compact_out_R_sq p = cst_sem R (CQ (Z.of_nat D * Z.of_nat H * Z.of_nat H) 1)
  * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_compact_out_R_sq_sum) (Z5 U_compact_ln1_square_terms)) x p by [].
rewrite -!Nat2Z.inj_mul cst_nat compact_sum_sq compact_mu.
rewrite /U_compact_d /U_compact_tokens (read_d Hd Hd0); last by move=> k; rewrite compact_d_sel.
have -> : \sum_(e' < D) Rv e' ^+ 2 = \sum_(j < D | (j < d_model P)%nat) X1 i j ^+ 2.
  rewrite [RHS]big_mkcond; apply: eq_bigr => e' _; rewrite compact_Rv.
  by case: ifP => // _; rewrite expr2 mulr0.
by rewrite /row_var /row_mean var_identity.
Qed.

(** The gates and LayerNorm 1's parameters read at p. *)
Lemma compact_post : ev U_compact_post p = (if norm P is PostNorm then 1 else 0).
Proof.
have [HoL _] := Hbo ord0 ord0 e.
rewrite /U_compact_post /U_compact_post_gather /U_compact_post_source /U_compact_indices /U_compact_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_compact_gates_offset N D H K F + 2)) //.
  by rewrite /U_compact_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
apply: leq_ltn_trans HoL.
by rewrite /pos /U_compact_bo_offset /U_compact_gates_offset; clear; lia.
Qed.

Lemma compact_eps : ev U_compact_eps p = eps P.
Proof.
have [HoL _] := Hbo ord0 ord0 e.
rewrite /U_compact_eps /U_compact_eps_gather /U_compact_eps_source /U_compact_indices /U_compact_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_compact_gates_offset N D H K F + 7)) //.
  by rewrite /U_compact_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
apply: leq_ltn_trans HoL.
by rewrite /pos /U_compact_bo_offset /U_compact_gates_offset; clear; lia.
Qed.

Lemma compact_g1 : ev U_compact_out_g1 p = norm1_w P 0 e.
Proof.
have [Hgs Hgv] := encodes_row e Hg.
rewrite /U_compact_out_g1 /U_compact_out_g1_gather /U_compact_out_g1_source /U_compact_indices /U_compact_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x p (U_compact_g1_offset N D H K F + e)) //.
cbv beta; rewrite iif_range.
have -> : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 0 + 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia.
rewrite Z.sub_0_r zmod_nat Hpe /U_compact_g1_offset; clear.
rewrite !Nat2Z.inj_add !Nat2Z.inj_mul; lia.
Qed.

Lemma compact_be1 : ev U_compact_out_be1 p = norm1_b P 0 e.
Proof.
have [Hbs Hbv'] := encodes_row e Hb.
rewrite /U_compact_out_be1 /U_compact_out_be1_gather /U_compact_out_be1_source /U_compact_indices /U_compact_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x p (U_compact_be1_offset N D H K F + e)) //.
cbv beta; rewrite iif_range.
have -> : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 0 + 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia.
rewrite Z.sub_0_r zmod_nat Hpe /U_compact_be1_offset; clear.
rewrite !Nat2Z.inj_add !Nat2Z.inj_mul; lia.
Qed.

(** [out.Y1] at p: LayerNorm 1 of R when post-norm, else R. *)
Lemma compact_y1 : ev U_compact_out_Y1 p = (if norm P is PostNorm then norm1 sqrtf P n X1 else X1) i e.
Proof.
have -> : ev U_compact_out_Y1 p
  = if ev U_compact_post p != 0
    then (ev U_compact_out_R p - ev U_compact_out_mu1 p)
         * (sqrtf (ev U_compact_out_R_sq p / ev U_compact_d p - ev U_compact_out_mu1 p * ev U_compact_out_mu1 p
                   + ev U_compact_eps p))^-1 * ev U_compact_out_g1 p + ev U_compact_out_be1 p
    else ev U_compact_out_R p by [].
rewrite compact_var compact_mu compact_eps compact_g1 compact_be1 compact_post.
rewrite (@U_compact_attn_out_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p HX Hd He Hg Hb Hpre Hsc Hm
  Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV
  Hres Hbo Hwoh HH HLH Hp Hpi Hpe Hin Hed).
set A := add_residual _ _ _.
have Hn1 : norm1 sqrtf P n A i e = (A i e - row_mean P A i) / sqrtf (row_var P A i + eps P) * norm1_w P 0 e + norm1_b P 0 e.
  by rewrite /norm1 /layer_norm /block !mxE Hin Hed.
by case: (norm P); rewrite /= ?eqxx ?oner_neq0 ?Hn1.
Qed.

End Compact.

Theorem U_compact_y1_spec : U_compact_y1_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p.
do 44 move=> ?; apply: compact_y1; assumption.
Qed.

(** * Shallow U: the same nodes (its own node numbers). *)
Section Shallow.
Local Open Scope ring_scope.
Variables (R : realType) (sqrtf geluf gelu_tanhf : R -> R) (N D H K F : nat) (P : params R D H K F)
  (M : mask R N) (X : 'M[R]_(N, D)) (x : seq R) (i : 'I_N) (e : 'I_D) (n p : nat).
Local Notation Z5 f := (f (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)).
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
  (Hp : (p < (1 * N * D)%nat)%nat) (Hpi : (p %/ D %% N)%nat = i) (Hpe : (p %% D)%nat = e)
  (Hin : (i < n)%nat) (Hed : (e < d_model P)%nat)
  (Hpost : nth 0 x (U_shallow_gates_offset N D H K F + 2)%nat = (if norm P is PostNorm then 1 else 0))
  (Hwoe : forall (t : 'I_H) (c : 'I_K) (e : 'I_D), (d_model P <= e)%nat -> Wo P t c e = 0)
  (Hboe : forall e : 'I_D, (d_model P <= e)%nat -> bo P 0 e = 0)
  (HLQ : (((N * D)%nat * H * H)%nat <= size x)%nat).

Let HD : (0 < D)%nat. Proof. exact: leq_trans Hd0 HdD. Qed.
Let Hp' : (p < N * D)%nat. Proof. by move: Hp; rewrite mul1n. Qed.
Let Hpi' : (p %/ D)%nat = i.
Proof. by rewrite -Hpi modn_small // ltn_divLR. Qed.

Let o (e' : 'I_D) (h : 'I_H) : R := \sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n Zin h i c * Wo P h c e'.
Let cc (e' : 'I_D) : R := bo P 0 e' + (if residual P then 1 else 0) * X i e'.
Let Rv (e' : 'I_D) : R := \sum_(h < H) o e' h + cc e'.

Let Hg0 (k L : nat) : (k < L)%nat -> ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat L))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

(** The out grid's query of row i, column e'. *)
Lemma shallow_out_pos (e' : 'I_D) :
  [/\ (i * D + e' < 1 * N * D)%nat, ((i * D + e') %/ D %% N)%nat = i & ((i * D + e') %% D)%nat = e'].
Proof.
have Hl : (i * D + e' < N * D)%nat by exact: lin_lt.
split; first by rewrite mul1n.
  by rewrite divnMDl // divn_small // addn0 modn_small.
by rewrite modnMDl modn_small.
Qed.

Lemma shallow_o_at (e' : 'I_D) (h : 'I_H) : ev U_shallow_attn_o ((i * D + e') * H + h)%nat = o e' h.
Proof.
have [Hq1 Hq2 Hq3] := shallow_out_pos e'.
rewrite /o; exact: (shallow_o sqrtf geluf gelu_tanhf HX Hd He Hg Hb Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn
  Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV HH Hq1 Hq2 Hq3 Hin h).
Qed.

Lemma shallow_r_at (e' : 'I_D) (h : 'I_H) :
  ev U_shallow_attn_r_terms ((i * D + e') * H + h)%nat = o e' h + (if h == 0%nat :> nat then cc e' else 0).
Proof.
have [Hq1 Hq2 Hq3] := shallow_out_pos e'.
by rewrite (shallow_r sqrtf geluf gelu_tanhf HX Hd0 HdD Hres Hbo HH Hq1 Hq2 Hq3 h) shallow_o_at.
Qed.

(** R's entry (i, e'), every column: X1's below d_model, 0 beyond (Wo, bo, X zero there). *)
Lemma shallow_Rv (e' : 'I_D) : Rv e' = if (e' < d_model P)%nat then X1 i e' else 0.
Proof.
rewrite /Rv /cc /o; case: ltnP => He'.
  have Hsum : \sum_(h < H) \sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n Zin h i c * Wo P h c e'
    = \sum_(t < H | (t < nhead P)%nat) \sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n Zin t i c * Wo P t c e'.
    rewrite [RHS]big_mkcond; apply: eq_bigr => t _; case: ltnP => Ht //.
    by apply: big1 => c _; rewrite Hwoh // mulr0.
  rewrite /add_residual /self_attn /block.
  have Hie : ((i < n) && (e' < d_model P))%nat by rewrite Hin He'.
  case: (residual P); rewrite !mxE Hie Hsum ?mul1r ?mul0r ?addr0 //.
  by rewrite addrA [X i e' + _]addrC.
rewrite big1 ?add0r; last by move=> h _; apply: big1 => c _; rewrite Hwoe // mulr0.
by rewrite Hboe // (@Hpad i e') // mulr0 addr0.
Qed.

(** [out.R_sum]'s selector at p: the keys (i, e', h) of the head grid. *)
Lemma shallow_rsum_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_out_R_sum_sum) x p k = ((k < N * (D * H)) && (k %/ (D * H) == i))%nat.
Proof.
rewrite /U_shallow_out_R_sum_sum /U_shallow_out_R_sum_key_group /U_shallow_out_R_sum_query_group /U_shallow_indices /=.
rewrite !iif_range !Z.sub_0_r.
have -> : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia.
rewrite !zdiv_nat Hpi' (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) /=.
have -> : (Z.of_nat N * Z.of_nat D * Z.of_nat H)%Z = Z.of_nat (N * (D * H)) by rewrite mulnA !Nat2Z.inj_mul.
rewrite ltb_nat; case: ltnP => Hk /=; last by case E: (Z.of_nat i) => [|q|q] //; have := Nat2Z.is_nonneg i; rewrite E; lia.
by rewrite eqb_of_nat [(D * H)%nat]mulnC divnMA.
Qed.

(** [out.R_sq]'s selector at p: the keys (i, e', h, h2) of the square-terms grid. *)
Lemma shallow_rsq_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_out_R_sq_sum) x p k
  = ((k < N * (D * H * H)) && (k %/ (D * H * H) == i))%nat.
Proof.
rewrite /U_shallow_out_R_sq_sum /U_shallow_out_R_sq_key_group /U_shallow_out_R_sq_query_group /U_shallow_indices /=.
rewrite !iif_range !Z.sub_0_r.
have -> : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia.
rewrite !zdiv_nat Hpi' (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) /=.
have -> : (Z.of_nat N * Z.of_nat D * Z.of_nat H * Z.of_nat H)%Z = Z.of_nat (N * (D * H * H)).
  by rewrite !mulnA !Nat2Z.inj_mul.
rewrite ltb_nat; case: ltnP => Hk /=; last by case E: (Z.of_nat i) => [|q|q] //; have := Nat2Z.is_nonneg i; rewrite E; lia.
have -> : (D * H * H = H * H * D)%nat by rewrite [RHS]mulnC mulnA.
by rewrite eqb_of_nat !divnMA.
Qed.

(** R's row sum: (D H) times out.R_sum's mean is the sum over the columns of R. *)
Lemma shallow_sum_r :
  (D * H)%:R * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_shallow_out_R_sum_sum) (Z5 U_shallow_attn_r_terms)) x p
  = \sum_(e' < D) Rv e'.
Proof.
have HLH' : (N * (D * H) <= size x)%nat by rewrite mulnA.
rewrite (@agg_last _ _ _ _ _ _ _ x p N (D * H) i (ltn_ord i) HLH'); last by move=> k _; exact: shallow_rsum_sel.
rewrite (@sum_split _ (fun j => ev U_shallow_attn_r_terms (i * (D * H) + j)%nat) D H); apply: eq_bigr => e' _.
have Epos (h : 'I_H) : (i * (D * H) + (e' * H + h))%nat = ((i * D + e') * H + h)%nat.
  by rewrite !mulnDl !mulnA !addnA.
under eq_bigr => h _ do rewrite Epos shallow_r_at.
by rewrite big_split /= (sum_if0 HH).
Qed.

Lemma shallow_mu : ev U_shallow_out_mu1 p = row_mean P X1 i.
Proof.
have -> : ev U_shallow_out_mu1 p = cst_sem R (CQ (Z.of_nat D * Z.of_nat H) 1)
  * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_shallow_out_R_sum_sum) (Z5 U_shallow_attn_r_terms)) x p
  / ev U_shallow_d p by [].
rewrite -Nat2Z.inj_mul cst_nat shallow_sum_r.
rewrite /U_shallow_d /U_shallow_tokens (read_d Hd Hd0); last by move=> k; rewrite shallow_d_sel.
rewrite /row_mean [in RHS]big_mkcond /=; congr (_ / _); apply: eq_bigr => e' _; exact: shallow_Rv.
Qed.

Let Hg3 (k : nat) : (k < N * D * H)%nat ->
  ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat N * Z.of_nat D * Z.of_nat H))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

Let Hg4 (k : nat) : (k < N * D * H * H)%nat ->
  ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat N * Z.of_nat D * Z.of_nat H * Z.of_nat H))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

(** [ln1.o] at the query (i, e', h, h2) of the square-terms grid selects the keys [attn.o] selects
    at (i, e', h): head h's output. *)
Lemma shallow_o1 (e' : 'I_D) (h h2 : 'I_H) : ev U_shallow_ln1_o (((i * D + e') * H + h) * H + h2)%nat = o e' h.
Proof.
have [Hq Hqi Hqe Hqh Hqh2] := grid4 (ltn_ord i) (ltn_ord e') (ltn_ord h) (ltn_ord h2).
have [Hq1 Hq2 Hq3] := shallow_out_pos e'.
have [Hp1 Hp1h Hp1i Hp1e] := shallow_q Hd0 HdD HH Hq1 Hq2 Hq3 h.
rewrite -shallow_o_at.
rewrite /U_shallow_ln1_o /U_shallow_ln1_o_num /U_shallow_ln1_o_num_mean /U_shallow_ln1_o_den /U_shallow_ln1_o_den_mean.
rewrite /U_shallow_attn_o /U_shallow_attn_o_num /U_shallow_attn_o_num_mean /U_shallow_attn_o_den /U_shallow_attn_o_den_mean.
apply: head_same => k.
  rewrite /U_shallow_ln1_o_num_sum /U_shallow_attn_o_num_sum /=; congr (_ =? _)%Z.
  rewrite !iif_range (Hg4 Hq) (Hg3 Hp1) !Z.sub_0_r !zdiv_nat !zmod_nat.
  by rewrite Hqh Hqi Hqe Hp1h Hp1i Hp1e.
rewrite /U_shallow_ln1_o_den_sum /U_shallow_attn_o_den_sum /=; congr (_ =? _)%Z.
rewrite !iif_range (Hg4 Hq) (Hg3 Hp1) !Z.sub_0_r !zdiv_nat !zmod_nat.
by rewrite Hqh Hqi Hp1h Hp1i.
Qed.

(** [ln1.o2] at (i, e', h, h2): head h2's output. *)
Lemma shallow_o2 (e' : 'I_D) (h h2 : 'I_H) : ev U_shallow_ln1_o2 (((i * D + e') * H + h) * H + h2)%nat = o e' h2.
Proof.
have [Hq Hqi Hqe Hqh Hqh2] := grid4 (ltn_ord i) (ltn_ord e') (ltn_ord h) (ltn_ord h2).
have [Hq1 Hq2 Hq3] := shallow_out_pos e'.
have [Hp1 Hp1h Hp1i Hp1e] := shallow_q Hd0 HdD HH Hq1 Hq2 Hq3 h2.
rewrite -shallow_o_at.
rewrite /U_shallow_ln1_o2 /U_shallow_ln1_o2_num /U_shallow_ln1_o2_num_mean /U_shallow_ln1_o2_den /U_shallow_ln1_o2_den_mean.
rewrite /U_shallow_attn_o /U_shallow_attn_o_num /U_shallow_attn_o_num_mean /U_shallow_attn_o_den /U_shallow_attn_o_den_mean.
apply: head_same => k.
  rewrite /U_shallow_ln1_o2_num_sum /U_shallow_attn_o_num_sum /=; congr (_ =? _)%Z.
  rewrite !iif_range (Hg4 Hq) (Hg3 Hp1) !Z.sub_0_r !zdiv_nat !zmod_nat.
  by rewrite Hqh2 Hqi Hqe Hp1h Hp1i Hp1e.
rewrite /U_shallow_ln1_o2_den_sum /U_shallow_attn_o_den_sum /=; congr (_ =? _)%Z.
rewrite !iif_range (Hg4 Hq) (Hg3 Hp1) !Z.sub_0_r !zdiv_nat !zmod_nat.
by rewrite Hqh2 Hqi Hp1h Hp1i.
Qed.

(** [ln1.c] at (i, e', h, h2): bo + residual X at (i, e'). *)
Lemma shallow_c_sq (e' : 'I_D) (h h2 : 'I_H) : ev U_shallow_ln1_c (((i * D + e') * H + h) * H + h2)%nat = cc e'.
Proof.
have [Hq Hqi Hqe Hqh Hqh2] := grid4 (ltn_ord i) (ltn_ord e') (ltn_ord h) (ltn_ord h2).
rewrite /U_shallow_ln1_c eval_add eval_mul /cc.
have [HoL HoV] := Hbo ord0 ord0 e'.
have [HxL HxV] := HX ord0 i e'.
congr (_ + _ * _).
- rewrite /U_shallow_ln1_bo /U_shallow_ln1_bo_gather /U_shallow_ln1_bo_source /U_shallow_indices /U_shallow_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos (U_shallow_bo_offset N D H K F) 1 D 0 0 e')) //.
  cbv beta; rewrite iif_range (Hg4 Hq) Z.sub_0_r !zdiv_nat !zmod_nat Hqe.
  by rewrite /pos /U_shallow_bo_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
- rewrite /U_shallow_residual /U_shallow_residual_gather /U_shallow_residual_source /U_shallow_indices /U_shallow_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_shallow_gates_offset N D H K F + 0)) //.
    by rewrite /U_shallow_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
  apply: leq_ltn_trans HoL.
  by rewrite /pos /U_shallow_bo_offset /U_shallow_gates_offset; clear; lia.
- rewrite /U_shallow_ln1_x /U_shallow_ln1_x_gather /U_shallow_ln1_x_source /U_shallow_indices /U_shallow_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos 0 N D 0 i e')) //.
  cbv beta; rewrite iif_range (Hg4 Hq) Z.sub_0_r !zdiv_nat !zmod_nat Hqi Hqe.
  by rewrite /pos !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

(** U's square term at (i, e', h, h2). *)
Lemma shallow_sq_at (e' : 'I_D) (h h2 : 'I_H) :
  ev U_shallow_ln1_square_terms (((i * D + e') * H + h) * H + h2)%nat
  = o e' h * o e' h2 + (if h2 == 0%nat :> nat then 2%:R * (o e' h * cc e') else 0)
    + (if h2 == 0%nat :> nat then (if h == 0%nat :> nat then cc e' * cc e' else 0) else 0).
Proof.
have [Hq Hqi Hqe Hqh Hqh2] := grid4 (ltn_ord i) (ltn_ord e') (ltn_ord h) (ltn_ord h2).
set q := (((i * D + e') * H + h) * H + h2)%nat.
have -> : ev U_shallow_ln1_square_terms q
  = ev U_shallow_ln1_o q * ev U_shallow_ln1_o2 q
    + eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_shallow_ln1_h2_0)) x q
      * (cst_sem R (CQ 2 1) * (ev U_shallow_ln1_o q * ev U_shallow_ln1_c q))
    + eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_shallow_ln1_h_0)) x q
      * (ev U_shallow_ln1_c q * ev U_shallow_ln1_c q) by [].
rewrite /q shallow_o1 shallow_o2 shallow_c_sq cst_two -/q.
have -> : eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_shallow_ln1_h2_0)) x q
          = if h2 == 0%nat :> nat then 1 else 0.
  rewrite /U_shallow_ln1_h2_0 /U_shallow_indices /= Z.sub_0_r zmod_nat Hqh2.
  rewrite /iif /iand /ile /ilt /ieq /zb.
  have [/andP[-> ->]] := Hg4 Hq.
  have -> : (Z.of_nat h2 =? 0)%Z = (h2 == 0%nat :> nat) by exact: (eqb_of_nat h2 0).
  by case: (h2 == 0%nat :> nat); rewrite /zR /= ?subr0.
have -> : eval (@expR R) sqrtf geluf gelu_tanhf (OfIdx (Z5 U_shallow_ln1_h_0)) x q
          = if (h == 0%nat :> nat) && (h2 == 0%nat :> nat) then 1 else 0.
  rewrite /U_shallow_ln1_h_0 /U_shallow_indices /= !Z.sub_0_r !zdiv_nat !zmod_nat Hqh Hqh2.
  rewrite /iif /iand /ile /ilt /ieq /zb.
  have [/andP[-> ->]] := Hg4 Hq.
  have -> : (Z.of_nat h2 =? 0)%Z = (h2 == 0%nat :> nat) by exact: (eqb_of_nat h2 0).
  have -> : (Z.of_nat h =? 0)%Z = (h == 0%nat :> nat) by exact: (eqb_of_nat h 0).
  by case: (h == 0%nat :> nat); case: (h2 == 0%nat :> nat); rewrite /zR /= ?subr0.
by case: (h2 == 0%nat :> nat); case: (h == 0%nat :> nat); rewrite /= ?mul1r ?mul0r ?addr0.
Qed.

(** R's sum of squares: (D H H) times out.R_sq's mean is the sum over the columns of R^2. *)
Lemma shallow_sum_sq :
  (D * H * H)%:R * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_shallow_out_R_sq_sum) (Z5 U_shallow_ln1_square_terms)) x p
  = \sum_(e' < D) Rv e' ^+ 2.
Proof.
have HLQ' : (N * (D * H * H) <= size x)%nat by rewrite !mulnA.
rewrite (@agg_last _ _ _ _ _ _ _ x p N (D * H * H) i (ltn_ord i) HLQ'); last by move=> k _; exact: shallow_rsq_sel.
rewrite (sum_split3 (fun j => ev U_shallow_ln1_square_terms (i * (D * H * H) + j)%nat) D H); apply: eq_bigr => e' _.
have Epos (h h2 : 'I_H) : (i * (D * H * H) + ((e' * H + h) * H + h2))%nat = (((i * D + e') * H + h) * H + h2)%nat.
  by rewrite !mulnDl !mulnA !addnA.
under eq_bigr => h _ do under eq_bigr => h2 _ do rewrite Epos shallow_sq_at.
exact: square_terms.
Qed.

Lemma shallow_var :
  ev U_shallow_out_R_sq p / ev U_shallow_d p - ev U_shallow_out_mu1 p * ev U_shallow_out_mu1 p = row_var P X1 i.
Proof.
have -> : ev U_shallow_out_R_sq p = cst_sem R (CQ (Z.of_nat D * Z.of_nat H * Z.of_nat H) 1)
  * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_shallow_out_R_sq_sum) (Z5 U_shallow_ln1_square_terms)) x p by [].
rewrite -!Nat2Z.inj_mul cst_nat shallow_sum_sq shallow_mu.
rewrite /U_shallow_d /U_shallow_tokens (read_d Hd Hd0); last by move=> k; rewrite shallow_d_sel.
have -> : \sum_(e' < D) Rv e' ^+ 2 = \sum_(j < D | (j < d_model P)%nat) X1 i j ^+ 2.
  rewrite [RHS]big_mkcond; apply: eq_bigr => e' _; rewrite shallow_Rv.
  by case: ifP => // _; rewrite expr2 mulr0.
by rewrite /row_var /row_mean var_identity.
Qed.

(** The gates and LayerNorm 1's parameters read at p. *)
Lemma shallow_post : ev U_shallow_post p = (if norm P is PostNorm then 1 else 0).
Proof.
have [HoL _] := Hbo ord0 ord0 e.
rewrite /U_shallow_post /U_shallow_post_gather /U_shallow_post_source /U_shallow_indices /U_shallow_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_shallow_gates_offset N D H K F + 2)) //.
  by rewrite /U_shallow_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
apply: leq_ltn_trans HoL.
by rewrite /pos /U_shallow_bo_offset /U_shallow_gates_offset; clear; lia.
Qed.

Lemma shallow_eps : ev U_shallow_eps p = eps P.
Proof.
have [HoL _] := Hbo ord0 ord0 e.
rewrite /U_shallow_eps /U_shallow_eps_gather /U_shallow_eps_source /U_shallow_indices /U_shallow_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_shallow_gates_offset N D H K F + 7)) //.
  by rewrite /U_shallow_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
apply: leq_ltn_trans HoL.
by rewrite /pos /U_shallow_bo_offset /U_shallow_gates_offset; clear; lia.
Qed.

Lemma shallow_g1 : ev U_shallow_out_g1 p = norm1_w P 0 e.
Proof.
have [Hgs Hgv] := encodes_row e Hg.
rewrite /U_shallow_out_g1 /U_shallow_out_g1_gather /U_shallow_out_g1_source /U_shallow_indices /U_shallow_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x p (U_shallow_g1_offset N D H K F + e)) //.
cbv beta; rewrite iif_range.
have -> : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 0 + 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia.
rewrite Z.sub_0_r zmod_nat Hpe /U_shallow_g1_offset; clear.
rewrite !Nat2Z.inj_add !Nat2Z.inj_mul; lia.
Qed.

Lemma shallow_be1 : ev U_shallow_out_be1 p = norm1_b P 0 e.
Proof.
have [Hbs Hbv'] := encodes_row e Hb.
rewrite /U_shallow_out_be1 /U_shallow_out_be1_gather /U_shallow_out_be1_source /U_shallow_indices /U_shallow_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x p (U_shallow_be1_offset N D H K F + e)) //.
cbv beta; rewrite iif_range.
have -> : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 0 + 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia.
rewrite Z.sub_0_r zmod_nat Hpe /U_shallow_be1_offset; clear.
rewrite !Nat2Z.inj_add !Nat2Z.inj_mul; lia.
Qed.

(** [out.Y1] at p: LayerNorm 1 of R when post-norm, else R. *)
Lemma shallow_y1 : ev U_shallow_out_Y1 p = (if norm P is PostNorm then norm1 sqrtf P n X1 else X1) i e.
Proof.
have -> : ev U_shallow_out_Y1 p
  = if ev U_shallow_post p != 0
    then (ev U_shallow_out_R p - ev U_shallow_out_mu1 p)
         * (sqrtf (ev U_shallow_out_R_sq p / ev U_shallow_d p - ev U_shallow_out_mu1 p * ev U_shallow_out_mu1 p
                   + ev U_shallow_eps p))^-1 * ev U_shallow_out_g1 p + ev U_shallow_out_be1 p
    else ev U_shallow_out_R p by [].
rewrite shallow_var shallow_mu shallow_eps shallow_g1 shallow_be1 shallow_post.
rewrite (@U_shallow_attn_out_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p HX Hd He Hg Hb Hpre Hsc Hm
  Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV
  Hres Hbo Hwoh HH HLH Hp Hpi Hpe Hin Hed).
set A := add_residual _ _ _.
have Hn1 : norm1 sqrtf P n A i e = (A i e - row_mean P A i) / sqrtf (row_var P A i + eps P) * norm1_w P 0 e + norm1_b P 0 e.
  by rewrite /norm1 /layer_norm /block !mxE Hin Hed.
by case: (norm P); rewrite /= ?eqxx ?oner_neq0 ?Hn1.
Qed.

End Shallow.

Theorem U_shallow_y1_spec : U_shallow_y1_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p.
do 44 move=> ?; apply: shallow_y1; assumption.
Qed.
