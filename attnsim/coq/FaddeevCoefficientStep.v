(** Faddeev-LeVerrier, the coefficient step, kernel-checked: the exported program reads
    tr (A M) (as a 1 x 1 matrix) at position 0, as <A^T, M> (A^T gathered on M's positions, then
    n n times the mean over M's block), for every n >= 1, offset and pad. *)
From mathcomp Require Import all_ssreflect all_algebra.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas Exports FaddeevCoefficientStepStatement.
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

(** The flag of a range guard [a <= p < b]: 1 inside, and a key it selects is inside. *)
Lemma range_in (a b p : Z) : (a <= p < b)%Z -> (iand (ile a p) (ilt p b) =? 1)%Z = true.
Proof. by move=> [H1 H2]; rewrite /iand /ile /ilt (proj2 (Z.leb_le _ _) H1) (proj2 (Z.ltb_lt _ _) H2). Qed.

Lemma range_out (a b p : Z) : (iand (ile a p) (ilt p b) =? 1)%Z -> (a <= p < b)%Z.
Proof. by rewrite /iand zb_eq1 /ile /ilt; case: Z.leb_spec; case: Z.ltb_spec. Qed.

(** Div and mod of a position [a n + l] by n, and of an index [< n n] by n n. *)
Lemma zdivn (n a l : nat) : (l < n)%nat -> (Z.of_nat (a * n + l) / Z.of_nat n)%Z = Z.of_nat a.
Proof. by move=> Hl; rewrite Nat2Z.inj_add Nat2Z.inj_mul zdiv_lin //; lia. Qed.

Lemma zmodn (n a l : nat) : (l < n)%nat -> (Z.of_nat (a * n + l) mod Z.of_nat n)%Z = Z.of_nat l.
Proof. by move=> Hl; rewrite Nat2Z.inj_add Nat2Z.inj_mul zmod_lin //; lia. Qed.

Local Open Scope ring_scope.

Theorem faddeev_coefficient_step : faddeev_coefficient_step_statement.
Proof.
move=> R expf sqrtf geluf gelu_tanhf n off pad A M x Hn HA HM HL.
apply/matrixP => i j; rewrite (ord1 i) (ord1 j) !mxE eqxx mulr1n /pos /=.
rewrite ?Zmatch_id.
have -> : (Z.of_nat n * Z.of_nat n)%Z = Z.of_nat (n * n) by lia.
rewrite zR_nat /zR /= !subr0 !divr1.
(* A sum over the keys the mask selects, as a sum over A's block. *)
match goal with |- context [keys ?P ?L] =>
  have Hsum : forall F : nat -> R, \sum_(0 <= k < L | P k) F k
    = \sum_(l < n) \sum_(m < n) F (off + n * n + (l * n + m))%nat end.
  move=> F; rewrite (@sum_block _ _ _ _ (off + n * n) n n); last first.
  - by move=> k _ /= /range_out; lia.
  - by lia.
  apply: eq_bigr => l _; apply: eq_bigl => m /=.
  by move: (ltn_ord l) (ltn_ord m) => Hl Hm; rewrite range_in //; nia.
have -> : (n * n)%:R = \sum_(l < n) \sum_(m < n) (1 : R).
  by rewrite !sumr_const !card_ord -mulrnA.
(* The scale is the number of keys: scale times mean is the sum. *)
rewrite -(Hsum (fun _ => 1)) mean_keys_big Hsum /mxtrace exchange_big.
apply: eq_bigr => l _; rewrite mxE; apply: eq_bigr => m _.
have Hl := ltn_ord l; have Hm := ltn_ord m.
rewrite (@mean_keys_one _ _ _ _ _ _ _ _ _ (off + (l * n + m))%nat); first last.
- by nia.
- move=> kk _ /=; rewrite -eqb_of_nat; congr (_ =? _)%Z.
  have -> : (Z.of_nat (off + n * n + (m * n + l)) - (Z.of_nat off + Z.of_nat (n * n)))%Z
    = Z.of_nat (m * n + l) by lia.
  rewrite zdivn // zmodn // Z.div_small ?Z.mod_small; lia.
have [_ <-] := HA ord0 l m; have [_ <-] := HM ord0 m l.
by rewrite /pos /= !mul0n !add0n !addnA.
Qed.
