"""The Sum normal form behind the all-sizes proofs (Lemma (matmul)): sound, and honest when incomplete."""

from __future__ import annotations

import pytest
import sympy as sp

from attnsim.proofs.obligation import Outcome
from attnsim.symbolic import sums, sympy_work
from attnsim.symbolic.if_then_else import Ite
from attnsim.symbolic.sums import bound_symbol, equal_by_normal_form, fresh_bound, normal_form, same_normal_form

A = sp.IndexedBase("A")
L, M, N, D, d, c = (sp.Symbol(s, integer=True) for s in ("l", "m", "n", "D", "d", "c"))


def test_renaming_linearity_and_constant_factors_decide_equal_sums() -> None:
    """Sums differing in the bound variable's name, in constant factors or split over + are equal."""
    lhs = c * (sp.Sum(A[L] * 2 + A[L + 1], (L, 0, N - 1)) / c)
    rhs = 2 * sp.Sum(A[M], (M, 0, N - 1)) + sp.Sum(A[M + 1], (M, 0, N - 1))
    same, shown, _ = equal_by_normal_form(lhs, rhs)
    assert same, shown
    assert equal_by_normal_form(sp.Sum(3, (L, 0, N - 1)), 3 * N)[0]


def test_different_sums_are_not_equal() -> None:
    """A shifted index, another bound or another factor: never equal."""
    base = sp.Sum(A[L], (L, 0, N - 1))
    for other in (sp.Sum(A[L + 1], (L, 0, N - 1)), sp.Sum(A[L], (L, 0, N - 2)), 2 * base):
        assert not equal_by_normal_form(base, other)[0]


def test_a_guarded_sum_is_never_simplified_into_a_false_claim() -> None:
    """SymPy 1.14's simplify turns Sum_{l<D}[l<d] - D into Piecewise((0, d > l), (-D, True)) with a
    free l, which a later case substitution 'proves' zero.  The normal form never moves a condition
    on the bound variable out of its sum, and truncates only when d <= D is known."""
    indicator = sp.Sum(Ite(L < d, 1, 0), (L, 0, D - 1))
    same, _, diff = equal_by_normal_form(indicator, D)
    assert not same and diff.has(sp.Sum)
    assert L not in normal_form(indicator - D).free_symbols  # the bound variable never escapes
    u, v = sp.Symbol("u", integer=True, nonnegative=True), sp.Symbol("v", integer=True, nonnegative=True)
    known = indicator.xreplace({d: u + 1, D: u + 1 + v})  # 1 <= d <= D: Sum_{l<D}[l<d] = d
    assert equal_by_normal_form(known, u + 1)[0]


def test_a_piecewise_is_refused() -> None:
    """SymPy folds a Piecewise out of the sums it is built into (piecewise_fold): values are Ite."""
    with pytest.raises(ValueError, match="Piecewise"):
        normal_form(sp.Sum(sp.Piecewise((A[L], L < d), (0, True)), (L, 0, D - 1)) * sp.Piecewise((1, d > 0), (0, True)))


def test_piecewise_fold_is_the_hazard_ite_avoids() -> None:
    """Why Ite: SymPy 1.14 builds Sum(g(m) Sum(Piecewise(f(l), c(l)), l), m) with a condition on l
    outside the inner sum; the same built with Ite keeps every condition inside its own sum."""
    from attnsim.symbolic.if_then_else import from_piecewise

    inner_pw = sp.Sum(sp.Piecewise((A[L] + 1, A[L] > 0), (sp.exp(A[L]), True)), (L, 0, N - 1))
    folded = sp.Sum(sp.Piecewise((A[M] + 1, A[M] > 0), (sp.exp(A[M]), True)) * inner_pw, (M, 0, N - 1))
    conditions = [c for p in folded.atoms(sp.Piecewise) for _, c in p.args]
    assert any(L in c.free_symbols and not any(isinstance(s, sp.Sum) for s in c.atoms(sp.Sum)) for c in conditions)
    inner = sp.Sum(from_piecewise(sp.Piecewise((A[L] + 1, A[L] > 0), (sp.exp(A[L]), True))), (L, 0, N - 1))
    safe = sp.Sum(from_piecewise(sp.Piecewise((A[M] + 1, A[M] > 0), (sp.exp(A[M]), True))) * inner, (M, 0, N - 1))
    assert not safe.has(sp.Piecewise) and inner in safe.atoms(sp.Sum)


def test_renaming_never_captures_an_outer_variable() -> None:
    """Sum_r Sum_c A[r, c] is not n Sum_c A[c, c]: renaming the outer r must not reuse the inner name."""
    lhs = sp.Sum(sp.Sum(A[L, M], (M, 0, N - 1)), (L, 0, N - 1))
    rhs = sp.Sum(sp.Sum(A[M, M], (M, 0, N - 1)), (L, 0, N - 1))
    assert not equal_by_normal_form(lhs, rhs)[0]


def test_independent_double_sums_commute() -> None:
    """Fubini for finite sums: Sum_i Sum_j A[j, i] B[i, j] = Sum_r Sum_c A[r, c] B[c, r] (tr(AB) both ways)."""
    B = sp.IndexedBase("B")
    x = sp.Sum(sp.Sum(A[M, L] * B[L, M], (M, 0, N - 1)), (L, 0, N - 1))
    y = sp.Sum(sp.Sum(A[c, d] * B[d, c], (d, 0, N - 1)), (c, 0, N - 1))
    assert equal_by_normal_form(x, y)[0]
    assert not equal_by_normal_form(x, sp.Sum(sp.Sum(A[c, d] * B[c, d], (d, 0, N - 1)), (c, 0, N - 1)))[0]


def test_shared_closed_subterms_decide_equal_sides_without_multiplying_out() -> None:
    """Theorem 6's ffn stage (tanh-GELU over a LayerNorm output): both sides hold the same closed
    subterm x inside tanh(x + x^3); read as a fresh symbol it decides equality without expanding x^3.
    A subterm that mentions a bound variable is never read as a symbol (it means another value at
    every term of its sum), and unequal sides stay unequal."""
    from attnsim.symbolic.sums import _shared_closed_terms

    x = sp.Sum(A[L], (L, 0, N - 1)) / N + A[0] * A[1]
    lhs = sp.tanh(x + x**3 / 7) * (x + 1)
    rhs = x * sp.tanh(x**3 / 7 + x) + sp.tanh(x + x**3 / 7)
    same, shown, _ = equal_by_normal_form(lhs, rhs)
    assert same, shown
    assert not equal_by_normal_form(lhs, rhs + x)[0]
    assert not equal_by_normal_form(lhs, x * sp.tanh(x + x**3 / 6) + sp.tanh(x + x**3 / 7))[0]
    body = A[L] * A[L + 1]  # mentions the bound L: not a shared closed term
    shared = _shared_closed_terms(
        normal_form(sp.Sum(body, (L, 0, N - 1))), normal_form(sp.Sum(body + 1, (M, 0, N - 1)))
    )
    assert not any(t.has(sp.Symbol("β0", integer=True)) for t in shared), shared
    renamed = sp.Sum(sp.Sum(A[L, M], (M, 0, N - 1)), (L, 0, N - 1))  # capture is still refused
    assert not equal_by_normal_form(renamed, sp.Sum(sp.Sum(A[M, M], (M, 0, N - 1)), (L, 0, N - 1)))[0]


def test_a_sum_bound_by_a_canonical_name_over_a_sum_leaves_no_dummy() -> None:
    """Theorem 6's LayerNorm variances are shown means of squares by the normal form, the square
    built over a canonical bound variable (``fresh_bound``, so its normal form is kept between
    calls).  The inner sum's normal form binds the same name ``β0``; renaming the outer one
    renamed the inner binder too, and that Dummy leaked into the result: two equal sides no
    longer compared equal (an incompleteness, found when the square stopped using a Dummy)."""
    b = bound_symbol(0)
    mean = sp.Sum(A[L], (L, 0, D - 1)) / D
    square = sp.Sum((A[b] - mean) ** 2, (b, 0, D - 1)) / D
    assert not normal_form(square).atoms(sp.Dummy)
    variance = sp.Sum(A[M] ** 2, (M, 0, D - 1)) / D - mean**2
    assert equal_by_normal_form(variance, square)[0]
    w = fresh_bound(variance)
    assert equal_by_normal_form(variance, square.xreplace({b: w}))[0]
    assert not equal_by_normal_form(variance, square.xreplace({b: w}) + 1 / D)[0]


def test_fresh_bound_is_above_every_canonical_name() -> None:
    inner = sp.Sum(A[bound_symbol(3)], (bound_symbol(3), 0, N - 1)) * A[bound_symbol(1)]
    assert fresh_bound(inner) == bound_symbol(4)
    assert fresh_bound(A[L]) == bound_symbol(0)
    assert fresh_bound(inner, A[bound_symbol(7)]) == bound_symbol(8)


def test_kept_normal_forms_are_the_computed_ones() -> None:
    """``_sum`` and ``normal_forms`` keep their results by the expression: the kept answer is the
    one a fresh computation gives."""
    e = sp.Sum(A[L] * sp.Sum(A[M], (M, 0, N - 1)), (L, 0, N - 1))
    first = normal_form(e)
    sums._sum.cache_clear()
    sums.normal_forms.cache_clear()
    assert normal_form(e) == first
    assert sums.normal_forms(e, first)[2] == 0 and sums.normal_forms(e, first + 1)[2] != 0


def test_an_expansion_past_the_node_budget_is_not_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """The normal form's node budget (issue 27): a Sum body or a difference that expands to more
    terms than sympy_work.TERMS_BUDGET stops the step (NodeBudgetExceeded), and the obligation is unknown
    "over its node budget", never proved or failed; within the budget the same claim is proved."""
    from attnsim.proofs.obligation import Obligation
    from attnsim.proofs.solver_work import NodeBudgetExceeded
    from attnsim.verify.runner import run_inline

    x, y, v, n = sp.symbols("x y v n", integer=True)
    lhs = sp.Sum((x + y + v) ** 3, (v, 0, n - 1))
    rhs = sp.Sum(sp.expand((x + y + v) ** 3), (v, 0, n - 1))

    def claim(timeout: float) -> Outcome:
        return Outcome.good("equal") if same_normal_form(lhs, rhs) else Outcome.bad("differ")

    ob = Obligation("t/all-sizes/budget", "t", "Proposition 1", "all-sizes", claim)
    assert run_inline(ob, 10).status == "proved"
    sums._sum.cache_clear()
    sums.normal_forms.cache_clear()
    monkeypatch.setattr(sympy_work, "TERMS_BUDGET", 5)  # (x + y + v)^3 has 10 terms
    with pytest.raises(NodeBudgetExceeded):
        sums.normal_form(lhs)
    r = run_inline(ob, 10)
    assert r.status == "unknown" and r.cause == "over its node budget" and "10 terms" in r.detail
    # a mutant's check over the budget is not decided either (not a kill: mutation/run.py)
    from attnsim.verify.mutation.run import _run_check

    out = _run_check(ob, 10)
    assert out.ok is None and out.cause == "over its node budget"
