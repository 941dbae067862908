(** Activation MaxMin (GroupSort, groups of 2), kernel-checked: each pair (2t, 2t+1) of every row
    becomes (max, min), against MathComp's [Num.max] and [Num.min], for every even row length. *)
From mathcomp Require Import all_ssreflect all_algebra.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas Exports MaxMinStatement.
Import GRing.Theory Num.Theory.

Section MaxMin.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.
Local Open Scope ring_scope.

(** Entry (i, j): max(A i j, A i (j + 1)) at an even column j, min(A i j, A i (j - 1)) at an odd one. *)
(** [insubd j m] is the column m (in range here; j otherwise). *)
Definition maxmin_spec {rows n : nat} (A : 'M[R]_(rows, n)) : 'M[R]_(rows, n) :=
  \matrix_(i, j) if odd j then Num.min (A i j) (A i (insubd j j.-1)) else Num.max (A i j) (A i (insubd j j.+1)).

Lemma maxmin_pairs_core (n rows : nat) (A : 'M[R]_(rows, n)) (x : seq R) :
  ~~ odd n -> encodes x 0 1 rows n (fun _ => A) ->
  decode (eval expf sqrtf geluf gelu_tanhf (maxmin_prog (Z.of_nat n) (Z.of_nat rows)) x) 0 1 rows n ord0 = maxmin_spec A.
Proof.
move=> Hn HA; apply/matrixP => i j; rewrite !mxE.
have Hi := ltn_ord i; have Hj := ltn_ord j.
have [_ HAv] := HA ord0 i j.
set pj := if odd j then j.-1 else j.+1.
have Hpj : (pj < n)%nat.
  rewrite /pj; case Ho: (odd j); first by lia.
  have : j.+1 != n by apply/eqP => E; move: Hn; rewrite -E /= Ho.
  by lia.
have [HLp HAp] := HA ord0 i (Ordinal Hpj).
rewrite /maxmin_prog /=.
have -> : ((Z.of_nat (pos 0 rows n 0 i j) - 0) mod Z.of_nat n mod 2)%Z = (if odd j then 1 else 0)%Z.
  by rewrite /pos; zpos; exact: zmod2.
rewrite (@mean_keys_one _ _ _ _ _ _ _ _ _ (pos 0 rows n 0 i pj)) //; last first.
  move=> kk _ /=; rewrite -eqb_of_nat; congr (_ =? _)%Z.
  have -> : ((Z.of_nat (pos 0 rows n 0 i j) - 0) mod Z.of_nat n mod 2)%Z = (if odd j then 1 else 0)%Z.
    by rewrite /pos; zpos; exact: zmod2.
  rewrite /pj /pos; case Ho: (odd j); zpos; lia.
rewrite HAv HAp.
have -> : Ordinal Hpj = insubd j pj by apply/val_inj; rewrite /= insubdK.
rewrite /pj; clear HAp HLp Hpj.
case Ho: (odd j) => /=.
  by rewrite /zR /= subr0 mulr1n oner_eq0.
by rewrite /zR /= subr0 mulr0n eqxx.
Qed.
End MaxMin.

Theorem maxmin_pairs : maxmin_pairs_statement.
Proof.
move=> R expf sqrtf geluf gelu_tanhf n rows A x _ _ Hev HA _; apply: maxmin_pairs_core => //.
by move: Hev; rewrite modn2; case: (odd n).
Qed.
