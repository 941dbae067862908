(** Lemma 3 (softmax), max-shifted form, kernel-checked: the program subtracting the row maximum
    before exponentiating is still exp(x_ij) / sum_l exp(x_il) per row of every head, for every
    shape: for any [expf] with expf (a - b) = expf a / expf b and no zero (so for
    MathComp-analysis' [expR], stated at the end).  The shift is one value per row (every
    position of the row takes its [Maximum] over the same keys), and it cancels. *)
From mathcomp Require Import all_ssreflect all_algebra.
From mathcomp Require Import reals sequences exp.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas Exports SoftmaxStableStatement.
Import GRing.Theory Num.Theory.

(** The row selector of the softmax programs: key and query in the same run of c positions. *)
Definition row_sel (c : nat) : sel :=
  Select (IMap1 (fun x0 : Z => ((x0 - 0) / Z.of_nat c)%Z) Indices)
         (IMap1 (fun x0 : Z => ((x0 - 0) / Z.of_nat c)%Z) Indices) CEq.

Section SoftmaxStable.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.
Local Open Scope ring_scope.
Local Notation seval := (seval expf sqrtf geluf gelu_tanhf).

Lemma row_seval (c b j k : nat) (x : seq R) : (j < c)%nat ->
  seval (row_sel c) x (b * c + j) k = (b * c <= k < b * c + c)%nat.
Proof.
move=> Hj /=; have Hc : (0 < c)%nat by apply: leq_ltn_trans Hj.
have -> : ((Z.of_nat (b * c + j) - 0) / Z.of_nat c)%Z = Z.of_nat b.
  by rewrite Z.sub_0_r Nat2Z.inj_add Nat2Z.inj_mul zdiv_lin //; lia.
by rewrite Z.sub_0_r zdiv_eqb_range.
Qed.

(** At any position of row b it lists the c positions of that row. *)
Lemma row_keys (c b j : nat) (x : seq R) : (j < c)%nat -> (b * c + c <= size x)%nat ->
  keys (seval (row_sel c) x (b * c + j)) (size x) = iota (b * c) c.
Proof. by move=> Hj HL; apply: keys_range => // k _; exact: row_seval. Qed.

Lemma softmax_stable_heads_rows_core (r c h : nat) (A : 'I_h -> 'M[R]_(r, c)) (x : seq R) :
  (forall a b : R, expf (a - b) = expf a / expf b) -> (forall a : R, expf a != 0) ->
  encodes x 0 h r c A -> forall t : 'I_h,
  decode (eval expf sqrtf geluf gelu_tanhf (softmax_stable_heads_prog (Z.of_nat r) (Z.of_nat c) (Z.of_nat h)) x) 0 h r c t
  = \matrix_(i, j) (expf (A t i j) / \sum_(l < c) expf (A t i l)).
Proof.
move=> Hsub Hne HA t; apply/matrixP => i j; rewrite !mxE.
have Hj := ltn_ord j; have Hc : (0 < c)%nat by apply: leq_ltn_trans Hj.
have HL : ((t * r + i) * c + c <= size x)%nat.
  have Hc' : (c.-1 < c)%nat by rewrite ltn_predL.
  have [HL' _] := HA t i (Ordinal Hc').
  by move: HL'; rewrite /pos /=; lia.
have HAl : forall l : 'I_c, nth 0 x ((t * r + i) * c + l) = A t i l.
  by move=> l; have [_ <-] := HA t i l; rewrite /pos add0n.
rewrite /softmax_stable_heads_prog; cbv zeta.
change (Select _ _ CEq) with (row_sel c); set s := row_sel c.
(* the shift: one value M for the whole row *)
set M := maxl [seq nth 0 x k | k <- iota ((t * r + i) * c) c].
have EM : forall l : 'I_c,
    maxl [seq x`_k | k <- keys (seval s x ((t * r + i) * c + l)) (size x)] = M.
  by move=> l; rewrite row_keys.
rewrite /pos add0n /= EM HAl zR_nat /zR /= subr0 divr1.
rewrite (@mean_keys_sum _ _ _ _ _ (fun k => expf (x`_k - maxl [seq x`_k0 | k0 <- keys (seval s x k) (size x)]))
           _ _ _ ((t * r + i) * c) c) //; last by move=> k _; exact: row_seval.
(* exp(a - M) / sum_l exp(x_l - M) = (exp a / exp M) / ((sum_l exp x_l) / exp M) *)
rewrite (eq_bigr (fun l : 'I_c => expf (A t i l) / expf M)); last by move=> l _; rewrite EM HAl Hsub.
by rewrite Hsub -mulr_suml invfM invrK mulrA mulrAC divfK.
Qed.
End SoftmaxStable.

Theorem softmax_stable_heads_rows : softmax_stable_heads_rows_statement.
Proof. move=> R expf sqrtf geluf gelu_tanhf r c h A x _ _ _ Hsub Hne HA _; exact: softmax_stable_heads_rows_core. Qed.

(** Over the reals: MathComp-analysis' [expR], the exponential of any [realType]. *)
Theorem softmax_stable_heads_expR : softmax_stable_heads_expR_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf r c h A x _ _ _ HA _; apply: softmax_stable_heads_rows_core HA => [a b | a].
  exact: expRB.
exact: lt0r_neq0 (expR_gt0 a).
Qed.
