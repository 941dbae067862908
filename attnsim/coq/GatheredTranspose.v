(** Lemma (transpose) in the form U is built from (gathered-transpose: the transpose folded into one
    guarded gather onto a grid), kernel-checked against MathComp's [trmx], every rows and cols. *)
From mathcomp Require Import all_ssreflect all_algebra.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas Exports GatheredTransposeStatement.
Import GRing.Theory Num.Theory.

Section GatheredTranspose.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.

Lemma gathered_transpose_trmx_core (r c : nat) (A : 'M[R]_(r, c)) (x : seq R) :
  encodes x 0 1 r c (fun _ => A) ->
  decode (eval expf sqrtf geluf gelu_tanhf (gathered_transpose_prog (Z.of_nat r) (Z.of_nat c)) x) 0 1 c r ord0 = trmx A.
Proof.
move=> HA; apply/matrixP => i j; rewrite !mxE.
have [HL HAv] := HA ord0 j i.
rewrite -HAv; apply: agg_gather => // k _ /=.
rewrite -eqb_of_nat; congr (_ =? _)%Z.
have Hi := ltn_ord i; have Hj := ltn_ord j.
rewrite /pos; zpos.
rewrite iif_guard; last by rewrite Zmatch_id; nia.
zpos; lia.
Qed.
End GatheredTranspose.

Theorem gathered_transpose_trmx : gathered_transpose_trmx_statement.
Proof.
move=> R expf sqrtf geluf gelu_tanhf r c A x _ _ HA _; exact: gathered_transpose_trmx_core.
Qed.
