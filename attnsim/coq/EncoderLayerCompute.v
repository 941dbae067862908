(** A computable copy of EncoderLayer.v's [scores] and [softmax_rows] (folds over [iota], inputs as
    functions of natural-number indices), proved equal to the [\sum] forms; Coq's [vm_compute] can
    run it over [rat], where it cannot run EncoderLayer.v (MathComp's big operators and
    [\matrix_] are locked). *)
From mathcomp Require Import all_ssreflect all_algebra.
From Attnsim Require Import EncoderLayer.
Import GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.
Local Open Scope ring_scope.

Section Compute.
Variable R : realFieldType.
Variable expf : R -> R.
Variables (N D H K F : nat).

Definition fsum (m : nat) (p : nat -> bool) (f : nat -> R) : R :=
  foldr (fun c acc => if p c then f c + acc else acc) 0 (iota 0 m).

Lemma fsumE m (p : pred nat) (f : nat -> R) : fsum m p f = \sum_(c < m | p c) f c.
Proof.
rewrite -big_mkord /index_iota subn0 /fsum.
by elim: (iota 0 m) => [|c s IH] /=; rewrite ?big_nil ?big_cons ?IH.
Qed.

(** The layer's data as functions of natural-number indices. *)
Variables (d k n : nat) (sc : R) (wq wk : nat -> nat -> nat -> R) (bq bk : nat -> nat -> R).
Variables (add : nat -> nat -> R) (blk : nat -> nat -> bool) (z : nat -> nat -> R).

Definition proj_c (w : nat -> nat -> nat -> R) (b : nat -> nat -> R) (t i c : nat) : R :=
  if (i < n)%N && (c < k)%N then fsum D (fun j => (j < d)%N) (fun j => z i j * w t j c) + b t c else 0.

Definition scores_c (t i key : nat) : R :=
  if (i < n)%N && (key < n)%N then
    sc * fsum K (fun c => (c < k)%N) (fun c => proj_c wq bq t i c * proj_c wk bk t key c) + add i key
  else 0.

Definition allowed_c (i key : nat) : bool := (key < n)%N && ~~ blk i key.

Definition softmax_c (S : nat -> nat -> R) (i key : nat) : R :=
  if (i < n)%N && allowed_c i key then expf (S i key) / fsum N (allowed_c i) (fun m => expf (S i m)) else 0.

(** The same data as EncoderLayer.v's records (the fields scores does not read: 0). *)
Definition params_of : params R D H K F :=
  @Params R D H K F d 1 k 0 (fun t => \matrix_(j, c) wq t j c) (fun t => \matrix_(j, c) wk t j c)
    (fun _ => 0) (fun t => \row_c bq t c) (fun t => \row_c bk t c) (fun _ => 0) (fun _ => 0) 0
    0 0 0 0 0 0 0 0 0 sc id true PreNorm true.
Definition mask_of : mask R N := Mask (fun i key : 'I_N => blk i key) (\matrix_(i, key) add i key).
Definition input_of : 'M[R]_(N, D) := \matrix_(i, j) z i j.

Lemma proj_cE (w : nat -> nat -> nat -> R) (b : nat -> nat -> R) (t : 'I_H) (i : 'I_N) (c : 'I_K) :
  proj params_of n (fun t => \matrix_(j, c) w t j c) (fun t => \row_c b t c) input_of t i c
  = proj_c w b t i c.
Proof.
rewrite /proj /block /proj_c !mxE fsumE /=; case: ifP => // _.
by congr (_ + _); apply: eq_bigr => j _; rewrite !mxE.
Qed.

Lemma scores_cE (t : 'I_H) (i key : 'I_N) :
  scores params_of mask_of n input_of t i key = scores_c t i key.
Proof.
rewrite /scores /block /scores_c !mxE fsumE /=; case: ifP => // _.
congr (_ * _ + _); apply: eq_bigr => c _.
by rewrite -(proj_cE wq bq) -(proj_cE wk bk).
Qed.

Lemma softmax_rows_cE (s : nat -> nat -> R) (i key : 'I_N) :
  softmax_rows expf mask_of n (\matrix_(i', key') s i' key') i key = softmax_c s i key.
Proof.
rewrite /softmax_rows /softmax_c /allowed /allowed_c !mxE /=.
case: ifP => // _; rewrite fsumE; congr (_ / _).
by apply: eq_bigr => m _; rewrite mxE.
Qed.

(** The scores' softmax, composed: what [head] reads. *)
Lemma softmax_scores_cE (t : 'I_H) (i key : 'I_N) :
  softmax_rows expf mask_of n (scores params_of mask_of n input_of t) i key
  = softmax_c (scores_c t) i key.
Proof.
have -> : scores params_of mask_of n input_of t = \matrix_(i', key') scores_c t i' key'.
  by apply/matrixP => i' key'; rewrite scores_cE mxE.
exact: softmax_rows_cE.
Qed.
End Compute.
