(** Lemma 3 (softmax), kernel-checked: the exported program is exp(x_ij) / sum_l exp(x_il) per
    row of every head, for every shape: for any meaning of exp (so for MathComp-analysis' real
    exponential [expR], stated at the end), the division being the field's. *)
From mathcomp Require Import all_ssreflect all_algebra.
From mathcomp Require Import reals sequences exp.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas Exports SoftmaxStatement.
Import GRing.Theory Num.Theory.

Section Softmax.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.
Local Open Scope ring_scope.

Lemma softmax_heads_rows_core (r c h : nat) (A : 'I_h -> 'M[R]_(r, c)) (x : seq R) :
  encodes x 0 h r c A -> forall t : 'I_h,
  decode (eval expf sqrtf geluf gelu_tanhf (softmax_heads_prog (Z.of_nat r) (Z.of_nat c) (Z.of_nat h)) x) 0 h r c t
  = \matrix_(i, j) (expf (A t i j) / \sum_(l < c) expf (A t i l)).
Proof.
move=> HA t; apply/matrixP => i j; rewrite !mxE.
have Hi := ltn_ord i; have Hj := ltn_ord j; have Ht := ltn_ord t.
have [HL <-] := HA t i j.
rewrite /softmax_heads_prog /= zR_nat /zR /= subr0 divr1.
rewrite (@mean_keys_sum _ _ _ _ _ _ _ _ _ (pos 0 r c t i 0) c) //; last first.
- have Hc : (c.-1 < c)%nat by rewrite ltn_predL (leq_ltn_trans (leq0n j) Hj).
  have [HL' _] := HA t i (Ordinal Hc).
  by move: HL'; rewrite /pos /=; lia.
- move=> kk _ /=.
  have -> : ((Z.of_nat (pos 0 r c t i j) - 0) / Z.of_nat c)%Z = Z.of_nat (t * r + i).
    by rewrite /pos; zpos; lia.
  by rewrite Z.sub_0_r zdiv_eqb_range ?(leq_ltn_trans (leq0n j) Hj) // /pos; apply/idP/idP; lia.
- by apply: leq_ltn_trans Hj.
congr (_ / _); apply: eq_bigr => l _.
by have [_ <-] := HA t i l; rewrite /pos addn0.
Qed.
End Softmax.

Theorem softmax_heads_rows : softmax_heads_rows_statement.
Proof. move=> R expf sqrtf geluf gelu_tanhf r c h A x _ _ _ HA _; exact: softmax_heads_rows_core. Qed.

(** Over the reals: MathComp-analysis' [expR], the exponential of any [realType]. *)
Theorem softmax_heads_expR : softmax_heads_expR_statement.
Proof. move=> R sqrtf geluf gelu_tanhf r c h A x _ _ _ HA _; exact: softmax_heads_rows_core. Qed.
