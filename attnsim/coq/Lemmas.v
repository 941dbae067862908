(** General lemmas about the semantics (coq/Semantics.v): which keys a selector lists, what an
    average over them is, and index arithmetic.  Each construction's proof is built from these. *)
From mathcomp Require Import all_ssreflect all_algebra.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics.
Import GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

(** * Keys: a predicate true exactly on [a, a + n) inside [0, L) lists [a, a + n). *)
Lemma filter_iota_range (P : pred nat) (a n L : nat) :
  (forall k, k < L -> P k = (a <= k < a + n)) -> a + n <= L ->
  [seq k <- iota 0 L | P k] = iota a n.
Proof.
move=> HP HL.
rewrite (eq_in_filter (a2 := fun k => a <= k < a + n)); last first.
  by move=> k; rewrite mem_iota add0n => /HP.
have -> : L = a + (n + (L - (a + n))) by rewrite addnA subnKC.
rewrite !iotaD !filter_cat add0n.
have -> : [seq k <- iota 0 a | a <= k < a + n] = [::].
  apply/eqP; rewrite -[_ == _]negbK -has_filter; apply/hasPn => k.
  by rewrite mem_iota add0n => /andP[_ Hk]; rewrite leqNgt Hk.
have -> : [seq k <- iota a n | a <= k < a + n] = iota a n.
  by apply/all_filterP/allP => k; rewrite mem_iota.
have -> : [seq k <- iota (0 + a + n) (L - (a + n)) | a <= k < a + n] = [::].
  apply/eqP; rewrite -[_ == _]negbK -has_filter; apply/hasPn => k.
  by rewrite mem_iota add0n => /andP[+ _]; rewrite leqNgt => /negbTE ->; rewrite andbF.
by rewrite cats0.
Qed.

Section Values.
Local Open Scope ring_scope.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.
Local Notation eval := (eval expf sqrtf geluf gelu_tanhf).
Local Notation seval := (seval expf sqrtf geluf gelu_tanhf).

(** * Keys: a selector true exactly at key z (< size x) lists the one key z; one true exactly on
    [a, a + n) lists [a, a + n). *)
Lemma keys_one (s : sel) (x : seq R) (q z : nat) :
  (forall k, (k < size x)%nat -> seval s x q k = (k == z)) -> (z < size x)%nat -> keys (seval s x q) (size x) = [:: z].
Proof.
move=> Hs Hz; rewrite /Semantics.keys (@filter_iota_range _ z 1) //; last by rewrite addn1.
by move=> k /Hs ->; rewrite addn1 ltnS -eqn_leq eq_sym.
Qed.

Lemma keys_range (s : sel) (x : seq R) (q a n : nat) :
  (forall k, (k < size x)%nat -> seval s x q k = (a <= k < a + n)%nat) -> (a + n <= size x)%nat ->
  keys (seval s x q) (size x) = iota a n.
Proof. by move=> Hs HL; rewrite /Semantics.keys (@filter_iota_range _ a n). Qed.

(** * Averages: a gather reads its one key; a mean over n keys times n is their sum. *)
Lemma sumE (vs : seq R) : sum vs = \sum_(v <- vs) v.
Proof. by elim: vs => [|v vs IH]; rewrite ?big_nil ?big_cons //= IH. Qed.

Lemma mean1 (v : R) : mean [:: v] = v.
Proof. by rewrite /mean sumE big_seq1 divr1. Qed.

Lemma mean_iota (f : nat -> R) (a n : nat) : (0 < n)%nat ->
  mean [seq f k | k <- iota a n] = (\sum_(l < n) f (a + l)%nat) / n%:R.
Proof.
case: n => // n _.
have -> : mean [seq f k | k <- iota a n.+1] = (\sum_(v <- [seq f k | k <- iota a n.+1]) v) / n.+1%:R.
  by rewrite /mean /= size_map size_iota -sumE.
congr (_ / _); rewrite big_map.
rewrite -[a in iota a _]addn0 iotaDl big_map.
by rewrite -(big_mkord xpredT (fun l => f (a + l)%nat)) /index_iota subn0.
Qed.

(** An aggregate and a max head read the values of the keys [keys] lists. *)
Lemma eval_aggregate (s : sel) (v : sop) (x : seq R) (q : nat) :
  eval (Aggregate s v) x q = mean [seq eval v x k | k <- keys (seval s x q) (size x)].
Proof. by []. Qed.

Lemma eval_maximum (s : sel) (v : sop) (x : seq R) (q : nat) :
  eval (Maximum s v) x q = maxl [seq eval v x k | k <- keys (seval s x q) (size x)].
Proof. by []. Qed.

Lemma agg_gather (s : sel) (v : sop) (x : seq R) (q z : nat) :
  (forall k, (k < size x)%nat -> seval s x q k = (k == z)) -> (z < size x)%nat ->
  eval (Aggregate s v) x q = eval v x z.
Proof. by move=> Hs Hz; rewrite eval_aggregate (keys_one Hs Hz); exact: mean1. Qed.

Lemma agg_sum (s : sel) (v : sop) (x : seq R) (q a n : nat) : (0 < n)%nat ->
  (forall k, (k < size x)%nat -> seval s x q k = (a <= k < a + n)%nat) -> (a + n <= size x)%nat ->
  n%:R * eval (Aggregate s v) x q = \sum_(l < n) eval v x (a + l)%nat.
Proof.
move=> Hn Hs HL; rewrite eval_aggregate (keys_range Hs HL) mean_iota // mulrC -mulrA mulVf ?mulr1 //.
by rewrite pnatr_eq0 -lt0n.
Qed.

(** The same, for the values of the keys as the evaluator lists them. *)
Lemma mean_keys_one (f : nat -> R) (s : sel) (x : seq R) (q z : nat) :
  (forall k, (k < size x)%nat -> seval s x q k = (k == z)) -> (z < size x)%nat ->
  mean [seq f k | k <- keys (seval s x q) (size x)] = f z.
Proof. by move=> Hs Hz; rewrite (keys_one Hs Hz); exact: mean1. Qed.

Lemma mean_keys_sum (f : nat -> R) (s : sel) (x : seq R) (q a n : nat) : (0 < n)%nat ->
  (forall k, (k < size x)%nat -> seval s x q k = (a <= k < a + n)%nat) -> (a + n <= size x)%nat ->
  n%:R * mean [seq f k | k <- keys (seval s x q) (size x)] = \sum_(l < n) f (a + l)%nat.
Proof.
move=> Hn Hs HL; rewrite (keys_range Hs HL) mean_iota // mulrC -mulrA mulVf ?mulr1 //.
by rewrite pnatr_eq0 -lt0n.
Qed.

Lemma zR_nat (n : nat) : zR R (Z.of_nat n) = n%:R.
Proof.
rewrite /zR Nat2Z.id; case: n => [|n] //=; first by rewrite subr0.
by rewrite subr0.
Qed.

End Values.

(** * Index arithmetic: the selector tests of the exported terms, and div/mod of a position. *)
Lemma eqb_of_nat (k m : nat) : (Z.of_nat k =? Z.of_nat m)%Z = (k == m).
Proof. by apply/idP/eqP => [/Z.eqb_eq/Nat2Z.inj | ->]; [|apply/Z.eqb_eq]. Qed.

Lemma zdiv_lin (a d j : Z) : (0 <= j < d)%Z -> ((a * d + j) / d)%Z = a.
Proof. by move=> H; symmetry; apply: (Z.div_unique_pos _ _ _ j); lia. Qed.

Lemma zmod_lin (a d j : Z) : (0 <= j < d)%Z -> ((a * d + j) mod d)%Z = j.
Proof. by move=> H; symmetry; apply: (Z.mod_unique_pos _ _ a); lia. Qed.

Lemma zdiv_lin2 (t r c i j : Z) : (0 <= i < r)%Z -> (0 <= j < c)%Z ->
  (((t * r + i) * c + j) / (r * c))%Z = t.
Proof. by move=> Hi Hj; symmetry; apply: (Z.div_unique_pos _ _ _ (i * c + j)); nia. Qed.

Lemma zmod_lin2 (t r c i j : Z) : (0 <= i < r)%Z -> (0 <= j < c)%Z ->
  (((t * r + i) * c + j) mod (r * c))%Z = (i * c + j)%Z.
Proof. by move=> Hi Hj; symmetry; apply: (Z.mod_unique_pos _ _ t); nia. Qed.

(** A key k is in the group q of a mean over d keys (k div d = q) iff q d <= k < q d + d. *)
Lemma zdiv_eqb_range (k d q : nat) : (0 < d)%nat ->
  (Z.of_nat k / Z.of_nat d =? Z.of_nat q)%Z = (q * d <= k < q * d + d)%nat.
Proof.
move=> /ltP Hd; have Hd' : (0 < Z.of_nat d)%Z by lia.
apply/idP/andP => [/Z.eqb_eq H | [/leP H1 /ltP H2]].
  have := Z.mod_pos_bound (Z.of_nat k) (Z.of_nat d) Hd'.
  have := Z.div_mod (Z.of_nat k) (Z.of_nat d) ltac:(lia); rewrite H => E B; clear H.
  move: (Z.of_nat k mod Z.of_nat d)%Z E B => m E B.
  by split; [apply/leP | apply/ltP]; nia.
apply/Z.eqb_eq; symmetry; apply: (Z.div_unique_pos _ _ _ (Z.of_nat k - Z.of_nat q * Z.of_nat d)); nia.
Qed.

Lemma ltZ (m n : nat) : m < n -> (Z.of_nat m < Z.of_nat n)%Z.
Proof. by move/ltP; lia. Qed.

(** Pushes [Z.of_nat] through a position and reduces div/mod of it (side conditions by lia). *)
Ltac zpos :=
  repeat first [ rewrite Nat2Z.inj_add | rewrite Nat2Z.inj_mul ];
  rewrite ?Z.sub_0_r ?Z.add_0_l;
  repeat first [ rewrite zdiv_lin2; [|lia|lia] | rewrite zmod_lin2; [|lia|lia]
               | rewrite zdiv_lin; [|lia] | rewrite zmod_lin; [|lia] ].

Lemma zmod2 (j : nat) : (Z.of_nat j mod 2)%Z = (if odd j then 1 else 0)%Z.
Proof.
rewrite -{1}(odd_double_half j) -muln2 addnC Nat2Z.inj_add Nat2Z.inj_mul zmod_lin.
  by case: (odd j).
by case: (odd j) => /=; lia.
Qed.

Lemma zmod_nat (p c : nat) : (Z.of_nat p mod Z.of_nat c)%Z = Z.of_nat (p %% c).
Proof.
case: c => [|c]; first by rewrite modn0 Zmod_0_r.
symmetry; apply: (Z.mod_unique_pos _ _ (Z.of_nat (p %/ c.+1))).
  by have := ltn_pmod p (ltn0Sn c); lia.
by rewrite {1}(divn_eq p c.+1) Nat2Z.inj_add Nat2Z.inj_mul; lia.
Qed.

(** A guarded index map inside its range takes its then-branch. *)
Lemma iif_guard (lo p hi a b : Z) : (lo <= p < hi)%Z -> iif (iand (ile lo p) (ilt p hi)) a b = a.
Proof.
move=> [H1 H2]; rewrite /iif /iand /ile /ilt.
by rewrite (proj2 (Z.leb_le _ _) H1) (proj2 (Z.ltb_lt _ _) H2).
Qed.

(** [simpl] turns [1 * z] into this match; it is [z]. *)
Lemma Zmatch_id (z : Z) :
  match z with Z0 => Z0 | Zpos y => Zpos y | Zneg y => Zneg y end = z.
Proof. by case: z. Qed.

(** The group of a key under a guarded two-level index (a key outside [0, N) has group -1):
    it is G exactly on the G-th run of k keys. *)
Lemma group_eqb (kk G k c N : nat) : (0 < k)%nat -> (0 < c)%nat -> (G * k + k <= N)%nat ->
  (iif (iand (ile 0 (Z.of_nat kk)) (ilt (Z.of_nat kk) (Z.of_nat N)))
       (Z.of_nat kk / Z.of_nat k / Z.of_nat c * Z.of_nat c + (Z.of_nat kk / Z.of_nat k) mod Z.of_nat c)
       (-1) =? Z.of_nat G)%Z = (G * k <= kk < G * k + k)%nat.
Proof.
move=> Hk Hc HN.
have E : forall a, (a / Z.of_nat c * Z.of_nat c + a mod Z.of_nat c = a)%Z.
  by move=> a; rewrite Z.mul_comm -Z.div_mod; lia.
rewrite /iif /iand /ile /ilt (proj2 (Z.leb_le _ _) (Nat2Z.is_nonneg kk)) /=.
case: (Z.ltb_spec (Z.of_nat kk) (Z.of_nat N)) => H /=.
  by rewrite E zdiv_eqb_range.
case EG: (Z.of_nat G) => [|g|g]; last by lia.
  by symmetry; apply/negbTE/negP => /andP[_ H2]; lia.
by symmetry; apply/negbTE/negP => /andP[_ H2]; lia.
Qed.
