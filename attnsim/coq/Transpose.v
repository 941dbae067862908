(** Lemma (transpose), kernel-checked: the exported program computes MathComp's [trmx], for
    every number of rows, columns and heads. *)
From mathcomp Require Import all_ssreflect all_algebra.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas Exports TransposeStatement.
Import GRing.Theory Num.Theory.

Section Transpose.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.

(** Output entry (t, i, j) of the c x r result, for a stack A of h matrices r x c at offset 0
    of any sequence x that holds it: A t j i. *)
Lemma transpose_heads_trmx_core (r c h : nat) (A : 'I_h -> 'M[R]_(r, c)) (x : seq R) :
  encodes x 0 h r c A -> forall t : 'I_h,
  decode (eval expf sqrtf geluf gelu_tanhf (transpose_heads_prog (Z.of_nat r) (Z.of_nat c) (Z.of_nat h)) x) 0 h c r t
  = trmx (A t).
Proof.
move=> HA t; apply/matrixP => i j; rewrite !mxE.
have [HL HAv] := HA t j i.
rewrite -HAv; apply: agg_gather => // k _ /=.
rewrite -eqb_of_nat; congr (_ =? _)%Z.
rewrite /pos; have := ltZ (ltn_ord i); have := ltZ (ltn_ord j); move: (nat_of_ord i) (nat_of_ord j) => i' j' Hj Hi.
zpos.
lia.
Qed.
End Transpose.

Theorem transpose_heads_trmx : transpose_heads_trmx_statement.
Proof.
move=> R expf sqrtf geluf gelu_tanhf r c h A x _ _ _ HA _; exact: transpose_heads_trmx_core.
Qed.
