"""Adversarial wrong constructions (from a skeptical review of the all-sizes method): each was once
'proved for all sizes' while wrong at some size or input; each must now be refused.

Backs every ``all-sizes`` obligation of paper_map.md (the proofs against specifications row)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from attnsim import lemmas
from attnsim.constructions.construction import Construction
from attnsim.constructions.softmax.spec import SOFTMAX
from attnsim.constructions.transpose.spec import TRANSPOSE
from attnsim.proofs import decoding, z3sel
from attnsim.proofs.intents import Intent
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.layout import Block, Layout
from attnsim.symbolic.execute import Enumeration
from attnsim.symbolic.program_equals_spec import prove_program_equals_spec
from attnsim.symbolic.spec_language import Spec

R, CC = C.Size("r"), C.Size("c")


def _refused(con: Construction) -> str:
    out = prove_program_equals_spec(con)
    assert out.ok is not True, out.detail
    return out.detail


def test_a_divisor_is_never_assumed_positive() -> None:
    """Z3's div/mod side conditions were hypotheses: x < k | ((k - x) div (k - x)) == 7 was 'proved'."""
    x, k = E.Var("x"), C.Size("k")
    out = decoding.prove((x < k) | ((k - x) // (k - x)).eq(7), coords={"x": k + 1})
    assert out.ok is False and "counterexample" in out.detail


def test_a_hint_cannot_skip_a_selected_key_through_an_undefined_witness() -> None:
    """A row sum that also selects a token after A; the hint's witness divides by 0 exactly there."""
    a = Block.of("A", 0, R, CC)
    z = Block.of("z", a.end_expr(), 1, 1)
    out = Block.of("out", 0, R, CC, channel="out")
    row = C.imap(lambda p: p // CC, C.indices)
    sel = C.select(row, row, "==") | C.select(C.indices, C.imap(lambda p: z.position(0, 0), C.indices), "==")
    e = C.apply("exp", C.tokens)
    y = C.apply("div", e, C.apply("scale", C.aggregate(sel, e), params=(CC,)))
    hint = Enumeration(
        key=lambda qp, lv: a.position(out.coords(qp)[1], lv),
        witness=lambda kp: a.coords(kp)[2] + (R * CC - kp) // (R * CC - kp) - 1,
        count=CC,
    )
    it = Intent("rowsum", sel, a.contains(z3sel.K), out.contains(z3sel.Q), "x", keys=hint)
    con = Construction(
        "bad-softmax",
        "x",
        y,
        Layout.of(a, z, out),
        ("A", "z"),
        lambda *o, backend="numpy": o[0],
        intents=[it],
        exact=False,
        specification=SOFTMAX.at(rows=R, cols=CC, heads=1),
    )
    _refused(con)


def test_overlapping_input_blocks_are_refused() -> None:
    a = Block.of("A", 0, R, CC)
    b = Block.of("B", 0, R, CC)
    out = Block.of("out", 0, CC, R, channel="out")
    src = C.imap(lambda p: a.position(out.coords(p)[2], out.coords(p)[1]), C.indices)
    y = C.aggregate(C.select(C.indices, src, "=="), C.tokens)
    con = Construction(
        "overlap",
        "x",
        y,
        Layout.of(a, b, out),
        ("A", "B"),
        lambda x, z, backend="numpy": x.T,
        specification=TRANSPOSE.at(rows=R, cols=CC, heads=1),
    )
    assert "overlap" in _refused(con)


def test_a_size_named_like_an_internal_variable_is_not_captured() -> None:
    """A scale by a size named l0 (the executor's bound names now carry '!'): not the summation index."""
    k, w = C.Size("k"), C.Size("l0")
    base = lemmas.matmul(R, k, CC)
    mean = base.program.inner  # type: ignore[attr-defined]
    y = C.apply("scale", C.aggregate(mean.selector, C.apply("scale", mean.values, params=(w,))), params=(k,))
    weird = Spec(
        "weird",
        ("A", "B"),
        ("rows", "inner", "cols", "heads"),
        lambda sz: (1, sz["rows"], sz["cols"]),
        lambda alg, ops, h, i, j, sz: alg.sum(lambda m: m * ops["A"][h, i, m] * ops["B"][h, m, j], sz["inner"]),
        "sum_l l A[i, l] B[l, j]",
    )
    _refused(dataclasses.replace(base, program=y, specification=weird.at(rows=R, inner=k, cols=CC, heads=1)))


def test_a_parameter_undefined_at_some_size_is_refused() -> None:
    """scale by (c - 1) div (c - 1): SymPy says 1, the engine raises at c = 1."""
    base = lemmas.transpose(R, CC)
    assert "divisor" in _refused(
        dataclasses.replace(base, program=C.apply("scale", base.program, params=((CC - 1) // (CC - 1),)))
    )


def test_a_declared_minimum_is_enforced_by_bind() -> None:
    """A proof under an intent's minimum c >= 2 says so, and bind refuses c = 1."""
    base = lemmas.transpose(R, CC)
    it = Intent(
        "dummy", C.select(C.indices, C.indices, "=="), z3sel.K.eq(z3sel.Q), E.Const(1).eq(1), "x", minimum=(("c", 2),)
    )
    con = dataclasses.replace(base, intents=[*base.intents, it])
    out = prove_program_equals_spec(con)
    assert out.ok is True and "c >= 2" in out.detail
    with pytest.raises(ValueError, match="c must be an int >= 2"):
        con.bind(r=1, c=1)


def test_a_spec_sum_of_negative_length_is_refused() -> None:
    """Sum_{l < c - 2} 1 is c - 2 to SymPy but 0 to range() at c = 1."""
    base = lemmas.transpose(R, CC)
    spec = Spec(
        "t",
        ("A",),
        ("rows", "cols", "heads"),
        lambda sz: (1, sz["cols"], sz["rows"]),
        lambda alg, ops, h, i, j, sz: ops["A"][h, j, i] * alg.sum(lambda m: 1, sz["cols"] - 2),
        "x",
    )
    prog = C.apply("scale", base.program, params=(CC - 2,))
    _refused(dataclasses.replace(base, program=prog, specification=spec.at(rows=R, cols=CC, heads=1)))


def test_one_and_x_is_the_truth_of_x() -> None:
    """1 & (j mod 3) is 1 where j mod 3 != 0 (0/1), not j mod 3."""
    base = lemmas.transpose(R, CC)
    out = base.layout["out"]
    w = C.imap(lambda p: E.Const(1) & (out.coords(p)[2] % 3), C.indices)
    spec = Spec(
        "t",
        ("A",),
        ("rows", "cols", "heads"),
        lambda sz: (1, sz["cols"], sz["rows"]),
        lambda alg, ops, h, i, j, sz: ops["A"][h, j, i] * alg.mod(j, 3),
        "x",
    )
    _refused(
        dataclasses.replace(
            base, program=C.apply("mul", base.program, w), specification=spec.at(rows=R, cols=CC, heads=1)
        )
    )


def test_the_output_shape_must_be_the_specs() -> None:
    """A transpose of head 0 only (a single output block) is not the stacked transpose."""
    h = C.Size("h")
    a = Block.of("A", 0, R, CC, h)
    out = Block.of("out", 0, CC, R, channel="out")
    src = C.imap(lambda p: a.position(out.coords(p)[2], out.coords(p)[1], 0), C.indices)
    y = C.aggregate(C.select(C.indices, src, "=="), C.tokens)
    con = Construction(
        "t-head0",
        "x",
        y,
        Layout.of(a, out),
        ("A",),
        lambda x, backend="numpy": np.swapaxes(x, 1, 2),
        specification=TRANSPOSE.at(rows=R, cols=CC, heads=h),
    )
    assert "shape" in _refused(con)


def test_a_comparison_on_data_is_a_flag() -> None:
    """gate(x >= 0, x) is relu, not x: a comparison of data values is a 0/1 value."""
    base = lemmas.transpose(R, CC)
    flag = C.imap(lambda v: v >= 0, base.program)
    _refused(dataclasses.replace(base, program=C.apply("gate", flag, base.program)))


def test_a_size_of_minimum_zero_is_not_positive() -> None:
    """t * offset / offset with offset >= 0: undefined at offset 0, never 'proved'."""
    off = C.Size("offset")
    base = lemmas.transpose(R, CC)
    a2 = Block.of("A", off, R, CC)
    out2 = Block.of("out", off, CC, R, channel="out")
    src = C.imap(lambda p: a2.position(out2.coords(p)[2], out2.coords(p)[1]), C.indices)
    t = C.aggregate(C.select(C.indices, src, "=="), C.tokens)
    scale = C.apply("scale", C.full(1), params=(off,))
    y = C.apply("div", C.apply("mul", t, scale), scale)
    it = Intent(
        "any",
        C.select(C.indices, C.indices, "=="),
        z3sel.K.eq(z3sel.Q),
        E.Const(1).eq(1),
        "x",
        minimum=(("offset", 0),),
    )
    _refused(dataclasses.replace(base, program=y, layout=Layout.of(a2, out2), intents=[it]))


def test_a_declaration_the_input_check_does_not_enforce_is_refused() -> None:
    """Declaring the r x c operand A a scalar operand (so its entries would count as >= 1)."""
    base = lemmas.transpose(R, CC)
    t = base.program
    con = dataclasses.replace(base, program=C.apply("div", C.apply("mul", t, t), t), scalars=(("A", 1, CC, "o_j"),))
    assert "scalar operand A" in _refused(con)
