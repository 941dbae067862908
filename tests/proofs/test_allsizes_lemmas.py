"""All-sizes obligations of Lemma 3 (softmax, masked, mean-shifted), Activation MaxMin and ReLU,
and of the Faddeev-LeVerrier steps of det(n) / inverse(n) (beyond the paper).

Issue 4 item 1: ``<lemma>/all-sizes/...`` is proved only when every intent and the layout hold for
all sizes (Z3) and the program, evaluated at symbolic sizes and coordinates, is the textbook
formula (SymPy).  Every test below that builds a deliberately wrong construction expects a
failure: a check that cannot fail is a defect.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim.lemmas.allsizes_extra import (
    KeySet,
    Semantics,
    _coefficient_sem,
    _frobenius_sem,
    _general_sem,
    _trace_sem,
    canonical_sums,
    coefficient_step,
    first_step,
    frobenius_step,
    general_step,
    semantics_algebra,
    trace_step,
)
from attnsim.lemmas.base import Construction
from attnsim.lemmas.softmax import _masked_semantics, _softmax_semantics, masked_softmax, softmax
from attnsim.proofs.allsizes import all_sizes_check
from attnsim.proofs.registry import by_id
from attnsim.proofs.runner import run_inline
from attnsim.rasp import core as C
from attnsim.rasp import expr as E


# -- deliberately wrong constructions ------------------------------------------------------------
def softmax_variant(
    rows: int,
    cols: int,
    heads: int | None = 2,
    *,
    scale: Callable[[int, int], int] = lambda r, c: c,
    row_shift: int = 0,
    numerator: str = "exp",
) -> Construction:
    """softmax(rows, cols, heads) rebuilt with one knob turned (the correct one by default)."""
    con = softmax(rows, cols, heads)
    b = con.layout["A"]
    row = C.imap(lambda p: (p - b.offset) // b.cols, C.indices)
    qrow = C.imap(lambda p: (p - b.offset) // b.cols + row_shift, C.indices) if row_shift else row
    sel = C.select(row, qrow, "==")
    e = C.apply("exp", C.tokens)
    denom = C.apply("scale", C.aggregate(sel, e), params=(scale(rows, cols),))
    num = e if numerator == "exp" else C.tokens
    y = C.apply("div", num, denom)
    return dataclasses.replace(con, program=y, intents=[dataclasses.replace(con.intents[0], selector=sel)])


def algebra_only(makes: list[Callable[[], Any]], sem: Callable[[Any], Semantics]) -> Any:
    return semantics_algebra(makes, sem)(20)


# -- the registered obligations hold ---------------------------------------------------------------
@pytest.mark.parametrize(
    "oid",
    ["softmax/all-sizes/lemma", "softmax-masked/all-sizes/stable", "maxmin/all-sizes/lemma", "relu/all-sizes/lemma"],
)
def test_registered_all_sizes_proved(oid: str) -> None:
    r = run_inline(by_id(oid), 30)
    assert r.status == "proved", r.detail
    if oid.startswith(("softmax/", "relu/", "maxmin/")):  # program == independent spec (symbolic execution)
        assert "program == spec" in r.detail
    else:  # the older form: intents + algebra at symbolic sizes
        assert "algebra" in r.detail and "symbolic sizes" in r.detail


def test_correct_variant_passes() -> None:
    """The test's own builder, knobs at their defaults, is proved: the failures below are the knobs'."""
    out = algebra_only(
        [functools.partial(softmax_variant, 3, 5), functools.partial(softmax_variant, 4, 6, 3)], _softmax_semantics
    )
    assert out.ok is True, out.detail


# -- wrong constructions fail ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("scale", "why"),
    [
        (lambda r, c: c + 1, "wrong constant cols + 1"),
        (lambda r, c: r, "the row count instead of cols"),
        (lambda r, c: 5, "a constant that equals cols only in the first instance"),
    ],
)
def test_softmax_wrong_scale_fails(scale: Callable[[int, int], int], why: str) -> None:
    makes = [
        functools.partial(softmax_variant, 3, 5, scale=scale),
        functools.partial(softmax_variant, 4, 6, 3, scale=scale),
    ]
    out = algebra_only(makes, _softmax_semantics)
    assert out.ok is False, why
    assert "reference" in out.detail


def test_softmax_wrong_numerator_fails() -> None:
    out = algebra_only([functools.partial(softmax_variant, 3, 5, numerator="x")], _softmax_semantics)
    assert out.ok is False and "A[h, i, j]" in out.detail


def test_softmax_selector_over_wrong_row_fails() -> None:
    """The row-sum head reads the NEXT row: the intent proof fails with a counterexample."""
    make = functools.partial(softmax_variant, 3, 5, row_shift=1)
    out = all_sizes_check(make, semantics_algebra([make], _softmax_semantics))(20)
    assert out.ok is False and "rowsum" in out.detail and "counterexample" in out.detail


def test_wrong_key_set_is_refused() -> None:
    """A key set that is not the intent (one key too few) is caught by Z3, not trusted."""

    def short(con: Construction) -> Semantics:
        sem = _softmax_semantics(con)
        ks = sem.keysets[0]
        return dataclasses.replace(sem, keysets=(dataclasses.replace(ks, count=ks.count - 1),))

    out = algebra_only([functools.partial(softmax, 3, 5, 2)], short)
    assert out.ok is False and "key set of rowsum" in out.detail


def test_wrong_claim_is_refused() -> None:
    def off(con: Construction) -> Semantics:
        sem = _masked_semantics(con)
        return dataclasses.replace(sem, claims={"out.col": lambda h, i, j: j + 1})

    out = algebra_only([functools.partial(masked_softmax, 3, 5, 2)], off)
    assert out.ok is False and "claim out.col" in out.detail


def test_masked_without_mask_in_denominator_fails() -> None:
    """Padded columns counted in the row sum: differs from the softmax of the first n columns."""

    def unmasked(rows: int, cols: int, heads: int | None) -> Construction:
        con = masked_softmax(rows, cols, heads)
        nodes = {n.label: n for n in C.topological([con.program])}
        e = C.apply("exp", nodes["out.masked"])  # exp of the gated x, NOT gated again: exp(0) = 1 enters
        denom = C.apply("scale", C.aggregate(nodes["out.rowsum"], e), params=(cols,))
        y = C.apply("div", nodes["out.exp_masked"], denom)
        return dataclasses.replace(con, program=y)

    out = algebra_only([functools.partial(unmasked, 3, 5, 2)], _masked_semantics)
    assert out.ok is False and "n" in out.detail


def test_canonical_sums_alpha_renames() -> None:
    a, m, k = sp.IndexedBase("A"), sp.Symbol("m", integer=True), sp.Symbol("k", integer=True)
    n = sp.Symbol("n", integer=True, positive=True)
    s1, s2 = sp.Sum(a[m], (m, 0, n - 1)), sp.Sum(a[k], (k, 0, n - 1))
    assert s1 != s2 and canonical_sums(s1) == canonical_sums(s2)
    assert canonical_sums(sp.Sum(a[m], (m, 0, n))) != canonical_sums(s2)


def test_keyset_needs_witness() -> None:
    ks = KeySet("rowsum", "A", lambda h, i, j, m: (h, i, m), E.Const(3))
    con = softmax(2, 3)
    with pytest.raises(ValueError, match="witness"):
        ks.predicate({b.name: b for b in con.layout}, (E.Var("h"), E.Var("i"), E.Var("j")))


def test_masked_swapped_comparison_refuted_by_sampling() -> None:
    """Mask lt(n, col) instead of lt(col, n): refuted at a concrete admissible point, quickly."""

    def swapped(rows: int, cols: int, heads: int | None) -> Construction:
        con = masked_softmax(rows, cols, heads)
        nodes = {n.label: n for n in C.topological([con.program])}
        mask = C.apply("lt", nodes["n.everywhere"], nodes["out.col"])
        x = C.apply("gate", mask, C.tokens)
        e = C.apply("gate", mask, C.apply("exp", x))
        denom = C.apply("scale", C.aggregate(nodes["out.rowsum"], e), params=(cols,))
        return dataclasses.replace(con, program=C.apply("div", e, denom))

    out = algebra_only([functools.partial(swapped, 3, 5, 2)], _masked_semantics)
    assert out.ok is False and "random rational entries" in out.detail


# -- Faddeev-LeVerrier steps (det(n) / inverse(n), beyond the paper) ------------------------------
def test_faddeev_steps_proved() -> None:
    for oid in ("faddeev-steps/all-sizes/trace", "faddeev-steps/all-sizes/first-step"):
        r = run_inline(by_id(oid), 30)
        assert r.status == "proved", r.detail


def _with_scale(con: Construction, factor: Callable[[Any], Any]) -> Construction:
    """The same construction with its last scale constant k replaced by factor(k)."""
    p = con.program
    assert isinstance(p, C.Map) and isinstance(p.fn, C.Prim) and p.fn.name == "scale"
    return dataclasses.replace(con, program=C.apply("scale", p.inner, params=(factor(p.fn.params[0]),)))


def test_trace_wrong_scale_fails() -> None:
    makes = [lambda: _with_scale(trace_step(3), lambda k: k + 1), lambda: _with_scale(trace_step(5), lambda k: k + 1)]
    out = algebra_only(makes, _trace_sem("out.sum", "out"))
    assert out.ok is False


def test_frobenius_scale_rows_only_fails() -> None:
    out = algebra_only([lambda: _with_scale(frobenius_step(3, 5), lambda k: k / 5)], _frobenius_sem)
    assert out.ok is False and "reference" in out.detail


def test_trace_over_first_column_fails() -> None:
    """A selector over column 0 instead of the diagonal: the intent fails for all sizes."""

    def column(n: int) -> Construction:
        con = trace_step(n)
        blk = con.layout["A"]
        flag = C.imap(lambda p: blk.contains(p) & blk.coords(p)[2].eq(0), C.indices)
        sel = C.select(flag, C.full(1), "==")
        prog = C.apply("scale", C.aggregate(sel, C.tokens), params=(n,))
        return dataclasses.replace(con, program=prog, intents=[dataclasses.replace(con.intents[0], selector=sel)])

    make = functools.partial(column, 3)
    out = all_sizes_check(make, semantics_algebra([make], _trace_sem("out.sum", "out")))(20)
    assert out.ok is False and "counterexample" in out.detail


def test_first_step_plus_trace_fails() -> None:
    """M_2 = A + tr(A) I (sign lost): refuted."""

    def plus(n: int) -> Construction:
        con = first_step(n)
        nodes = {x.label: x for x in C.topological([con.program])}
        prog = C.apply("add", C.tokens, C.apply("mul", nodes["tr"], nodes["out.eye"]))
        return dataclasses.replace(con, program=prog)

    out = algebra_only([functools.partial(plus, 3)], _trace_sem("tr.sum", "A"))
    assert out.ok is False


def test_symbolic_path_fails_without_sampling(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sampled refutation is only a shortcut: the symbolic comparison alone rejects a wrong scale."""
    import attnsim.lemmas.allsizes_extra as extra

    monkeypatch.setattr(extra, "_refute_by_sampling", lambda *a, **k: None)
    scale = functools.partial(softmax_variant, 3, 5, scale=lambda r, c: c + 1)
    out = algebra_only([scale], _softmax_semantics)
    assert out.ok is False and "output (h, i, j) - reference" in out.detail
    swapped = algebra_only([lambda: _with_scale(frobenius_step(3, 5), lambda k: k / 5)], _frobenius_sem)
    assert swapped.ok is False


def test_intent_covering_part_of_the_block_is_refused() -> None:
    """An intent stated only for the first row proves nothing about the others: refused."""
    from attnsim.proofs import z3sel

    def first_row(rows: int, cols: int) -> Construction:
        con = softmax(rows, cols, 2)
        it = con.intents[0]
        narrow = it.queries & (z3sel.Q < con.layout["A"].cols)
        return dataclasses.replace(con, intents=[dataclasses.replace(it, queries=narrow)])

    out = algebra_only([functools.partial(first_row, 3, 5)], _softmax_semantics)
    assert out.ok is False and "does not hold at every entry" in out.detail


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 6), st.data())
def test_split_at_bound_preserves_the_sum(c: int, data: st.DataObject) -> None:
    """Sum_{l < c} f(l) with a mask l < n, split at n (0 <= n <= c), equals the unsplit sum."""
    from attnsim.lemmas.allsizes_extra import _split

    n_val = data.draw(st.integers(0, c))
    xs = data.draw(st.lists(st.integers(-5, 5), min_size=c, max_size=c))
    a, m = sp.IndexedBase("X"), sp.Symbol("m", integer=True)
    n, cs = sp.Symbol("n", integer=True, positive=True), sp.Symbol("cols", integer=True, positive=True)
    body = sp.Piecewise((a[m] ** 2, sp.Lt(m, n)), (a[m] + 7, True))
    whole = sp.Sum(body, (m, 0, cs - 1))
    split = _split(whole, n, cs)
    assert split != whole
    vals = {a[k]: v for k, v in enumerate(xs)}
    for e in (whole, split):
        e_num = e.subs({cs: c, n: n_val}).doit().xreplace(vals)
        assert e_num == sum(x**2 if k < n_val else x + 7 for k, x in enumerate(xs))


def test_faddeev_general_and_coefficient_steps_proved() -> None:
    for oid in ("faddeev-steps/all-sizes/general-step", "faddeev-steps/all-sizes/coefficient-step"):
        r = run_inline(by_id(oid), 30)
        assert r.status == "proved", r.detail


def test_general_step_wrong_sign_of_c_fails() -> None:
    """M' = A M - c I (c negated before the identity is added): refuted."""

    def minus(n: int) -> Construction:
        con = general_step(n)
        nodes = {x.label: x for x in C.topological([con.program])}
        c = C.apply("neg", nodes["c.everywhere"])
        prog = C.apply("add", nodes["P"], C.apply("mul", c, nodes["out.eye"]))
        return dataclasses.replace(con, program=prog)

    out = algebra_only([functools.partial(minus, 3)], _general_sem)
    assert out.ok is False and "reference" in out.detail


def test_general_step_product_in_wrong_order_fails() -> None:
    """M A instead of A M: the gathers read the other operand, so the key sets are not the intents."""
    from attnsim.lemmas.faddeev import plus_identity
    from attnsim.lemmas.matmul import matmul_ref
    from attnsim.rasp.layout import MatRef

    def swapped(n: int) -> Construction:
        con = general_step(n)
        a, m = con.layout["A"], con.layout["M"]
        prod, its = matmul_ref(MatRef(C.tokens, m), MatRef(C.tokens, a), name="P")
        nodes = {x.label: x for x in C.topological([con.program])}
        out = plus_identity(prod, nodes["c.everywhere"], "out")
        return dataclasses.replace(con, program=out.sop, intents=[*its, con.intents[-1]])

    out = algebra_only([functools.partial(swapped, 3)], _general_sem)
    assert out.ok is False and "key set of gather_a" in out.detail


def test_coefficient_step_without_transpose_fails() -> None:
    """<A^T, A^T> instead of <A^T, M>: refuted (the Frobenius terms read the wrong operand)."""

    def same(n: int) -> Construction:
        con = coefficient_step(n)
        nodes = {x.label: x for x in C.topological([con.program])}
        terms = C.apply("mul", nodes["At"], nodes["At"])
        mean = C.aggregate(nodes["out.sum"], terms)
        p = con.program
        assert isinstance(p, C.Map)
        return dataclasses.replace(con, program=C.apply("scale", mean, params=(p.fn.params[0],)))

    out = algebra_only([functools.partial(same, 3)], _coefficient_sem)
    assert out.ok is False
