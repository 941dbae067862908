(** Activation ReLU, kernel-checked: the exported program is max(x, 0) entry-wise
    (MathComp's [Num.max]), for every shape. *)
From mathcomp Require Import all_ssreflect all_algebra.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas Exports ReluStatement.
Import GRing.Theory Num.Theory.

Section Relu.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.
Local Open Scope ring_scope.

Lemma relu_max0_core (n rows : nat) (A : 'M[R]_(rows, n)) (x : seq R) :
  encodes x 0 1 rows n (fun _ => A) ->
  decode (eval expf sqrtf geluf gelu_tanhf (relu_prog (Z.of_nat n) (Z.of_nat rows)) x) 0 1 rows n ord0
  = map_mx (fun v => Num.max v 0) A.
Proof. by move=> HA; apply/matrixP => i j; rewrite !mxE /= (proj2 (HA ord0 i j)). Qed.
End Relu.

Theorem relu_max0 : relu_max0_statement.
Proof.
move=> R expf sqrtf geluf gelu_tanhf n rows A x _ _ HA _; exact: relu_max0_core.
Qed.
