(** Lemma 3 (softmax), masked form, kernel-checked: with the true number of columns m held by the
    token after the stack, entry (t, i, j) is exp(A t i j) / sum_{l < c, l < m} exp(A t i l) for
    j < m and 0 otherwise, for every shape and m; for any meaning of exp, and for [expR]. *)
From mathcomp Require Import all_ssreflect all_algebra.
From mathcomp Require Import reals sequences exp.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas Exports SoftmaxMaskedStatement.
Import GRing.Theory Num.Theory.

(** A one-token block holding the scalar v: the token at its offset is v. *)
Lemma encodes_token (R : realFieldType) (x : seq R) (off : nat) (v : R) :
  encodes x off 1 1 1 (fun _ => (v%:M)%R) -> (off < size x)%nat /\ nth 0%R x off = v.
Proof. by move/(_ ord0 ord0 ord0); rewrite /pos /= !addn0 mxE eqxx mulr1n. Qed.

Section Masked.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.
Local Open Scope ring_scope.

Lemma masked_softmax_heads_rows_core (r c h m : nat) (A : 'I_h -> 'M[R]_(r, c)) (x : seq R) :
  encodes x 0 h r c A -> (h * r * c < size x)%nat -> nth 0 x (h * r * c) = m%:R -> forall t : 'I_h,
  decode (eval expf sqrtf geluf gelu_tanhf (masked_softmax_heads_prog (Z.of_nat r) (Z.of_nat c) (Z.of_nat h)) x) 0 h r c t
  = \matrix_(i, j) (if (j < m)%nat then expf (A t i j) / \sum_(l < c | (l < m)%nat) expf (A t i l) else 0).
Proof.
move=> HA HnL Hn t; apply/matrixP => i j; rewrite !mxE.
have Hi := ltn_ord i; have Hj := ltn_ord j; have Ht := ltn_ord t.
rewrite /masked_softmax_heads_prog.
set N := Aggregate (Select Indices _ CEq) Tokens.
have EN : forall p, eval expf sqrtf geluf gelu_tanhf N x p = m%:R.
  move=> p; rewrite /N (@agg_gather _ _ _ _ _ _ _ _ _ (h * r * c)) //= => k _.
  by rewrite -eqb_of_nat; congr (_ =? _)%Z; lia.
clearbody N.
have EM : forall p, flag R (zR R ((Z.of_nat p - 0) mod Z.of_nat c) < eval expf sqrtf geluf gelu_tanhf N x p)
                    = flag R (p %% c < m)%nat.
  by move=> p; rewrite EN Z.sub_0_r zmod_nat zR_nat ltr_nat.
have Eflag : forall b : bool, (flag R b != 0) = b by case; rewrite /= ?oner_eq0 ?eqxx.
rewrite /= !EM !Eflag.
rewrite /pos add0n modnMDl (modn_small Hj).
have [HL <-] := HA t i j.
rewrite /pos add0n.
case: (ltnP j m) => Hjm; last by rewrite mul0r.
have Z1 : zR R 1 = 1 by rewrite /zR /= subr0.
rewrite zR_nat Z1 divr1.
rewrite (@mean_keys_sum _ _ _ _ _ _ _ _ _ ((t * r + i) * c) c) //; last first.
- have Hc : (c.-1 < c)%nat by rewrite ltn_predL (leq_ltn_trans (leq0n j) Hj).
  have [HL' _] := HA t i (Ordinal Hc).
  by move: HL'; rewrite /pos /=; lia.
- move=> kk _ /=.
  have -> : ((Z.of_nat ((t * r + i) * c + j) - 0) / Z.of_nat c)%Z = Z.of_nat (t * r + i).
    by zpos; lia.
  by rewrite Z.sub_0_r zdiv_eqb_range ?(leq_ltn_trans (leq0n j) Hj).
- by apply: leq_ltn_trans Hj.
congr (_ / _); rewrite [RHS]big_mkcond /=; apply: eq_bigr => l _.
rewrite EM Eflag modnMDl (modn_small (ltn_ord l)).
by case: (l < m)%nat => //; have [_ <-] := HA t i l; rewrite /pos add0n.
Qed.
End Masked.

Theorem masked_softmax_heads_rows : masked_softmax_heads_rows_statement.
Proof.
move=> R expf sqrtf geluf gelu_tanhf r c h A n x _ _ _ HA _ _ /encodes_token[Hn Hv] _.
exact: masked_softmax_heads_rows_core.
Qed.

(** Over the reals: MathComp-analysis' [expR]. *)
Theorem masked_softmax_heads_expR : masked_softmax_heads_expR_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf r c h A n x _ _ _ HA _ _ /encodes_token[Hn Hv] _.
exact: masked_softmax_heads_rows_core.
Qed.
