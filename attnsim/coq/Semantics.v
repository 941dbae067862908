(** GAHAT-RASP in Coq: the language of docs/semantics.md as a deep embedding, its evaluator,
    and the encoding of matrices into token sequences.  This file is part of what a reader of a
    kernel-checked theorem must trust: it is kept short and follows docs/semantics.md row by row. *)
From mathcomp Require Import all_ssreflect all_algebra.
From Coq Require Import ZArith.
Import GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

(** * Index values: integers (Z), comparisons and connectives are 0/1, as in attnsim.rasp.expr. *)
Definition zb (b : bool) : Z := if b then 1%Z else 0%Z.
Definition ieq (a b : Z) : Z := zb (a =? b)%Z.
Definition ine (a b : Z) : Z := zb (negb (a =? b)%Z).
Definition ilt (a b : Z) : Z := zb (a <? b)%Z.
Definition ile (a b : Z) : Z := zb (a <=? b)%Z.
Definition iand (a b : Z) : Z := zb (negb (a =? 0)%Z && negb (b =? 0)%Z).
Definition ior (a b : Z) : Z := zb (negb (a =? 0)%Z || negb (b =? 0)%Z).
Definition inot (a : Z) : Z := zb (a =? 0)%Z.
Definition iif (c a b : Z) : Z := if (c =? 0)%Z then b else a.

(** * Syntax *)
Inductive cmp := CEq | CNe | CLt | CLe | CGt | CGe | CTrue | CFalse.

(** SOps whose values are integers built from positions and sizes only (indices, length,
    integer constants, index maps): the index functions are Coq functions over Z. *)
Inductive isop :=
| Indices
| Length
| IConst of Z
| IMap1 of (Z -> Z) & isop
| IMap2 of (Z -> Z -> Z) & isop & isop
| IMap3 of (Z -> Z -> Z -> Z) & isop & isop & isop.

(** A rational constant n / d (a Fraction, or a size expression over 1). *)
Inductive cst := CQ of Z & Z.

(** The value primitives of attnsim.rasp.primitives that have a textbook meaning here. *)
Inductive prim1 := PIdentity | PNeg | PRelu | PAbs | PSquare | PReciprocal | PExp
                 | PSqrt | PGelu | PGeluTanh | PScale of cst | PAffine of cst & cst.
Inductive prim2 := PAdd | PSub | PMax | PMin | PMul | PDiv | PLt | PGate.
Inductive prim3 := PWhere.

(** Selectors: [Select keys queries c] selects key k for query q when [c keys[k] queries[q]],
    over index SOps; [VSelect] compares the values of two SOps the same way. *)
Inductive sel :=
| Select of isop & isop & cmp
| VSelect of sop & sop & cmp
| SAnd of sel & sel
| SOr of sel & sel
| SNot of sel
with sop :=
| Tokens
| Full of cst
| OfIdx of isop                       (** an index SOp read as a number *)
| Map1 of prim1 & sop
| Map2 of prim2 & sop & sop
| Map3 of prim3 & sop & sop & sop
| Aggregate of sel & sop              (** average hard attention *)
| Maximum of sel & sop.               (** the value-scored head scored by its own values *)

(** * Semantics *)
Section Eval.
Local Open Scope ring_scope.
Variable R : realFieldType.
(** The meanings of the generalized primitives [exp], [sqrt], [gelu] and [gelu_tanh]: parameters,
    fixed by a theorem (the real exponential [expR] in Softmax.v, [Num.sqrt]) or left free. *)
Variables expf sqrtf geluf gelu_tanhf : R -> R.

Definition zR (z : Z) : R := (Z.to_nat z)%:R - (Z.to_nat (- z))%:R.
Definition cst_sem (c : cst) : R := let: CQ n d := c in zR n / zR d.
Definition flag (b : bool) : R := if b then 1 else 0.

Definition prim1_sem (p : prim1) (x : R) : R :=
  match p with
  | PIdentity => x | PNeg => - x | PRelu => Num.max x 0 | PAbs => `|x| | PSquare => x * x
  | PReciprocal => x^-1 | PExp => expf x | PSqrt => sqrtf x | PGelu => geluf x | PGeluTanh => gelu_tanhf x
  | PScale a => cst_sem a * x | PAffine a b => cst_sem a * x + cst_sem b
  end.
Definition prim2_sem (p : prim2) (x y : R) : R :=
  match p with
  | PAdd => x + y | PSub => x - y | PMax => Num.max x y | PMin => Num.min x y
  | PMul => x * y | PDiv => x / y | PLt => flag (x < y) | PGate => if x != 0 then y else 0
  end.
Definition prim3_sem (p : prim3) (c x y : R) : R := let: PWhere := p in if c != 0 then x else y.

Fixpoint ieval (a : isop) (L p : nat) : Z :=
  match a with
  | Indices => Z.of_nat p
  | Length => Z.of_nat L
  | IConst z => z
  | IMap1 f a => f (ieval a L p)
  | IMap2 f a b => f (ieval a L p) (ieval b L p)
  | IMap3 f a b c => f (ieval a L p) (ieval b L p) (ieval c L p)
  end.

Definition cmp_sem (c : cmp) (k q : Z) : bool :=
  match c with
  | CEq => (k =? q)%Z | CNe => negb (k =? q)%Z | CLt => (k <? q)%Z | CLe => (k <=? q)%Z
  | CGt => (q <? k)%Z | CGe => (q <=? k)%Z | CTrue => true | CFalse => false
  end.

(** The same comparisons of two values. *)
Definition vcmp_sem (c : cmp) (k q : R) : bool :=
  match c with
  | CEq => k == q | CNe => k != q | CLt => k < q | CLe => k <= q
  | CGt => q < k | CGe => q <= k | CTrue => true | CFalse => false
  end.

(** The sum of a list of values (a plain fold, which vm_compute evaluates: MathComp's big
    operators are locked), and their mean; 0 for the empty list (AHAT's default). *)
Definition sum (vs : seq R) : R := foldr (fun v s => v + s) 0 vs.
Definition mean (vs : seq R) : R := if vs is [::] then 0 else sum vs / (size vs)%:R.
(** The maximum of a list of values; 0 for the empty list. *)
Definition maxl (vs : seq R) : R :=
  if vs is v :: ws then foldr Num.max v ws else 0.

End Eval.

(** The keys k < L a query selects ([sel k]), in increasing order. *)
Definition keys (sel : nat -> bool) (L : nat) : seq nat := [seq k <- iota 0 L | sel k].

(** [eval a x p]: the value of [a] at position p of the input x; [seval s x q k]: whether query q
    selects key k.  The meanings of the generalized primitives are arguments of both functions,
    not section variables, so that [simpl] unfolds them. *)
Fixpoint eval (R : realFieldType) (expf sqrtf geluf gelu_tanhf : R -> R) (a : sop) (x : seq R)
  (p : nat) {struct a} : R :=
  let ev a := eval expf sqrtf geluf gelu_tanhf a x in
  let sev s := seval expf sqrtf geluf gelu_tanhf s x in
  match a with
  | Tokens => nth 0%R x p
  | Full c => cst_sem R c
  | OfIdx i => zR R (ieval i (size x) p)
  | Map1 f a => prim1_sem expf sqrtf geluf gelu_tanhf f (ev a p)
  | Map2 f a b => prim2_sem f (ev a p) (ev b p)
  | Map3 f a b c => prim3_sem f (ev a p) (ev b p) (ev c p)
  | Aggregate s v => mean [seq ev v k | k <- keys (sev s p) (size x)]
  | Maximum s v => maxl [seq ev v k | k <- keys (sev s p) (size x)]
  end
with seval (R : realFieldType) (expf sqrtf geluf gelu_tanhf : R -> R) (s : sel) (x : seq R)
  (q k : nat) {struct s} : bool :=
  let ev a := eval expf sqrtf geluf gelu_tanhf a x in
  let sev s := seval expf sqrtf geluf gelu_tanhf s x in
  match s with
  | Select ks qs c => cmp_sem c (ieval ks (size x) k) (ieval qs (size x) q)
  | VSelect ks qs c => vcmp_sem c (ev ks k) (ev qs q)
  | SAnd a b => sev a q k && sev b q k
  | SOr a b => sev a q k || sev b q k
  | SNot a => ~~ sev a q k
  end.

Section Layout.
Local Open Scope ring_scope.
Variable R : realFieldType.

(** * Matrices as token sequences (Proposition 1): a stack of [h] matrices [r x c] at offset
    [off], row-major: entry (t, i, j) at position off + (t r + i) c + j. *)
Definition pos (off r c t i j : nat) : nat := off + (t * r + i) * c + j.

(** The sequence [x] holds the stack [A] in the block (off, h, r, c). *)
Definition encodes (x : seq R) (off h r c : nat) (A : 'I_h -> 'M[R]_(r, c)) : Prop :=
  forall (t : 'I_h) (i : 'I_r) (j : 'I_c),
    (pos off r c t i j < size x)%nat /\ nth 0 x (pos off r c t i j) = A t i j.

(** The token sequence of length L holding the given blocks (the later block wins on overlap;
    0 elsewhere), as Layout.encode builds it. *)
Definition encode (L : nat) (blocks : seq (nat * nat * nat * nat * (nat -> nat -> nat -> R)))
  : seq R :=
  mkseq (fun p => foldl (fun v b =>
     let: (off, h, r, c, A) := b in
     if ((off <= p) && (p < off + h * r * c))%nat
     then A ((p - off) %/ c %/ r)%nat ((p - off) %/ c %% r)%nat ((p - off) %% c)%nat else v)
     0 blocks) L.

(** The stack read back from the block (off, h, r, c) of a sequence of values. *)
Definition decode (f : nat -> R) (off h r c : nat) (t : 'I_h) : 'M[R]_(r, c) :=
  \matrix_(i, j) f (pos off r c t i j).

End Layout.

Arguments encodes {R} x off h r c A.
Arguments decode {R} f off h r c t.
Arguments eval {R} expf sqrtf geluf gelu_tanhf a x p.
Arguments seval {R} expf sqrtf geluf gelu_tanhf s x q k /.
