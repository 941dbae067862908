(** Theorem 6 in the kernel, eighth stage: the softmax.  Over MathComp-analysis' real exponential
    [expR] (EncoderLayer.v's [torch_encoder_layer] exponential), U's own exported node [attn.exp]
    (exp(logit - row max) at an allowed key, 0 at a hidden one) at every query of the attention
    grid (head t, query row i < n, key j), divided by U's node [attn.o.den] (N times the mean of
    attn.exp over the N keys (t, i, j', 0): the row sum) at every query of the head grid on head t,
    row i, is EncoderLayer.v's [softmax_rows expR M n (scores P M n Z t) i j], Z = norm1 X when
    pre-norm, else X, for every capacity N, D, H, K, F, both variants (generated statements:
    UniversalSoftmaxStatement.v); and the row sum is positive when query i sees some key.  The
    exponential is [expR], not a parameter: EncoderLayer.v states no law for its [expf], and the
    shift cancels only by exp(a - b) = exp a / exp b; its assumptions are MathComp-analysis' own.

    The row max is one value per row: its selector compares the key's row with the query's, so
    every query of row (t, i) takes it over the same keys; it cancels ([expRB]).  A key is allowed
    in U when j < n (the header's n) and its boolean-mask flag is 0: EncoderLayer's [allowed].  The
    scores stage gives the logits of the allowed keys.  The shallow variant's nodes are the compact
    one's over the spread scores (its unlabelled nodes numbered apart): the same proof. *)
From mathcomp Require Import all_ssreflect all_algebra.
From mathcomp Require Import reals sequences exp.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas UniversalLemmas UniversalSoftmaxNodes EncoderLayer.
From Attnsim Require Import UniversalRowMean UniversalRowStats UniversalLayerNorm1Statement UniversalLayerNorm1.
From Attnsim Require Import UniversalQProjStatement UniversalQProj UniversalVProjStatement.
From Attnsim Require Import UniversalScoresStatement UniversalScores UniversalSoftmaxStatement.
Import GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

(** * Sums over a grid's positions with one coordinate free. *)
Section Strided.
Variable R : realFieldType.
Local Open Scope ring_scope.

(** The positions (b, j, 0) of a grid (B, N, D), j < N: the sum over them of [f]. *)
Lemma sum_stride (f : nat -> R) (B N D L b : nat) : (0 < D)%nat -> (b < B)%nat -> (B * (N * D) <= L)%nat ->
  \sum_(0 <= k < L | ((k < B * (N * D)) && (k %/ D %/ N == b) && (k %% D == 0))%nat) f k
  = \sum_(j < N) f ((b * N + j) * D)%nat.
Proof.
move=> HD Hb HL.
have HN : forall a, (a < N * D)%nat -> (a %/ D < N)%nat by move=> a Ha; rewrite ltn_divLR.
rewrite big_mkcond (@big_cat_nat _ _ _ (B * (N * D))) //= [X in _ + X]big1_seq ?addr0; last first.
  by move=> k /andP[_]; rewrite mem_index_iota => /andP[Hk _]; rewrite ltnNge Hk.
set g := fun k : nat => if ((k < B * (N * D)) && (k %/ D %/ N == b) && (k %% D == 0))%nat then f k else 0.
rewrite big_mkord (eq_bigr (fun k : 'I_(B * (N * D)) => g k)) // (sum_split g) (bigD1 (Ordinal Hb)) //= [X in _ + X]big1 ?addr0; last first.
  move=> c /negbTE Hc; apply: big1 => a _.
  have Hca : ((c * (N * D) + a) %/ D %/ N)%nat = c.
    have HaN := HN a (ltn_ord a); have HN0 : (0 < N)%nat by apply: leq_ltn_trans HaN.
    by rewrite mulnA divnMDl // divnMDl // divn_small ?addn0.
  have Hcb : (c == b :> nat) = false by exact: Hc.
  by rewrite /g Hca Hcb andbF andFb.
rewrite (sum_split (fun a => g (b * (N * D) + a)%nat)); apply: eq_bigr => j _.
rewrite (bigD1 (Ordinal HD)) //= [X in _ + X]big1 ?addr0; last first.
  move=> e He; rewrite /g.
  have -> : ((b * (N * D) + (j * D + e)) %% D)%nat = e by rewrite addnA mulnA -mulnDl modnMDl modn_small.
  have -> : (e == 0%nat :> nat) = false by exact: negbTE He.
  by rewrite andbF.
have HN0 : (0 < N)%nat by apply: leq_ltn_trans (ltn_ord j).
have Hlt : (b * N + j < B * N)%nat.
  by apply: (@leq_trans (b * N + N)); [rewrite ltn_add2l ltn_ord | rewrite -mulSnr leq_mul2r Hb orbT].
rewrite /g addn0 mulnA -mulnDl modnMl mulnK // divnMDl // divn_small // addn0 eqxx andbT.
by rewrite eqxx andbT mulnA ltn_mul2r Hlt HD.
Qed.

End Strided.

Lemma mul_mod_eq (a r b D : nat) : (r < D)%nat -> (a * D + r == b * D)%nat = (a == b) && (r == 0%nat).
Proof.
move=> Hr; have HD : (0 < D)%nat by apply: leq_ltn_trans Hr.
apply/eqP/andP => [E|[/eqP -> /eqP ->]]; last by rewrite addn0.
have Er : r = 0%nat by have := congr1 (modn^~ D) E; rewrite /= modnMDl modnMl modn_small.
by move: E; rewrite Er addn0 => /(congr1 (divn^~ D)); rewrite /= !mulnK // => ->.
Qed.

Lemma eval_OfIdx_const (R : realFieldType) (expf sqrtf geluf gelu_tanhf : R -> R) (c : Z) x k :
  eval expf sqrtf geluf gelu_tanhf (OfIdx (IConst c)) x k = zR R c.
Proof. by []. Qed.

(** A row max's selector ([SAnd] of a row test and a value test against a constant) takes the
    same keys at two queries of the same row. *)
Lemma seval_rows (R : realFieldType) (expf sqrtf geluf gelu_tanhf : R -> R) (kr qr : isop) (a : sop)
  (c : Z) (cm : cmp) (x : seq R) (k k0 k2 : nat) :
  ieval qr (size x) k = ieval qr (size x) k0 ->
  seval expf sqrtf geluf gelu_tanhf (SAnd (Select kr qr CEq) (VSelect a (OfIdx (IConst c)) cm)) x k k2
  = seval expf sqrtf geluf gelu_tanhf (SAnd (Select kr qr CEq) (VSelect a (OfIdx (IConst c)) cm)) x k0 k2.
Proof. by move=> E /=; rewrite E. Qed.

Lemma eval_affine (R : realFieldType) (expf sqrtf geluf gelu_tanhf : R -> R) (a c : cst) (v : sop) x k :
  eval expf sqrtf geluf gelu_tanhf (Map1 (PAffine a c) v) x k
  = (cst_sem R a * eval expf sqrtf geluf gelu_tanhf v x k + cst_sem R c)%R.
Proof. by []. Qed.

Lemma eval_lt (R : realFieldType) (expf sqrtf geluf gelu_tanhf : R -> R) (a c : sop) x k :
  eval expf sqrtf geluf gelu_tanhf (Map2 PLt a c) x k
  = flag R (eval expf sqrtf geluf gelu_tanhf a x k < eval expf sqrtf geluf gelu_tanhf c x k)%R.
Proof. by []. Qed.

Lemma eval_exp (R : realFieldType) (expf sqrtf geluf gelu_tanhf : R -> R) (v : sop) x k :
  eval expf sqrtf geluf gelu_tanhf (Map1 PExp v) x k = expf (eval expf sqrtf geluf gelu_tanhf v x k).
Proof. by []. Qed.

Lemma sum_ones (R : realFieldType) (G : pred nat) (s : seq nat) :
  (\sum_(k <- s | G k) (1 : R) = (count G s)%:R)%R.
Proof.
elim: s => [|a s IH]; first by rewrite big_nil.
by rewrite big_cons /= IH; case: (G a); rewrite ?add0n // natrD.
Qed.

(** * Compact U *)
Section Compact.
Local Open Scope ring_scope.
Variables (R : realType) (sqrtf geluf gelu_tanhf : R -> R) (N D H K F : nat) (P : params R D H K F)
  (M : mask R N) (X : 'M[R]_(N, D)) (x : seq R) (i : 'I_N) (t : 'I_H) (n p : nat).
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
  (Hp : (p < (N * D * H)%nat)%nat) (Hpt : (p %% H)%nat = t) (Hpi : (p %/ H %/ D)%nat = i)
  (Hin : (i < n)%nat).

Let HD : (0 < D)%nat. Proof. exact: leq_trans Hd0 HdD. Qed.
Let HN : (0 < N)%nat. Proof. exact: leq_ltn_trans (leq0n i) (ltn_ord i). Qed.
Let b := (t * N + i)%nat.
Let Hbl : (b < H * N)%nat.
Proof.
by apply: (@leq_trans (t * N + N)); [rewrite ltn_add2l ltn_ord | rewrite -mulSnr leq_mul2r ltn_ord orbT].
Qed.

Let Hkb (k : nat) : (k < H * N * N * D)%nat ->
  ((0 <=? Z.of_nat k) && (Z.of_nat k <? 0 + Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat D))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

(** The n token: the header's n. *)
Lemma compact_n (k : nat) : ev U_compact_n k = n%:R.
Proof.
have Hz : (N * D < size x)%nat.
  rewrite ltnNge; apply/negP => Hge; move: Hn; rewrite nth_default // => /esym/eqP.
  by rewrite pnatr_eq0 eqn0Ngt (leq_ltn_trans (leq0n i) Hin).
rewrite /U_compact_n /U_compact_n_gather /U_compact_n_source /U_compact_indices /U_compact_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x k (N * D)) //.
by cbv beta; rewrite Nat2Z.inj_mul; clear; lia.
Qed.

(** A key is allowed in U (j < n, its boolean-mask flag 0) iff EncoderLayer's [allowed]. *)
Lemma compact_allowed (k : nat) (i' j' : 'I_N) : (k < H * N * N * D)%nat ->
  (k %/ D %/ N %% N)%nat = i' -> (k %/ D %% N)%nat = j' ->
  ev U_compact_attn_allowed k = if allowed M n i' j' then 1 else 0.
Proof.
move=> Hk Hi' Hj'.
rewrite /U_compact_attn_allowed !eval_mul /U_compact_mask_keys /U_compact_n22 /U_compact_n28 eval_affine eval_lt.
have -> : ev U_compact_mask_blocked k = if blocked M i' j' then 1 else 0.
  have [HbL HbV] := Hblk ord0 i' j'; rewrite mxE in HbV.
  rewrite /U_compact_mask_blocked /U_compact_mask_blocked_gather /U_compact_mask_blocked_source.
  rewrite /U_compact_indices /U_compact_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x k
             (pos (U_compact_mask_blocked_offset N D H K F) N N 0 i' j')) //.
  cbv beta; rewrite iif_range Hkb // Z.sub_0_r !zdiv_nat !zmod_nat Hi' Hj'.
  by rewrite /pos /U_compact_mask_blocked_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
rewrite compact_n.
rewrite /U_compact_mask_keys_coord /U_compact_mask_keys_inside /U_compact_indices /=.
rewrite !iif_range Hkb // Z.sub_0_r !zdiv_nat !zmod_nat Hj' zR_nat.
rewrite /allowed ltr_nat /cst_sem /zR /=; change (Pos.to_nat 1) with 1%nat.
rewrite !subr0 sub0r !divr1 mulr1 mulN1r.
by case: (j' < n)%nat; case: (blocked M i' j'); rewrite /flag /= ?mul1r ?mul0r ?addNr ?subr0 ?oppr0 ?add0r.
Qed.

(** The query's row (t, i) in the row max's selector. *)
Lemma compact_query_row (k : nat) : (k < H * N * N * D)%nat ->
  (k %/ D %/ N %/ N)%nat = t -> (k %/ D %/ N %% N)%nat = i ->
  ieval (Z5 U_compact_attn_max_query_row) (size x) k = Z.of_nat b.
Proof.
move=> Hk Ht Hi; rewrite /U_compact_attn_max_query_row /U_compact_indices /=.
rewrite iif_range Hkb // Z.sub_0_r !zdiv_nat !zmod_nat Ht Hi.
by rewrite /b Nat2Z.inj_add Nat2Z.inj_mul.
Qed.

(** The row max: one value for the whole row (t, i). *)
Let k0 := (b * N * D)%nat.
Let Hk0 : (k0 < H * N * N * D)%nat.
Proof. by rewrite /k0 ltn_mul2r HD ltn_mul2r HN Hbl. Qed.
Let Hk0t : (k0 %/ D %/ N %/ N)%nat = t.
Proof. by rewrite /k0 mulnK // mulnK // /b divnMDl // divn_small ?addn0. Qed.
Let Hk0i : (k0 %/ D %/ N %% N)%nat = i.
Proof. by rewrite /k0 mulnK // mulnK // /b modnMDl modn_small. Qed.
Let mx := ev U_compact_attn_max k0.

Lemma compact_max (k : nat) : (k < H * N * N * D)%nat ->
  (k %/ D %/ N %/ N)%nat = t -> (k %/ D %/ N %% N)%nat = i -> ev U_compact_attn_max k = mx.
Proof.
move=> Hk Ht Hi; rewrite /mx !eval_maximum /keys; congr (maxl (map _ _)); apply: eq_filter => k2.
rewrite /U_compact_attn_max_allowed /U_compact_attn_max_rows /U_compact_n111 /U_compact_n110.
by apply: seval_rows; rewrite !compact_query_row.
Qed.

(** [attn.exp] at a key (t, i, j'): exp(score - row max) when allowed, else 0. *)
Lemma compact_exp (k : nat) (j' : 'I_N) : (k < H * N * N * D)%nat ->
  (k %/ D %/ N %/ N)%nat = t -> (k %/ D %/ N %% N)%nat = i -> (k %/ D %% N)%nat = j' ->
  ev U_compact_attn_exp k
  = if allowed M n i j' then expR (scores P M n Zin t i j') / expR mx else 0.
Proof.
move=> Hk Ht Hi Hj; rewrite /U_compact_attn_exp eval_where (compact_allowed Hk Hi Hj).
case Ha: (allowed M n i j'); last by rewrite eqxx /U_compact_n116 eval_OfIdx_const /zR /= subrr.
rewrite oner_neq0 /U_compact_n115 eval_exp /U_compact_n114 eval_sub (compact_max Hk Ht Hi) expRB.
have Hjn : (j' < n)%nat by move: Ha; rewrite /allowed => /andP[].
have Hk' : (k < (H * N)%nat * N * D)%nat by [].
by rewrite (@U_compact_scores_spec R (@expR R) sqrtf geluf gelu_tanhf N D H K F P M X x k i t j' n HX Hd He Hg Hb
  Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hk' Ht Hi Hj Hin Hjn).
Qed.

(** [attn.o.den] at p (head t, row i): the sum of [attn.exp] over the N keys (t, i, j', 0). *)
Lemma compact_den_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_attn_o_den_sum) x p k
  = ((k < H * N * (N * D)) && (k %/ D %/ N == b) && (k %% D == 0))%nat.
Proof.
have Hpb : ((0 <=? Z.of_nat p) && (Z.of_nat p <? Z.of_nat N * Z.of_nat D * Z.of_nat H))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp; lia.
rewrite /U_compact_attn_o_den_sum /U_compact_attn_o_den_key_group /U_compact_attn_o_den_query_group.
rewrite /U_compact_indices /= !iif_range Hpb !Z.sub_0_r !zdiv_nat !zmod_nat Hpt Hpi.
have -> : ((Z.of_nat t * Z.of_nat N + Z.of_nat i) * Z.of_nat D + 0 = Z.of_nat (b * D)%nat)%Z.
  by rewrite /b !Nat2Z.inj_mul Nat2Z.inj_add; lia.
rewrite (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) /=.
have -> : (Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat D)%Z = Z.of_nat (H * N * (N * D)) by rewrite !Nat2Z.inj_mul; lia.
rewrite ltb_nat; case: ltnP => Hk /=; last by case: (b * D)%nat.
have -> : ((Z.of_nat (k %/ D %/ N %/ N)%nat * Z.of_nat N + Z.of_nat (k %/ D %/ N %% N)%nat) * Z.of_nat D
          + Z.of_nat (k %% D)%nat)%Z = Z.of_nat ((k %/ D %/ N) * D + k %% D)%nat.
  by rewrite {3}(divn_eq (k %/ D %/ N) N) !Nat2Z.inj_add !Nat2Z.inj_mul; lia.
by rewrite eqb_of_nat mul_mod_eq // ltn_pmod.
Qed.

Lemma compact_den : ev U_compact_attn_o_den p = \sum_(j < N) ev U_compact_attn_exp ((b * N + j) * D)%nat.
Proof.
rewrite /U_compact_attn_o_den eval_scale cst_nat /U_compact_attn_o_den_mean.
rewrite (@agg_group _ _ _ _ _ _ _ x p (fun k => ((k < H * N * (N * D)) && (k %/ D %/ N == b) && (k %% D == 0))%nat)); last first.
  by move=> k _; rewrite compact_den_sel.
have HL' : (H * N * (N * D) <= size x)%nat by rewrite mulnA.
rewrite (sum_stride _ HD Hbl HL').
have := sum_stride (fun _ => 1 : R) HD Hbl HL'.
rewrite -big_filter sum_ones count_predT size_filter /index_iota subn0 => ->.
rewrite big_const_ord iter_addr addr0 mulrC divfK //.
by rewrite pnatr_eq0 -lt0n HN.
Qed.

(** The row sum: sum over the allowed keys of exp(score) over exp(row max). *)
Lemma compact_den_sum :
  ev U_compact_attn_o_den p = (\sum_(m < N | allowed M n i m) expR (scores P M n Zin t i m)) / expR mx.
Proof.
rewrite compact_den mulr_suml [RHS]big_mkcond; apply: eq_bigr => j _.
have HbN : ((b * N + j) * D %/ D = b * N + j)%nat by rewrite mulnK.
have Hk : ((b * N + j) * D < H * N * N * D)%nat.
  rewrite ltn_mul2r HD /=; apply: (@leq_trans (b * N + N)); first by rewrite ltn_add2l.
  by rewrite -mulSnr leq_mul2r Hbl orbT.
rewrite (@compact_exp _ j Hk); last by rewrite HbN modnMDl modn_small.
- by case: (allowed M n i j).
- by rewrite HbN divnMDl // (divn_small (ltn_ord j)) addn0 /b divnMDl // (divn_small (ltn_ord i)) addn0.
- by rewrite HbN divnMDl // (divn_small (ltn_ord j)) addn0 /b modnMDl modn_small.
Qed.

Lemma compact_weight (q : nat) (j : 'I_N) : (q < (H * N)%nat * N * D)%nat ->
  (q %/ D %/ N %/ N)%nat = t -> (q %/ D %/ N %% N)%nat = i -> (q %/ D %% N)%nat = j ->
  ev U_compact_attn_exp q / ev U_compact_attn_o_den p = softmax_rows (@expR R) M n (scores P M n Zin t) i j.
Proof.
move=> Hq Ht Hi Hj; rewrite (compact_exp Hq Ht Hi Hj) compact_den_sum /softmax_rows [RHS]mxE Hin /=.
case: (allowed M n i j); last by rewrite mul0r.
have HE : expR mx != 0 by exact: lt0r_neq0 (expR_gt0 mx).
by rewrite invfM invrK mulrA mulrAC divfK.
Qed.

Lemma compact_den_pos : (exists j : 'I_N, allowed M n i j) -> 0 < ev U_compact_attn_o_den p.
Proof.
move=> [j0 Hj0]; rewrite compact_den_sum divr_gt0 ?expR_gt0 // (bigD1 j0) //=.
apply: (Order.POrderTheory.lt_le_trans (expR_gt0 (scores P M n Zin t i j0))); rewrite ler_addl.
by apply: sumr_ge0 => m _; exact: Order.POrderTheory.ltW (expR_gt0 _).
Qed.

End Compact.

(** * Shallow U: the same nodes over the spread scores (its own node numbers). *)
Section Shallow.
Local Open Scope ring_scope.
Variables (R : realType) (sqrtf geluf gelu_tanhf : R -> R) (N D H K F : nat) (P : params R D H K F)
  (M : mask R N) (X : 'M[R]_(N, D)) (x : seq R) (i : 'I_N) (t : 'I_H) (n p : nat).
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
  (Hp : (p < (N * D * H)%nat)%nat) (Hpt : (p %% H)%nat = t) (Hpi : (p %/ H %/ D)%nat = i)
  (Hin : (i < n)%nat).

Let HD : (0 < D)%nat. Proof. exact: leq_trans Hd0 HdD. Qed.
Let HN : (0 < N)%nat. Proof. exact: leq_ltn_trans (leq0n i) (ltn_ord i). Qed.
Let b := (t * N + i)%nat.
Let Hbl : (b < H * N)%nat.
Proof.
by apply: (@leq_trans (t * N + N)); [rewrite ltn_add2l ltn_ord | rewrite -mulSnr leq_mul2r ltn_ord orbT].
Qed.

Let Hkb (k : nat) : (k < H * N * N * D)%nat ->
  ((0 <=? Z.of_nat k) && (Z.of_nat k <? 0 + Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat D))%Z = true.
Proof. by move=> Hk; apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hk; lia. Qed.

(** The n token: the header's n. *)
Lemma shallow_n (k : nat) : ev U_shallow_n k = n%:R.
Proof.
have Hz : (N * D < size x)%nat.
  rewrite ltnNge; apply/negP => Hge; move: Hn; rewrite nth_default // => /esym/eqP.
  by rewrite pnatr_eq0 eqn0Ngt (leq_ltn_trans (leq0n i) Hin).
rewrite /U_shallow_n /U_shallow_n_gather /U_shallow_n_source /U_shallow_indices /U_shallow_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x k (N * D)) //.
by cbv beta; rewrite Nat2Z.inj_mul; clear; lia.
Qed.

(** A key is allowed in U (j < n, its boolean-mask flag 0) iff EncoderLayer's [allowed]. *)
Lemma shallow_allowed (k : nat) (i' j' : 'I_N) : (k < H * N * N * D)%nat ->
  (k %/ D %/ N %% N)%nat = i' -> (k %/ D %% N)%nat = j' ->
  ev U_shallow_attn_allowed k = if allowed M n i' j' then 1 else 0.
Proof.
move=> Hk Hi' Hj'.
rewrite /U_shallow_attn_allowed !eval_mul /U_shallow_mask_keys /U_shallow_n22 /U_shallow_n28 eval_affine eval_lt.
have -> : ev U_shallow_mask_blocked k = if blocked M i' j' then 1 else 0.
  have [HbL HbV] := Hblk ord0 i' j'; rewrite mxE in HbV.
  rewrite /U_shallow_mask_blocked /U_shallow_mask_blocked_gather /U_shallow_mask_blocked_source.
  rewrite /U_shallow_indices /U_shallow_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x k
             (pos (U_shallow_mask_blocked_offset N D H K F) N N 0 i' j')) //.
  cbv beta; rewrite iif_range Hkb // Z.sub_0_r !zdiv_nat !zmod_nat Hi' Hj'.
  by rewrite /pos /U_shallow_mask_blocked_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
rewrite shallow_n.
rewrite /U_shallow_mask_keys_coord /U_shallow_mask_keys_inside /U_shallow_indices /=.
rewrite !iif_range Hkb // Z.sub_0_r !zdiv_nat !zmod_nat Hj' zR_nat.
rewrite /allowed ltr_nat /cst_sem /zR /=; change (Pos.to_nat 1) with 1%nat.
rewrite !subr0 sub0r !divr1 mulr1 mulN1r.
by case: (j' < n)%nat; case: (blocked M i' j'); rewrite /flag /= ?mul1r ?mul0r ?addNr ?subr0 ?oppr0 ?add0r.
Qed.

(** The query's row (t, i) in the row max's selector. *)
Lemma shallow_query_row (k : nat) : (k < H * N * N * D)%nat ->
  (k %/ D %/ N %/ N)%nat = t -> (k %/ D %/ N %% N)%nat = i ->
  ieval (Z5 U_shallow_attn_max_query_row) (size x) k = Z.of_nat b.
Proof.
move=> Hk Ht Hi; rewrite /U_shallow_attn_max_query_row /U_shallow_indices /=.
rewrite iif_range Hkb // Z.sub_0_r !zdiv_nat !zmod_nat Ht Hi.
by rewrite /b Nat2Z.inj_add Nat2Z.inj_mul.
Qed.

(** The row max: one value for the whole row (t, i). *)
Let k0 := (b * N * D)%nat.
Let Hk0 : (k0 < H * N * N * D)%nat.
Proof. by rewrite /k0 ltn_mul2r HD ltn_mul2r HN Hbl. Qed.
Let Hk0t : (k0 %/ D %/ N %/ N)%nat = t.
Proof. by rewrite /k0 mulnK // mulnK // /b divnMDl // divn_small ?addn0. Qed.
Let Hk0i : (k0 %/ D %/ N %% N)%nat = i.
Proof. by rewrite /k0 mulnK // mulnK // /b modnMDl modn_small. Qed.
Let mx := ev U_shallow_attn_max k0.

Lemma shallow_max (k : nat) : (k < H * N * N * D)%nat ->
  (k %/ D %/ N %/ N)%nat = t -> (k %/ D %/ N %% N)%nat = i -> ev U_shallow_attn_max k = mx.
Proof.
move=> Hk Ht Hi; rewrite /mx !eval_maximum /keys; congr (maxl (map _ _)); apply: eq_filter => k2.
rewrite /U_shallow_attn_max_allowed /U_shallow_attn_max_rows /U_shallow_n132 /U_shallow_n131.
by apply: seval_rows; rewrite !shallow_query_row.
Qed.

(** [attn.exp] at a key (t, i, j'): exp(score - row max) when allowed, else 0. *)
Lemma shallow_exp (k : nat) (j' : 'I_N) : (k < H * N * N * D)%nat ->
  (k %/ D %/ N %/ N)%nat = t -> (k %/ D %/ N %% N)%nat = i -> (k %/ D %% N)%nat = j' ->
  ev U_shallow_attn_exp k
  = if allowed M n i j' then expR (scores P M n Zin t i j') / expR mx else 0.
Proof.
move=> Hk Ht Hi Hj; rewrite /U_shallow_attn_exp eval_where (shallow_allowed Hk Hi Hj).
case Ha: (allowed M n i j'); last by rewrite eqxx /U_shallow_n137 eval_OfIdx_const /zR /= subrr.
rewrite oner_neq0 /U_shallow_n136 eval_exp /U_shallow_n135 eval_sub (shallow_max Hk Ht Hi) expRB.
have Hjn : (j' < n)%nat by move: Ha; rewrite /allowed => /andP[].
have Hk' : (k < (H * N)%nat * N * D)%nat by [].
by rewrite (@U_shallow_scores_spec R (@expR R) sqrtf geluf gelu_tanhf N D H K F P M X x k i t j' n HX Hd He Hg Hb
  Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hk' Ht Hi Hj Hin Hjn).
Qed.

(** [attn.o.den] at p (head t, row i): the sum of [attn.exp] over the N keys (t, i, j', 0). *)
Lemma shallow_den_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_attn_o_den_sum) x p k
  = ((k < H * N * (N * D)) && (k %/ D %/ N == b) && (k %% D == 0))%nat.
Proof.
have Hpb : ((0 <=? Z.of_nat p) && (Z.of_nat p <? Z.of_nat N * Z.of_nat D * Z.of_nat H))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp; lia.
rewrite /U_shallow_attn_o_den_sum /U_shallow_attn_o_den_key_group /U_shallow_attn_o_den_query_group.
rewrite /U_shallow_indices /= !iif_range Hpb !Z.sub_0_r !zdiv_nat !zmod_nat Hpt Hpi.
have -> : ((Z.of_nat t * Z.of_nat N + Z.of_nat i) * Z.of_nat D + 0 = Z.of_nat (b * D)%nat)%Z.
  by rewrite /b !Nat2Z.inj_mul Nat2Z.inj_add; lia.
rewrite (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) /=.
have -> : (Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat D)%Z = Z.of_nat (H * N * (N * D)) by rewrite !Nat2Z.inj_mul; lia.
rewrite ltb_nat; case: ltnP => Hk /=; last by case: (b * D)%nat.
have -> : ((Z.of_nat (k %/ D %/ N %/ N)%nat * Z.of_nat N + Z.of_nat (k %/ D %/ N %% N)%nat) * Z.of_nat D
          + Z.of_nat (k %% D)%nat)%Z = Z.of_nat ((k %/ D %/ N) * D + k %% D)%nat.
  by rewrite {3}(divn_eq (k %/ D %/ N) N) !Nat2Z.inj_add !Nat2Z.inj_mul; lia.
by rewrite eqb_of_nat mul_mod_eq // ltn_pmod.
Qed.

Lemma shallow_den : ev U_shallow_attn_o_den p = \sum_(j < N) ev U_shallow_attn_exp ((b * N + j) * D)%nat.
Proof.
rewrite /U_shallow_attn_o_den eval_scale cst_nat /U_shallow_attn_o_den_mean.
rewrite (@agg_group _ _ _ _ _ _ _ x p (fun k => ((k < H * N * (N * D)) && (k %/ D %/ N == b) && (k %% D == 0))%nat)); last first.
  by move=> k _; rewrite shallow_den_sel.
have HL' : (H * N * (N * D) <= size x)%nat by rewrite mulnA.
rewrite (sum_stride _ HD Hbl HL').
have := sum_stride (fun _ => 1 : R) HD Hbl HL'.
rewrite -big_filter sum_ones count_predT size_filter /index_iota subn0 => ->.
rewrite big_const_ord iter_addr addr0 mulrC divfK //.
by rewrite pnatr_eq0 -lt0n HN.
Qed.

(** The row sum: sum over the allowed keys of exp(score) over exp(row max). *)
Lemma shallow_den_sum :
  ev U_shallow_attn_o_den p = (\sum_(m < N | allowed M n i m) expR (scores P M n Zin t i m)) / expR mx.
Proof.
rewrite shallow_den mulr_suml [RHS]big_mkcond; apply: eq_bigr => j _.
have HbN : ((b * N + j) * D %/ D = b * N + j)%nat by rewrite mulnK.
have Hk : ((b * N + j) * D < H * N * N * D)%nat.
  rewrite ltn_mul2r HD /=; apply: (@leq_trans (b * N + N)); first by rewrite ltn_add2l.
  by rewrite -mulSnr leq_mul2r Hbl orbT.
rewrite (@shallow_exp _ j Hk); last by rewrite HbN modnMDl modn_small.
- by case: (allowed M n i j).
- by rewrite HbN divnMDl // (divn_small (ltn_ord j)) addn0 /b divnMDl // (divn_small (ltn_ord i)) addn0.
- by rewrite HbN divnMDl // (divn_small (ltn_ord j)) addn0 /b modnMDl modn_small.
Qed.

Lemma shallow_weight (q : nat) (j : 'I_N) : (q < (H * N)%nat * N * D)%nat ->
  (q %/ D %/ N %/ N)%nat = t -> (q %/ D %/ N %% N)%nat = i -> (q %/ D %% N)%nat = j ->
  ev U_shallow_attn_exp q / ev U_shallow_attn_o_den p = softmax_rows (@expR R) M n (scores P M n Zin t) i j.
Proof.
move=> Hq Ht Hi Hj; rewrite (shallow_exp Hq Ht Hi Hj) shallow_den_sum /softmax_rows [RHS]mxE Hin /=.
case: (allowed M n i j); last by rewrite mul0r.
have HE : expR mx != 0 by exact: lt0r_neq0 (expR_gt0 mx).
by rewrite invfM invrK mulrA mulrAC divfK.
Qed.

Lemma shallow_den_pos : (exists j : 'I_N, allowed M n i j) -> 0 < ev U_shallow_attn_o_den p.
Proof.
move=> [j0 Hj0]; rewrite shallow_den_sum divr_gt0 ?expR_gt0 // (bigD1 j0) //=.
apply: (Order.POrderTheory.lt_le_trans (expR_gt0 (scores P M n Zin t i j0))); rewrite ler_addl.
by apply: sumr_ge0 => m _; exact: Order.POrderTheory.ltW (expR_gt0 _).
Qed.

End Shallow.

Theorem U_compact_softmax_spec : U_compact_softmax_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x q i t j n p.
do 27 move=> ?; move=> Hq Ht Hi Hj Hin; apply: compact_weight; assumption.
Qed.

Theorem U_compact_softmax_den_pos : U_compact_softmax_den_pos_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i t n p.
do 27 move=> ?; move=> Hin Hex; apply: (@compact_den_pos R sqrtf geluf gelu_tanhf N D H K F P M X x i t n p); assumption.
Qed.


Theorem U_shallow_softmax_spec : U_shallow_softmax_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x q i t j n p.
do 27 move=> ?; move=> Hq Ht Hi Hj Hin; apply: shallow_weight; assumption.
Qed.

Theorem U_shallow_softmax_den_pos : U_shallow_softmax_den_pos_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i t n p.
do 27 move=> ?; move=> Hin Hex; apply: (@shallow_den_pos R sqrtf geluf gelu_tanhf N D H K F P M X x i t n p); assumption.
Qed.
