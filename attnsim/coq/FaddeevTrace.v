(** Faddeev-LeVerrier, the trace step, kernel-checked: the exported program reads tr A (as a
    1 x 1 matrix) at position 0, for every n >= 1, offset and pad: n times the mean over the
    diagonal keys of A's block. *)
From mathcomp Require Import all_ssreflect all_algebra.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas Exports FaddeevTraceStatement.
Import GRing.Theory Num.Theory.

(** * General lemmas: a masked mean times the number of its keys is the masked sum, and a
    masked sum over a block [off, off + a b) is a double sum over its rows and columns. *)
Section Masked.
Variable R : realFieldType.
Local Open Scope ring_scope.

Lemma mean_keys_big (f : nat -> R) (P : nat -> bool) (L : nat) :
  (\sum_(0 <= k < L | P k) 1) * mean [seq f k | k <- keys P L]
  = \sum_(0 <= k < L | P k) f k.
Proof.
have E (g : nat -> R) :
    \sum_(0 <= k < L | P k) g k = \sum_(k <- keys P L) g k.
  by rewrite /keys big_filter /index_iota subn0.
rewrite !E; case: (keys P L) => [|a l]; first by rewrite !big_nil /= mulr0.
rewrite big_const_seq count_predT iter_addr_0 /mean sumE big_map size_map.
by rewrite mulrC -mulrA mulVf ?mulr1 // pnatr_eq0.
Qed.

Lemma sum_shift (P : pred nat) (F : nat -> R) (m n : nat) :
  \sum_(m <= k < m + n | P k) F k = \sum_(0 <= l < n | P (m + l)%nat) F (m + l)%nat.
Proof.
rewrite -{1}(add0n m) big_addn addKn.
by apply: eq_big => [l|l _]; rewrite addnC.
Qed.

Lemma sum_grid (P : pred nat) (F : nat -> R) (a b : nat) :
  \sum_(0 <= k < a * b | P k) F k = \sum_(i < a) \sum_(j < b | P (i * b + j)%nat) F (i * b + j)%nat.
Proof.
elim: a => [|a IH]; first by rewrite mul0n big_geq // big_ord0.
rewrite big_ord_recr /= -IH mulSnr (@big_cat_nat _ _ _ (a * b)) ?leq_addr //=.
by rewrite (sum_shift P F (a * b)); congr (_ + _); rewrite big_mkord.
Qed.

Lemma sum_block (P : pred nat) (F : nat -> R) (L off a b : nat) :
  (off + a * b <= L)%nat -> (forall k, (k < L)%nat -> P k -> (off <= k < off + a * b)%nat) ->
  \sum_(0 <= k < L | P k) F k
  = \sum_(i < a) \sum_(j < b | P (off + (i * b + j))%nat) F (off + (i * b + j))%nat.
Proof.
move=> HL HP.
rewrite (@big_cat_nat _ _ _ off) ?(leq_trans (leq_addr _ _) HL) //=.
rewrite (@big_cat_nat _ _ _ (off + a * b) off) ?leq_addr //=.
have Z0 m n : (forall k, (m <= k < n)%nat -> ~~ P k) -> \sum_(m <= k < n | P k) F k = 0.
  by move=> H; rewrite big_nat_cond big1 // => k /andP[/H /negbTE ->].
rewrite (Z0 0%nat off) ?add0r; last first.
  move=> k /andP[_ Hk]; apply/negP => Pk.
  by have := HP k (leq_trans Hk (leq_trans (leq_addr _ _) HL)) Pk; lia.
rewrite (Z0 (off + a * b)%nat L) ?addr0; last first.
  by move=> k /andP[Hk1 Hk2]; apply/negP => Pk; have := HP k Hk2 Pk; lia.
by rewrite sum_shift (sum_grid (fun l => P (off + l)%nat) (fun l => F (off + l)%nat)).
Qed.

End Masked.

(** * Index lemmas: the 0/1 flags of the guards and masks, and div/mod of positions. *)
Lemma zb_eq1 (b : bool) : (zb b =? 1)%Z = b.
Proof. by case: b. Qed.

Lemma iand_zb (a b : bool) : iand (zb a) (zb b) = zb (a && b).
Proof. by case: a; case: b. Qed.

(** A key a guarded mask selects lies in the guard's range. *)
Lemma guard_out (a b p c : Z) : (iand (iand (ile a p) (ilt p b)) c =? 1)%Z -> (a <= p < b)%Z.
Proof.
rewrite {1}/iand zb_eq1 /iand /ile /ilt.
by case: Z.leb_spec; case: Z.ltb_spec.
Qed.

(** The diagonal mask of an n x n block at [off], at entry (i, j): the flag i == j. *)
Lemma diag_in (off n i j : nat) : (i < n)%nat -> (j < n)%nat ->
  iand (iand (ile (Z.of_nat off) (Z.of_nat (off + (i * n + j))))
                  (ilt (Z.of_nat (off + (i * n + j))) (Z.of_nat off + Z.of_nat n * Z.of_nat n)))
       (ieq (((Z.of_nat (off + (i * n + j)) - Z.of_nat off) / Z.of_nat n) mod Z.of_nat n)
            ((Z.of_nat (off + (i * n + j)) - Z.of_nat off) mod Z.of_nat n)) = zb (i == j).
Proof.
move=> Hi Hj; rewrite /ile /ilt /ieq !iand_zb.
rewrite (proj2 (Z.leb_le _ _)); last lia.
rewrite (proj2 (Z.ltb_lt _ _)); last nia.
have -> : (Z.of_nat (off + (i * n + j)) - Z.of_nat off = Z.of_nat i * Z.of_nat n + Z.of_nat j)%Z by lia.
rewrite zdiv_lin ?zmod_lin; try lia.
by rewrite Z.mod_small /= -?eqb_of_nat //; lia.
Qed.

Local Open Scope ring_scope.

Theorem faddeev_trace : faddeev_trace_statement.
Proof.
move=> R expf sqrtf geluf gelu_tanhf n off pad A x Hn HA HL.
apply/matrixP => i j; rewrite (ord1 i) (ord1 j) !mxE eqxx mulr1n /pos /=.
rewrite zR_nat /zR /= subr0 divr1 ?Zmatch_id.
(* A sum over the keys the mask selects, as a sum over A's block. *)
match goal with |- context [keys ?P ?L] =>
  have Hsum : forall F : nat -> R,
    \sum_(0 <= k < L | P k) F k = \sum_(l < n) F (off + (l * n + l))%nat end.
  move=> F; rewrite (@sum_block _ _ _ _ off n n); last first.
  - by move=> k _ /= /guard_out; lia.
  - by lia.
  apply: eq_bigr => l _; rewrite (big_pred1 l) // => m /=.
  by rewrite diag_in // zb_eq1 eq_sym.
have -> : n%:R = \sum_(l < n) (1 : R) by rewrite sumr_const card_ord.
(* The scale is the number of keys: scale times mean is the sum. *)
rewrite -(Hsum (fun _ => 1)) mean_keys_big Hsum /mxtrace; apply: eq_bigr => l _.
by have [_ <-] := HA ord0 l l; rewrite /pos /= mul0n add0n addnA.
Qed.
