(** Lemma (determinant, 3 x 3 fixed order), kernel-checked: the exported program computes
    MathComp's [\det] (first-row expansion over the signed cofactors). *)
From mathcomp Require Import all_ssreflect all_algebra.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify ring.
From Attnsim Require Import Semantics Lemmas Exports Det3Statement.
Import GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Section Det3.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.
Local Open Scope ring_scope.

(** A gather [Select Indices (g Indices) ==] at query p reads key z = g p. *)
Lemma gatherE (g : Z -> Z) (f : nat -> R) (x : seq R) (p z : nat) :
  g (Z.of_nat p) = Z.of_nat z -> (z < size x)%nat ->
  mean [seq f k | k <- keys (seval expf sqrtf geluf gelu_tanhf (Select Indices (IMap1 g Indices) CEq) x p) (size x)]
  = f z.
Proof.
move=> Hg Hz; apply: mean_keys_one => // k _ /=.
by rewrite Hg eqb_of_nat.
Qed.

(** The 2 x 2 determinant. *)
Lemma det2 (M : 'M[R]_2) :
  \det M = M ord0 ord0 * M ord_max ord_max - M ord0 ord_max * M ord_max ord0.
Proof.
have [m Hm] : exists m : nat -> nat -> R, forall u v, M u v = m u v.
  by exists (fun r c => M (inord r) (inord c)) => u v; rewrite !inord_val.
rewrite (expand_det_row _ ord0) !big_ord_recl big_ord0 /cofactor !det_mx11 !mxE !Hm /=.
cbv [bump leq addn addn_rec subn subn_rec]; simpl; ring.
Qed.
End Det3.

(** The keys of a selector that selects no key at or past N are those below N. *)
Lemma keys_prefix (P : nat -> bool) (L N : nat) : N <= L ->
  (forall k, N <= k < L -> P k = false) -> keys P L = [seq k <- iota 0 N | P k].
Proof.
move=> HN Hs; rewrite /keys -(subnKC HN) iotaD filter_cat add0n.
rewrite (@eq_in_filter _ _ pred0 (iota N _)) ?filter_pred0 ?cats0 // => k.
by rewrite mem_iota subnKC // => /Hs.
Qed.

(** Computes the closed nat indices (positions, lifted ordinals) to numerals. *)
Ltac nnorm := simpl; cbv [pos bump leq addn addn_rec subn subn_rec muln muln_rec]; simpl.

(** Rewrites every gather by the key it reads (computed from the closed query position). *)
Ltac gathers HL :=
  repeat match goal with
  | |- context [mean (map ?f (keys (seval ?e1 ?e2 ?e3 ?e4 (Select Indices (IMap1 ?g Indices) CEq) ?x ?p) _))] =>
      let z := eval compute in (Z.to_nat (g (Z.of_nat p))) in
      rewrite (@gatherE _ e1 e2 e3 e4 g f x p z); [| reflexivity | exact: leq_trans HL]
  end.

Theorem det3_det : det3_det_statement.
Proof.
move=> R expf sqrtf geluf gelu_tanhf A x HA HL.
have Hx : forall u v : 'I_3, A u v = nth 0%R x (pos 0 3 3 0 u v) by move=> u v; have [_ ->] := HA ord0 u v.
apply/matrixP => i j; rewrite [i]ord1 [j]ord1 !mxE eqxx mulr1n /det3_prog /=.
rewrite (@keys_prefix _ _ 9); last 2 first.
- exact: leq_trans HL.
- move=> k /andP[Hk _] /=; rewrite /iand /ilt.
  have -> : (Z.of_nat k <? 9)%Z = false by apply/Z.ltb_ge; lia.
  by rewrite /= andbF.
rewrite /=.
gathers HL.
rewrite (zR_nat R 3) (zR_nat R 1) divr1 mulrC -mulrA mulVf ?mulr1 ?pnatr_eq0 //.
rewrite (expand_det_row _ ord0) !big_ord_recl big_ord0 /cofactor !det2 !mxE !Hx; nnorm.
ring.
Qed.
