(** Theorem 6 in the kernel, ninth stage: the head outputs.  U's own exported node [attn.o] at
    every query p of the head grid attn.heads (row i < n, column e, head t) is head t's term of
    EncoderLayer.v's [self_attn] before the sum over the heads and [bo]:
    [\sum_(c < K | c < d_head) head expR P M n Z t i c * Wo P t c e], Z = norm1 X when pre-norm,
    else X, for every capacity N, D, H, K, F, both variants (generated statements:
    UniversalHeadsStatement.v).

    U forms [attn.o] as [_head_out] does on every grid that reads a head output: the sum over the
    keys j of [attn.numer_terms] (attn.exp times vw, vw the sum over c of V.biased times Wo) over
    the sum over the keys of attn.exp.  The general lemmas [sum_stride_at], [agg_stride] and
    [head_out_sum] take that shape for any grid whose selectors pick the keys (b, j, e), j < C
    (a grid's own index maps decide b and e); the softmax stage gives attn.exp / attn.o.den, the
    V stage V.biased.  A key j >= n has weight 0, a column c >= d_head has Wo 0 (U's input map pads
    it so): so the sum over j and c is the head's.  When query i sees no key, both sides are 0
    (MathComp's x / 0 = 0, EncoderLayer's empty softmax row). *)
From mathcomp Require Import all_ssreflect all_algebra.
From mathcomp Require Import reals sequences exp.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas UniversalLemmas UniversalHeadsNodes EncoderLayer.
From Attnsim Require Import UniversalRowMean UniversalRowStats UniversalLayerNorm1Statement UniversalLayerNorm1.
From Attnsim Require Import UniversalQProjStatement UniversalQProj UniversalVProjStatement UniversalVProj.
From Attnsim Require Import UniversalScoresStatement UniversalScores UniversalSoftmaxStatement UniversalSoftmax.
From Attnsim Require Import UniversalHeadsStatement.
Import GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

(** * The shape of a sum node and of [_head_out], on any grid. *)
Section Generic.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.
Local Notation eval := (eval expf sqrtf geluf gelu_tanhf).
Local Notation seval := (seval expf sqrtf geluf gelu_tanhf).
Local Open Scope ring_scope.

(** The positions (b, j, e) of a grid (B, C, D), j < C: the sum over them of [f]. *)
Lemma sum_stride_at (f : nat -> R) (B C D L b e : nat) : (e < D)%nat -> (b < B)%nat -> (B * (C * D) <= L)%nat ->
  \sum_(0 <= k < L | ((k < B * (C * D)) && (k %/ D %/ C == b) && (k %% D == e))%nat) f k
  = \sum_(j < C) f ((b * C + j) * D + e)%nat.
Proof.
move=> He Hb HL.
have HD : (0 < D)%nat by apply: leq_ltn_trans He.
have HN : forall a, (a < C * D)%nat -> (a %/ D < C)%nat by move=> a Ha; rewrite ltn_divLR.
rewrite big_mkcond (@big_cat_nat _ _ _ (B * (C * D))) //= [X in _ + X]big1_seq ?addr0; last first.
  by move=> k /andP[_]; rewrite mem_index_iota => /andP[Hk _]; rewrite ltnNge Hk.
set g := fun k : nat => if ((k < B * (C * D)) && (k %/ D %/ C == b) && (k %% D == e))%nat then f k else 0.
rewrite big_mkord (eq_bigr (fun k : 'I_(B * (C * D)) => g k)) // (sum_split g) (bigD1 (Ordinal Hb)) //= [X in _ + X]big1 ?addr0; last first.
  move=> c /negbTE Hc; apply: big1 => a _.
  have Hca : ((c * (C * D) + a) %/ D %/ C)%nat = c.
    have HaN := HN a (ltn_ord a); have HN0 : (0 < C)%nat by apply: leq_ltn_trans HaN.
    by rewrite mulnA divnMDl // divnMDl // divn_small ?addn0.
  have Hcb : (c == b :> nat) = false by exact: Hc.
  by rewrite /g Hca Hcb andbF andFb.
rewrite (sum_split (fun a => g (b * (C * D) + a)%nat)); apply: eq_bigr => j _.
rewrite (bigD1 (Ordinal He)) //= [X in _ + X]big1 ?addr0; last first.
  move=> e' He'; rewrite /g.
  have -> : ((b * (C * D) + (j * D + e')) %% D)%nat = e' by rewrite addnA mulnA -mulnDl modnMDl modn_small.
  have -> : (e' == e :> nat) = false by exact: negbTE He'.
  by rewrite andbF.
have HN0 : (0 < C)%nat by apply: leq_ltn_trans (ltn_ord j).
have Hlt : (b * C + j < B * C)%nat.
  by apply: (@leq_trans (b * C + C)); [rewrite ltn_add2l ltn_ord | rewrite -mulSnr leq_mul2r Hb orbT].
have -> : (b * (C * D) + (j * D + e) = (b * C + j) * D + e)%nat by rewrite addnA mulnA -mulnDl.
rewrite /g divnMDl // (divn_small He) addn0 divnMDl // (divn_small (ltn_ord j)) addn0 eqxx andbT.
rewrite modnMDl modn_small // eqxx andbT; case: ifP => // /negbT; rewrite -leqNgt => Hge.
suff : ((b * C + j) * D + e < B * (C * D))%nat by rewrite ltnNge Hge.
rewrite mulnA; apply: (@leq_trans ((b * C + j).+1 * D)); first by rewrite mulSn [(D + _)%nat]addnC ltn_add2l.
by rewrite leq_mul2r Hlt orbT.
Qed.

(** A sum node of U ([_sum]: C times the mean over a group): when its selector picks the keys
    (b, j, e), j < C, of a grid (B, C, D), it is the sum over them. *)
Lemma agg_stride (s : sel) (v : sop) (x : seq R) (p B C D b e : nat) :
  (e < D)%nat -> (b < B)%nat -> (B * (C * D) <= size x)%nat ->
  (forall k, (k < size x)%nat -> seval s x p k = ((k < B * (C * D)) && (k %/ D %/ C == b) && (k %% D == e))%nat) ->
  C%:R * eval (Aggregate s v) x p = \sum_(j < C) eval v x ((b * C + j) * D + e)%nat.
Proof.
move=> He Hb HL Hs.
case: C Hs HL => [|C] Hs HL; first by rewrite mul0r big_ord0.
rewrite (@agg_group _ expf sqrtf geluf gelu_tanhf s v x p
  (fun k => ((k < B * (C.+1 * D)) && (k %/ D %/ C.+1 == b) && (k %% D == e))%nat) Hs) (sum_stride_at _ He Hb HL).
have := sum_stride_at (fun _ => 1 : R) He Hb HL.
rewrite -big_filter sum_ones count_predT size_filter /index_iota subn0 => ->.
rewrite big_const_ord iter_addr addr0 mulrC divfK //.
by rewrite pnatr_eq0.
Qed.

(** [_head_out]'s value: its numerator (N times the mean of the numerator terms over the keys
    (b, j, e), j < N) over its denominator node, read at the keys. *)
Lemma head_out_sum (sn : sel) (numer den : sop) (x : seq R) (p B N D b e : nat) :
  (e < D)%nat -> (b < B)%nat -> (B * (N * D) <= size x)%nat ->
  (forall k, (k < size x)%nat -> seval sn x p k = ((k < B * (N * D)) && (k %/ D %/ N == b) && (k %% D == e))%nat) ->
  eval (Map2 PDiv (Map1 (PScale (CQ (Z.of_nat N) 1)) (Aggregate sn numer)) den) x p
  = \sum_(j < N) eval numer x ((b * N + j) * D + e)%nat / eval den x p.
Proof.
move=> He Hb HL Hs; rewrite -mulr_suml -(agg_stride _ He Hb HL Hs).
by rewrite /= -/(cst_sem R (CQ (Z.of_nat N) 1)) cst_nat.
Qed.

End Generic.

Lemma mul_mod_eq2 (a r b e D : nat) : (r < D)%nat -> (e < D)%nat ->
  (a * D + r == b * D + e)%nat = (a == b) && (r == e).
Proof.
move=> Hr He; apply/eqP/andP => [E|[/eqP -> /eqP ->]] //.
have Er : r = e by have := congr1 (modn^~ D) E; rewrite /= !modnMDl !modn_small.
split; apply/eqP => //.
by move: E; rewrite Er => /addIn /(congr1 (divn^~ D)); rewrite /= !mulnK //; apply: leq_ltn_trans He.
Qed.

(** A key group that drops one coordinate of a grid (B', N, C, D) (B' = k / D / C / N): the key's
    (k / D / C) D + k mod D, as nat. *)
Lemma drop_coord (k D C N : nat) : (0 < N)%nat ->
  ((Z.of_nat (k %/ D %/ C %/ N)%nat * Z.of_nat N + Z.of_nat (k %/ D %/ C %% N)%nat) * Z.of_nat D
   + Z.of_nat (k %% D)%nat)%Z = Z.of_nat ((k %/ D %/ C) * D + k %% D)%nat.
Proof. by move=> HN; rewrite {3}(divn_eq (k %/ D %/ C) N) !Nat2Z.inj_add !Nat2Z.inj_mul; lia. Qed.

Lemma lin_lt (a b A B : nat) : (a < A)%nat -> (b < B)%nat -> (a * B + b < A * B)%nat.
Proof.
move=> Ha Hb; apply: (@leq_trans (a * B + B)); first by rewrite ltn_add2l.
by rewrite -mulSnr leq_mul2r Ha orbT.
Qed.

(** The coordinates of a position (a, b, c, d) of a grid (A, B, C, D). *)
Lemma grid4 (A B C D a b c d : nat) : (a < A)%nat -> (b < B)%nat -> (c < C)%nat -> (d < D)%nat ->
  [/\ (((a * B + b) * C + c) * D + d < A * B * C * D)%nat,
      ((((a * B + b) * C + c) * D + d) %/ D %/ C %/ B)%nat = a,
      ((((a * B + b) * C + c) * D + d) %/ D %/ C %% B)%nat = b,
      ((((a * B + b) * C + c) * D + d) %/ D %% C)%nat = c
    & ((((a * B + b) * C + c) * D + d) %% D)%nat = d].
Proof.
move=> Ha Hb Hc Hd.
have HD : (0 < D)%nat by apply: leq_ltn_trans Hd.
have HC : (0 < C)%nat by apply: leq_ltn_trans Hc.
have HB : (0 < B)%nat by apply: leq_ltn_trans Hb.
have E1 : ((((a * B + b) * C + c) * D + d) %/ D = (a * B + b) * C + c)%nat by rewrite divnMDl // divn_small // addn0.
have E2 : ((a * B + b) * C + c) %/ C = (a * B + b)%nat by rewrite divnMDl // divn_small // addn0.
split; rewrite ?E1 ?E2.
- exact: lin_lt (lin_lt (lin_lt Ha Hb) Hc) Hd.
- by rewrite divnMDl // divn_small // addn0.
- by rewrite modnMDl modn_small.
- by rewrite modnMDl modn_small.
- by rewrite modnMDl modn_small.
Qed.

(** * Compact U *)
Section Compact.
Local Open Scope ring_scope.
Variables (R : realType) (sqrtf geluf gelu_tanhf : R -> R) (N D H K F : nat) (P : params R D H K F)
  (M : mask R N) (X : 'M[R]_(N, D)) (x : seq R) (i : 'I_N) (t : 'I_H) (e : 'I_D) (n p : nat).
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
  (Hwv : encodes x (U_compact_wqkv_offset N D H K F + 2 * H * D * K)%nat H D K (Wv P))
  (Hbv : encodes x (U_compact_bqkv_offset N D H K F + 2 * H * K)%nat 1 H K (fun _ => \matrix_(t, c) bv P t 0 c))
  (Hwvpad : forall (t : 'I_H) (j : 'I_D) (c : 'I_K), (d_model P <= j)%nat -> Wv P t j c = 0)
  (Hwo : encodes x (U_compact_wo_offset N D H K F) H K D (Wo P))
  (Hwopad : forall (t : 'I_H) (c : 'I_K) (e : 'I_D), (d_head P <= c)%nat -> Wo P t c e = 0)
  (HLV : (((H * N)%nat * K * D)%nat <= size x)%nat)
  (Hpe : (p %/ H %% D)%nat = e) (Hin : (i < n)%nat).

Let HD : (0 < D)%nat. Proof. exact: leq_trans Hd0 HdD. Qed.
Let HN : (0 < N)%nat. Proof. exact: leq_ltn_trans (leq0n i) (ltn_ord i). Qed.
Let b := (t * N + i)%nat.
Let Hbl : (b < H * N)%nat. Proof. exact: lin_lt. Qed.

(** [attn.o.num]'s selector at p: the keys (t, i, j, e) of the attention grid. *)
Lemma compact_num_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_attn_o_num_sum) x p k
  = ((k < H * N * (N * D)) && (k %/ D %/ N == b) && (k %% D == e))%nat.
Proof.
have Hpb : ((0 <=? Z.of_nat p) && (Z.of_nat p <? Z.of_nat N * Z.of_nat D * Z.of_nat H))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp; lia.
rewrite /U_compact_attn_o_num_sum /U_compact_attn_o_num_key_group /U_compact_attn_o_num_query_group.
rewrite /U_compact_indices /= !iif_range Hpb !Z.sub_0_r !zdiv_nat !zmod_nat Hpt Hpi Hpe.
have -> : ((Z.of_nat t * Z.of_nat N + Z.of_nat i) * Z.of_nat D + Z.of_nat e = Z.of_nat (b * D + e)%nat)%Z.
  by rewrite /b !Nat2Z.inj_add !Nat2Z.inj_mul; lia.
rewrite (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) /=.
have -> : (Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat D)%Z = Z.of_nat (H * N * (N * D)) by rewrite !Nat2Z.inj_mul; lia.
rewrite ltb_nat; case: ltnP => Hk /=; last by case: (b * D + e)%nat.
by rewrite drop_coord // eqb_of_nat mul_mod_eq2 ?ltn_pmod ?ltn_ord.
Qed.

(** [vw]'s selector at a query (t, j, e) of the attention grid: the keys (t, j, c, e) of vwo. *)
Lemma compact_vw_sel (q : nat) (j : 'I_N) (k : nat) : (q < H * N * N * D)%nat ->
  (q %/ D %/ N %/ N)%nat = t -> (q %/ D %% N)%nat = j -> (q %% D)%nat = e ->
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_vw_sum) x q k
  = ((k < H * N * (K * D)) && (k %/ D %/ K == t * N + j) && (k %% D == e))%nat.
Proof.
move=> Hq Ht Hj He'.
have Hqb : ((0 <=? Z.of_nat q) && (Z.of_nat q <? Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hq; lia.
rewrite /U_compact_vw_sum /U_compact_vw_key_group /U_compact_vw_query_group.
rewrite /U_compact_indices /= !iif_range Hqb !Z.sub_0_r !zdiv_nat !zmod_nat Ht Hj He'.
have -> : ((Z.of_nat t * Z.of_nat N + Z.of_nat j) * Z.of_nat D + Z.of_nat e
          = Z.of_nat ((t * N + j) * D + e)%nat)%Z by rewrite !Nat2Z.inj_add !Nat2Z.inj_mul; lia.
rewrite (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) /=.
have -> : (Z.of_nat H * Z.of_nat N * Z.of_nat K * Z.of_nat D)%Z = Z.of_nat (H * N * (K * D)) by rewrite !Nat2Z.inj_mul; lia.
rewrite ltb_nat; case: ltnP => Hk /=; last by case: ((t * N + j) * D + e)%nat.
by rewrite drop_coord // eqb_of_nat mul_mod_eq2 ?ltn_pmod ?ltn_ord.
Qed.

(** [vwo.wo] at (t, j, c, e): Wo P t c e. *)
Lemma compact_wo (j : 'I_N) (c : 'I_K) : ev U_compact_vwo_wo (((t * N + j) * K + c) * D + e)%nat = Wo P t c e.
Proof.
have [Hv Hvt Hvj Hvc Hve] := grid4 (ltn_ord t) (ltn_ord j) (ltn_ord c) (ltn_ord e).
have [HwL HwV] := Hwo t c e.
rewrite /U_compact_vwo_wo /U_compact_vwo_wo_gather /U_compact_vwo_wo_source /U_compact_indices /U_compact_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos (U_compact_wo_offset N D H K F) K D t c e)) //.
have Hvb : ((0 <=? Z.of_nat (((t * N + j) * K + c) * D + e)%nat)
           && (Z.of_nat (((t * N + j) * K + c) * D + e)%nat <? 0 + Z.of_nat H * Z.of_nat N * Z.of_nat K * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hv; lia.
cbv beta; rewrite iif_range Hvb Z.sub_0_r !zdiv_nat !zmod_nat Hvt Hvc Hve.
by rewrite /pos /U_compact_wo_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

(** [vw] at (t, i, j, e), j < n: the sum over c < d_head of V times Wo. *)
Lemma compact_vw (j : 'I_N) : (j < n)%nat ->
  ev U_compact_vw ((b * N + j) * D + e)%nat
  = \sum_(c < K | (c < d_head P)%nat) proj P n (Wv P) (bv P) Zin t j c * Wo P t c e.
Proof.
move=> Hjn.
have [Hq Hqt Hqi Hqj Hqe] := grid4 (ltn_ord t) (ltn_ord i) (ltn_ord j) (ltn_ord e).
have HLV' : (H * N * (K * D) <= size x)%nat by rewrite mulnA.
rewrite /U_compact_vw eval_scale cst_nat /U_compact_vw_mean.
rewrite (@agg_stride _ _ _ _ _ _ _ x _ (H * N) K D (t * N + j) e (ltn_ord e) (lin_lt (ltn_ord t) (ltn_ord j)) HLV'); last first.
  by move=> k _; apply: compact_vw_sel.
rewrite [RHS]big_mkcond; apply: eq_bigr => c _.
rewrite /U_compact_vwo_prod eval_mul compact_wo.
have [Hv Hvt Hvj Hvc Hve] := grid4 (ltn_ord t) (ltn_ord j) (ltn_ord c) (ltn_ord e).
case: ltnP => Hc; last by rewrite Hwopad // mulr0.
by rewrite (@U_compact_v_spec R (@expR R) sqrtf geluf gelu_tanhf N D H K F P X x _ j t c n HX Hd He Hg Hb Hpre
  Hwv Hbv HL Hwvpad Hd0 HdD (Hpad j) Hv Hvt Hvj Hvc Hjn Hc).
Qed.

(** [attn.o] at p: head t's term of [self_attn] at (i, e). *)
Lemma compact_head :
  ev U_compact_attn_o p = \sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n Zin t i c * Wo P t c e.
Proof.
have HLD' : (H * N * (N * D) <= size x)%nat by rewrite mulnA.
rewrite /U_compact_attn_o /U_compact_attn_o_num /U_compact_attn_o_num_mean.
rewrite (@head_out_sum _ _ _ _ _ _ _ _ x p (H * N) N D b e (ltn_ord e) Hbl HLD'); last first.
  by move=> k _; exact: compact_num_sel.
set sr := softmax_rows (@expR R) M n (scores P M n Zin t).
transitivity (\sum_(j < N) \sum_(c < K | (c < d_head P)%nat) sr i j * (proj P n (Wv P) (bv P) Zin t j c * Wo P t c e)).
  apply: eq_bigr => j _.
  have [Hq Hqt Hqi Hqj Hqe] := grid4 (ltn_ord t) (ltn_ord i) (ltn_ord j) (ltn_ord e).
  rewrite /U_compact_attn_numer_terms eval_mul mulrAC.
  rewrite (@U_compact_softmax_spec R sqrtf geluf gelu_tanhf N D H K F P M X x _ i t j n p HX Hd He Hg Hb
    Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hp Hpt Hpi Hq Hqt Hqi Hqj Hin).
  rewrite -/sr; case Hjn: (j < n)%nat; first by rewrite compact_vw // mulr_sumr.
  have Hs : sr i j = 0 by rewrite /sr /softmax_rows mxE /allowed Hjn andbF.
  by rewrite Hs mul0r; symmetry; apply: big1 => c _; exact: mul0r.
rewrite exchange_big /=; apply: eq_bigr => c Hc.
rewrite /head /block !mxE Hin Hc /= mulr_suml [RHS]big_mkcond /=; apply: eq_bigr => j _.
case Hjn: (j < n)%nat; first by rewrite mulrA.
have Hs : sr i j = 0 by rewrite /sr /softmax_rows mxE /allowed Hjn andbF.
by rewrite Hs mul0r.
Qed.

End Compact.

Theorem U_compact_head_spec : U_compact_head_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i t e n p.
do 35 move=> ?; apply: compact_head; assumption.
Qed.

(** * Shallow U: the same nodes over the spread scores (its own node numbers). *)
Section Shallow.
Local Open Scope ring_scope.
Variables (R : realType) (sqrtf geluf gelu_tanhf : R -> R) (N D H K F : nat) (P : params R D H K F)
  (M : mask R N) (X : 'M[R]_(N, D)) (x : seq R) (i : 'I_N) (t : 'I_H) (e : 'I_D) (n p : nat).
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
  (Hwv : encodes x (U_shallow_wqkv_offset N D H K F + 2 * H * D * K)%nat H D K (Wv P))
  (Hbv : encodes x (U_shallow_bqkv_offset N D H K F + 2 * H * K)%nat 1 H K (fun _ => \matrix_(t, c) bv P t 0 c))
  (Hwvpad : forall (t : 'I_H) (j : 'I_D) (c : 'I_K), (d_model P <= j)%nat -> Wv P t j c = 0)
  (Hwo : encodes x (U_shallow_wo_offset N D H K F) H K D (Wo P))
  (Hwopad : forall (t : 'I_H) (c : 'I_K) (e : 'I_D), (d_head P <= c)%nat -> Wo P t c e = 0)
  (HLV : (((H * N)%nat * K * D)%nat <= size x)%nat)
  (Hpe : (p %/ H %% D)%nat = e) (Hin : (i < n)%nat).

Let HD : (0 < D)%nat. Proof. exact: leq_trans Hd0 HdD. Qed.
Let HN : (0 < N)%nat. Proof. exact: leq_ltn_trans (leq0n i) (ltn_ord i). Qed.
Let b := (t * N + i)%nat.
Let Hbl : (b < H * N)%nat. Proof. exact: lin_lt. Qed.

(** [attn.o.num]'s selector at p: the keys (t, i, j, e) of the attention grid. *)
Lemma shallow_num_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_attn_o_num_sum) x p k
  = ((k < H * N * (N * D)) && (k %/ D %/ N == b) && (k %% D == e))%nat.
Proof.
have Hpb : ((0 <=? Z.of_nat p) && (Z.of_nat p <? Z.of_nat N * Z.of_nat D * Z.of_nat H))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp; lia.
rewrite /U_shallow_attn_o_num_sum /U_shallow_attn_o_num_key_group /U_shallow_attn_o_num_query_group.
rewrite /U_shallow_indices /= !iif_range Hpb !Z.sub_0_r !zdiv_nat !zmod_nat Hpt Hpi Hpe.
have -> : ((Z.of_nat t * Z.of_nat N + Z.of_nat i) * Z.of_nat D + Z.of_nat e = Z.of_nat (b * D + e)%nat)%Z.
  by rewrite /b !Nat2Z.inj_add !Nat2Z.inj_mul; lia.
rewrite (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) /=.
have -> : (Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat D)%Z = Z.of_nat (H * N * (N * D)) by rewrite !Nat2Z.inj_mul; lia.
rewrite ltb_nat; case: ltnP => Hk /=; last by case: (b * D + e)%nat.
by rewrite drop_coord // eqb_of_nat mul_mod_eq2 ?ltn_pmod ?ltn_ord.
Qed.

(** [vw]'s selector at a query (t, j, e) of the attention grid: the keys (t, j, c, e) of vwo. *)
Lemma shallow_vw_sel (q : nat) (j : 'I_N) (k : nat) : (q < H * N * N * D)%nat ->
  (q %/ D %/ N %/ N)%nat = t -> (q %/ D %% N)%nat = j -> (q %% D)%nat = e ->
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_vw_sum) x q k
  = ((k < H * N * (K * D)) && (k %/ D %/ K == t * N + j) && (k %% D == e))%nat.
Proof.
move=> Hq Ht Hj He'.
have Hqb : ((0 <=? Z.of_nat q) && (Z.of_nat q <? Z.of_nat H * Z.of_nat N * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hq; lia.
rewrite /U_shallow_vw_sum /U_shallow_vw_key_group /U_shallow_vw_query_group.
rewrite /U_shallow_indices /= !iif_range Hqb !Z.sub_0_r !zdiv_nat !zmod_nat Ht Hj He'.
have -> : ((Z.of_nat t * Z.of_nat N + Z.of_nat j) * Z.of_nat D + Z.of_nat e
          = Z.of_nat ((t * N + j) * D + e)%nat)%Z by rewrite !Nat2Z.inj_add !Nat2Z.inj_mul; lia.
rewrite (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) /=.
have -> : (Z.of_nat H * Z.of_nat N * Z.of_nat K * Z.of_nat D)%Z = Z.of_nat (H * N * (K * D)) by rewrite !Nat2Z.inj_mul; lia.
rewrite ltb_nat; case: ltnP => Hk /=; last by case: ((t * N + j) * D + e)%nat.
by rewrite drop_coord // eqb_of_nat mul_mod_eq2 ?ltn_pmod ?ltn_ord.
Qed.

(** [vwo.wo] at (t, j, c, e): Wo P t c e. *)
Lemma shallow_wo (j : 'I_N) (c : 'I_K) : ev U_shallow_vwo_wo (((t * N + j) * K + c) * D + e)%nat = Wo P t c e.
Proof.
have [Hv Hvt Hvj Hvc Hve] := grid4 (ltn_ord t) (ltn_ord j) (ltn_ord c) (ltn_ord e).
have [HwL HwV] := Hwo t c e.
rewrite /U_shallow_vwo_wo /U_shallow_vwo_wo_gather /U_shallow_vwo_wo_source /U_shallow_indices /U_shallow_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos (U_shallow_wo_offset N D H K F) K D t c e)) //.
have Hvb : ((0 <=? Z.of_nat (((t * N + j) * K + c) * D + e)%nat)
           && (Z.of_nat (((t * N + j) * K + c) * D + e)%nat <? 0 + Z.of_nat H * Z.of_nat N * Z.of_nat K * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hv; lia.
cbv beta; rewrite iif_range Hvb Z.sub_0_r !zdiv_nat !zmod_nat Hvt Hvc Hve.
by rewrite /pos /U_shallow_wo_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

(** [vw] at (t, i, j, e), j < n: the sum over c < d_head of V times Wo. *)
Lemma shallow_vw (j : 'I_N) : (j < n)%nat ->
  ev U_shallow_vw ((b * N + j) * D + e)%nat
  = \sum_(c < K | (c < d_head P)%nat) proj P n (Wv P) (bv P) Zin t j c * Wo P t c e.
Proof.
move=> Hjn.
have [Hq Hqt Hqi Hqj Hqe] := grid4 (ltn_ord t) (ltn_ord i) (ltn_ord j) (ltn_ord e).
have HLV' : (H * N * (K * D) <= size x)%nat by rewrite mulnA.
rewrite /U_shallow_vw eval_scale cst_nat /U_shallow_vw_mean.
rewrite (@agg_stride _ _ _ _ _ _ _ x _ (H * N) K D (t * N + j) e (ltn_ord e) (lin_lt (ltn_ord t) (ltn_ord j)) HLV'); last first.
  by move=> k _; apply: shallow_vw_sel.
rewrite [RHS]big_mkcond; apply: eq_bigr => c _.
rewrite /U_shallow_vwo_prod eval_mul shallow_wo.
have [Hv Hvt Hvj Hvc Hve] := grid4 (ltn_ord t) (ltn_ord j) (ltn_ord c) (ltn_ord e).
case: ltnP => Hc; last by rewrite Hwopad // mulr0.
by rewrite (@U_shallow_v_spec R (@expR R) sqrtf geluf gelu_tanhf N D H K F P X x _ j t c n HX Hd He Hg Hb Hpre
  Hwv Hbv HL Hwvpad Hd0 HdD (Hpad j) Hv Hvt Hvj Hvc Hjn Hc).
Qed.

(** [attn.o] at p: head t's term of [self_attn] at (i, e). *)
Lemma shallow_head :
  ev U_shallow_attn_o p = \sum_(c < K | (c < d_head P)%nat) head (@expR R) P M n Zin t i c * Wo P t c e.
Proof.
have HLD' : (H * N * (N * D) <= size x)%nat by rewrite mulnA.
rewrite /U_shallow_attn_o /U_shallow_attn_o_num /U_shallow_attn_o_num_mean.
rewrite (@head_out_sum _ _ _ _ _ _ _ _ x p (H * N) N D b e (ltn_ord e) Hbl HLD'); last first.
  by move=> k _; exact: shallow_num_sel.
set sr := softmax_rows (@expR R) M n (scores P M n Zin t).
transitivity (\sum_(j < N) \sum_(c < K | (c < d_head P)%nat) sr i j * (proj P n (Wv P) (bv P) Zin t j c * Wo P t c e)).
  apply: eq_bigr => j _.
  have [Hq Hqt Hqi Hqj Hqe] := grid4 (ltn_ord t) (ltn_ord i) (ltn_ord j) (ltn_ord e).
  rewrite /U_shallow_attn_numer_terms eval_mul mulrAC.
  rewrite (@U_shallow_softmax_spec R sqrtf geluf gelu_tanhf N D H K F P M X x _ i t j n p HX Hd He Hg Hb
    Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hp Hpt Hpi Hq Hqt Hqi Hqj Hin).
  rewrite -/sr; case Hjn: (j < n)%nat; first by rewrite shallow_vw // mulr_sumr.
  have Hs : sr i j = 0 by rewrite /sr /softmax_rows mxE /allowed Hjn andbF.
  by rewrite Hs mul0r; symmetry; apply: big1 => c _; exact: mul0r.
rewrite exchange_big /=; apply: eq_bigr => c Hc.
rewrite /head /block !mxE Hin Hc /= mulr_suml [RHS]big_mkcond /=; apply: eq_bigr => j _.
case Hjn: (j < n)%nat; first by rewrite mulrA.
have Hs : sr i j = 0 by rewrite /sr /softmax_rows mxE /allowed Hjn andbF.
by rewrite Hs mul0r.
Qed.

End Shallow.

Theorem U_shallow_head_spec : U_shallow_head_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i t e n p.
do 35 move=> ?; apply: shallow_head; assumption.
Qed.
