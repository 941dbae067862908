(** Theorem 6 in the kernel, fourteenth stage: the whole layer.  U's own exported node [Y]
    (where(ffn gate, out.Y2, out.Y1) times the row mask [i < n] and the column mask [e < d]) at
    EVERY query of the out grid (every row i < N, column e < D) is EncoderLayer.v's
    [encoder_layer expR sqrtf P M n X i e], for every capacity N, D, H, K, F, both variants
    (generated statements: UniversalLayerStatement.v):

    - [U_<v>_layer_of_y2]: every layer, given out.Y2's equation at the query (when the layer has an
      FFN, i < n and e < d_model: norm2 X2 when post-norm, else X2, X2 = FFN_OUT's right-hand side);
    - [U_<v>_layer_spec]: every layer but post-norm with an FFN (that one needs LayerNorm 2): without
      post-norm out.Y2 is out.R2 (FFN_OUT), without an FFN Y is out.Y1 (the x1 stage);
    - [U_<v>_layer_out_spec]: U's program (node U: Y over X) at X's entry (i, e), the same layers.

    EncoderLayer reads [block n d X], the stages read X: LayerNorm, the projections, self-attention
    and the FFN read their input only inside the n x d_model block ([agree]), and every sublayer is
    0 outside it ([outside0]), as U's masks make Y. *)
From mathcomp Require Import all_ssreflect all_algebra.
From mathcomp Require Import reals sequences exp.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas UniversalLemmas UniversalLayerNodes EncoderLayer.
From Attnsim Require Import UniversalRowMean UniversalRowStats UniversalLayerNorm1Statement UniversalLayerNorm1.
From Attnsim Require Import UniversalQProjStatement UniversalVProjStatement UniversalScoresStatement.
From Attnsim Require Import UniversalSoftmaxStatement UniversalHeadsStatement UniversalHeads UniversalAttnOutStatement.
From Attnsim Require Import UniversalY1Statement UniversalY1 UniversalFfnActStatement UniversalFfnAct.
From Attnsim Require Import UniversalFfnOutStatement UniversalFfnOut UniversalLayerStatement.
Import GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

(** * The layer reads its input only on the n x d_model block, and is 0 outside it. *)
Section Block.
Variables (R : realFieldType) (expf sqrtf : R -> R) (N D H K F : nat) (P : params R D H K F)
  (M : mask R N) (n : nat).
Local Notation d := (d_model P).

(** Two matrices equal on the block (rows < n, columns < d_model). *)
Definition agree (A B : 'M[R]_(N, D)) : Prop :=
  forall (i : 'I_N) (j : 'I_D), (i < n)%nat -> (j < d)%nat -> A i j = B i j.

(** A matrix 0 outside the block. *)
Definition outside0 (A : 'M[R]_(N, D)) : Prop :=
  forall (i : 'I_N) (j : 'I_D), ~~ ((i < n) && (j < d))%nat -> A i j = 0.

Lemma agree_block (A : 'M[R]_(N, D)) : agree (block n d A) A.
Proof. by move=> i j Hi Hj; rewrite mxE Hi Hj. Qed.

Lemma ln_agree (w b : 'rV[R]_D) (A B : 'M[R]_(N, D)) :
  agree A B -> layer_norm sqrtf P n w b A = layer_norm sqrtf P n w b B.
Proof.
move=> HAB; apply/matrixP => i j; rewrite !mxE; case: ifP => // /andP[Hi Hj].
have Hm : row_mean P A i = row_mean P B i.
  by rewrite /row_mean; congr (_ / _); apply: eq_bigr => k Hk; rewrite HAB.
have Hv : row_var P A i = row_var P B i.
  by rewrite /row_var; congr (_ / _); apply: eq_bigr => k Hk; rewrite HAB // Hm.
by rewrite Hm Hv HAB.
Qed.

Lemma proj_agree (W : 'I_H -> 'M[R]_(D, K)) (b : 'I_H -> 'rV[R]_K) (A B : 'M[R]_(N, D)) (t : 'I_H) :
  agree A B -> proj P n W b A t = proj P n W b B t.
Proof.
move=> HAB; apply/matrixP => i c; rewrite !mxE; case: ifP => // /andP[Hi _].
by congr (_ + _); apply: eq_bigr => j Hj; rewrite HAB.
Qed.

Lemma head_agree (A B : 'M[R]_(N, D)) (t : 'I_H) : agree A B -> head expf P M n A t = head expf P M n B t.
Proof. by move=> HAB; rewrite /head /scores !(proj_agree _ _ _ HAB). Qed.

Lemma sa_agree (A B : 'M[R]_(N, D)) : agree A B -> self_attn expf P M n A = self_attn expf P M n B.
Proof.
move=> HAB; apply/matrixP => i j; rewrite !mxE; case: ifP => // _.
by congr (_ + _); apply: eq_bigr => t _; rewrite (head_agree _ HAB).
Qed.

Lemma ff_agree (A B : 'M[R]_(N, D)) : agree A B -> ff_block P n A = ff_block P n B.
Proof.
move=> HAB; apply/matrixP => i j; rewrite !mxE; case: ifP => // /andP[Hi _].
congr (_ + _); apply: eq_bigr => f _; congr (activation P (_ + _) * _).
by apply: eq_bigr => j' Hj'; rewrite HAB.
Qed.

Lemma res_agree (A B S : 'M[R]_(N, D)) : agree A B -> agree (add_residual P A S) (add_residual P B S).
Proof. by move=> HAB i j Hi Hj; rewrite /add_residual; case: (residual P); rewrite ?mxE ?HAB. Qed.

Lemma out_block (A : 'M[R]_(N, D)) : outside0 (block n d A).
Proof. by move=> i j Ho; rewrite mxE (negbTE Ho). Qed.

Lemma out_res (A S : 'M[R]_(N, D)) : outside0 A -> outside0 S -> outside0 (add_residual P A S).
Proof. by move=> HA HS i j Ho; rewrite /add_residual; case: (residual P); rewrite ?mxE ?HA ?HS ?addr0. Qed.

(** Outside the block the layer is 0. *)
Lemma enc_out (X : 'M[R]_(N, D)) (i : 'I_N) (e : 'I_D) :
  ~~ ((i < n) && (e < d))%nat -> encoder_layer expf sqrtf P M n X i e = 0.
Proof.
move=> Hout; suff HZ : outside0 (encoder_layer expf sqrtf P M n X) by exact: HZ.
rewrite /encoder_layer /=; case: (norm P); case: (has_ffn P);
  repeat (apply: out_res || apply: out_block).
Qed.

Local Notation Zin X := (if norm P is PreNorm then norm1 sqrtf P n X else X%R).
Local Notation X1 X := (add_residual P X (self_attn expf P M n (Zin X))).
Local Notation x1 X := (if norm P is PostNorm then norm1 sqrtf P n (X1 X) else X1 X).
Local Notation Z2 X := (match norm P with PreNorm => norm2 sqrtf P n (X1 X) | PostNorm => norm1 sqrtf P n (X1 X)
  | NoNorm => X1 X end).
Local Notation X2 X := (add_residual P (x1 X) (ff_block P n (Z2 X))).

(** Inside the block: the layer without an FFN is x1 (the x1 stage's right-hand side). *)
Lemma enc_no_ffn (X : 'M[R]_(N, D)) (i : 'I_N) (e : 'I_D) : (i < n)%nat -> (e < d)%nat ->
  ~~ has_ffn P -> encoder_layer expf sqrtf P M n X i e = x1 X i e.
Proof.
move=> Hi He; have Hb := agree_block X.
rewrite /encoder_layer /= => /negbTE ->; rewrite /norm1.
case: (norm P) => /=.
- by rewrite (sa_agree Hb); exact: res_agree.
- by rewrite (sa_agree Hb) (ln_agree _ _ (res_agree _ Hb)).
- by rewrite (ln_agree _ _ Hb); exact: res_agree.
Qed.

(** Inside the block: the layer with an FFN is norm2 X2 (post-norm) or X2. *)
Lemma enc_ffn (X : 'M[R]_(N, D)) (i : 'I_N) (e : 'I_D) : (i < n)%nat -> (e < d)%nat ->
  has_ffn P -> encoder_layer expf sqrtf P M n X i e
  = (if norm P is PostNorm then norm2 sqrtf P n (X2 X) else X2 X) i e.
Proof.
move=> Hi He; have Hb := agree_block X.
rewrite /encoder_layer /= => ->; rewrite /norm1 /norm2.
case: (norm P) => /=.
- rewrite (sa_agree Hb); have H1 := res_agree (self_attn expf P M n X) Hb.
  by rewrite (ff_agree H1); exact: res_agree.
- by rewrite (sa_agree Hb) (ln_agree _ _ (res_agree _ Hb)).
- rewrite (ln_agree _ _ Hb).
  have H1 := res_agree (self_attn expf P M n (layer_norm sqrtf P n (norm1_w P) (norm1_b P) X)) Hb.
  by rewrite (ln_agree _ _ H1); exact: res_agree.
Qed.

End Block.

(** A where node: its then-branch where its condition is nonzero, else its else-branch. *)
Lemma eval_where (R : realFieldType) (expf sqrtf geluf gelu_tanhf : R -> R) (c a b : sop) (x : seq R) (q : nat) :
  eval expf sqrtf geluf gelu_tanhf (Map3 PWhere c a b) x q
  = if eval expf sqrtf geluf gelu_tanhf c x q != 0 then eval expf sqrtf geluf gelu_tanhf a x q
    else eval expf sqrtf geluf gelu_tanhf b x q.
Proof. by []. Qed.

(** X's entry (i, e) in the encoding: a position of the out grid on row i, column e. *)
Lemma pos_x (N D : nat) (i : 'I_N) (e : 'I_D) :
  [/\ (pos 0 N D 0 i e < 1 * N * D)%nat, (pos 0 N D 0 i e %/ D %% N)%nat = i & (pos 0 N D 0 i e %% D)%nat = e].
Proof.
have HD : (0 < D)%nat by exact: leq_ltn_trans (leq0n e) (ltn_ord e).
rewrite /pos mul0n !add0n mul1n; split; first exact: lin_lt.
  by rewrite divnMDl // divn_small // addn0 modn_small.
by rewrite modnMDl modn_small.
Qed.

(** * Compact U *)
Section Compact.
Variables (R : realType) (sqrtf geluf gelu_tanhf : R -> R) (N D H K F : nat) (P : params R D H K F)
  (M : mask R N) (X : 'M[R]_(N, D)) (x : seq R) (i : 'I_N) (e : 'I_D) (n p : nat).
Local Notation Z5 g := (g (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)).
Local Notation ev a k := (eval (@expR R) sqrtf geluf gelu_tanhf (Z5 a) x k).
Local Notation Zin := (if norm P is PreNorm then norm1 sqrtf P n X else X).
Local Notation X1 := (add_residual P X (self_attn (@expR R) P M n Zin)).
Local Notation Z2 := (match norm P with PreNorm => norm2 sqrtf P n X1 | PostNorm => norm1 sqrtf P n X1 | NoNorm => X1 end).
Local Notation X2 := (add_residual P (if norm P is PostNorm then norm1 sqrtf P n X1 else X1) (ff_block P n Z2)).
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
  (Hffn : nth 0 x (U_compact_gates_offset N D H K F + 5)%nat = (if has_ffn P then 1 else 0)).


Let HD : (0 < D)%nat. Proof. exact: leq_trans Hd0 HdD. Qed.
Let Hp' : (p < N * D)%nat. Proof. by move: Hp; rewrite mul1n. Qed.
Let Hpi' : (p %/ D)%nat = i.
Proof. by rewrite -Hpi modn_small // ltn_divLR. Qed.
Let Hpin : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 0 + 1 * Z.of_nat N * Z.of_nat D))%Z = true.
Proof. by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia. Qed.

(** The header (n, d) and the gates lie before bo. *)
Let Hbo_at (z : nat) : (z <= U_compact_bo_offset N D H K F)%nat -> (z < size x)%nat.
Proof.
move=> Hz; have [HoL _] := Hbo ord0 ord0 e; apply: leq_ltn_trans HoL.
by apply: leq_trans Hz _; rewrite /pos; clear; lia.
Qed.

Lemma compact_gate_p (g : nat) (src : Z -> Z) : (g < 8)%nat ->
  src (Z.of_nat p) = Z.of_nat (U_compact_gates_offset N D H K F + g) ->
  eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Select Indices (IMap1 src Indices) CEq) Tokens) x p
  = nth 0 x (U_compact_gates_offset N D H K F + g).
Proof.
move=> Hg8 Hsrc; rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_compact_gates_offset N D H K F + g)) //.
by apply: Hbo_at; rewrite /U_compact_bo_offset /U_compact_gates_offset; clear -Hg8; lia.
Qed.

Lemma compact_ffn_gate : ev U_compact_ffn p = if has_ffn P then 1 else 0.
Proof.
rewrite /U_compact_ffn /U_compact_ffn_gather /U_compact_ffn_source /U_compact_indices /U_compact_tokens.
rewrite (@compact_gate_p 5) //.
by rewrite /U_compact_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

Lemma compact_post_gate : ev U_compact_post p = if norm P is PostNorm then 1 else 0.
Proof.
rewrite /U_compact_post /U_compact_post_gather /U_compact_post_source /U_compact_indices /U_compact_tokens.
rewrite (@compact_gate_p 2) //.
by rewrite /U_compact_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

Lemma compact_n_at : ev U_compact_n p = n%:R.
Proof.
rewrite /U_compact_n /U_compact_n_gather /U_compact_n_source /U_compact_indices /U_compact_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x p (N * D)) //.
  by cbv beta; rewrite Nat2Z.inj_mul; clear; lia.
by apply: Hbo_at; rewrite /U_compact_bo_offset; clear; lia.
Qed.

Lemma compact_d_at : ev U_compact_d p = (d_model P)%:R.
Proof. by rewrite /U_compact_d /U_compact_tokens (read_d Hd Hd0) // => k; rewrite compact_d_sel. Qed.

(** The masks: [i < n] (n at the header), [e < d] (d at the header). *)
Lemma compact_rows : ev U_compact_mask_rows p = if (i < n)%nat then 1 else 0.
Proof.
have -> : ev U_compact_mask_rows p
  = flag R (zR R (ieval (Z5 U_compact_mask_rows_coord) (size x) p) < ev U_compact_n p)
    * zR R (ieval (Z5 U_compact_mask_rows_inside) (size x) p) by [].
rewrite compact_n_at /U_compact_mask_rows_coord /U_compact_mask_rows_inside /U_compact_indices /=.
rewrite !iif_range Hpin Z.sub_0_r zdiv_nat Hpi' zR_nat ltr_nat /flag /zR /= subr0 mulr1.
by case: ifP.
Qed.

Lemma compact_cols : ev U_compact_mask_cols p = if (e < d_model P)%nat then 1 else 0.
Proof.
have -> : ev U_compact_mask_cols p
  = flag R (zR R (ieval (Z5 U_compact_mask_cols_coord) (size x) p) < ev U_compact_d p)
    * zR R (ieval (Z5 U_compact_mask_cols_inside) (size x) p) by [].
rewrite compact_d_at /U_compact_mask_cols_coord /U_compact_mask_cols_inside /U_compact_indices /=.
rewrite !iif_range Hpin Z.sub_0_r zmod_nat Hpe zR_nat ltr_nat /flag /zR /= subr0 mulr1.
by case: ifP.
Qed.

(** Y at p: the layer, given out.Y2's equation when the layer has an FFN (the generic lemma). *)
Lemma compact_layer_of_y2 :
  (has_ffn P -> (i < n)%nat -> (e < d_model P)%nat ->
    ev U_compact_out_Y2 p = (if norm P is PostNorm then norm2 sqrtf P n X2 else X2) i e) ->
  ev U_compact_Y p = encoder_layer (@expR R) sqrtf P M n X i e.
Proof.
move=> HY2.
have -> : ev U_compact_Y p
  = (if ev U_compact_ffn p != 0 then ev U_compact_out_Y2 p else ev U_compact_out_Y1 p)
    * (ev U_compact_mask_rows p * ev U_compact_mask_cols p) by [].
rewrite compact_rows compact_cols.
case: (boolP ((i < n) && (e < d_model P))%nat) => [/andP[Hin Hed] | Hout]; last first.
  have Hz : (if (i < n)%nat then 1 else 0) * (if (e < d_model P)%nat then 1 else 0) = 0 :> R.
    by move: Hout; rewrite negb_and => /orP[] /negbTE ->; rewrite ?mulr0 ?mul0r.
  by rewrite (enc_out _ _ _ _ Hout) Hz mulr0.
rewrite Hin Hed !mulr1 compact_ffn_gate.
case Hf: (has_ffn P); rewrite ?ne10 ?ne00.
  by rewrite (HY2 Hf Hin Hed) enc_ffn ?Hf.
rewrite enc_no_ffn ?Hf //.
exact: (@U_compact_y1_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p HX Hd He Hg Hb Hpre Hsc Hm
  Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV
  Hres Hbo Hwoh HH HLH Hp Hpi Hpe Hin Hed Hpost Hwoe Hboe HLQ).
Qed.

(** Without post-norm, out.Y2 is out.R2 (the post gate 0): FFN_OUT's X2. *)
Lemma compact_y2_not_post : (norm P = PostNorm -> ~~ has_ffn P) ->
  has_ffn P -> (i < n)%nat -> (e < d_model P)%nat ->
  ev U_compact_out_Y2 p = (if norm P is PostNorm then norm2 sqrtf P n X2 else X2) i e.
Proof.
move=> Hcov Hf Hin Hed.
rewrite /U_compact_out_Y2 eval_where compact_post_gate (@U_compact_ffn_out_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p HX Hd He Hg Hb
  Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad
  HLV Hres Hbo Hwoh HH HLH Hp Hpi Hpe Hin Hed Hpost Hwoe Hboe HLQ Hg2 Hb2 Hw1 Hb1 Hw1pad HLF Hact Hw2 Hbb2
  Hw2pad HLE).
have Hnp : norm P <> PostNorm by move=> E; move: (Hcov E); rewrite Hf.
have Hpn (T : Type) (a b : T) : (if norm P is PostNorm then a else b) = b by case: (norm P) Hnp.
by rewrite !Hpn ne00.
Qed.

End Compact.

Theorem U_compact_layer_of_y2 : U_compact_layer_of_y2_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p.
do 54 move=> ?; move=> HY2; apply: compact_layer_of_y2; assumption.
Qed.

Theorem U_compact_layer_spec : U_compact_layer_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p.
do 54 move=> ?; move=> Hcov; apply: compact_layer_of_y2; try assumption.
by apply: compact_y2_not_post; assumption.
Qed.

Theorem U_compact_layer_out_spec : U_compact_layer_out_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i e n.
do 51 move=> ?; move=> Hcov.
have [Hp Hpi Hpe] := pos_x i e.
have HisX : eval (@expR R) sqrtf geluf gelu_tanhf
  (OfIdx (U_compact_is_X (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F))) x (pos 0 N D 0 i e) = 1.
  rewrite /= /U_compact_is_X /U_compact_indices /= iif_range.
  have -> : ((0 <=? Z.of_nat (pos 0 N D 0 i e)) && (Z.of_nat (pos 0 N D 0 i e) <? 0 + 1 * Z.of_nat N * Z.of_nat D))%Z = true.
    by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp; lia.
  by rewrite /zR /= subr0.
rewrite /U_compact eval_where HisX ne10.
by apply: (@U_compact_layer_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i e n (pos 0 N D 0 i e)); assumption.
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
Local Notation X2 := (add_residual P (if norm P is PostNorm then norm1 sqrtf P n X1 else X1) (ff_block P n Z2)).
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
  (Hffn : nth 0 x (U_shallow_gates_offset N D H K F + 5)%nat = (if has_ffn P then 1 else 0)).


Let HD : (0 < D)%nat. Proof. exact: leq_trans Hd0 HdD. Qed.
Let Hp' : (p < N * D)%nat. Proof. by move: Hp; rewrite mul1n. Qed.
Let Hpi' : (p %/ D)%nat = i.
Proof. by rewrite -Hpi modn_small // ltn_divLR. Qed.
Let Hpin : ((0 <=? Z.of_nat p) && (Z.of_nat p <? 0 + 1 * Z.of_nat N * Z.of_nat D))%Z = true.
Proof. by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp'; lia. Qed.

(** The header (n, d) and the gates lie before bo. *)
Let Hbo_at (z : nat) : (z <= U_shallow_bo_offset N D H K F)%nat -> (z < size x)%nat.
Proof.
move=> Hz; have [HoL _] := Hbo ord0 ord0 e; apply: leq_ltn_trans HoL.
by apply: leq_trans Hz _; rewrite /pos; clear; lia.
Qed.

Lemma shallow_gate_p (g : nat) (src : Z -> Z) : (g < 8)%nat ->
  src (Z.of_nat p) = Z.of_nat (U_shallow_gates_offset N D H K F + g) ->
  eval (@expR R) sqrtf geluf gelu_tanhf (Aggregate (Select Indices (IMap1 src Indices) CEq) Tokens) x p
  = nth 0 x (U_shallow_gates_offset N D H K F + g).
Proof.
move=> Hg8 Hsrc; rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x _ (U_shallow_gates_offset N D H K F + g)) //.
by apply: Hbo_at; rewrite /U_shallow_bo_offset /U_shallow_gates_offset; clear -Hg8; lia.
Qed.

Lemma shallow_ffn_gate : ev U_shallow_ffn p = if has_ffn P then 1 else 0.
Proof.
rewrite /U_shallow_ffn /U_shallow_ffn_gather /U_shallow_ffn_source /U_shallow_indices /U_shallow_tokens.
rewrite (@shallow_gate_p 5) //.
by rewrite /U_shallow_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

Lemma shallow_post_gate : ev U_shallow_post p = if norm P is PostNorm then 1 else 0.
Proof.
rewrite /U_shallow_post /U_shallow_post_gather /U_shallow_post_source /U_shallow_indices /U_shallow_tokens.
rewrite (@shallow_gate_p 2) //.
by rewrite /U_shallow_gates_offset !Nat2Z.inj_add !Nat2Z.inj_mul; clear; lia.
Qed.

Lemma shallow_n_at : ev U_shallow_n p = n%:R.
Proof.
rewrite /U_shallow_n /U_shallow_n_gather /U_shallow_n_source /U_shallow_indices /U_shallow_tokens.
rewrite (@read_map _ (@expR R) sqrtf geluf gelu_tanhf _ Tokens x p (N * D)) //.
  by cbv beta; rewrite Nat2Z.inj_mul; clear; lia.
by apply: Hbo_at; rewrite /U_shallow_bo_offset; clear; lia.
Qed.

Lemma shallow_d_at : ev U_shallow_d p = (d_model P)%:R.
Proof. by rewrite /U_shallow_d /U_shallow_tokens (read_d Hd Hd0) // => k; rewrite shallow_d_sel. Qed.

(** The masks: [i < n] (n at the header), [e < d] (d at the header). *)
Lemma shallow_rows : ev U_shallow_mask_rows p = if (i < n)%nat then 1 else 0.
Proof.
have -> : ev U_shallow_mask_rows p
  = flag R (zR R (ieval (Z5 U_shallow_mask_rows_coord) (size x) p) < ev U_shallow_n p)
    * zR R (ieval (Z5 U_shallow_mask_rows_inside) (size x) p) by [].
rewrite shallow_n_at /U_shallow_mask_rows_coord /U_shallow_mask_rows_inside /U_shallow_indices /=.
rewrite !iif_range Hpin Z.sub_0_r zdiv_nat Hpi' zR_nat ltr_nat /flag /zR /= subr0 mulr1.
by case: ifP.
Qed.

Lemma shallow_cols : ev U_shallow_mask_cols p = if (e < d_model P)%nat then 1 else 0.
Proof.
have -> : ev U_shallow_mask_cols p
  = flag R (zR R (ieval (Z5 U_shallow_mask_cols_coord) (size x) p) < ev U_shallow_d p)
    * zR R (ieval (Z5 U_shallow_mask_cols_inside) (size x) p) by [].
rewrite shallow_d_at /U_shallow_mask_cols_coord /U_shallow_mask_cols_inside /U_shallow_indices /=.
rewrite !iif_range Hpin Z.sub_0_r zmod_nat Hpe zR_nat ltr_nat /flag /zR /= subr0 mulr1.
by case: ifP.
Qed.

(** Y at p: the layer, given out.Y2's equation when the layer has an FFN (the generic lemma). *)
Lemma shallow_layer_of_y2 :
  (has_ffn P -> (i < n)%nat -> (e < d_model P)%nat ->
    ev U_shallow_out_Y2 p = (if norm P is PostNorm then norm2 sqrtf P n X2 else X2) i e) ->
  ev U_shallow_Y p = encoder_layer (@expR R) sqrtf P M n X i e.
Proof.
move=> HY2.
have -> : ev U_shallow_Y p
  = (if ev U_shallow_ffn p != 0 then ev U_shallow_out_Y2 p else ev U_shallow_out_Y1 p)
    * (ev U_shallow_mask_rows p * ev U_shallow_mask_cols p) by [].
rewrite shallow_rows shallow_cols.
case: (boolP ((i < n) && (e < d_model P))%nat) => [/andP[Hin Hed] | Hout]; last first.
  have Hz : (if (i < n)%nat then 1 else 0) * (if (e < d_model P)%nat then 1 else 0) = 0 :> R.
    by move: Hout; rewrite negb_and => /orP[] /negbTE ->; rewrite ?mulr0 ?mul0r.
  by rewrite (enc_out _ _ _ _ Hout) Hz mulr0.
rewrite Hin Hed !mulr1 shallow_ffn_gate.
case Hf: (has_ffn P); rewrite ?ne10 ?ne00.
  by rewrite (HY2 Hf Hin Hed) enc_ffn ?Hf.
rewrite enc_no_ffn ?Hf //.
exact: (@U_shallow_y1_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p HX Hd He Hg Hb Hpre Hsc Hm
  Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad HLV
  Hres Hbo Hwoh HH HLH Hp Hpi Hpe Hin Hed Hpost Hwoe Hboe HLQ).
Qed.

(** Without post-norm, out.Y2 is out.R2 (the post gate 0): FFN_OUT's X2. *)
Lemma shallow_y2_not_post : (norm P = PostNorm -> ~~ has_ffn P) ->
  has_ffn P -> (i < n)%nat -> (e < d_model P)%nat ->
  ev U_shallow_out_Y2 p = (if norm P is PostNorm then norm2 sqrtf P n X2 else X2) i e.
Proof.
move=> Hcov Hf Hin Hed.
rewrite /U_shallow_out_Y2 eval_where shallow_post_gate (@U_shallow_ffn_out_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p HX Hd He Hg Hb
  Hpre Hsc Hm Hwq Hwk Hbq Hbk HL HLK Hwqpad Hwkpad Hwqk Hbqk Hd0 HdD Hpad Hn Hblk HLD Hwv Hbv Hwvpad Hwo Hwopad
  HLV Hres Hbo Hwoh HH HLH Hp Hpi Hpe Hin Hed Hpost Hwoe Hboe HLQ Hg2 Hb2 Hw1 Hb1 Hw1pad HLF Hact Hw2 Hbb2
  Hw2pad HLE).
have Hnp : norm P <> PostNorm by move=> E; move: (Hcov E); rewrite Hf.
have Hpn (T : Type) (a b : T) : (if norm P is PostNorm then a else b) = b by case: (norm P) Hnp.
by rewrite !Hpn ne00.
Qed.

End Shallow.

Theorem U_shallow_layer_of_y2 : U_shallow_layer_of_y2_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p.
do 54 move=> ?; move=> HY2; apply: shallow_layer_of_y2; assumption.
Qed.

Theorem U_shallow_layer_spec : U_shallow_layer_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p.
do 54 move=> ?; move=> Hcov; apply: shallow_layer_of_y2; try assumption.
by apply: shallow_y2_not_post; assumption.
Qed.

Theorem U_shallow_layer_out_spec : U_shallow_layer_out_spec_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i e n.
do 51 move=> ?; move=> Hcov.
have [Hp Hpi Hpe] := pos_x i e.
have HisX : eval (@expR R) sqrtf geluf gelu_tanhf
  (OfIdx (U_shallow_is_X (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F))) x (pos 0 N D 0 i e) = 1.
  rewrite /= /U_shallow_is_X /U_shallow_indices /= iif_range.
  have -> : ((0 <=? Z.of_nat (pos 0 N D 0 i e)) && (Z.of_nat (pos 0 N D 0 i e) <? 0 + 1 * Z.of_nat N * Z.of_nat D))%Z = true.
    by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp; lia.
  by rewrite /zR /= subr0.
rewrite /U_shallow eval_where HisX ne10.
by apply: (@U_shallow_layer_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i e n (pos 0 N D 0 i e)); assumption.
Qed.
