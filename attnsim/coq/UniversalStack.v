(** Stacks by looping, in the kernel: U's pass iterated m times over <T_0 .. T_(m-1), X> holds
    at X's entries the m-layer encoder [encoder_stack] (generated with the statements: EncoderLayer.v's
    [encoder_layer] applied m times, layer [Ps t] t-th; no final norm), for every m, every capacity
    and both variants (generated statements: UniversalStackStatement.v).

    The induction is generic (section [Loop]): a pass that keeps the header and the masks, moves
    the record queue one record on and, on a sequence meeting Theorem 6's premises for a layer P,
    writes [encoder_layer P] at X's entries, computes the stack, given that those premises read
    nothing of X's block nor the pointer.  Each variant then meets the section's hypotheses: its
    program U is [where(is_X, Y, where(is_record, queue, where(is_ptr, tokens + 1, tokens)))]
    ([pass_header], [pass_record]), Theorem 6 ([U_<v>_theorem6_out]) is the layer, and each of
    Theorem 6's premises reads a position of the header, the masks or the record slot only
    ([premises_agree]). *)
From mathcomp Require Import all_ssreflect all_algebra.
From mathcomp Require Import reals sequences exp.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas UniversalLemmas UniversalStackNodes EncoderLayer.
From Attnsim Require Import UniversalLayerNorm1Statement UniversalQProjStatement UniversalVProjStatement.
From Attnsim Require Import UniversalScoresStatement.
From Attnsim Require Import UniversalSoftmaxStatement UniversalHeadsStatement UniversalAttnOutStatement.
From Attnsim Require Import UniversalFfnActStatement UniversalFfnOutStatement.
From Attnsim Require Import UniversalTheorem6Statement UniversalTheorem6 UniversalStackStatement.
Import GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

(** The layer is 0 beyond its d_model columns: every sublayer's result is a [block]. *)
Lemma encoder_layer_pad (R : realFieldType) (expf sqrtf : R -> R) (N D H K F : nat)
  (P : params R D H K F) (M : mask R N) (n : nat) (X : 'M[R]_(N, D)) (i : 'I_N) (j : 'I_D) :
  (d_model P <= j)%nat -> encoder_layer expf sqrtf P M n X i j = 0.
Proof.
move=> Hj; have Hf : (j < d_model P)%nat = false by rewrite ltnNge Hj.
rewrite /encoder_layer /add_residual /norm1 /norm2 /layer_norm /self_attn /ff_block /block.
by case: (norm P); case: (has_ffn P); case: (residual P); rewrite /= ?mxE Hf ?andbF ?mxE ?Hf ?andbF ?addr0.
Qed.

(** Two sequences of one length that agree at every position from [lo] on but [ptr] hold the
    same blocks there. *)
Lemma encodes_agree (R : realFieldType) (y z : seq R) (lo ptr off h r c : nat) (A : 'I_h -> 'M[R]_(r, c)) :
  size y = size z -> (forall q, (lo <= q)%nat -> q != ptr -> nth 0 y q = nth 0 z q) ->
  (lo <= off)%nat -> (ptr < off)%nat -> encodes y off h r c A -> encodes z off h r c A.
Proof.
move=> Hs Hag Hlo Hp HA t i j; have [Hlt <-] := HA t i j.
split; first by rewrite -Hs.
rewrite Hag //; first by rewrite /pos; lia.
by rewrite neq_ltn; apply/orP; right; rewrite /pos; lia.
Qed.

(** A sequence seen [t] records on: positions before [base] as they are, from [base] on the
    position [t * S] later (0 past the end), as the generated [U_<v>_view]. *)
Definition seq_view (R : realFieldType) (base S : nat) (x : seq R) (t : nat) : seq R :=
  mkseq (fun q => nth 0 x (if (q < base)%nat then q else (q + t * S)%nat)) (size x).

Section Loop.
Variable R : realType.
Variable sqrtf : R -> R.
Variables (N D H K F : nat) (M : mask R N) (n : nat).
Variables (base S : nat).
Local Notation ptr := (N * D + 2)%nat.
Local Notation dpos := (N * D + 1)%nat.
Variable pass : seq R -> seq R.
Variable prem : params R D H K F -> seq R -> Prop.
Hypothesis Hbase : (N * D + 3 <= base)%nat.
Hypothesis size_pass : forall x, size (pass x) = size x.
Hypothesis pass_header : forall x q, (N * D <= q)%nat -> (q < base)%nat -> q != ptr -> nth 0 (pass x) q = nth 0 x q.
Hypothesis pass_record : forall x q, (base <= q)%nat -> nth 0 (pass x) q = nth 0 x (q + S)%nat.
Hypothesis pass_layer : forall P X x, prem P x -> encodes x 0 1 N D (fun _ => X) ->
  (forall (i : 'I_N) (j : 'I_D), (d_model P <= j)%nat -> X i j = 0) ->
  forall (i : 'I_N) (e : 'I_D), nth 0 (pass x) (pos 0 N D 0 i e) = encoder_layer (@expR R) sqrtf P M n X i e.
Hypothesis prem_agree : forall P y z, size y = size z ->
  (forall q, (N * D <= q)%nat -> q != ptr -> nth 0 y q = nth 0 z q) -> prem P y -> prem P z.
Hypothesis prem_d : forall P x, prem P x -> nth 0 x dpos = (d_model P)%:R.

Local Notation view := (@seq_view R base S).

Lemma view_nth x t q : nth 0 (view x t) q = nth 0 x (if (q < base)%nat then q else (q + t * S)%nat).
Proof.
case: (ltnP q (size x)) => Hq; first by rewrite nth_mkseq.
rewrite !nth_default ?size_mkseq //; case: ifP => _ //; exact: leq_trans Hq (leq_addr _ _).
Qed.

(** After t passes: the length, the header and masks as they were, record t in the slot. *)
Lemma loop_frame x t : [/\ size (ssrnat.iter t pass x) = size x,
  forall q, (N * D <= q)%nat -> (q < base)%nat -> q != ptr -> nth 0 (ssrnat.iter t pass x) q = nth 0 x q
  & forall q, (base <= q)%nat -> nth 0 (ssrnat.iter t pass x) q = nth 0 x (q + t * S)%nat].
Proof.
elim: t => [|t [IHs IHh IHr]]; first by split=> // q _; rewrite mul0n addn0.
split=> [|q H1 H2 H3|q Hq] /=; first by rewrite size_pass.
  by rewrite pass_header // IHh.
by rewrite pass_record // IHr ?mulSn ?addnA //; exact: leq_trans Hq (leq_addr _ _).
Qed.

Lemma loop_agree x t : size (view x t) = size (ssrnat.iter t pass x) /\
  forall q, (N * D <= q)%nat -> q != ptr -> nth 0 (view x t) q = nth 0 (ssrnat.iter t pass x) q.
Proof.
have [Hs Hh Hr] := loop_frame x t; split; first by rewrite size_mkseq Hs.
move=> q H1 H2; rewrite view_nth; case: ifP => Hq; first by rewrite Hh.
by rewrite Hr // leqNgt Hq.
Qed.

Theorem loop_stack (Ps : nat -> params R D H K F) (X : 'M[R]_(N, D)) (x : seq R) (m : nat) :
  encodes x 0 1 N D (fun _ => X) -> (forall (i : 'I_N) (j : 'I_D), (d_model (Ps 0%nat) <= j)%nat -> X i j = 0) ->
  (forall t, (t < m)%nat -> prem (Ps t) (view x t)) ->
  forall (i : 'I_N) (e : 'I_D), nth 0 (ssrnat.iter m pass x) (pos 0 N D 0 i e) = encoder_stack R sqrtf N D H K F Ps M n m X i e.
Proof.
move=> HX Hpad Hp.
have Hd t : (t < m)%nat -> d_model (Ps t) = d_model (Ps 0%nat).
  move=> Ht; have H0 : (0 < m)%nat by apply: leq_ltn_trans Ht.
  have Hdb : (dpos < base)%nat by lia.
  move: (prem_d (Hp t Ht)) (prem_d (Hp 0%nat H0)); rewrite !view_nth Hdb => -> /eqP.
  by rewrite eqr_nat => /eqP.
suff inv t : (t <= m)%nat -> encodes (ssrnat.iter t pass x) 0 1 N D (fun _ => encoder_stack R sqrtf N D H K F Ps M n t X)
  /\ forall (i : 'I_N) (j : 'I_D), (d_model (Ps 0%nat) <= j)%nat -> encoder_stack R sqrtf N D H K F Ps M n t X i j = 0.
  by move=> i e; have [He _] := inv m (leqnn m); have [_ <-] := He ord0 i e.
elim: t => [|t IH] Ht; first by split.
have [He Hz] := IH (ltnW Ht); have [Hs Hag] := loop_agree x t.
have Hpt : prem (Ps t) (ssrnat.iter t pass x) by apply: (prem_agree Hs Hag); exact: Hp.
have Hz' : forall (i : 'I_N) (j : 'I_D), (d_model (Ps t) <= j)%nat -> encoder_stack R sqrtf N D H K F Ps M n t X i j = 0.
  by move=> i j; rewrite Hd //; exact: Hz.
split=> [t0 i e|i j Hj] /=.
  have [Hlt _] := He t0 i e; split; first by rewrite size_pass.
  by rewrite (ord1 t0) (pass_layer Hpt He Hz').
by apply: encoder_layer_pad; rewrite Hd.
Qed.

End Loop.

(** A gather reading the one key z: position z of the input, 0 past its end (no key). *)
Lemma mean_shift (R : realFieldType) (expf sqrtf geluf gelu_tanhf : R -> R) (s : sel) (x : seq R) (q z : nat) :
  (forall k, (k < size x)%nat -> seval expf sqrtf geluf gelu_tanhf s x q k = (k == z)) ->
  mean [seq nth 0 x k | k <- keys (seval expf sqrtf geluf gelu_tanhf s x q) (size x)] = nth 0 x z.
Proof.
move=> Hs; case: (ltnP z (size x)) => Hz; first exact: (mean_keys_one (fun k => nth 0 x k) Hs Hz).
rewrite (nth_default _ Hz) /keys (eq_in_filter (a2 := pred0)) ?filter_pred0 //.
move=> k; rewrite mem_iota add0n => /andP[_ Hk]; rewrite Hs //.
by apply/negbTE/eqP => Ek; move: Hk; rewrite Ek ltnNge Hz.
Qed.

Section Compact.
Variable R : realType.
Variables (sqrtf geluf gelu_tanhf : R -> R) (N D H K F : nat).
Local Notation pass := (U_compact_pass R sqrtf geluf gelu_tanhf N D H K F).
Local Notation base := (U_compact_record_base N D H K F).
Local Notation S := (U_compact_record_size N D H K F).
Local Notation ev := (eval (@expR R) sqrtf geluf gelu_tanhf).

Lemma U_compact_outside_X x q : (N * D <= q)%nat ->
  ev (OfIdx (U_compact_is_X (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F))) x q = 0.
Proof.
move=> Hq; rewrite /= /U_compact_is_X /U_compact_indices /= iif_range.
have -> : ((0 <=? Z.of_nat q) && (Z.of_nat q <? 0 + 1 * Z.of_nat N * Z.of_nat D))%Z = false.
  by apply/negbTE/negP => /andP[_ /Z.ltb_lt]; lia.
by rewrite /zR /= subr0.
Qed.

Lemma U_compact_pass_header x q : (N * D <= q)%nat -> (q < base)%nat -> q != (N * D + 2)%nat ->
  nth 0 (pass x) q = nth 0 x q.
Proof.
move=> H1 H2 H3; case: (ltnP q (size x)) => Hq; last by rewrite !nth_default ?size_mkseq.
rewrite nth_mkseq // /U_compact UniversalLayer.eval_where U_compact_outside_X // eqxx /= !Zmatch_id /iif /ile /ieq /zb.
have -> : (Z.of_nat N * Z.of_nat D + 3 + Z.of_nat N * Z.of_nat N + Z.of_nat N * Z.of_nat N <=? Z.of_nat q)%Z = false.
  by apply/Z.leb_gt; move: H2; rewrite /U_compact_record_base; lia.
have -> : (Z.of_nat q =? Z.of_nat N * Z.of_nat D + 2)%Z = false.
  by apply/Z.eqb_neq; move/eqP: H3; lia.
by rewrite /= /zR /= subr0 eqxx.
Qed.

Lemma U_compact_queue_keys x q k : (k < size x)%nat ->
  seval (@expR R) sqrtf geluf gelu_tanhf
    (U_compact_queue_gather (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)) x q k
  = (k == q + S)%nat.
Proof.
move=> _; rewrite /U_compact_queue_gather /U_compact_queue_source /U_compact_indices.
cbn [seval ieval cmp_sem].
case: Z.eqb_spec => Hk; [apply/esym/eqP | apply/esym/negbTE/eqP]; move: Hk;
  rewrite /U_compact_record_size /U_compact_record_end /U_compact_record_base; lia.
Qed.

Lemma U_compact_pass_record x q : (base <= q)%nat -> nth 0 (pass x) q = nth 0 x (q + S)%nat.
Proof.
move=> Hb; case: (ltnP q (size x)) => Hq; last first.
  by rewrite !nth_default ?size_mkseq //; exact: leq_trans Hq (leq_addr _ _).
have HX : (N * D <= q)%nat by move: Hb; rewrite /U_compact_record_base; lia.
rewrite nth_mkseq // /U_compact UniversalLayer.eval_where U_compact_outside_X // eqxx /= !Zmatch_id /iif /ile /ieq /zb.
have -> : (Z.of_nat N * Z.of_nat D + 3 + Z.of_nat N * Z.of_nat N + Z.of_nat N * Z.of_nat N <=? Z.of_nat q)%Z = true.
  by apply/Z.leb_le; move: Hb; rewrite /U_compact_record_base; lia.
rewrite /= /zR /= subr0 oner_neq0.
by apply: mean_shift => k Hk; exact: U_compact_queue_keys.
Qed.

Lemma U_compact_pass_layer (M : mask R N) (n : nat) P X x :
  U_compact_layer_premises R sqrtf geluf gelu_tanhf N D H K F P M n x -> encodes x 0 1 N D (fun _ => X) ->
  (forall (i : 'I_N) (j : 'I_D), (d_model P <= j)%nat -> X i j = 0) ->
  forall (i : 'I_N) (e : 'I_D), nth 0 (pass x) (pos 0 N D 0 i e) = encoder_layer (@expR R) sqrtf P M n X i e.
Proof.
move=> Hp HX Hpad i e; have [Hlt _] := HX ord0 i e.
rewrite nth_mkseq //; apply: Hp => *.
by apply: (@U_compact_theorem6_out R sqrtf geluf gelu_tanhf N D H K F P M X x i e n); assumption.
Qed.

Lemma U_compact_premises_d (M : mask R N) (n : nat) P x :
  U_compact_layer_premises R sqrtf geluf gelu_tanhf N D H K F P M n x -> nth 0 x (N * D + 1)%nat = (d_model P)%:R.
Proof. by move=> Hp; apply: Hp => *. Qed.

Ltac offsets := rewrite /U_compact_b1_offset /U_compact_b2_offset /U_compact_be1_offset /U_compact_be2_offset
  /U_compact_bo_offset /U_compact_bqkv_offset /U_compact_g1_offset /U_compact_g2_offset /U_compact_gates_offset
  /U_compact_mask_add_offset /U_compact_mask_blocked_offset /U_compact_w1_offset /U_compact_w2_offset
  /U_compact_wo_offset /U_compact_wqkv_offset; lia.

Lemma U_compact_premises_agree (M : mask R N) (n : nat) P y z : size y = size z ->
  (forall q, (N * D <= q)%nat -> q != (N * D + 2)%nat -> nth 0 y q = nth 0 z q) ->
  U_compact_layer_premises R sqrtf geluf gelu_tanhf N D H K F P M n y ->
  U_compact_layer_premises R sqrtf geluf gelu_tanhf N D H K F P M n z.
Proof.
move=> Hs Hag Hy G HG; apply: Hy => *; apply: HG; first [
    assumption
  | by rewrite -Hs
  | by rewrite -Hag; [assumption | offsets | offsets]
  | by apply: (encodes_agree Hs Hag); [offsets | offsets | assumption]
  | by move=> v; rewrite -!Hag; [auto | offsets ..] ].
Qed.


End Compact.

Theorem U_compact_stack : U_compact_stack_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F Ps M X x n m i e HX Hpad Hp.
apply: (@loop_stack R sqrtf N D H K F M n (U_compact_record_base N D H K F) (U_compact_record_size N D H K F)
  (U_compact_pass R sqrtf geluf gelu_tanhf N D H K F)
  (fun P => U_compact_layer_premises R sqrtf geluf gelu_tanhf N D H K F P M n)) => //.
- by rewrite /U_compact_record_base; lia.
- by move=> y; rewrite size_mkseq.
- exact: U_compact_pass_header.
- exact: U_compact_pass_record.
- exact: U_compact_pass_layer.
- exact: U_compact_premises_agree.
- exact: U_compact_premises_d.
Qed.

Section Shallow.
Variable R : realType.
Variables (sqrtf geluf gelu_tanhf : R -> R) (N D H K F : nat).
Local Notation pass := (U_shallow_pass R sqrtf geluf gelu_tanhf N D H K F).
Local Notation base := (U_shallow_record_base N D H K F).
Local Notation S := (U_shallow_record_size N D H K F).
Local Notation ev := (eval (@expR R) sqrtf geluf gelu_tanhf).

Lemma U_shallow_outside_X x q : (N * D <= q)%nat ->
  ev (OfIdx (U_shallow_is_X (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F))) x q = 0.
Proof.
move=> Hq; rewrite /= /U_shallow_is_X /U_shallow_indices /= iif_range.
have -> : ((0 <=? Z.of_nat q) && (Z.of_nat q <? 0 + 1 * Z.of_nat N * Z.of_nat D))%Z = false.
  by apply/negbTE/negP => /andP[_ /Z.ltb_lt]; lia.
by rewrite /zR /= subr0.
Qed.

Lemma U_shallow_pass_header x q : (N * D <= q)%nat -> (q < base)%nat -> q != (N * D + 2)%nat ->
  nth 0 (pass x) q = nth 0 x q.
Proof.
move=> H1 H2 H3; case: (ltnP q (size x)) => Hq; last by rewrite !nth_default ?size_mkseq.
rewrite nth_mkseq // /U_shallow UniversalLayer.eval_where U_shallow_outside_X // eqxx /= !Zmatch_id /iif /ile /ieq /zb.
have -> : (Z.of_nat N * Z.of_nat D + 3 + Z.of_nat N * Z.of_nat N + Z.of_nat N * Z.of_nat N <=? Z.of_nat q)%Z = false.
  by apply/Z.leb_gt; move: H2; rewrite /U_shallow_record_base; lia.
have -> : (Z.of_nat q =? Z.of_nat N * Z.of_nat D + 2)%Z = false.
  by apply/Z.eqb_neq; move/eqP: H3; lia.
by rewrite /= /zR /= subr0 eqxx.
Qed.

Lemma U_shallow_queue_keys x q k : (k < size x)%nat ->
  seval (@expR R) sqrtf geluf gelu_tanhf
    (U_shallow_queue_gather (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)) x q k
  = (k == q + S)%nat.
Proof.
move=> _; rewrite /U_shallow_queue_gather /U_shallow_queue_source /U_shallow_indices.
cbn [seval ieval cmp_sem].
case: Z.eqb_spec => Hk; [apply/esym/eqP | apply/esym/negbTE/eqP]; move: Hk;
  rewrite /U_shallow_record_size /U_shallow_record_end /U_shallow_record_base; lia.
Qed.

Lemma U_shallow_pass_record x q : (base <= q)%nat -> nth 0 (pass x) q = nth 0 x (q + S)%nat.
Proof.
move=> Hb; case: (ltnP q (size x)) => Hq; last first.
  by rewrite !nth_default ?size_mkseq //; exact: leq_trans Hq (leq_addr _ _).
have HX : (N * D <= q)%nat by move: Hb; rewrite /U_shallow_record_base; lia.
rewrite nth_mkseq // /U_shallow UniversalLayer.eval_where U_shallow_outside_X // eqxx /= !Zmatch_id /iif /ile /ieq /zb.
have -> : (Z.of_nat N * Z.of_nat D + 3 + Z.of_nat N * Z.of_nat N + Z.of_nat N * Z.of_nat N <=? Z.of_nat q)%Z = true.
  by apply/Z.leb_le; move: Hb; rewrite /U_shallow_record_base; lia.
rewrite /= /zR /= subr0 oner_neq0.
by apply: mean_shift => k Hk; exact: U_shallow_queue_keys.
Qed.

Lemma U_shallow_pass_layer (M : mask R N) (n : nat) P X x :
  U_shallow_layer_premises R sqrtf geluf gelu_tanhf N D H K F P M n x -> encodes x 0 1 N D (fun _ => X) ->
  (forall (i : 'I_N) (j : 'I_D), (d_model P <= j)%nat -> X i j = 0) ->
  forall (i : 'I_N) (e : 'I_D), nth 0 (pass x) (pos 0 N D 0 i e) = encoder_layer (@expR R) sqrtf P M n X i e.
Proof.
move=> Hp HX Hpad i e; have [Hlt _] := HX ord0 i e.
rewrite nth_mkseq //; apply: Hp => *.
by apply: (@U_shallow_theorem6_out R sqrtf geluf gelu_tanhf N D H K F P M X x i e n); assumption.
Qed.

Lemma U_shallow_premises_d (M : mask R N) (n : nat) P x :
  U_shallow_layer_premises R sqrtf geluf gelu_tanhf N D H K F P M n x -> nth 0 x (N * D + 1)%nat = (d_model P)%:R.
Proof. by move=> Hp; apply: Hp => *. Qed.

Ltac offsets := rewrite /U_shallow_b1_offset /U_shallow_b2_offset /U_shallow_be1_offset /U_shallow_be2_offset
  /U_shallow_bo_offset /U_shallow_bqkv_offset /U_shallow_g1_offset /U_shallow_g2_offset /U_shallow_gates_offset
  /U_shallow_mask_add_offset /U_shallow_mask_blocked_offset /U_shallow_w1_offset /U_shallow_w2_offset
  /U_shallow_wo_offset /U_shallow_wqkv_offset; lia.

Lemma U_shallow_premises_agree (M : mask R N) (n : nat) P y z : size y = size z ->
  (forall q, (N * D <= q)%nat -> q != (N * D + 2)%nat -> nth 0 y q = nth 0 z q) ->
  U_shallow_layer_premises R sqrtf geluf gelu_tanhf N D H K F P M n y ->
  U_shallow_layer_premises R sqrtf geluf gelu_tanhf N D H K F P M n z.
Proof.
move=> Hs Hag Hy G HG; apply: Hy => *; apply: HG; first [
    assumption
  | by rewrite -Hs
  | by rewrite -Hag; [assumption | offsets | offsets]
  | by apply: (encodes_agree Hs Hag); [offsets | offsets | assumption]
  | by move=> v; rewrite -!Hag; [auto | offsets ..] ].
Qed.


End Shallow.

Theorem U_shallow_stack : U_shallow_stack_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F Ps M X x n m i e HX Hpad Hp.
apply: (@loop_stack R sqrtf N D H K F M n (U_shallow_record_base N D H K F) (U_shallow_record_size N D H K F)
  (U_shallow_pass R sqrtf geluf gelu_tanhf N D H K F)
  (fun P => U_shallow_layer_premises R sqrtf geluf gelu_tanhf N D H K F P M n)) => //.
- by rewrite /U_shallow_record_base; lia.
- by move=> y; rewrite size_mkseq.
- exact: U_shallow_pass_header.
- exact: U_shallow_pass_record.
- exact: U_shallow_pass_layer.
- exact: U_shallow_premises_agree.
- exact: U_shallow_premises_d.
Qed.
