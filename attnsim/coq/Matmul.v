(** Lemma (matmul), kernel-checked: the exported program computes MathComp's [mulmx] per head,
    for every shape (rows, inner >= 1, cols, heads), in any sequence holding A and B. *)
From mathcomp Require Import all_ssreflect all_algebra.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas Exports MatmulStatement.
Import GRing.Theory Num.Theory.

Section Matmul.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.
Local Open Scope ring_scope.

Lemma matmul_heads_mulmx_core (r k c h : nat) (A : 'I_h -> 'M[R]_(r, k)) (B : 'I_h -> 'M[R]_(k, c))
    (x : seq R) :
  (0 < k)%nat -> encodes x 0 h r k A -> encodes x (h * r * k) h k c B ->
  (h * r * c * k <= size x)%nat -> forall t : 'I_h,
  decode (eval expf sqrtf geluf gelu_tanhf (matmul_heads_prog (Z.of_nat r) (Z.of_nat k) (Z.of_nat c) (Z.of_nat h)) x) 0 h r c t
  = A t *m B t.
Proof.
move=> Hk HA HB HL t; apply/matrixP => i j; rewrite !mxE.
rewrite /matmul_heads_prog /= zR_nat /zR /= subr0 divr1.
have Hi := ltn_ord i; have Hj := ltn_ord j; have Ht := ltn_ord t.
rewrite (@mean_keys_sum _ _ _ _ _ _ _ _ _ (pos 0 r c t i j * k) k) //; last first.
- rewrite /pos add0n -mulSnr; apply: leq_trans HL; rewrite leq_mul2r; apply/orP; right.
  have H1 : (t * r + i < h * r)%nat by nia.
  have H2 : ((t * r + i).+1 * c <= h * r * c)%nat by rewrite leq_mul2r H1 orbT.
  by rewrite mulSnr in H2; lia.
- by move=> kk _ /=; rewrite zdiv_eqb_range.
apply: eq_bigr => l _; have Hl := ltn_ord l.
have [HLa <-] := HA t i l.
have [HLb <-] := HB t l j.
rewrite (@mean_keys_one _ _ _ _ _ _ _ _ _ (pos 0 r k t i l)) //; last first.
  move=> kk _ /=; rewrite -eqb_of_nat; congr (_ =? _)%Z; rewrite /pos; zpos; lia.
rewrite (@mean_keys_one _ _ _ _ _ _ _ _ _ (pos (h * r * k) k c t l j)) //.
move=> kk _ /=; rewrite -eqb_of_nat; congr (_ =? _)%Z; rewrite /pos; zpos; lia.
Qed.
End Matmul.

Theorem matmul_heads_mulmx : matmul_heads_mulmx_statement.
Proof.
move=> R expf sqrtf geluf gelu_tanhf r k c h A B x _ Hk _ _ HA HB HL; apply: matmul_heads_mulmx_core => //.
by apply: leq_trans HL; nia.
Qed.
