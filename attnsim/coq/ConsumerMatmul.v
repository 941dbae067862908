(** Lemma (matmul) in the form U is built from (consumer-matmul: the products formed by two guarded
    gathers, the sums read at every position of a larger consumer grid), kernel-checked against
    MathComp's [mulmx]: entry (i, j, m) of the (rows, cols, extra) grid is (A *m B) i j. *)
From mathcomp Require Import all_ssreflect all_algebra.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas Exports ConsumerMatmulStatement.
Import GRing.Theory Num.Theory.

Section ConsumerMatmul.
Variable R : realFieldType.
Variables expf sqrtf geluf gelu_tanhf : R -> R.
Local Open Scope ring_scope.

Lemma consumer_matmul_mulmx_core (r k c e : nat) (A : 'M[R]_(r, k)) (B : 'M[R]_(k, c)) (x : seq R) :
  (0 < k)%nat -> encodes x 0 1 r k (fun _ => A) -> encodes x (r * k) 1 k c (fun _ => B) ->
  (r * c * k <= size x)%nat -> forall i : 'I_r,
  decode (eval expf sqrtf geluf gelu_tanhf (consumer_matmul_prog (Z.of_nat r) (Z.of_nat k) (Z.of_nat c) (Z.of_nat e)) x) 0 r c e i
  = \matrix_(j, m) (A *m B) i j.
Proof.
move=> Hk HA HB HL i; apply/matrixP => j m; rewrite !mxE.
have Hi := ltn_ord i; have Hj := ltn_ord j; have Hm := ltn_ord m.
have Z1 : zR R 1 = 1 by rewrite /zR /= subr0.
rewrite /consumer_matmul_prog /= zR_nat Z1 divr1.
rewrite (@mean_keys_sum _ _ _ _ _ _ _ _ _ ((i * c + j) * k) k) //; last first.
- apply: leq_trans HL; rewrite -mulSnr leq_mul2r; apply/orP; right.
  have H1 : (i * c + j < r * c)%nat by nia.
  by lia.
- have Hq : ((i * c + j) * e + m < r * c * e)%nat.
    have H1 : ((i * c + j).+1 <= r * c)%nat by nia.
    have := leq_mul H1 (leqnn e); rewrite mulSnr; lia.
  move=> kk _ /=; rewrite /pos; zpos.
  rewrite (@iif_guard 0 ((Z.of_nat i * Z.of_nat c + Z.of_nat j) * Z.of_nat e + Z.of_nat m)); last by lia.
  have -> : (Z.of_nat i * Z.of_nat c + Z.of_nat j)%Z = Z.of_nat (i * c + j) by lia.
  have -> : (Z.of_nat r * Z.of_nat c * Z.of_nat k)%Z = Z.of_nat (r * c * k) by lia.
  rewrite group_eqb //; first lia.
  have H1 : ((i * c + j).+1 <= r * c)%nat by nia.
  by have := leq_mul H1 (leqnn k); rewrite mulSnr.
apply: eq_bigr => l _; have Hl := ltn_ord l.
have Hp : ((i * c + j) * k + l < r * c * k)%nat.
  have H1 : ((i * c + j).+1 <= r * c)%nat by nia.
  by have := leq_mul H1 (leqnn k); rewrite mulSnr; lia.
have [HLa <-] := HA ord0 i l.
have [HLb <-] := HB ord0 l j.
rewrite (@mean_keys_one _ _ _ _ _ _ _ _ _ (pos 0 r k 0 i l)) //; last first.
  move=> kk _ /=; rewrite -eqb_of_nat; congr (_ =? _)%Z; rewrite /pos; zpos.
  rewrite iif_guard; last by lia.
  zpos; lia.
rewrite (@mean_keys_one _ _ _ _ _ _ _ _ _ (pos (r * k) k c 0 l j)) //.
move=> kk _ /=; rewrite -eqb_of_nat; congr (_ =? _)%Z; rewrite /pos; zpos.
rewrite iif_guard; last by lia.
rewrite ?Zmatch_id; zpos; lia.
Qed.
End ConsumerMatmul.

Theorem consumer_matmul_mulmx : consumer_matmul_mulmx_statement.
Proof.
move=> R expf sqrtf geluf gelu_tanhf r k c e A B x _ Hk _ _ HA HB HL; apply: consumer_matmul_mulmx_core => //.
by apply: leq_trans HL; nia.
Qed.
