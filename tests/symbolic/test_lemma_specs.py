"""Activations MaxMin and ReLU, Lemma 3 (softmax, max-shifted): wrong programs fail program == spec.

Each variant below is built over unbound sizes and handed to the all-sizes method; each must be
refused, with a counterexample (sizes and an entry of the output) where one exists at small sizes.
"""

from __future__ import annotations

import dataclasses

import pytest

from attnsim import lemmas
from attnsim.constructions.construction import Construction
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.symbolic.program_equals_spec import prove_program_equals_spec

N, ROWS, COLS = C.Size("n"), C.Size("rows"), C.Size("cols")


def _nodes(con: Construction) -> dict[str, C.RASPExpr]:
    return {x.label: x for x in C.topological([con.program])}


def _refuted(con: Construction) -> str:
    out = prove_program_equals_spec(con)
    assert out.ok is False and "counterexample" in out.detail, out.detail
    return out.detail


def test_maxmin_and_relu_proved_for_all_sizes() -> None:
    """Activations: MaxMin for every even n (split j = 2t, 2t + 1), ReLU for every n and rows."""
    for con in (lemmas.maxmin(N), lemmas.maxmin(N, ROWS), lemmas.relu(N), lemmas.relu(N, ROWS)):
        out = prove_program_equals_spec(con)
        assert out.ok is True, out.detail


def test_maxmin_swapped_max_min_fails() -> None:
    con = lemmas.maxmin(N, ROWS)
    nodes = _nodes(con)
    y = C.apply("where", nodes["out.odd"], nodes["out.max"], nodes["out.min"])
    _refuted(dataclasses.replace(con, program=y))


def test_maxmin_wrong_partner_fails() -> None:
    """Gather A[i, j + 1] for every j (not the pair partner): refused (the last column reads outside)."""
    con = lemmas.maxmin(N, ROWS)
    sel = C.select(C.indices, C.imap(lambda p: p + 1, C.indices), "==")
    y = C.aggregate(sel, C.tokens)
    prog = C.apply("where", _nodes(con)["out.odd"], C.apply("min", C.tokens, y), C.apply("max", C.tokens, y))
    out = prove_program_equals_spec(dataclasses.replace(con, program=prog))
    assert out.ok is False, out.detail


def test_maxmin_needs_its_precondition() -> None:
    """The split by parity is licensed by the declared precondition n mod 2 == 0, and bind checks it."""
    with pytest.raises(ValueError, match="precondition"):
        lemmas.maxmin(N, ROWS).bind(n=3, rows=1)
    con = lemmas.maxmin(N, ROWS)
    bare = dataclasses.replace(con, intents=[dataclasses.replace(it, assumptions=()) for it in con.intents])
    out = prove_program_equals_spec(bare)
    assert out.ok is False and "precondition" in out.detail


@pytest.mark.parametrize("prim", ["abs", "identity"])
def test_relu_wrong_map_fails(prim: str) -> None:
    con = lemmas.relu(N, ROWS)
    _refuted(dataclasses.replace(con, program=C.apply(prim, C.tokens)))


def test_relu_output_elsewhere_fails() -> None:
    """An output block one position past the operand's: no longer the element-wise map of A."""
    con = lemmas.relu(N, ROWS)
    a, out = con.layout["A"], con.layout["out"]
    moved = dataclasses.replace(out, offset=out.offset + E.Const(1))
    blocks = [a if b.name == "A" else moved for b in con.layout]
    res = prove_program_equals_spec(dataclasses.replace(con, layout=type(con.layout).of(*blocks)))
    assert res.ok is False, res.detail


def test_stable_shift_only_in_numerator_fails() -> None:
    """Lemma 3: the row-max shift in the numerator but not in the denominator is refused."""
    con = lemmas.softmax(ROWS, COLS, stable=True)
    nodes = _nodes(con)
    denom = C.apply("scale", C.aggregate(nodes["out.rowsum"], C.apply("exp", C.tokens)), params=(COLS,))
    _refuted(dataclasses.replace(con, program=C.apply("div", nodes["out.exp"], denom)))


def test_masked_softmax_proved_for_every_operand_n() -> None:
    """Lemma 3 (masked, as U uses it): for every size and every operand 1 <= n <= cols, plain and max-shifted."""
    for stable in (False, True):
        for con in (
            lemmas.masked_softmax(ROWS, COLS, stable=stable),
            lemmas.masked_softmax(ROWS, COLS, N, stable=stable),
        ):
            out = prove_program_equals_spec(con)
            assert out.ok is True, out.detail
            assert "[o_j < n]" in out.detail and "[o_j >= n]" in out.detail


def test_masked_softmax_without_the_mask_in_the_denominator_fails() -> None:
    """Padded columns counted in the row sum (exp(0) = 1 enters): refused with a counterexample."""
    con = lemmas.masked_softmax(ROWS, COLS)
    nodes = _nodes(con)
    e = C.apply("exp", nodes["out.masked"])  # exp of the gated x, not gated again
    denom = C.apply("scale", C.aggregate(nodes["out.rowsum"], e), params=(COLS,))
    _refuted(dataclasses.replace(con, program=C.apply("div", nodes["out.exp_masked"], denom)))


def test_masked_softmax_with_a_mask_one_column_too_wide_fails() -> None:
    """j <= n instead of j < n: column n leaks into the result."""
    con = lemmas.masked_softmax(ROWS, COLS)
    nodes = _nodes(con)
    n_all, col, a = nodes["n.everywhere"], nodes["out.col"], C.tokens
    mask = C.apply("lt", col, C.apply("affine", n_all, params=(1, 1)))
    e = C.apply("gate", mask, C.apply("exp", C.apply("gate", mask, a)))
    denom = C.apply("scale", C.aggregate(nodes["out.rowsum"], e), params=(COLS,))
    _refuted(dataclasses.replace(con, program=C.apply("div", e, denom)))
