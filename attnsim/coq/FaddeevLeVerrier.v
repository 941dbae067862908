(** * The Faddeev-LeVerrier algorithm computes the determinant and the inverse

    The loop of [attnsim/constructions/det_n/program.py] (for [A] an [n x n] matrix):
      [M_1 = I], [c_(n-1) = - tr A];
      for [k = 1 .. n-1]: [M_(k+1) = A M_k + c_(n-k) I],
                          [c_(n-k-1) = - tr (A M_(k+1)) / (k + 1)];
      [det A = (-1)^n c_0] and, when [c_0 != 0], [A^-1 = - M_n / c_0].

    Main results, over a [numFieldType] (characteristic 0), for every [n]:
    - [fl_c_char_poly]: [c_(n-k)] is the coefficient of [X^(n-k)] in [char_poly A];
    - [fl_M_adj]: [M_k] is the coefficient of [X^(n-k)] in [\adj (X I - A)];
    - [fl_Cayley_Hamilton]: [A M_n + c_0 I = 0];
    - [det_fl]: [\det A = (-1)^+n * c_0];
    - [unitmx_fl]: [A] is invertible iff [c_0 != 0];
    - [invmx_fl]: [A \in unitmx -> invmx A = - c_0^-1 *: M_n];
    - [fl_M_adjugate]: [M_n = (-1)^+(n-1) *: \adj A];
    and, over any commutative ring, Jacobi's formula [tr_adj_char_poly_mx]
    ([\tr (\adj (X I - A)) = (char_poly A)^`()]) and Newton's identities
    [Newton_identities].

    Proof: compare coefficients in [(X I - A) \adj (X I - A) = char_poly A]: the
    coefficients [B_k] of [\adj (X I - A)] satisfy [B_(k-1) = A B_k + p_k I],
    [A B_0 = - p_0 I] and [B_k = 0] for [k >= n]; by Jacobi's formula
    [tr B_k = (k + 1) p_(k+1)], which gives [tr (A B_(n-k)) = - k p_(n-k)]
    (Newton's identities), i.e. exactly the division step of the loop. *)

From mathcomp Require Import all_ssreflect all_fingroup all_algebra.
From Attnsim Require Import FaddeevLeVerrierStatement.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory Num.Theory.
Local Open Scope ring_scope.

(** * 1. Jacobi's formula for the characteristic polynomial *)

Section DerivDet.
Variable R : comRingType.

(** Product rule for a finite product. *)
Lemma deriv_prod_seq (I : eqType) (r : seq I) (F : I -> {poly R}) : uniq r ->
  (\prod_(i <- r) F i)^`() = \sum_(i <- r) (F i)^`() * \prod_(j <- r | j != i) F j.
Proof.
elim: r => [|x r IH] /=; first by rewrite !big_nil -polyC1 derivC.
case/andP=> xr ur; rewrite !big_cons derivM IH // eqxx /=; congr (_ * _ + _).
  rewrite [RHS]big_seq_cond [LHS]big_seq_cond; apply: eq_bigl => j.
  by case jr: (j \in r) => //=; apply/esym; apply: contraNneq xr => <-.
rewrite mulr_sumr [LHS]big_seq [RHS]big_seq; apply: eq_bigr => i ir.
rewrite big_cons (_ : x != i) 1?mulrCA //; by apply: contraNneq xr => ->.
Qed.

Lemma deriv_prod (I : finType) (F : I -> {poly R}) :
  (\prod_i F i)^`() = \sum_i (F i)^`() * \prod_(j | j != i) F j.
Proof. exact/deriv_prod_seq/index_enum_uniq. Qed.

(** The derivative of a determinant is the sum of the determinants with one row
    differentiated. *)
Lemma deriv_det n (M : 'M[{poly R}]_n) :
  (\det M)^`() =
  \sum_i \det (\matrix_(j, k) if j == i then (M j k)^`() else M j k).
Proof.
rewrite /(\det M) (big_morph _ (@derivD _) (@deriv0 _)) exchange_big /=.
apply: eq_bigr => s _; rewrite derivM deriv_prod big_distrr /=.
have -> : ((-1) ^+ odd_perm s : {poly R})^`() = 0.
  by rewrite -polyC1 -polyCN -polyC_exp derivC.
rewrite mul0r add0r; apply: eq_bigr => i _; congr (_ * _).
rewrite [RHS](bigD1 i) //= mxE eqxx; congr (_ * _).
by apply: eq_bigr => j ji; rewrite mxE (negbTE ji).
Qed.

(** Jacobi's formula: the trace of the adjugate of [X I - A] is the derivative of
    the characteristic polynomial. *)
Lemma tr_adj_char_poly_mx n (A : 'M[R]_n) :
  \tr (\adj (char_poly_mx A)) = (char_poly A)^`().
Proof.
rewrite /char_poly deriv_det /mxtrace; apply: eq_bigr => i _.
set M := char_poly_mx A; set Mi := \matrix_(j, k) _.
have dM j k : (M j k)^`() = (j == k)%:R.
  by rewrite !mxE derivB derivMn derivX derivC subr0.
rewrite /adjugate mxE (expand_det_row _ i) (bigD1 i) //= big1 => [|k ki].
  rewrite mxE eqxx dM eqxx mul1r addr0 /cofactor; congr (_ * \det _).
  apply/matrixP=> a b; rewrite /Mi !mxE.
  by have /negbTE-> : lift i a != i by rewrite eq_sym neq_lift.
by rewrite /Mi mxE eqxx dM eq_sym (negbTE ki) mul0r.
Qed.

End DerivDet.

(** * 2. The coefficients of the adjugate of [X I - A] *)

Section AdjCoef.
Variable R : comRingType.

(** The matrix of the coefficients of [X^k] in a matrix of polynomials. *)
Definition coefmx m n (P : 'M[{poly R}]_(m, n)) k : 'M[R]_(m, n) :=
  \matrix_(i, j) (P i j)`_k.

Lemma coefmx_scalar n (p : {poly R}) k :
  coefmx (p%:M : 'M_n) k = (p`_k)%:M.
Proof. by apply/matrixP=> i j; rewrite !mxE coefMn. Qed.

Lemma mxtrace_coefmx n (P : 'M[{poly R}]_n) k : \tr (coefmx P k) = (\tr P)`_k.
Proof. by rewrite /mxtrace coef_sum; apply: eq_bigr => i _; rewrite mxE. Qed.

Lemma coefmx_char_poly_mx_mul n m (A : 'M[R]_n) (P : 'M[{poly R}]_(n, m)) k :
  coefmx (char_poly_mx A *m P) k =
  (if k is k'.+1 then coefmx P k' else 0) - A *m coefmx P k.
Proof.
rewrite /char_poly_mx mulmxBl mul_scalar_mx; apply/matrixP=> i j.
rewrite !mxE coefB coefXM coef_sum; congr (_ - _).
  by case: k => [|k]; rewrite ?mxE.
by apply: eq_bigr => l _; rewrite !mxE coefCM.
Qed.

Variables (n : nat) (A : 'M[R]_n).
Local Notation p := (char_poly A).

(** [adj_coef k] is the coefficient of [X^k] in [\adj (X I - A)]. *)
Definition adj_coef k := coefmx (\adj (char_poly_mx A)) k.

Lemma char_poly_coef_eq0 k : (n < k)%N -> p`_k = 0.
Proof. by move=> nk; rewrite nth_default // size_char_poly. Qed.

Lemma char_poly_lead : p`_n = 1.
Proof.
by have /monicP := char_poly_monic A; rewrite lead_coefE size_char_poly.
Qed.

Lemma coefmx_mul_adj k :
  coefmx (char_poly_mx A *m \adj (char_poly_mx A)) k = (p`_k)%:M.
Proof. by rewrite mul_mx_adj coefmx_scalar. Qed.

(** Comparing coefficients in [(X I - A) \adj (X I - A) = char_poly A]. *)
Lemma adj_coef_rec k : adj_coef k = A *m adj_coef k.+1 + (p`_k.+1)%:M.
Proof.
have := coefmx_mul_adj k.+1; rewrite coefmx_char_poly_mx_mul => <-.
by rewrite addrC subrK.
Qed.

Lemma adj_coef0 : A *m adj_coef 0 = - (p`_0)%:M.
Proof.
have := coefmx_mul_adj 0; rewrite coefmx_char_poly_mx_mul sub0r => <-.
by rewrite opprK.
Qed.

Lemma adj_coef_eq0 k : (n <= k)%N -> adj_coef k = 0.
Proof.
pose K := \max_(ij : 'I_n * 'I_n) size (\adj (char_poly_mx A) ij.1 ij.2).
have large k' : (K <= k')%N -> adj_coef k' = 0.
  move=> Kk; apply/matrixP=> i j; rewrite !mxE nth_default //.
  have := @leq_bigmax _
    (fun ij : 'I_n * 'I_n => size (\adj (char_poly_mx A) ij.1 ij.2)) (i, j).
  by rewrite /= mxE => /leq_trans; apply.
have H e d : (K <= n + d + e)%N -> adj_coef (n + d) = 0.
  elim: e d => [|e IH] d; first by rewrite addn0; exact: large.
  move=> Ke; rewrite adj_coef_rec -addnS IH; last by rewrite addnS addSnnS.
  rewrite mulmx0 add0r char_poly_coef_eq0 ?addnS ?ltnS ?leq_addr //.
  by rewrite -scalemx1 scale0r.
by move=> nk; rewrite -(subnK nk) addnC; apply: (H K); rewrite leq_addl.
Qed.

(** The trace of the coefficients of the adjugate, by Jacobi's formula. *)
Lemma mxtrace_adj_coef k : \tr (adj_coef k) = p`_k.+1 *+ k.+1.
Proof. by rewrite mxtrace_coefmx tr_adj_char_poly_mx coef_deriv. Qed.

(** Newton's identities, in the form used by the Faddeev-LeVerrier loop:
    [tr (A * adj_coef (n - k)) = - k * p_(n - k)] for [1 <= k <= n]. *)
Lemma mxtrace_mul_adj_coef k : (0 < k <= n)%N ->
  \tr (A *m adj_coef (n - k)) = - (p`_(n - k) *+ k).
Proof.
case/andP=> k_gt0 kn; case Enk: (n - k)%N => [|m].
  have -> : k = n by apply/eqP; rewrite eqn_leq kn -subn_eq0 Enk.
  by rewrite adj_coef0 raddfN /= mxtrace_scalar.
have := mxtrace_adj_coef m; rewrite adj_coef_rec mxtraceD mxtrace_scalar.
rewrite -[n in _ *+ n](subnK kn) Enk.
rewrite mulrnDr => E; rewrite -[LHS](addrK (p`_m.+1 *+ m.+1 + p`_m.+1 *+ k)).
by rewrite E opprD addrA subrr sub0r.
Qed.

(** The constant coefficient of [\adj (X I - A)] is [\adj (- A)]. *)
Lemma adj_coef0_adj : adj_coef 0 = (-1) ^+ n.-1 *: \adj A.
Proof.
have -> : adj_coef 0 = map_mx (coefp 0) (\adj (char_poly_mx A)).
  by apply/matrixP=> i j; rewrite !mxE.
rewrite map_mx_adj -adjZ; congr (\adj _); apply/matrixP=> i j.
by rewrite !mxE /= coefB coefMn coefX coefC mul0rn sub0r mulN1r.
Qed.

End AdjCoef.

(** * 3. The Faddeev-LeVerrier iteration *)

Section FaddeevLeVerrier.
Variables (R : numFieldType) (n : nat) (A : 'M[R]_n).
Local Notation p := (char_poly A).

(** The loop is [fl_step] of the generated [FaddeevLeVerrierStatement] (declared beside
    the Python loop, attnsim/constructions/kernel_theorems.py): [fl_step A k = (fl_M A k, fl_c A k)],
    [fl_M A k] the loop's [M_k] and [fl_c A k] its [c_(n-k)].  Step 0 holds the conventions
    [M_0 = 0] and [c_n = 1] (the leading coefficient), so that step 1 gives [M_1 = I] and
    [c_(n-1) = - tr A]; each step [k + 1] computes
      [M_(k+1) = A M_k + c_(n-k) I]  and  [c_(n-k-1) = - tr (A M_(k+1)) / (k + 1)]. *)
Local Notation fl_step := (fl_step A).
Local Notation fl_M := (fl_M A).
Local Notation fl_c := (fl_c A).

Lemma fl_M1 : fl_M 1 = 1%:M.
Proof. by rewrite /fl_M /= mulmx0 add0r. Qed.

Lemma fl_c1 : fl_c 1 = - \tr A.
Proof. by rewrite /fl_c /= mulmx0 add0r mulmx1 divr1. Qed.

Lemma fl_MS k : fl_M k.+1 = A *m fl_M k + (fl_c k)%:M.
Proof. by rewrite /fl_M /fl_c /=; case: (fl_step k). Qed.

Lemma fl_cS k : fl_c k.+1 = - \tr (A *m fl_M k.+1) / k.+1%:R.
Proof. by rewrite /fl_M /fl_c /=; case: (fl_step k). Qed.

(** The invariant of the loop: [M_k] is the coefficient of [X^(n-k)] in
    [\adj (X I - A)] and [c_(n-k)] is the coefficient of [X^(n-k)] in
    [char_poly A]. *)
Lemma fl_step_char_poly k : (k <= n)%N ->
  fl_M k = adj_coef A (n - k) /\ fl_c k = p`_(n - k).
Proof.
elim: k => [|k IH] kn.
  by rewrite subn0 adj_coef_eq0 // char_poly_lead.
have [IHM IHc] := IH (ltnW kn).
have EM : fl_M k.+1 = adj_coef A (n - k.+1).
  by rewrite fl_MS IHM IHc (adj_coef_rec A (n - k.+1)) subnSK.
split=> //; rewrite fl_cS EM mxtrace_mul_adj_coef ?kn // opprK.
by rewrite -mulr_natr mulfK // pnatr_eq0.
Qed.

Theorem fl_M_adj k : (k <= n)%N -> fl_M k = adj_coef A (n - k).
Proof. by case/fl_step_char_poly. Qed.

Theorem fl_c_char_poly k : (k <= n)%N -> fl_c k = p`_(n - k).
Proof. by case/fl_step_char_poly. Qed.

(** Cayley-Hamilton, as the loop's last step: [A M_n + c_0 I = 0]. *)
Theorem fl_Cayley_Hamilton : A *m fl_M n + (fl_c n)%:M = 0.
Proof.
by rewrite fl_M_adj // fl_c_char_poly // subnn adj_coef0 addNr.
Qed.

Theorem det_fl : \det A = (-1) ^+ n * fl_c n.
Proof. by rewrite fl_c_char_poly // subnn char_poly_det signrMK. Qed.

Theorem unitmx_fl : (A \in unitmx) = (fl_c n != 0).
Proof.
by rewrite unitmxE unitfE fl_c_char_poly // subnn char_poly_det mulf_eq0 signr_eq0.
Qed.

Theorem invmx_fl : A \in unitmx -> invmx A = - (fl_c n)^-1 *: fl_M n.
Proof.
move=> uA; have c0 : fl_c n != 0 by rewrite -unitmx_fl.
rewrite -[RHS](mulKmx uA) -scalemxAr.
rewrite (canRL (addrK _) fl_Cayley_Hamilton) sub0r scalerN scaleNr opprK.
by rewrite scale_scalar_mx mulVf // mulmx1.
Qed.

(** [M_n] is, up to sign, the adjugate of [A] (for every [A]). *)
Theorem fl_M_adjugate : fl_M n = (-1) ^+ n.-1 *: \adj A.
Proof. by rewrite fl_M_adj // subnn adj_coef0_adj. Qed.

End FaddeevLeVerrier.

(** * 4. Newton's identities *)

(** For a square matrix of size [n >= 1] (so that powers of [A] make sense),
    the coefficients of [char_poly A] and the traces of the powers of [A]. *)
Section Newton.
Variables (R : comRingType) (n' : nat) (A : 'M[R]_n'.+1).
Local Notation n := n'.+1.
Local Notation p := (char_poly A).

(** Closed form of the coefficients of the adjugate:
    [adj_coef (n - k) = \sum_(i < k) p_(n-i) A^(k-1-i)]. *)
Lemma adj_coefE k : (k <= n)%N ->
  adj_coef A (n - k) = \sum_(i < k) p`_(n - i) *: A ^+ (k - i.+1).
Proof.
elim: k => [|k IH] kn; first by rewrite subn0 adj_coef_eq0 // big_ord0.
rewrite (adj_coef_rec A (n - k.+1)) subnSK // IH 1?ltnW // big_ord_recr /=.
rewrite subnn expr0 scalemx1 mulmx_sumr; congr (_ + _); apply: eq_bigr => i _.
by rewrite -scalemxAr mulmxE -exprS subnSK // subSS.
Qed.

(** Newton's identities: [k p_(n-k) = - \sum_(i < k) p_(n-i) tr (A^(k-i))]
    for [1 <= k <= n]. *)
Theorem Newton_identities k : (0 < k <= n)%N ->
  p`_(n - k) *+ k = - \sum_(i < k) p`_(n - i) * \tr (A ^+ (k - i)).
Proof.
move=> kn; rewrite -[LHS]opprK -(mxtrace_mul_adj_coef A kn).
rewrite adj_coefE; last by case/andP: kn.
rewrite mulmx_sumr (raddf_sum (mxtrace_additive _ _)); congr (- _).
apply: eq_bigr => i _.
by rewrite /= -scalemxAr mxtraceZ mulmxE -exprS subnSK.
Qed.

End Newton.
