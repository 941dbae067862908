(** Theorem 6 in the kernel, thirteenth stage: the FFN's output added to x1.  U's own exported node
    [out.R2] at every query of the out grid (row i < n, column e < d_model) is EncoderLayer.v's
    [add_residual P x1 (ff_block P n Z2) i e], x1 = norm1 X1 when post-norm, else X1, Z2 the FFN's
    input (norm2 X1 pre-norm, norm1 X1 post-norm, X1 without a norm), X1 = add_residual P X
    (self_attn expR P M n Z), for every capacity N, D, H, K, F, both variants (generated
    statements: UniversalFfnOutStatement.v).

    [out.R2] = c2 + [out.ffn]: c2 the residual gate times [out.Y1] (the x1 stage) plus b2, [out.ffn]
    F times the mean over the keys (i, e, f) of [ffn2.prod] = [ffn2.u.act] (the FFN-1 stage) times
    W2 (read at (f, e)).  U sums every feature F, the layer dim_ff: W2 is zero beyond dim_ff rows. *)
From mathcomp Require Import all_ssreflect all_algebra.
From mathcomp Require Import reals sequences exp.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas UniversalLemmas UniversalFfnOutNodes EncoderLayer.
From Attnsim Require Import UniversalRowMean UniversalRowStats UniversalLayerNorm1Statement UniversalLayerNorm1.
From Attnsim Require Import UniversalQProjStatement UniversalQProj UniversalVProjStatement UniversalVProj.
From Attnsim Require Import UniversalScoresStatement UniversalScores UniversalSoftmaxStatement UniversalSoftmax.
From Attnsim Require Import UniversalHeadsStatement UniversalHeads UniversalAttnOutStatement UniversalAttnOut.
From Attnsim Require Import UniversalY1Statement UniversalY1 UniversalFfnActStatement UniversalFfnAct.
From Attnsim Require Import UniversalFfnOutStatement.
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
  (HLE : ((N * D * F)%nat <= size x)%nat).

Let HD : (0 < D)%nat. Proof. exact: leq_trans Hd0 HdD. Qed.
Let Hp' : (p < N * D)%nat. Proof. by move: Hp; rewrite mul1n. Qed.
Let Hpi' : (p %/ D)%nat = i.
Proof. by rewrite -Hpi modn_small // ltn_divLR. Qed.

(** [out.ffn]'s selector at p: the keys (i, e, f) of ffn2.products. *)
Lemma compact_ffn_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_compact_out_ffn_sum) x p k = ((k < N * D * F) && (k %/ F == p))%nat.
Proof.
rewrite /U_compact_out_ffn_sum /U_compact_out_ffn_key_group /U_compact_out_ffn_query_group /U_compact_indices /=.
rewrite !iif_range !Z.sub_0_r.
have -> : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia.
rewrite !zdiv_nat !zmod_nat.
have -> : (Z.of_nat (p %/ D) * Z.of_nat D + Z.of_nat (p %% D))%Z = Z.of_nat p.
  by rewrite [in RHS](divn_eq p D) Nat2Z.inj_add Nat2Z.inj_mul.
rewrite (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) /=.
have -> : (Z.of_nat N * Z.of_nat D * Z.of_nat F)%Z = Z.of_nat (N * D * F) by rewrite !Nat2Z.inj_mul.
rewrite ltb_nat; case: ltnP => Hk /=.
  have -> : (Z.of_nat (k %/ F %/ D) * Z.of_nat D + Z.of_nat (k %/ F %% D))%Z = Z.of_nat (k %/ F).
    by rewrite [in RHS](divn_eq (k %/ F) D) Nat2Z.inj_add Nat2Z.inj_mul.
  by rewrite eqb_of_nat.
by case E: (Z.of_nat p) => [|z|z] //; have := Nat2Z.is_nonneg p; rewrite E; lia.
Qed.

Lemma compact_prod (f : 'I_F) :
  ev U_compact_ffn2_prod (p * F + f)%nat
  = activation P (\sum_(j' < D | (j' < d_model P)%nat) Z2 i j' * W1 P j' f + b1 P 0 f) * W2 P f e.
Proof.
have Hq : (p * F + f < N * D * F)%nat by exact: lin_lt.
have HqF : ((p * F + f) %/ F)%nat = p by rewrite divnMDl ?divn_small ?addn0 //; apply: leq_ltn_trans (ltn_ord f).
have Hqi : ((p * F + f) %/ F %/ D)%nat = i by rewrite HqF.
have Hqf : ((p * F + f) %% F)%nat = f by rewrite modnMDl modn_small.
rewrite /U_compact_ffn2_prod eval_mul.
rewrite (@U_compact_ffn_act_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i f n (p * F + f)%nat HX Hd He Hg Hb Hpre
  Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV
  Hres Hbo Hwoh HH HLH Hin Hpost Hwoe Hboe HLQ Hg2 Hb2 Hw1 Hb1 Hw1pad HLF Hact Hq Hqi Hqf).
congr (_ * _).
have [HwL HwV] := Hw2 ord0 f e.
rewrite /U_compact_ffn2_w2 /U_compact_ffn2_w2_gather /U_compact_ffn2_w2_source /U_compact_indices /U_compact_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos (U_compact_w2_offset N D H K F) F D 0 f e)) //.
have Hqb : ((0 <=? Z.of_nat (p * F + f)) && (Z.of_nat (p * F + f) <? Z.of_nat N * Z.of_nat D * Z.of_nat F))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hq; lia.
cbv beta; rewrite iif_range Hqb Z.sub_0_r !zdiv_nat !zmod_nat Hqf HqF Hpe.
by rewrite /pos /U_compact_w2_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

Lemma compact_ff (Z : 'M[R]_(N, D)) :
  ff_block P n Z i e
  = \sum_(f < F) activation P (\sum_(j' < D | (j' < d_model P)%nat) Z i j' * W1 P j' f + b1 P 0 f) * W2 P f e
    + b2 P 0 e.
Proof.
rewrite /ff_block /block !mxE Hin Hed /=; congr (_ + _).
rewrite [RHS](bigID (fun f : 'I_F => (f < dim_ff P)%nat)) /= [X in _ = _ + X]big1 ?addr0 //.
by move=> f; rewrite -leqNgt => Hf; rewrite Hw2pad // mulr0.
Qed.

(** [out.R2] at p: c2 plus the FFN's output. *)
Lemma compact_r2 :
  ev U_compact_out_R2 p
  = add_residual P (if norm P is PostNorm then norm1 sqrtf P n X1 else X1) (ff_block P n Z2) i e.
Proof.
have -> : ev U_compact_out_R2 p
  = ev U_compact_residual p * ev U_compact_out_Y1 p + ev U_compact_out_b2 p
    + cst_sem R (CQ (Z.of_nat F) 1)
      * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_compact_out_ffn_sum) (Z5 U_compact_ffn2_prod)) x p by [].
have HLE' : (N * D * F <= size x)%nat by [].
rewrite cst_nat (@agg_last _ _ _ _ _ _ _ x p (N * D) F p Hp' HLE'); last by move=> k _; exact: compact_ffn_sel.
under eq_bigr => f _ do rewrite compact_prod.
rewrite (@U_compact_y1_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p HX Hd He Hg Hb Hpre Hsc Hm
  Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV
  Hres Hbo Hwoh HH HLH Hp Hpi Hpe Hin Hed Hpost Hwoe Hboe HLQ).
have [HoL _] := Hbo ord0 ord0 e.
have Eres : ev U_compact_residual p = if residual P then 1 else 0.
  rewrite /U_compact_residual /U_compact_residual_gather /U_compact_residual_source /U_compact_indices /U_compact_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_compact_gates_offset N D H K F + 0)) //.
    by rewrite /U_compact_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
  apply: leq_ltn_trans HoL.
  by rewrite /pos /U_compact_bo_offset /U_compact_gates_offset; clear; lia.
have Eb2 : ev U_compact_out_b2 p = b2 P 0 e.
  have [Hs1 Hs2] := encodes_row e Hbb2.
  rewrite /U_compact_out_b2 /U_compact_out_b2_gather /U_compact_out_b2_source /U_compact_indices /U_compact_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x p (U_compact_b2_offset N D H K F + e)) //.
  cbv beta; rewrite iif_range.
  have -> : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 0 + 1 * Z.of_nat N * Z.of_nat D))%Z = true.
    by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia.
  rewrite Z.sub_0_r zmod_nat Hpe /U_compact_b2_offset; clear.
  rewrite !Nat2Z.inj_add !Nat2Z.inj_mul; lia.
rewrite Eres Eb2 /add_residual.
case: (residual P); rewrite ?mul1r ?mul0r ?add0r; last by rewrite compact_ff addrC.
by rewrite [in RHS]mxE compact_ff -!addrA [b2 P 0 e + _]addrC.
Qed.

End Compact.

Theorem U_compact_ffn_out_spec : U_compact_ffn_out_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p.
do 55 move=> ?; apply: compact_r2; assumption.
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
  (HLE : ((N * D * F)%nat <= size x)%nat).

Let HD : (0 < D)%nat. Proof. exact: leq_trans Hd0 HdD. Qed.
Let Hp' : (p < N * D)%nat. Proof. by move: Hp; rewrite mul1n. Qed.
Let Hpi' : (p %/ D)%nat = i.
Proof. by rewrite -Hpi modn_small // ltn_divLR. Qed.

(** [out.ffn]'s selector at p: the keys (i, e, f) of ffn2.products. *)
Lemma shallow_ffn_sel (k : nat) :
  seval (@expR R) sqrtf geluf gelu_tanhf (Z5 U_shallow_out_ffn_sum) x p k = ((k < N * D * F) && (k %/ F == p))%nat.
Proof.
rewrite /U_shallow_out_ffn_sum /U_shallow_out_ffn_key_group /U_shallow_out_ffn_query_group /U_shallow_indices /=.
rewrite !iif_range !Z.sub_0_r.
have -> : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 1 * Z.of_nat N * Z.of_nat D))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia.
rewrite !zdiv_nat !zmod_nat.
have -> : (Z.of_nat (p %/ D) * Z.of_nat D + Z.of_nat (p %% D))%Z = Z.of_nat p.
  by rewrite [in RHS](divn_eq p D) Nat2Z.inj_add Nat2Z.inj_mul.
rewrite (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) /=.
have -> : (Z.of_nat N * Z.of_nat D * Z.of_nat F)%Z = Z.of_nat (N * D * F) by rewrite !Nat2Z.inj_mul.
rewrite ltb_nat; case: ltnP => Hk /=.
  have -> : (Z.of_nat (k %/ F %/ D) * Z.of_nat D + Z.of_nat (k %/ F %% D))%Z = Z.of_nat (k %/ F).
    by rewrite [in RHS](divn_eq (k %/ F) D) Nat2Z.inj_add Nat2Z.inj_mul.
  by rewrite eqb_of_nat.
by case E: (Z.of_nat p) => [|z|z] //; have := Nat2Z.is_nonneg p; rewrite E; lia.
Qed.

Lemma shallow_prod (f : 'I_F) :
  ev U_shallow_ffn2_prod (p * F + f)%nat
  = activation P (\sum_(j' < D | (j' < d_model P)%nat) Z2 i j' * W1 P j' f + b1 P 0 f) * W2 P f e.
Proof.
have Hq : (p * F + f < N * D * F)%nat by exact: lin_lt.
have HqF : ((p * F + f) %/ F)%nat = p by rewrite divnMDl ?divn_small ?addn0 //; apply: leq_ltn_trans (ltn_ord f).
have Hqi : ((p * F + f) %/ F %/ D)%nat = i by rewrite HqF.
have Hqf : ((p * F + f) %% F)%nat = f by rewrite modnMDl modn_small.
rewrite /U_shallow_ffn2_prod eval_mul.
rewrite (@U_shallow_ffn_act_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i f n (p * F + f)%nat HX Hd He Hg Hb Hpre
  Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV
  Hres Hbo Hwoh HH HLH Hin Hpost Hwoe Hboe HLQ Hg2 Hb2 Hw1 Hb1 Hw1pad HLF Hact Hq Hqi Hqf).
congr (_ * _).
have [HwL HwV] := Hw2 ord0 f e.
rewrite /U_shallow_ffn2_w2 /U_shallow_ffn2_w2_gather /U_shallow_ffn2_w2_source /U_shallow_indices /U_shallow_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (pos (U_shallow_w2_offset N D H K F) F D 0 f e)) //.
have Hqb : ((0 <=? Z.of_nat (p * F + f)) && (Z.of_nat (p * F + f) <? Z.of_nat N * Z.of_nat D * Z.of_nat F))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hq; lia.
cbv beta; rewrite iif_range Hqb Z.sub_0_r !zdiv_nat !zmod_nat Hqf HqF Hpe.
by rewrite /pos /U_shallow_w2_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

Lemma shallow_ff (Z : 'M[R]_(N, D)) :
  ff_block P n Z i e
  = \sum_(f < F) activation P (\sum_(j' < D | (j' < d_model P)%nat) Z i j' * W1 P j' f + b1 P 0 f) * W2 P f e
    + b2 P 0 e.
Proof.
rewrite /ff_block /block !mxE Hin Hed /=; congr (_ + _).
rewrite [RHS](bigID (fun f : 'I_F => (f < dim_ff P)%nat)) /= [X in _ = _ + X]big1 ?addr0 //.
by move=> f; rewrite -leqNgt => Hf; rewrite Hw2pad // mulr0.
Qed.

(** [out.R2] at p: c2 plus the FFN's output. *)
Lemma shallow_r2 :
  ev U_shallow_out_R2 p
  = add_residual P (if norm P is PostNorm then norm1 sqrtf P n X1 else X1) (ff_block P n Z2) i e.
Proof.
have -> : ev U_shallow_out_R2 p
  = ev U_shallow_residual p * ev U_shallow_out_Y1 p + ev U_shallow_out_b2 p
    + cst_sem R (CQ (Z.of_nat F) 1)
      * eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Z5 U_shallow_out_ffn_sum) (Z5 U_shallow_ffn2_prod)) x p by [].
have HLE' : (N * D * F <= size x)%nat by [].
rewrite cst_nat (@agg_last _ _ _ _ _ _ _ x p (N * D) F p Hp' HLE'); last by move=> k _; exact: shallow_ffn_sel.
under eq_bigr => f _ do rewrite shallow_prod.
rewrite (@U_shallow_y1_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p HX Hd He Hg Hb Hpre Hsc Hm
  Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV
  Hres Hbo Hwoh HH HLH Hp Hpi Hpe Hin Hed Hpost Hwoe Hboe HLQ).
have [HoL _] := Hbo ord0 ord0 e.
have Eres : ev U_shallow_residual p = if residual P then 1 else 0.
  rewrite /U_shallow_residual /U_shallow_residual_gather /U_shallow_residual_source /U_shallow_indices /U_shallow_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_shallow_gates_offset N D H K F + 0)) //.
    by rewrite /U_shallow_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
  apply: leq_ltn_trans HoL.
  by rewrite /pos /U_shallow_bo_offset /U_shallow_gates_offset; clear; lia.
have Eb2 : ev U_shallow_out_b2 p = b2 P 0 e.
  have [Hs1 Hs2] := encodes_row e Hbb2.
  rewrite /U_shallow_out_b2 /U_shallow_out_b2_gather /U_shallow_out_b2_source /U_shallow_indices /U_shallow_tokens.
  rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x p (U_shallow_b2_offset N D H K F + e)) //.
  cbv beta; rewrite iif_range.
  have -> : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 0 + 1 * Z.of_nat N * Z.of_nat D))%Z = true.
    by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia.
  rewrite Z.sub_0_r zmod_nat Hpe /U_shallow_b2_offset; clear.
  rewrite !Nat2Z.inj_add !Nat2Z.inj_mul; lia.
rewrite Eres Eb2 /add_residual.
case: (residual P); rewrite ?mul1r ?mul0r ?add0r; last by rewrite shallow_ff addrC.
by rewrite [in RHS]mxE shallow_ff -!addrA [b2 P 0 e + _]addrC.
Qed.

End Shallow.

Theorem U_shallow_ffn_out_spec : U_shallow_ffn_out_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p.
do 55 move=> ?; apply: shallow_r2; assumption.
Qed.
