(** Faddeev-LeVerrier, one iteration, kernel-checked: the exported program reads
    - tr (A (A M + c I)) / (k + 1) (as a 1 x 1 matrix) at position 0, for every n, k >= 1, offset
    and pad: the general step's output (its program is a subterm, [general_entry] below) read as
    <A^T, M'> over [0, n n). *)
From mathcomp Require Import all_ssreflect all_algebra.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas Exports FaddeevIterationStatement.
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

(** The flag of a range guard [a <= p < b]: 1 inside, and a key it selects is inside. *)
Lemma range_in (a b p : Z) : (a <= p < b)%Z -> (iand (ile a p) (ilt p b) =? 1)%Z = true.
Proof. by move=> [H1 H2]; rewrite /iand /ile /ilt (proj2 (Z.leb_le _ _) H1) (proj2 (Z.ltb_lt _ _) H2). Qed.

Lemma range_out (a b p : Z) : (iand (ile a p) (ilt p b) =? 1)%Z -> (a <= p < b)%Z.
Proof. by rewrite /iand zb_eq1 /ile /ilt; case: Z.leb_spec; case: Z.ltb_spec. Qed.

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

(** The same mask at offset 0, as the program's simplification writes it. *)
Lemma diag0 (n i j : nat) : (i < n)%nat -> (j < n)%nat ->
  iand (iand (ile 0 (Z.of_nat (i * n + j))) (ilt (Z.of_nat (i * n + j)) (Z.of_nat n * Z.of_nat n)))
       (ieq (((Z.of_nat (i * n + j) - 0) / Z.of_nat n) mod Z.of_nat n)
            ((Z.of_nat (i * n + j) - 0) mod Z.of_nat n)) = zb (i == j).
Proof. by move=> Hi Hj; have := @diag_in 0 n i j Hi Hj; rewrite add0n. Qed.

(** Div and mod of a position [a n + l] by n, and of an index [< n n] by n n. *)
Lemma zdivn (n a l : nat) : (l < n)%nat -> (Z.of_nat (a * n + l) / Z.of_nat n)%Z = Z.of_nat a.
Proof. by move=> Hl; rewrite Nat2Z.inj_add Nat2Z.inj_mul zdiv_lin //; lia. Qed.

Lemma zmodn (n a l : nat) : (l < n)%nat -> (Z.of_nat (a * n + l) mod Z.of_nat n)%Z = Z.of_nat l.
Proof. by move=> Hl; rewrite Nat2Z.inj_add Nat2Z.inj_mul zmod_lin //; lia. Qed.

Lemma zdivnn (n i j : nat) : (i < n)%nat -> (j < n)%nat ->
  (Z.of_nat (i * n + j) / (Z.of_nat n * Z.of_nat n))%Z = 0%Z.
Proof. by move=> Hi Hj; rewrite Z.div_small //; nia. Qed.

Lemma zmodnn (n i j : nat) : (i < n)%nat -> (j < n)%nat ->
  (Z.of_nat (i * n + j) mod (Z.of_nat n * Z.of_nat n))%Z = Z.of_nat (i * n + j).
Proof. by move=> Hi Hj; rewrite Z.mod_small //; nia. Qed.

Local Open Scope ring_scope.

Section General.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.

(** The general step M' = A M + c I, read at entry (i, j) of its n x n output. *)
Lemma general_entry (n off pad : nat) (A M : 'M[R]_n) (c : 'M[R]_1) (x : seq R) :
  (0 < n)%nat -> encodes x off 1 n n (fun _ => A) -> encodes x (off + n * n) 1 n n (fun _ => M) ->
  encodes x (off + n * n + n * n) 1 1 1 (fun _ => c) ->
  (off + n * n + n * n + 1 <= size x)%nat -> (n * n * n <= size x)%nat -> forall i j : 'I_n,
  eval expf sqrtf geluf gelu_tanhf (faddeev_general_step_prog (Z.of_nat n) (Z.of_nat off) (Z.of_nat pad)) x (i * n + j)%nat
  = (A *m M + (c 0 0)%:M) i j.
Proof.
move=> Hn HA HM HC HL1 HL2 i j.
have Z1 : zR R 1 = 1 by rewrite /zR /= subr0.
have Zb b : zR R (zb b) = (b : nat)%:R by case: b; rewrite /zR /= subr0.
rewrite !mxE /=.
have Hi := ltn_ord i; have Hj := ltn_ord j.
rewrite ?Zmatch_id zR_nat Z1 !divr1 diag0 // Zb.
rewrite (@mean_keys_sum _ _ _ _ _ _ _ _ _ ((i * n + j) * n) n) //; first last.
- by nia.
- by move=> kk _ /=; rewrite zdiv_eqb_range.
rewrite (@mean_keys_one _ _ _ _ _ _ _ _ _ (off + n * n + n * n)%nat); first last.
- by lia.
- by move=> kk _ /=; rewrite -eqb_of_nat; congr (_ =? _)%Z; lia.
have [_ <-] := HC ord0 ord0 ord0.
have -> : pos (off + n * n + n * n) 1 1 ord0 ord0 ord0 = (off + n * n + n * n)%nat.
  by rewrite /pos /=; lia.
congr (_ + _); last first.
  have -> : (i == j :> nat) = (i == j) by [].
  by case: (i == j); rewrite ?mulr1n ?mulr0n ?mulr1 ?mulr0.
apply: eq_bigr => l _; have Hl := ltn_ord l.
rewrite (@mean_keys_one _ _ _ _ _ _ _ _ _ (off + (i * n + l))%nat); first last.
- by nia.
- move=> kk _ /=; rewrite -eqb_of_nat; congr (_ =? _)%Z.
  rewrite Z.sub_0_r zdivn // zmodn // zdivnn // zmodnn // zdivn //; lia.
rewrite (@mean_keys_one _ _ _ _ _ _ _ _ _ (off + n * n + (l * n + j))%nat); first last.
- by nia.
- move=> kk _ /=; rewrite -eqb_of_nat; congr (_ =? _)%Z.
  rewrite Z.sub_0_r zdivn // zmodn // zdivnn // zmodnn // zmodn //; lia.
have [_ <-] := HA ord0 i l; have [_ <-] := HM ord0 l j.
by rewrite /pos /= !mul0n !add0n !addnA.
Qed.
End General.

Theorem faddeev_iteration : faddeev_iteration_statement.
Proof.
move=> R expf sqrtf geluf gelu_tanhf n k off pad A M c x Hn Hk HA HM HC HL.
(* The general step's program is the subterm the products read (Exports builds it the same
   way): name it, state its entries (general_entry), and keep it opaque to [simpl]. *)
rewrite /faddeev_iteration_prog; cbv zeta.
set G := faddeev_general_step_prog (Z.of_nat n) (Z.of_nat off) (Z.of_nat pad).
match goal with |- context [Map2 PMul ?At ?H] => change H with G end.
have HG : forall i j : 'I_n, eval expf sqrtf geluf gelu_tanhf G x (i * n + j)%nat = (A *m M + (c 0 0)%:M) i j.
  by apply: general_entry => //; lia.
clearbody G.
apply/matrixP => i j; rewrite (ord1 i) (ord1 j) !mxE eqxx mulr1n /pos /=.
rewrite ?Zmatch_id.
have -> : (Z.of_nat n * Z.of_nat n)%Z = Z.of_nat (n * n) by lia.
have -> : (Z.of_nat k + 1)%Z = Z.of_nat (k + 1) by lia.
have Zm1 : zR R (-1) = -1 by rewrite /zR /= sub0r.
have Z1 : zR R 1 = 1 by rewrite /zR /= subr0.
rewrite !zR_nat Zm1 Z1 divr1.
(* The mask selects [0, n n): a sum over it is a double sum over (l, m), l n + m. *)
match goal with |- context [keys ?P ?L] =>
  have Hsum : forall F : nat -> R, \sum_(0 <= k < L | P k) F k
    = \sum_(l < n) \sum_(m < n) F (l * n + m)%nat end.
  move=> F; rewrite (@sum_block _ _ _ _ 0 n n); last first.
  - by move=> kk _ /= /range_out; lia.
  - by lia.
  apply: eq_bigr => l _; apply: eq_big => [m|m _]; rewrite add0n //=.
  by move: (ltn_ord l) (ltn_ord m) => Hl Hm; rewrite range_in //; nia.
have -> : (n * n)%:R = \sum_(l < n) \sum_(m < n) (1 : R).
  by rewrite !sumr_const !card_ord -mulrnA.
(* n n times the mean is the sum; tr (A M') = sum_l sum_m A l m M' m l. *)
rewrite -(Hsum (fun _ => 1)) mean_keys_big Hsum /mxtrace exchange_big.
rewrite mulrAC mulN1r; congr (- _ / _); apply: eq_bigr => l _; rewrite mxE.
apply: eq_bigr => m _.
have Hl := ltn_ord l; have Hm := ltn_ord m.
rewrite HG (@mean_keys_one _ _ _ _ _ _ _ _ _ (off + (l * n + m))%nat); first last.
- by nia.
- move=> kk _ /=; rewrite -eqb_of_nat; congr (_ =? _)%Z.
  rewrite Z.sub_0_r zdivn // zmodn // Z.div_small ?Z.mod_small; lia.
by have [_ <-] := HA ord0 l m; rewrite /pos /= !mul0n !add0n !addnA.
Qed.
