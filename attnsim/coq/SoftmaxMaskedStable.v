(** Lemma 3 (softmax), masked and max-shifted form, kernel-checked: with the true number of
    columns n held by the token after the stack, the program that fills the masked entries of a
    row with its first entry, subtracts the row maximum and exponentiates gives, at (t, i, j),
    exp(A t i j) / sum_{l < c, l < n} exp(A t i l) for j < n and 0 otherwise, for every shape
    and n: for any [expf] with expf (a - b) = expf a / expf b and no zero, and for [expR].
    The shift is one value per row (every position of the row takes its [Maximum] over the
    same keys), and it cancels. *)
From mathcomp Require Import all_ssreflect all_algebra.
From mathcomp Require Import reals sequences exp.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas Exports SoftmaxMaskedStableStatement.
Import GRing.Theory Num.Theory.

(** A one-token block holding the scalar v: the token at its offset is v. *)
Lemma encodes_token (R : realFieldType) (x : seq R) (off : nat) (v : R) :
  encodes x off 1 1 1 (fun _ => (v%:M)%R) -> (off < size x)%nat /\ nth 0%R x off = v.
Proof. by move/(_ ord0 ord0 ord0); rewrite /pos /= !addn0 mxE eqxx mulr1n. Qed.

(** The row selector of the softmax programs: key and query in the same run of c positions. *)
Definition row_sel (c : nat) : sel :=
  Select (IMap1 (fun x0 : Z => ((x0 - 0) / Z.of_nat c)%Z) Indices)
         (IMap1 (fun x0 : Z => ((x0 - 0) / Z.of_nat c)%Z) Indices) CEq.

Section MaskedStable.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.
Local Open Scope ring_scope.
Local Notation seval := (seval expf sqrtf geluf gelu_tanhf).

Lemma row_seval (c b j k : nat) (x : seq R) : (j < c)%nat ->
  seval (row_sel c) x (b * c + j) k = (b * c <= k < b * c + c)%nat.
Proof.
move=> Hj /=; have Hc : (0 < c)%nat by apply: leq_ltn_trans Hj.
have -> : ((Z.of_nat (b * c + j) - 0) / Z.of_nat c)%Z = Z.of_nat b.
  by rewrite Z.sub_0_r Nat2Z.inj_add Nat2Z.inj_mul zdiv_lin //; lia.
by rewrite Z.sub_0_r zdiv_eqb_range.
Qed.

(** At any position of row b it lists the c positions of that row. *)
Lemma row_keys (c b j : nat) (x : seq R) : (j < c)%nat -> (b * c + c <= size x)%nat ->
  keys (seval (row_sel c) x (b * c + j)) (size x) = iota (b * c) c.
Proof. by move=> Hj HL; apply: keys_range => // k _; exact: row_seval. Qed.

Lemma masked_softmax_stable_heads_rows_core (r c h m : nat) (A : 'I_h -> 'M[R]_(r, c)) (x : seq R) :
  (forall a b : R, expf (a - b) = expf a / expf b) -> (forall a : R, expf a != 0) ->
  encodes x 0 h r c A -> (h * r * c < size x)%nat -> nth 0 x (h * r * c) = m%:R -> forall t : 'I_h,
  decode (eval expf sqrtf geluf gelu_tanhf (masked_softmax_stable_heads_prog (Z.of_nat r) (Z.of_nat c) (Z.of_nat h)) x) 0 h r c t
  = \matrix_(i, j) (if (j < m)%nat then expf (A t i j) / \sum_(l < c | (l < m)%nat) expf (A t i l) else 0).
Proof.
move=> Hsub Hne HA HnL Hn t; apply/matrixP => i j; rewrite !mxE.
have Hj := ltn_ord j; have Hc : (0 < c)%nat by apply: leq_ltn_trans Hj.
have HL : ((t * r + i) * c + c <= size x)%nat.
  have Hc' : (c.-1 < c)%nat by rewrite ltn_predL.
  have [HL' _] := HA t i (Ordinal Hc').
  by move: HL'; rewrite /pos /=; lia.
have HAl : forall l : 'I_c, nth 0 x ((t * r + i) * c + l) = A t i l.
  by move=> l; have [_ <-] := HA t i l; rewrite /pos add0n.
have Eflag : forall b : bool, (flag R b != 0) = b by case; rewrite /= ?oner_eq0 ?eqxx.
rewrite /masked_softmax_stable_heads_prog; cbv zeta.
(* the mask: column < n, n read from the token after the stack *)
set mask := Map2 PLt _ _.
have Emask : forall p, eval expf sqrtf geluf gelu_tanhf mask x p = flag R (p %% c < m)%nat.
  move=> p; rewrite /mask /= (@mean_keys_one _ _ _ _ _ _ _ _ _ (h * r * c)) //=; last first.
    by move=> k _; rewrite -eqb_of_nat; congr (_ =? _)%Z; lia.
  by rewrite Hn Z.sub_0_r zmod_nat zR_nat ltr_nat.
clearbody mask.
(* the first entry of the row *)
set first := Aggregate _ Tokens.
have Efirst : forall b l, (l < c)%nat -> (b * c + c <= size x)%nat ->
    eval expf sqrtf geluf gelu_tanhf first x (b * c + l) = x`_(b * c).
  move=> b l Hl Hb; rewrite /first /= (@mean_keys_one _ _ _ _ _ _ _ _ _ (b * c)) //=; last first.
    by move: Hb; lia.
  move=> k _; rewrite -eqb_of_nat; congr (_ =? _)%Z.
  rewrite Z.sub_0_r Nat2Z.inj_add Nat2Z.inj_mul zdiv_lin; lia.
clearbody first.
(* the filled row: masked entries replaced by the first one *)
set F := Map2 PAdd _ _.
have EF : forall b (l : 'I_c), (b * c + c <= size x)%nat ->
    eval expf sqrtf geluf gelu_tanhf F x (b * c + l) = if (l < m)%nat then x`_(b * c + l) else x`_(b * c).
  move=> b l Hb; rewrite /F /= !Emask modnMDl (modn_small (ltn_ord l)) Eflag Efirst //.
  rewrite /cst_sem /zR /= !subr0 !sub0r (_ : (Pos.to_nat 1)%:R = 1 :> R) // !divr1.
  case: (l < m)%nat => /=; first by rewrite mulr1 addNr eqxx addr0.
  by rewrite mulr0 !add0r oner_eq0.
clearbody F.
change (Select _ _ CEq) with (row_sel c); set s := row_sel c.
(* the shift: one value M for the whole row *)
set M := maxl [seq eval expf sqrtf geluf gelu_tanhf F x k | k <- iota ((t * r + i) * c) c].
set Mx := Maximum s F.
have EM : forall l : 'I_c, eval expf sqrtf geluf gelu_tanhf Mx x ((t * r + i) * c + l) = M.
  by move=> l; rewrite /Mx /= row_keys.
clearbody Mx.
rewrite /pos add0n /= Emask modnMDl (modn_small Hj) Eflag.
case: (ltnP j m) => Hjm; last by rewrite mul0r.
rewrite EF // Hjm EM HAl zR_nat /zR /= subr0 divr1.
rewrite (@mean_keys_sum _ _ _ _ _ (fun k => if eval expf sqrtf geluf gelu_tanhf mask x k != 0
           then expf (eval expf sqrtf geluf gelu_tanhf F x k - eval expf sqrtf geluf gelu_tanhf Mx x k) else 0)
           _ _ _ ((t * r + i) * c) c) //; last by move=> k _; exact: row_seval.
(* exp(a - M) / sum_{l < n} exp(x_l - M) = (exp a / exp M) / ((sum_{l < n} exp x_l) / exp M) *)
rewrite (eq_bigr (fun l : 'I_c => if (l < m)%nat then expf (A t i l) / expf M else 0)); last first.
  move=> l _; rewrite Emask modnMDl (modn_small (ltn_ord l)) Eflag EF // EM.
  by case: (l < m)%nat => //; rewrite HAl Hsub.
by rewrite -big_mkcond /= -mulr_suml Hsub invfM invrK mulrA mulrAC divfK.
Qed.
End MaskedStable.

Theorem masked_softmax_stable_heads_rows : masked_softmax_stable_heads_rows_statement.
Proof.
move=> R expf sqrtf geluf gelu_tanhf r c h A n x _ _ _ Hsub Hne HA _ _ /encodes_token[Hn Hv] _.
exact: masked_softmax_stable_heads_rows_core.
Qed.

(** Over the reals: MathComp-analysis' [expR], the exponential of any [realType]. *)
Theorem masked_softmax_stable_heads_expR : masked_softmax_stable_heads_expR_statement.
Proof.
move=> R sqrtf geluf gelu_tanhf r c h A n x _ _ _ HA _ _ /encodes_token[Hn Hv] _.
apply: masked_softmax_stable_heads_rows_core HA Hn Hv => [a b | a]; first exact: expRB.
exact: lt0r_neq0 (expR_gt0 a).
Qed.
