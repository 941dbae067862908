(** General lemmas about the semantics for U's proof (Theorem 6 in the kernel): an
    aggregate over a group of keys is the \sum over the group divided by its size, a gather reads
    one position, and the guarded group maps of U's exported selectors as nat arithmetic. *)
From mathcomp Require Import all_ssreflect all_algebra.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas.
Import GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Section Groups.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.
Local Notation eval := (eval expf sqrtf geluf gelu_tanhf).
Local Notation seval := (seval expf sqrtf geluf gelu_tanhf).
Local Open Scope ring_scope.

(** An aggregate whose query selects exactly the keys of a group [G] (a predicate on the keys
    below [size x]) is the sum over the group divided by its size (0 for an empty group: both
    sides are 0, MathComp's x / 0 = 0 and AHAT's empty mean). *)
Lemma agg_group (s : sel) (v : sop) (x : seq R) (q : nat) (G : pred nat) :
  (forall k, (k < size x)%nat -> seval s x q k = G k) ->
  eval (Aggregate s v) x q
  = (\sum_(0 <= k < size x | G k) eval v x k) / (count G (iota 0 (size x)))%:R.
Proof.
move=> Hs; rewrite eval_aggregate /keys.
rewrite (eq_in_filter (a2 := G)); last by move=> k; rewrite mem_iota add0n => /Hs.
rewrite /index_iota subn0 -big_filter -size_filter.
case: [seq k <- iota 0 (size x) | G k] => [|k ks]; first by rewrite big_nil mul0r.
by rewrite /mean sumE big_map size_map.
Qed.

(** The group of [n] consecutive keys [a, a + n): the sum over them divided by [n]. *)
Lemma agg_run (s : sel) (v : sop) (x : seq R) (q a n : nat) : (0 < n)%nat ->
  (forall k, (k < size x)%nat -> seval s x q k = (a <= k < a + n)%nat) -> (a + n <= size x)%nat ->
  eval (Aggregate s v) x q = (\sum_(l < n) eval v x (a + l)%nat) / n%:R.
Proof.
move=> Hn Hs HL; rewrite -(@agg_sum _ expf sqrtf geluf gelu_tanhf s v x q a n Hn Hs HL) mulrC mulrA mulVf ?mul1r //.
by rewrite pnatr_eq0 -lt0n.
Qed.

(** A gather (a selector true at exactly one key z) reads position z. *)
Lemma agg_one (s : sel) (v : sop) (x : seq R) (q z : nat) :
  (forall k, (k < size x)%nat -> seval s x q k = (k == z)) -> (z < size x)%nat ->
  eval (Aggregate s v) x q = eval v x z.
Proof. exact: (@agg_gather _ expf sqrtf geluf gelu_tanhf s v x q z). Qed.

End Groups.

(** * Index arithmetic of U's guarded group maps. *)
Lemma zdiv_nat (p c : nat) : (Z.of_nat p / Z.of_nat c)%Z = Z.of_nat (p %/ c).
Proof.
case: c => [|c]; first by rewrite divn0 Zdiv_0_r.
symmetry; apply: (Z.div_unique_pos _ _ _ (Z.of_nat (p %% c.+1))).
  by have := ltn_pmod p (ltn0Sn c); lia.
by rewrite {1}(divn_eq p c.+1) Nat2Z.inj_add Nat2Z.inj_mul; lia.
Qed.

(** A guarded map, inside its guard: the then-branch; outside: the else-branch. *)
Lemma iif_range (lo hi p a b : Z) :
  iif (iand (ile lo p) (ilt p hi)) a b = if ((lo <=? p) && (p <? hi))%Z then a else b.
Proof. by rewrite /iif /iand /ile /ilt; case: Z.leb; case: Z.ltb. Qed.

(** A key [k] of the group map [k / c] on [0, L) (-1 elsewhere) is in group [G] iff it is one of
    the [c] keys [G c, G c + c), for a group inside [0, L). *)
Lemma row_group_eqb (k c L G : nat) : (0 < c)%nat -> (G * c + c <= L)%nat ->
  ((if ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat L))%Z then Z.of_nat k / Z.of_nat c else (-1))
     =? Z.of_nat G)%Z = (G * c <= k < G * c + c)%nat.
Proof.
move=> Hc HL; rewrite (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg k)) /=.
case: (Z.ltb_spec (Z.of_nat k) (Z.of_nat L)) => H.
  by rewrite zdiv_eqb_range.
case EG: (Z.of_nat G) => [|g|g]; last by lia.
  by symmetry; apply/negbTE/negP => /andP[_ H2]; lia.
by symmetry; apply/negbTE/negP => /andP[_ H2]; lia.
Qed.
