(** Theorem 6 in the kernel, second stage: LayerNorm 1's row statistics.  U's own exported nodes
    for the centred value x_ij - mean_i and the variance E[x^2] - E[x]^2 of row i equal
    EncoderLayer.v's [X i j - row_mean P X i] and [row_var P X i] at every query of their grid,
    for every capacity N, D, H, K, F, both variants (the nodes the exporter names U_compact_n51,
    U_compact_n60, U_shallow_n154, U_shallow_n162: the statements name them by their terms). *)
From mathcomp Require Import all_ssreflect all_algebra.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From mathcomp Require Import ring.
From Attnsim Require Import Semantics Lemmas UniversalLemmas UniversalRowStatsNodes EncoderLayer.
From Attnsim Require Import UniversalRowMean.
Import GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

(** * The selectors, as Z arithmetic (by conversion). *)
Section Selectors.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.
Local Notation seval := (seval expf sqrtf geluf gelu_tanhf).
Variables (N D H K F : Z) (x : seq R) (q k : nat).

(** The gather of X's entry (row (q / D / K) mod N, column q mod D) on the query grid. *)
Definition x_source (B : Z) : Z :=
  if ((0 <=? Z.of_nat q) && (Z.of_nat q <? B))%Z
  then ((Z.of_nat q / D / K) mod N * D + Z.of_nat q mod D)%Z else (-1)%Z.

Lemma compact_x_sel : seval (U_compact_proj_x_gather N D H K F) x q k
  = (Z.of_nat k =? x_source (3 * H * N * K * D))%Z.
Proof.
have -> : seval (U_compact_proj_x_gather N D H K F) x q k =
  (Z.of_nat k =? iif (iand (ile 0 (Z.of_nat q)) (ilt (Z.of_nat q) (0 + 3 * H * N * K * D)))
                     (0 + ((((Z.of_nat q - 0) / D) / K) mod N * D + (Z.of_nat q - 0) mod D)) (-1))%Z by [].
by rewrite iif_range /x_source !Z.add_0_l !Z.sub_0_r.
Qed.

Lemma shallow_x_sel : seval (U_shallow_proj_x_gather N D H K F) x q k
  = (Z.of_nat k =? x_source (H * N * K * D))%Z.
Proof.
have -> : seval (U_shallow_proj_x_gather N D H K F) x q k =
  (Z.of_nat k =? iif (iand (ile 0 (Z.of_nat q)) (ilt (Z.of_nat q) (0 + H * N * K * D)))
                     (0 + ((((Z.of_nat q - 0) / D) / K) mod N * D + (Z.of_nat q - 0) mod D)) (-1))%Z by [].
by rewrite iif_range /x_source !Z.add_0_l !Z.sub_0_r.
Qed.

(** The gather of the header's d (token N D + 1). *)
Lemma compact_d_sel : seval (U_compact_d_gather N D H K F) x q k = (Z.of_nat k =? N * D + 1)%Z.
Proof.
have -> : seval (U_compact_d_gather N D H K F) x q k = (Z.of_nat k =? 0 + 1 * N * D + 1 + 0)%Z by [].
by rewrite Z.add_0_l Z.add_0_r Z.mul_1_l.
Qed.

Lemma shallow_d_sel : seval (U_shallow_d_gather N D H K F) x q k = (Z.of_nat k =? N * D + 1)%Z.
Proof.
have -> : seval (U_shallow_d_gather N D H K F) x q k = (Z.of_nat k =? 0 + 1 * N * D + 1 + 0)%Z by [].
by rewrite Z.add_0_l Z.add_0_r Z.mul_1_l.
Qed.

(** The mean of squares: the same groups as the row sum. *)
Lemma compact_sq_sel : seval (U_compact_ln_x_meansq_sum N D H K F) x q k
  = seval (U_compact_ln_x_mean_sum N D H K F) x q k.
Proof. by []. Qed.

Lemma shallow_sq_sel : seval (U_shallow_ln_x_meansq_sum N D H K F) x q k
  = seval (U_shallow_ln_x_mean_sum N D H K F) x q k.
Proof. by []. Qed.
End Selectors.

Section Stats.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.
Local Notation eval := (eval expf sqrtf geluf gelu_tanhf).
Local Notation seval := (seval expf sqrtf geluf gelu_tanhf).
Local Open Scope ring_scope.

(** The biased variance is the mean of squares minus the squared mean, over the first d of D. *)
Lemma var_identity (D d : nat) (y : 'I_D -> R) : (0 < d)%nat -> (d <= D)%nat ->
  let m := (\sum_(j < D | (j < d)%nat) y j) / d%:R in
  (\sum_(j < D | (j < d)%nat) (y j - m) ^+ 2) / d%:R
  = (\sum_(j < D | (j < d)%nat) y j ^+ 2) / d%:R - m ^+ 2.
Proof.
move=> Hd HdD m.
have Hd0 : d%:R != 0 :> R by rewrite pnatr_eq0 -lt0n.
have Hc : \sum_(j < D | (j < d)%nat) (1 : R) = d%:R.
  by rewrite -(big_ord_widen D (fun _ => (1 : R)) HdD) sumr_const card_ord.
have HS : \sum_(j < D | (j < d)%nat) y j = d%:R * m by rewrite /m mulrC -mulrA mulVf ?mulr1.
have -> : \sum_(j < D | (j < d)%nat) (y j - m) ^+ 2
        = (\sum_(j < D | (j < d)%nat) y j ^+ 2) - 2%:R * m * (\sum_(j < D | (j < d)%nat) y j)
          + m ^+ 2 * (\sum_(j < D | (j < d)%nat) (1 : R)).
  have E j : (y j - m) ^+ 2 = y j ^+ 2 + (- (2%:R * m * y j) + m ^+ 2 * 1) by ring.
  under eq_bigr do rewrite E.
  by rewrite !big_split /= sumrN -!mulr_sumr addrA.
by rewrite HS Hc; clearbody m; field; exact: Hd0.
Qed.

(** A gather reads the position its selector names. *)
Lemma gather_at (s : sel) (v : sop) (x : seq R) (q z : nat) :
  (forall k, seval s x q k = (Z.of_nat k =? Z.of_nat z)%Z) -> (z < size x)%nat ->
  eval (Aggregate s v) x q = eval v x z.
Proof. by move=> Hs Hz; apply: agg_one => // k _; rewrite Hs eqb_of_nat. Qed.

Variables (N D H K F : nat).
Local Notation Z5 f := (f (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)).

(** Given U's input: X at [0, N D), d at token N D + 1; a query of the grid [0, B) on row i,
    column j. *)
Variables (P : params R D H K F) (X : 'M[R]_(N, D)) (x : seq R) (q B : nat) (i : 'I_N) (j : 'I_D).
Hypotheses (HX : encodes x 0 1 N D (fun _ => X)) (Hd : nth 0 x (N * D + 1) = (d_model P)%:R)
  (Hd0 : (0 < d_model P)%nat) (Hpad : forall j : 'I_D, (d_model P <= j)%nat -> X i j = 0)
  (Hq : (q < B)%nat) (Hi : (q %/ D %/ K %% N)%nat = i) (Hj : (q %% D)%nat = j).

Lemma read_x (s : sel) : (forall k, seval s x q k = (Z.of_nat k =? x_source (Z.of_nat N) (Z.of_nat D)
                                                          (Z.of_nat K) q (Z.of_nat B))%Z) ->
  eval (Aggregate s Tokens) x q = X i j.
Proof using HX Hq Hi Hj.
clear Hd Hd0 Hpad; move=> Hs.
have HD : (0 < D)%nat by case: (D) j => [[]|].
have [HL HXij] := HX ord0 i j; rewrite /pos /= mul0n !add0n in HL HXij.
rewrite (@gather_at s Tokens x q (i * D + j)) // => k.
rewrite Hs /x_source.
have -> : ((0 <=? Z.of_nat q) && (Z.of_nat q <? Z.of_nat B))%Z = true.
  by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; lia.
by rewrite !zdiv_nat !zmod_nat Hi Hj -Nat2Z.inj_mul -Nat2Z.inj_add.
Qed.

Lemma read_d (s : sel) : (forall k, seval s x q k = (Z.of_nat k =? Z.of_nat N * Z.of_nat D + 1)%Z) ->
  eval (Aggregate s Tokens) x q = (d_model P)%:R.
Proof using Hd Hd0.
move=> Hs.
have Hz : (N * D + 1 < size x)%nat.
  rewrite ltnNge; apply/negP => Hge; move: Hd; rewrite nth_default // => /esym/eqP.
  by rewrite pnatr_eq0 eqn0Ngt Hd0.
rewrite (@gather_at s Tokens x q (N * D + 1)) // => k.
by rewrite Hs Nat2Z.inj_add Nat2Z.inj_mul.
Qed.

(** The row's sum and sum of squares over D columns are those over its first d_model ones. *)
Lemma pad_sum (f : R -> R) : f 0 = 0 ->
  \sum_(l < D) f (X i l) = \sum_(l < D | (l < d_model P)%nat) f (X i l).
Proof using Hpad.
move=> f0; rewrite (bigID (fun l : 'I_D => (l < d_model P)%nat)) /= [X in _ + X]big1 ?addr0 //.
by move=> l; rewrite -leqNgt => /Hpad ->.
Qed.

Lemma mean_over_d : (\sum_(l < D) X i l) / (d_model P)%:R = row_mean P X i.
Proof using Hpad. by rewrite (pad_sum (f := id)). Qed.

Lemma sq_over_d (HdD : (d_model P <= D)%nat) :
  (\sum_(l < D) X i l * X i l) / (d_model P)%:R - row_mean P X i * row_mean P X i = row_var P X i.
Proof using Hd0 Hpad.
rewrite (pad_sum (f := fun v => v * v)) ?mulr0 // /row_var /row_mean var_identity //.
Qed.

End Stats.

Section Variants.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.
Local Notation eval := (eval expf sqrtf geluf gelu_tanhf).
Local Open Scope ring_scope.

Lemma eval_sub (a b : sop) x p : eval (Map2 PSub a b) x p = eval a x p - eval b x p. Proof. by []. Qed.
Lemma eval_div (a b : sop) x p : eval (Map2 PDiv a b) x p = eval a x p / eval b x p. Proof. by []. Qed.
Lemma eval_square (a : sop) x p : eval (Map1 PSquare a) x p = eval a x p * eval a x p. Proof. by []. Qed.

Variables (N D H K F : nat).
Local Notation Z5 f := (f (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F)).
Variables (P : params R D H K F) (X : 'M[R]_(N, D)) (x : seq R) (q : nat) (i : 'I_N) (j : 'I_D).

(** The centred value x_ij - mean_i (LayerNorm 1's numerator). *)
Theorem U_compact_ln_x_centered_spec :
  encodes x 0 1 N D (fun _ => X) -> nth 0 x (N * D + 1) = (d_model P)%:R ->
  (0 < d_model P)%nat -> (forall j : 'I_D, (d_model P <= j)%nat -> X i j = 0) ->
  (q < 3 * H * N * K * D)%nat -> (q %/ D %/ K %% N)%nat = i -> (q %% D)%nat = j ->
  eval (Z5 U_compact_n51) x q = X i j - row_mean P X i.
Proof.
move=> HX Hd Hd0 Hpad Hq Hi Hj.
rewrite /U_compact_n51 eval_sub /U_compact_ln_x_mean_per_d eval_div.
rewrite (U_compact_ln_x_mean_row expf sqrtf geluf gelu_tanhf F HX Hq Hi).
rewrite /U_compact_d /U_compact_tokens (read_d Hd Hd0); last by move=> k; rewrite compact_d_sel.
rewrite (mean_over_d Hpad) /U_compact_proj_x (read_x HX Hq Hi Hj) // => k.
by rewrite compact_x_sel !Nat2Z.inj_mul.
Qed.

(** The variance of row i (mean of squares minus the squared mean: LayerNorm 1's variance). *)
Theorem U_compact_ln_x_var_spec :
  encodes x 0 1 N D (fun _ => X) -> nth 0 x (N * D + 1) = (d_model P)%:R ->
  (0 < d_model P)%nat -> (d_model P <= D)%nat -> (forall j : 'I_D, (d_model P <= j)%nat -> X i j = 0) ->
  (q < 3 * H * N * K * D)%nat -> (q %/ D %/ K %% N)%nat = i ->
  eval (Z5 U_compact_n60) x q = row_var P X i.
Proof.
move=> HX Hd Hd0 HdD Hpad Hq Hi.
have HD : (0 < D)%nat by move: Hq; case: (D) => //; rewrite muln0.
rewrite /U_compact_n60 eval_sub /U_compact_ln_x_meansq_per_d eval_div /U_compact_n59 eval_square.
rewrite /U_compact_ln_x_mean_per_d eval_div.
rewrite (U_compact_ln_x_mean_row expf sqrtf geluf gelu_tanhf F HX Hq Hi).
rewrite /U_compact_d /U_compact_tokens (read_d Hd Hd0); last by move=> k; rewrite compact_d_sel.
rewrite (mean_over_d Hpad) -(sq_over_d Hd0 Hpad HdD); congr (_ / _ - _).
rewrite /U_compact_ln_x_meansq eval_scale cst_nat /U_compact_ln_x_meansq_mean.
rewrite (@row_sum_any _ expf sqrtf geluf gelu_tanhf _ _ N D K (3 * H * N * K * D) X x q i) //.
  by apply: eq_bigr => l _ /=; have [_ ->] := HX ord0 i l.
by move=> k; rewrite compact_sq_sel compact_row_sel !Nat2Z.inj_mul.
Qed.

(** The centred value x_ij - mean_i (LayerNorm 1's numerator). *)
Theorem U_shallow_ln_x_centered_spec :
  encodes x 0 1 N D (fun _ => X) -> nth 0 x (N * D + 1) = (d_model P)%:R ->
  (0 < d_model P)%nat -> (forall j : 'I_D, (d_model P <= j)%nat -> X i j = 0) ->
  (q < H * N * K * D)%nat -> (q %/ D %/ K %% N)%nat = i -> (q %% D)%nat = j ->
  eval (Z5 U_shallow_n154) x q = X i j - row_mean P X i.
Proof.
move=> HX Hd Hd0 Hpad Hq Hi Hj.
rewrite /U_shallow_n154 eval_sub /U_shallow_ln_x_mean_per_d eval_div.
rewrite (U_shallow_ln_x_mean_row expf sqrtf geluf gelu_tanhf F HX Hq Hi).
rewrite /U_shallow_d /U_shallow_tokens (read_d Hd Hd0); last by move=> k; rewrite shallow_d_sel.
rewrite (mean_over_d Hpad) /U_shallow_proj_x (read_x HX Hq Hi Hj) // => k.
by rewrite shallow_x_sel !Nat2Z.inj_mul.
Qed.

(** The variance of row i (mean of squares minus the squared mean: LayerNorm 1's variance). *)
Theorem U_shallow_ln_x_var_spec :
  encodes x 0 1 N D (fun _ => X) -> nth 0 x (N * D + 1) = (d_model P)%:R ->
  (0 < d_model P)%nat -> (d_model P <= D)%nat -> (forall j : 'I_D, (d_model P <= j)%nat -> X i j = 0) ->
  (q < H * N * K * D)%nat -> (q %/ D %/ K %% N)%nat = i ->
  eval (Z5 U_shallow_n162) x q = row_var P X i.
Proof.
move=> HX Hd Hd0 HdD Hpad Hq Hi.
have HD : (0 < D)%nat by move: Hq; case: (D) => //; rewrite muln0.
rewrite /U_shallow_n162 eval_sub /U_shallow_ln_x_meansq_per_d eval_div /U_shallow_n161 eval_square.
rewrite /U_shallow_ln_x_mean_per_d eval_div.
rewrite (U_shallow_ln_x_mean_row expf sqrtf geluf gelu_tanhf F HX Hq Hi).
rewrite /U_shallow_d /U_shallow_tokens (read_d Hd Hd0); last by move=> k; rewrite shallow_d_sel.
rewrite (mean_over_d Hpad) -(sq_over_d Hd0 Hpad HdD); congr (_ / _ - _).
rewrite /U_shallow_ln_x_meansq eval_scale cst_nat /U_shallow_ln_x_meansq_mean.
rewrite (@row_sum_any _ expf sqrtf geluf gelu_tanhf _ _ N D K (H * N * K * D) X x q i) //.
  by apply: eq_bigr => l _ /=; have [_ ->] := HX ord0 i l.
by move=> k; rewrite shallow_sq_sel shallow_row_sel !Nat2Z.inj_mul.
Qed.

End Variants.
