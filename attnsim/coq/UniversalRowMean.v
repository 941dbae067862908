(** Theorem 6 in the kernel, its first stage: U's own exported node [ln_x.mean] (the
    pre-LayerNorm row sum; generated from the Python program into UniversalRowMeanNodes.v) is, at every query of its grid, d_model times the row mean of
    EncoderLayer.v's LayerNorm, for every capacity N, D, H, K, F, both variants.  The statements
    the gate types these theorems by are generated from U's layout (attnsim.universal.kernel_stages). *)
From mathcomp Require Import all_ssreflect all_algebra.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas UniversalLemmas UniversalRowMeanNodes EncoderLayer.
Import GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

(** * The selectors of the two variants' row sums, as Z arithmetic (by conversion). *)

Lemma compact_row_sel (R : realFieldType) (expf sqrtf geluf gelu_tanhf : R -> R) (N D H K F : Z) (x : seq R) (q k : nat) :
  seval expf sqrtf geluf gelu_tanhf (U_compact_ln_x_mean_sum N D H K F) x q k =
  ((if ((0 <=? Z.of_nat k) && (Z.of_nat k <? N * D))%Z then Z.of_nat k / D else (-1))
   =? (if ((0 <=? Z.of_nat q) && (Z.of_nat q <? 3 * H * N * K * D))%Z then (Z.of_nat q / D / K) mod N else (-2)))%Z.
Proof.
have -> : seval expf sqrtf geluf gelu_tanhf (U_compact_ln_x_mean_sum N D H K F) x q k =
  (iif (iand (ile 0 (Z.of_nat k)) (ilt (Z.of_nat k) (0 + 1 * N * D))) (0 * N + (Z.of_nat k - 0) / D) (-1)
   =? iif (iand (ile 0 (Z.of_nat q)) (ilt (Z.of_nat q) (0 + 3 * H * N * K * D)))
          (0 * N + ((Z.of_nat q - 0) / D / K) mod N) (-2))%Z by [].
by rewrite !iif_range !Z.add_0_l ?Z.mul_1_l ?Z.mul_0_l ?Z.add_0_l !Z.sub_0_r.
Qed.

Lemma shallow_row_sel (R : realFieldType) (expf sqrtf geluf gelu_tanhf : R -> R) (N D H K F : Z) (x : seq R) (q k : nat) :
  seval expf sqrtf geluf gelu_tanhf (U_shallow_ln_x_mean_sum N D H K F) x q k =
  ((if ((0 <=? Z.of_nat k) && (Z.of_nat k <? N * D))%Z then Z.of_nat k / D else (-1))
   =? (if ((0 <=? Z.of_nat q) && (Z.of_nat q <? H * N * K * D))%Z then (Z.of_nat q / D / K) mod N else (-2)))%Z.
Proof.
have -> : seval expf sqrtf geluf gelu_tanhf (U_shallow_ln_x_mean_sum N D H K F) x q k =
  (iif (iand (ile 0 (Z.of_nat k)) (ilt (Z.of_nat k) (0 + 1 * N * D))) (0 * N + (Z.of_nat k - 0) / D) (-1)
   =? iif (iand (ile 0 (Z.of_nat q)) (ilt (Z.of_nat q) (0 + H * N * K * D)))
          (0 * N + ((Z.of_nat q - 0) / D / K) mod N) (-2))%Z by [].
by rewrite !iif_range !Z.add_0_l ?Z.mul_1_l ?Z.mul_0_l ?Z.add_0_l !Z.sub_0_r.
Qed.


Section RowSum.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.
Local Notation eval := (eval expf sqrtf geluf gelu_tanhf).
Local Notation seval := (seval expf sqrtf geluf gelu_tanhf).
Local Open Scope ring_scope.

Lemma eval_scale (c : cst) (a : sop) (x : seq R) (p : nat) :
  eval (Map1 (PScale c) a) x p = cst_sem R c * eval a x p.
Proof. by []. Qed.

Lemma cst_nat (n : nat) : cst_sem R (CQ (Z.of_nat n) 1) = n%:R.
Proof. by rewrite /= zR_nat /zR /= subr0 divr1. Qed.

(** The shape both variants share: a key group [k / D] on X's block [0, N D) (-1 elsewhere),
    a query group [(q / D / K) mod N] on the query block [0, B) (-2 elsewhere).  D times the
    average is the sum of row [i] of X. *)
Lemma row_sum_any (s : sel) (v : sop) (N D K B : nat) (X : 'M[R]_(N, D)) (x : seq R) (q : nat)
  (i : 'I_N) :
  (forall k, seval s x q k =
     ((if ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat N * Z.of_nat D))%Z then Z.of_nat k / Z.of_nat D
       else (-1))
      =? (if ((0 <=? Z.of_nat q) && (Z.of_nat q <? Z.of_nat B))%Z
          then (Z.of_nat q / Z.of_nat D / Z.of_nat K) mod Z.of_nat N else (-2)))%Z) ->
  encodes x 0 1 N D (fun _ => X) -> (0 < D)%nat -> (q < B)%nat -> (q %/ D %/ K %% N)%nat = i ->
  D%:R * eval (Aggregate s v) x q = \sum_(j < D) eval v x (pos 0 N D 0 i j).
Proof.
move=> Hs HX HD HB Hi.
have HiD : (i * D + D <= N * D)%nat by rewrite -mulSnr leq_mul2r ltn_ord orbT.
have HL : (i * D + D <= size x)%nat.
  have [HL _] := HX ord0 i (Ordinal (etrans (ltn_predL D) HD)).
  by move: HL; rewrite /pos /= mul0n !add0n; lia.
have Hsel : forall k, (k < size x)%nat -> seval s x q k = (i * D <= k < i * D + D)%nat.
  move=> k _; rewrite Hs.
  have -> : ((0 <=? Z.of_nat q) && (Z.of_nat q <? Z.of_nat B))%Z = true.
    by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; lia.
  have -> : ((Z.of_nat q / Z.of_nat D / Z.of_nat K) mod Z.of_nat N)%Z = Z.of_nat i.
    by rewrite !zdiv_nat zmod_nat Hi.
  by rewrite -Nat2Z.inj_mul row_group_eqb.
rewrite (@agg_sum _ expf sqrtf geluf gelu_tanhf s v x q (i * D) D HD Hsel HL).
by apply: eq_bigr => j _; rewrite /pos /= mul0n !add0n.
Qed.

Lemma row_sum (s : sel) (N D K B : nat) (X : 'M[R]_(N, D)) (x : seq R) (q : nat) (i : 'I_N) :
  (forall k, seval s x q k =
     ((if ((0 <=? Z.of_nat k) && (Z.of_nat k <? Z.of_nat N * Z.of_nat D))%Z then Z.of_nat k / Z.of_nat D
       else (-1))
      =? (if ((0 <=? Z.of_nat q) && (Z.of_nat q <? Z.of_nat B))%Z
          then (Z.of_nat q / Z.of_nat D / Z.of_nat K) mod Z.of_nat N else (-2)))%Z) ->
  encodes x 0 1 N D (fun _ => X) -> (0 < D)%nat -> (q < B)%nat -> (q %/ D %/ K %% N)%nat = i ->
  D%:R * eval (Aggregate s Tokens) x q = \sum_(j < D) X i j.
Proof.
move=> Hs HX HD HB Hi; rewrite (row_sum_any Tokens Hs HX HD HB Hi).
by apply: eq_bigr => j _ /=; have [_ <-] := HX ord0 i j.
Qed.

(** Zero padding: a row whose entries from column [d] on are 0 sums to [d] times its mean
    over the first [d] columns (EncoderLayer's [row_mean]). *)
Lemma row_sum_mean (N D H K F : nat) (P : params R D H K F) (X : 'M[R]_(N, D)) (i : 'I_N) :
  (0 < d_model P)%nat -> (forall j : 'I_D, (d_model P <= j)%nat -> X i j = 0) ->
  \sum_(j < D) X i j = (d_model P)%:R * row_mean P X i.
Proof.
move=> Hd Hpad; rewrite /row_mean mulrC -mulrA mulVf ?mulr1; last by rewrite pnatr_eq0 -lt0n.
rewrite (bigID (fun j : 'I_D => (j < d_model P)%nat)) /= [X in _ + X]big1 ?addr0 //.
by move=> j; rewrite -leqNgt => /Hpad.
Qed.

Section Variants.
Variables (N D H K F : nat).
Local Notation Z5 f := (f (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)).

(** U's pre-LayerNorm row sum ([ln_x.mean]: D times the average over row i's D tokens) at every
    query of its block reads row [i = (q / D / K) mod N] of X: the sum over its D columns. *)
Theorem U_compact_ln_x_mean_row (X : 'M[R]_(N, D)) (x : seq R) (q : nat) (i : 'I_N) :
  encodes x 0 1 N D (fun _ => X) -> (q < 3 * H * N * K * D)%nat -> (q %/ D %/ K %% N)%nat = i ->
  eval (Z5 U_compact_ln_x_mean) x q = \sum_(j < D) X i j.
Proof.
move=> HX Hq Hi; have HD : (0 < D)%nat by move: Hq; case: (D) => //; rewrite muln0.
rewrite /U_compact_ln_x_mean eval_scale cst_nat /U_compact_ln_x_mean_mean /U_compact_tokens.
apply: (row_sum (K := K) (B := 3 * H * N * K * D)) => // k.
by rewrite compact_row_sel !Nat2Z.inj_mul.
Qed.

Theorem U_shallow_ln_x_mean_row (X : 'M[R]_(N, D)) (x : seq R) (q : nat) (i : 'I_N) :
  encodes x 0 1 N D (fun _ => X) -> (q < H * N * K * D)%nat -> (q %/ D %/ K %% N)%nat = i ->
  eval (Z5 U_shallow_ln_x_mean) x q = \sum_(j < D) X i j.
Proof.
move=> HX Hq Hi; have HD : (0 < D)%nat by move: Hq; case: (D) => //; rewrite muln0.
rewrite /U_shallow_ln_x_mean eval_scale cst_nat /U_shallow_ln_x_mean_mean /U_shallow_tokens.
apply: (row_sum (K := K) (B := H * N * K * D)) => // k.
by rewrite shallow_row_sel !Nat2Z.inj_mul.
Qed.

(** Against the specification: with X zero beyond the layer's d_model columns, U's row sum is
    d_model times EncoderLayer's [row_mean] (the mean LayerNorm subtracts), both variants. *)
Theorem U_compact_ln_x_mean_spec (P : params R D H K F) (X : 'M[R]_(N, D)) (x : seq R) (q : nat) (i : 'I_N) :
  encodes x 0 1 N D (fun _ => X) -> (0 < d_model P)%nat -> (forall j : 'I_D, (d_model P <= j)%nat -> X i j = 0) ->
  (q < 3 * H * N * K * D)%nat -> (q %/ D %/ K %% N)%nat = i ->
  eval (Z5 U_compact_ln_x_mean) x q = (d_model P)%:R * row_mean P X i.
Proof. by move=> HX Hd Hpad Hq Hi; rewrite (U_compact_ln_x_mean_row HX Hq Hi) (row_sum_mean Hd Hpad). Qed.

Theorem U_shallow_ln_x_mean_spec (P : params R D H K F) (X : 'M[R]_(N, D)) (x : seq R) (q : nat) (i : 'I_N) :
  encodes x 0 1 N D (fun _ => X) -> (0 < d_model P)%nat -> (forall j : 'I_D, (d_model P <= j)%nat -> X i j = 0) ->
  (q < H * N * K * D)%nat -> (q %/ D %/ K %% N)%nat = i ->
  eval (Z5 U_shallow_ln_x_mean) x q = (d_model P)%:R * row_mean P X i.
Proof. by move=> HX Hd Hpad Hq Hi; rewrite (U_shallow_ln_x_mean_row HX Hq Hi) (row_sum_mean Hd Hpad). Qed.

End Variants.
End RowSum.
