(** Theorem 6 in the kernel: U's whole layer.  U's own exported node [Y] at EVERY query of the out
    grid (every row i < N, column e < D), and U's program (node [U]) at the position where the
    encoding puts X's entry (i, e), are EncoderLayer.v's [encoder_layer expR sqrtf P M n X i e] for
    EVERY layer (pre-norm, post-norm or no norm, with or without an FFN and residual connections),
    every capacity N, D, H, K, F (0 < H, 0 < F), both variants (generated statements:
    UniversalTheorem6Statement.v).  The heads are a variable: this is Theorem 9's statement too.

    The whole layer is [U_<v>_layer_of_y2] (UniversalLayer.v: the layer given out.Y2's equation)
    with LayerNorm 2's theorem [U_<v>_y2_spec] (UniversalY2.v) discharging that equation; the
    premises are the two theorems' (each block of <T, X> where U's layout puts it, the weights zero
    beyond their true sizes). *)
From mathcomp Require Import all_ssreflect all_algebra.
From mathcomp Require Import reals sequences exp.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas UniversalLemmas UniversalTheorem6Nodes EncoderLayer.
From Attnsim Require Import UniversalY2Statement UniversalY2 UniversalLayerStatement UniversalLayer.
From Attnsim Require Import UniversalTheorem6Statement.
Import GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

Theorem U_compact_theorem6 : U_compact_theorem6_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p; intros.
apply: (@U_compact_layer_of_y2 R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p); try assumption.
move=> _ Hi He.
by apply: (@U_compact_y2_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p); assumption.
Qed.

Theorem U_compact_theorem6_out : U_compact_theorem6_out_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i e n; intros.
have [Hp Hpi Hpe] := pos_x i e.
have HisX : eval (@expR R) sqrtf geluf gelu_tanhf
  (OfIdx (U_compact_is_X (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F))) x (pos 0 N D 0 i e) = 1.
  rewrite /= /U_compact_is_X /U_compact_indices /= iif_range.
  have -> : ((0 <=? Z.of_nat (pos 0 N D 0 i e)) && (Z.of_nat (pos 0 N D 0 i e) <? 0 + 1 * Z.of_nat N * Z.of_nat D))%Z = true.
    by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp; lia.
  by rewrite /zR /= subr0.
rewrite /U_compact eval_where HisX oner_neq0.
by apply: (@U_compact_theorem6 R sqrtf geluf gelu_tanhf N D H K F P M X x i e n (pos 0 N D 0 i e)); assumption.
Qed.

Theorem U_shallow_theorem6 : U_shallow_theorem6_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p; intros.
apply: (@U_shallow_layer_of_y2 R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p); try assumption.
move=> _ Hi He.
by apply: (@U_shallow_y2_spec R sqrtf geluf gelu_tanhf N D H K F P M X x i e n p); assumption.
Qed.

Theorem U_shallow_theorem6_out : U_shallow_theorem6_out_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf N D H K F P M X x i e n; intros.
have [Hp Hpi Hpe] := pos_x i e.
have HisX : eval (@expR R) sqrtf geluf gelu_tanhf
  (OfIdx (U_shallow_is_X (Z.of_nat N) (Z.of_nat D) (Z.of_nat H) (Z.of_nat K) (Z.of_nat F))) x (pos 0 N D 0 i e) = 1.
  rewrite /= /U_shallow_is_X /U_shallow_indices /= iif_range.
  have -> : ((0 <=? Z.of_nat (pos 0 N D 0 i e)) && (Z.of_nat (pos 0 N D 0 i e) <? 0 + 1 * Z.of_nat N * Z.of_nat D))%Z = true.
    by apply/andP; split; [apply/Z.leb_le | apply/Z.ltb_lt]; clear -Hp; lia.
  by rewrite /zR /= subr0.
rewrite /U_shallow eval_where HisX oner_neq0.
by apply: (@U_shallow_theorem6 R sqrtf geluf gelu_tanhf N D H K F P M X x i e n (pos 0 N D 0 i e)); assumption.
Qed.
