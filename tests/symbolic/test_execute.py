"""Lemmas transpose and matmul: the all-sizes method (program == independent spec) fails on wrong programs.

Each wrong construction writes its bug consistently into the selector AND the hand-written
intent (so an intent-restating proof would pass it); the symbolic execution against the
independent specification must refuse it, with a counterexample in matrix coordinates where
one exists at small sizes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from attnsim import lemmas
from attnsim.constructions.construction import Construction
from attnsim.constructions.transpose.spec import TRANSPOSE
from attnsim.proofs import z3sel
from attnsim.proofs.intents import Intent
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.layout import Block, Layout
from attnsim.symbolic.execute import Enumeration
from attnsim.symbolic.program_equals_spec import prove_program_equals_spec

R, K_, CC = C.Size("r"), C.Size("k"), C.Size("c")
Source = Callable[[Block, Block, E.Expr], E.Expr]


def _transpose(source: Source) -> Construction:
    """A transpose whose gather reads ``source``; its intent is written from the same map (the bug in both)."""
    a = Block.of("A", 0, R, CC)
    out = Block.of("out", 0, CC, R, channel="out")
    src = C.imap(lambda p: source(a, out, p), C.indices)
    sel = C.select(C.indices, src, "==")
    y = C.aggregate(sel, C.tokens)
    intent = Intent("gather", sel, z3sel.K.eq(source(a, out, z3sel.Q)), out.contains(z3sel.Q), "restates the selector")
    return Construction(
        "transpose",
        "Lemma (transpose)",
        y,
        Layout.of(a, out),
        ("A",),
        lambda x, backend="numpy": x.T,
        intents=[intent],
        specification=TRANSPOSE.at(rows=R, cols=CC, heads=1),
    )


def _good(a: Block, out: Block, p: E.Expr) -> E.Expr:
    _, i, j = out.coords(p)
    return a.position(j, i)


def _rotation(a: Block, out: Block, p: E.Expr) -> E.Expr:
    _, i, j = out.coords(p)
    return a.position(j, (i + 1) % out.cols)


def _wrong_at_4x7(a: Block, out: Block, p: E.Expr) -> E.Expr:
    _, i, j = out.coords(p)
    odd = (a.rows.eq(4) | a.rows.eq(5)) & a.cols.eq(7)
    return E.if_(odd, a.position(j, (i + 1) % a.cols), a.position(j, i))


def _wrong_large(a: Block, out: Block, p: E.Expr) -> E.Expr:
    _, i, j = out.coords(p)
    return E.if_(a.cols >= 70, a.position(j, 0), a.position(j, i))


def test_transpose_program_equals_spec_for_all_sizes() -> None:
    """Lemma (transpose): A^T proven against out[h,i,j] = A[h,j,i], single and stacked."""
    for con in (lemmas.transpose(C.Size("rows"), C.Size("cols")), lemmas.transpose(R, CC, heads=C.Size("h"))):
        out = prove_program_equals_spec(con)
        assert out.ok is True, out.detail
    assert prove_program_equals_spec(_transpose(_good)).ok is True


@pytest.mark.parametrize("source", [_rotation, _wrong_at_4x7, _wrong_large])
def test_wrong_transpose_fails_even_with_a_matching_intent(source: Source) -> None:
    """Lemma (transpose): a bug written into selector and intent alike is not 'proved for all sizes'."""
    con = _transpose(source)
    out = prove_program_equals_spec(con)
    assert out.ok is False and "counterexample" in out.detail, out.detail


def _matmul(
    a_col: Callable[[E.Expr, E.Expr], E.Expr] | None = None, scale: Any = None, hint_count: Any = None
) -> Construction:
    """A matmul with an optional wrong column read of A (in selector and intent), scale constant or hint."""
    if a_col is None and scale is None and hint_count is None:
        return lemmas.matmul(R, K_, CC)
    con = lemmas.matmul(R, K_, CC)
    ab, bb = con.layout["A"], con.layout["B"]
    prod, out = con.layout["out.products"], con.layout["out"]
    q, key = z3sel.Q, z3sel.K

    def dec(p: E.Expr) -> tuple[E.Expr, E.Expr, E.Expr]:
        _, row, lp = prod.coords(p)
        return row // CC, row % CC, lp

    col = a_col or (lambda m, k: m)
    a_src = C.imap(lambda p: ab.position(dec(p)[0], col(dec(p)[2], K_)), C.indices)
    b_src = C.imap(lambda p: bb.position(dec(p)[2], dec(p)[1]), C.indices)
    sel_a, sel_b = C.select(C.indices, a_src, "=="), C.select(C.indices, b_src, "==")
    products = C.apply("mul", C.aggregate(sel_a, C.tokens), C.aggregate(sel_b, C.tokens))
    sel_sum = C.select(C.imap(lambda p: p // K_, C.indices), C.indices, "==")
    y = C.apply("scale", C.aggregate(sel_sum, products), params=(scale if scale is not None else K_,))
    _, io, jo = out.coords(q)
    hint = Enumeration(
        key=lambda qp, lp: prod.position(out.coords(qp)[1] * CC + out.coords(qp)[2], lp),
        witness=lambda kp: prod.coords(kp)[2],
        count=hint_count if hint_count is not None else K_,
    )
    intents = [
        Intent("gather_a", sel_a, key.eq(ab.position(dec(q)[0], col(dec(q)[2], K_))), prod.contains(q), "restated"),
        Intent(
            "sum", sel_sum, prod.contains(key) & (prod.coords(key)[1]).eq(io * CC + jo), out.contains(q), "s", keys=hint
        ),
    ]
    return Construction(
        "matmul",
        "Lemma (matmul)",
        y,
        con.layout,
        ("A", "B"),
        con.reference_fn,
        intents=intents,
        specification=con.specification,
    )


def test_matmul_program_equals_spec_for_all_sizes() -> None:
    """Lemma (matmul): AB proven against sum_l A[h,i,l] B[h,l,j], single and stacked, and the rebuilt twin."""
    for con in (lemmas.matmul(R, K_, CC), lemmas.matmul(R, K_, CC, heads=C.Size("h")), _matmul(scale=K_ + 0)):
        out = prove_program_equals_spec(con)
        assert out.ok is True, out.detail


@pytest.mark.parametrize(
    "kw",
    [
        {"a_col": lambda m, k: (m + 1) % k},  # A[i, (l+1) mod k]: a permuted sum, equal only for some data
        {"a_col": lambda m, k: E.if_(k.eq(5) | k.eq(7), (m + 1) % k, m)},  # wrong only at inner 5 and 7
        {"scale": 3},  # a constant that equals the size k at k = 3
        {"scale": E.if_(K_ >= 70, K_ + 1, K_)},  # an in-graph branch wrong only for large sizes
        {"hint_count": K_ - 1},  # a wrong enumeration hint
    ],
    ids=["rotated-inner", "wrong-at-5-and-7", "constant-3", "if-large", "wrong-hint"],
)
def test_wrong_matmul_fails(kw: dict[str, Any]) -> None:
    """Lemma (matmul): each wrong construction fails with a counterexample (sizes and the entry of out)."""
    out = prove_program_equals_spec(_matmul(**kw))
    assert out.ok is False and "counterexample" in out.detail, out.detail


def test_a_python_branch_on_a_size_raises() -> None:
    """Sizes without values: `if size % 2:` in a factory is an error, not a silent True."""
    with pytest.raises(E.ExprError, match="no Python value"):
        if C.Size("n") % 2:
            pass
    with pytest.raises(E.ExprError, match="no Python value"):
        int(C.Size("n") + 1)


def test_an_int_call_is_the_symbolic_build_bound() -> None:
    """Public API: lemmas.matmul(3, 2, 4) has the fingerprint of matmul(Size...) bound to 3, 2, 4."""
    sym = lemmas.matmul(rows=C.Size("rows"), inner=C.Size("inner"), cols=C.Size("cols"))
    assert sym.free_sizes == {"rows", "inner", "cols"}
    bound = sym.bind(rows=3, inner=2, cols=4)
    assert bound.program.fingerprint == lemmas.matmul(3, 2, 4).program.fingerprint
    a, b = np.arange(6.0).reshape(3, 2), np.arange(8.0).reshape(2, 4)
    assert np.array_equal(bound.run(a, b, backend="exact"), a @ b)
    with pytest.raises(ValueError, match="no unbound size 'rows'"):
        bound.bind(rows=2)


@pytest.mark.parametrize("name", ["transpose", "matmul"])
def test_spec_matches_the_numpy_reference(name: str) -> None:
    """The specification itself is checked against NumPy on concrete operands (a wrong spec fails here)."""
    rng = np.random.default_rng(1)
    con = lemmas.transpose(3, 4, heads=2) if name == "transpose" else lemmas.matmul(3, 2, 4, heads=2)
    ops = [rng.integers(-4, 5, size=con.layout[n].shape) for n in con.inputs]
    assert np.array_equal(con.spec(*ops, backend="exact"), con.reference(*ops, backend="exact"))


def _softmax(scale: Any = None, numerator: str = "exp", row_shift: int = 0) -> Construction:
    """A softmax over unbound (rows, cols) with a replaceable scale constant, numerator or row-sum row."""
    rows, cols = C.Size("rows"), C.Size("cols")
    con = lemmas.softmax(rows, cols)
    b = con.layout["A"]
    row = C.imap(lambda p: (p - b.offset) // b.cols, C.indices)
    qrow = C.imap(lambda p: (p - b.offset) // b.cols + row_shift, C.indices) if row_shift else row
    sel = C.select(row, qrow, "==")
    e = C.apply("exp", C.tokens)
    denom = C.apply("scale", C.aggregate(sel, e), params=(scale if scale is not None else cols,))
    y = C.apply("div", e if numerator == "exp" else C.tokens, denom)
    return dataclasses.replace(con, program=y, intents=[dataclasses.replace(con.intents[0], selector=sel)])


def test_softmax_variant_builder_is_proved() -> None:
    """Lemma 3 (softmax): the test's own builder, knobs at their defaults, is proved (the failures are the knobs')."""
    assert prove_program_equals_spec(_softmax()).ok is True


@pytest.mark.parametrize(
    "kw",
    [
        {"scale": C.Size("cols") + 1},
        {"scale": C.Size("rows")},  # the row count: equal to cols on square instances
        {"scale": 5},  # a constant that equals cols at cols = 5
        {"scale": E.if_(C.Size("cols") >= 70, C.Size("cols") + 2, C.Size("cols"))},  # wrong only for cols >= 70
        {"numerator": "x"},
        {"row_shift": 1},  # the row-sum head reads the next row: the hint no longer matches the selector
    ],
    ids=["cols+1", "rows", "constant-5", "if-cols-ge-70", "numerator-x", "next-row"],
)
def test_wrong_softmax_fails(kw: dict[str, Any]) -> None:
    """Lemma 3 (softmax): each wrong variant fails with a counterexample (sizes, entry)."""
    out = prove_program_equals_spec(_softmax(**kw))
    assert out.ok is False and "counterexample" in out.detail, out.detail


def test_the_public_api_of_the_proofs_issue() -> None:
    """attnsim.Size is exported; lemmas.matmul(rows=Size("r"), inner=Size("k"), cols=Size("c")) builds
    symbolically (a size may be named k) and binds; Construction.spec takes a backend."""
    import attnsim

    con = lemmas.matmul(rows=attnsim.Size("r"), inner=attnsim.Size("k"), cols=attnsim.Size("c"))
    assert con.free_sizes == {"r", "k", "c"}
    bound = con.bind(r=2, k=3, c=2)
    a, b = np.arange(6).reshape(2, 3), np.arange(6).reshape(3, 2)
    assert np.array_equal(bound.spec(a, b, backend="exact"), a @ b)
    assert prove_program_equals_spec(con).ok is True


def test_a_wrong_spec_fails_against_the_reference() -> None:
    """The spec is checked on its own: a transpose spec that forgets to swap disagrees with NumPy."""
    wrong = dataclasses.replace(TRANSPOSE, entry=lambda alg, ops, h, i, j, sz: ops["A"][h, i, j])
    rows, cols = C.Size("rows"), C.Size("cols")
    con = dataclasses.replace(lemmas.transpose(3, 3), specification=wrong.at(rows=rows, cols=cols, heads=1))
    a = np.arange(9).reshape(3, 3)
    assert np.array_equal(con.spec(a, backend="exact"), a)  # the wrong statement, evaluated
    assert not np.array_equal(con.spec(a, backend="exact"), con.reference(a, backend="exact"))
    assert prove_program_equals_spec(lemmas.transpose(rows, cols)).ok is True  # the right one is proved
    bad = dataclasses.replace(lemmas.transpose(rows, cols), specification=wrong.at(rows=rows, cols=cols, heads=1))
    assert prove_program_equals_spec(bad).ok is False  # and the program is refuted against the wrong one


def _inside_else_minus_one(a: Block, out: Block, p: E.Expr) -> E.Expr:
    return E.if_(out.contains(p), _good(a, out, p), -1)


def _outside_branch_taken(a: Block, out: Block, p: E.Expr) -> E.Expr:
    return E.if_(out.contains(p), -1, _good(a, out, p))


def _undecided_branch(a: Block, out: Block, p: E.Expr) -> E.Expr:
    _, i, j = out.coords(p)
    return E.if_(i < 1, _good(a, out, p), a.position(j, 0))  # right at i = 0 only


def test_a_gather_branch_is_taken_only_when_proven() -> None:
    """A gather onto a grid reads If(q in grid, source, -1): the executor takes a branch only when Z3
    proves its condition at the query; the wrong branch, or an undecided one, is never taken."""
    assert prove_program_equals_spec(_transpose(_inside_else_minus_one)).ok is True
    assert prove_program_equals_spec(_transpose(_outside_branch_taken)).ok is False
    out = prove_program_equals_spec(_transpose(_undecided_branch))
    assert out.ok is False and "counterexample" in out.detail, out.detail
