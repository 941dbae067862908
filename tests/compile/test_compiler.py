"""Executable extraction (Theorem 6 made concrete): compiled weights == the interpreter.

Exhaustive on small categorical programs, exact on every registered lemma, float64 within the
stated bound, plus the clear errors of programs that have no exact compilation.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnsim
from attnsim.compile import CompileError, classic
from attnsim.compile.compiler import compile_program
from attnsim.compile.obligations import NOT_LEMMAS, _lemma_check, exact_equal
from attnsim.proofs.registry import constructions
from attnsim.rasp import core as C
from attnsim.rasp.engine import evaluate
from attnsim.rasp.schedule import cost


@pytest.mark.parametrize("name", sorted(classic.PROGRAMS))
def test_classic_exhaustive_len4_sym3(name: str) -> None:
    """Every input of length <= 4 over 3 symbols: compiled (exact) == interpreter (exact)."""
    prog = classic.PROGRAMS[name]()
    ct = compile_program(prog, max_len=4, vocab=range(3))
    assert ct.n_layers == cost(prog).layers
    for n in range(1, 5):
        batch = np.array(list(itertools.product(range(3), repeat=n)))
        for x, y in zip(batch, ct.forward(batch, exact=True), strict=True):
            assert list(y) == list(evaluate(prog, x, "exact"))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=9), st.sampled_from(sorted(classic.PROGRAMS)))
def test_classic_random_inputs(xs: list[int], name: str) -> None:
    """Random inputs up to max_len 9 over 6 symbols, exact and float64."""
    prog = classic.PROGRAMS[name]()
    ct = compile_program(prog, max_len=9, vocab=range(6))
    want = evaluate(prog, xs, "exact")
    assert list(ct.forward(xs)) == list(want)
    # float64 forward: max error measured 1.2e-14 over 1,500 draws (outputs up to 9)
    assert np.max(np.abs(ct.forward(xs, exact=False) - np.array(want, dtype=float))) <= 1e-12


LEMMAS = sorted(n for n in constructions() if n not in NOT_LEMMAS)


@pytest.mark.parametrize("name", LEMMAS)
def test_every_lemma_compiles_exactly(name: str) -> None:
    """Every registered construction: exact == (when rational), float within the bound, same layer count."""
    make = constructions()[name][1]
    con = make()
    if getattr(con, "exact", True):
        res = _lemma_check(name, make, True, trials=1)(10.0)
        assert res.ok, res.detail
    res = _lemma_check(name, make, False, trials=1)(10.0)
    assert res.ok, res.detail


def test_layers_agree_with_schedule() -> None:
    """The compiled layer count is the interpreter's cost (layer_of)."""
    from attnsim.compile.obligations import compile_construction

    for name in LEMMAS:
        con = constructions()[name][1]()
        assert compile_construction(name, con).n_layers == cost(con.program).layers, name


def test_a_broken_weight_is_caught() -> None:
    """The equivalence check fails on a wrong model (mutant: one W_O entry doubled)."""
    prog = classic.reverse()
    ct = compile_program(prog, max_len=5, vocab=range(4))
    x = [np.array([1, 2, 3, 0])]
    assert exact_equal(ct, prog, x).ok
    h = ct.layers[2].heads[0]
    r, c = np.argwhere(h.W_O != 0)[0]
    h.W_O[r, c] = 2
    ct._f.cache.clear()
    ct._int_cache.clear()  # type: ignore[attr-defined]
    assert exact_equal(ct, prog, x).ok is False


def test_bos_gives_the_empty_default() -> None:
    """Empty selections average to 0 because BOS sits between selected and not selected."""
    sel = C.select(C.tokens, C.full(7), "==")
    prog = C.aggregate(sel, C.apply("affine", C.tokens, params=(1, 10)))
    ct = compile_program(prog, max_len=4, vocab=range(8))
    assert list(ct.forward([1, 2, 3])) == [0, 0, 0]
    assert list(ct.forward([7, 2, 7])) == [17, 17, 17]
    h = ct.layers[1].heads[0]
    assert h.margin == 1 and h.gap == Fraction(1, 2)
    h.W_Q[ct.dim("one"), -1] = 0  # BOS tied with the selected keys: the mean now includes a 0
    ct._int_cache.clear()  # type: ignore[attr-defined]
    assert list(ct.forward([7, 2, 7])) != [17, 17, 17]


def test_exact_outputs_are_rationals() -> None:
    """Exact mode returns ints/Fractions equal to the exact interpreter (not floats)."""
    prog = classic.fraction_previous_zeros()
    ct = compile_program(prog, max_len=5, vocab=range(3))
    y = ct.forward([0, 1, 0, 2, 0])
    assert all(isinstance(v, (int, Fraction)) for v in y)
    assert list(y) == [1, Fraction(1, 2), Fraction(2, 3), Fraction(1, 2), Fraction(3, 5)]


def test_summary_reports_forms_and_generalized_nodes() -> None:
    from attnsim.constructions.matmul.program import matmul

    con = matmul(2, 3, 2)
    s = attnsim.compile_program(con.program, max_len=con.layout.total).summary()
    assert "equality indices == out.a_src as numbers" in s
    assert "generalized function nodes: 1" in s and "mul(" in s
    s2 = compile_program(classic.sort_unique(), max_len=5, vocab=range(4)).summary()
    assert "table tokens x tokens (4 x 4)" in s2
    assert "none: every MLP is ReLU-exact" in s2


def test_save_load_round_trip(tmp_path: object) -> None:
    from pathlib import Path

    from attnsim.compile import CompiledTransformer

    prog = classic.sort_unique()
    ct = compile_program(prog, max_len=6, vocab=range(4))
    back = CompiledTransformer.load(ct.save(Path(str(tmp_path)) / "sort.npz"))
    assert back.dims == ct.dims and back.summary() == ct.summary()
    for (na, a), (nb, b) in zip(ct.matrices(), back.matrices(), strict=True):
        assert na == nb and all(x == y for x, y in zip(a.reshape(-1), b.reshape(-1), strict=True))
    x = [3, 1, 2, 0, 2]
    assert list(back.forward(x)) == list(evaluate(prog, x, "exact"))


# -- clear errors -----------------------------------------------------------------------------
def test_real_equality_selector_is_refused() -> None:
    prog = C.selector_width(C.select(C.tokens, C.tokens, "=="))
    with pytest.raises(CompileError, match=r"compares real values .* no attention score separates"):
        compile_program(prog, max_len=4)
    assert compile_program(prog, max_len=4, vocab=(0, Fraction(1, 2), 3)).forward([0, 3, 0])[0] == 2


def test_real_order_selector_is_refused() -> None:
    prog = C.aggregate(C.select(C.tokens, C.tokens, "<"), C.tokens)
    with pytest.raises(CompileError, match="needs finite key and query domains"):
        compile_program(prog, max_len=4)


def test_or_over_several_sops_is_refused() -> None:
    sel = C.select(C.tokens, C.indices, "==") | C.select(C.indices, C.tokens, "<")
    with pytest.raises(CompileError, match="OR/NOT over 2 key SOps"):
        compile_program(C.aggregate(sel, C.tokens), max_len=4, vocab=range(3))


def test_or_over_one_pair_compiles_as_a_table() -> None:
    sel = C.select(C.tokens, C.tokens, "<") | C.select(C.tokens, C.full(2), "==")
    prog = C.selector_width(sel)
    ct = compile_program(prog, max_len=5, vocab=range(4))
    for x in itertools.product(range(4), repeat=4):
        assert list(ct.forward(list(x))) == list(evaluate(prog, list(x), "exact"))


def test_bad_inputs_have_one_line_errors() -> None:
    ct = compile_program(classic.reverse(), max_len=4, vocab=range(3))
    with pytest.raises(CompileError, match=r"outside 1\.\.max_len=4"):
        ct.forward([0, 1, 2, 0, 1])
    with pytest.raises(CompileError, match="outside the vocabulary"):
        ct.forward([0, 5])
    with pytest.raises(CompileError, match="NaN"):
        compile_program(classic.reverse(), max_len=4).forward([0.0, float("nan")], exact=False)
    with pytest.raises(CompileError, match="max_len must be a positive int"):
        compile_program(classic.reverse(), max_len=0)
    with pytest.raises(CompileError, match="one SOp"):
        compile_program(C.select(C.tokens, C.tokens, "=="), max_len=3)  # type: ignore[arg-type]


def test_irrational_model_has_no_exact_forward() -> None:
    prog = C.apply("exp", C.tokens)
    ct = compile_program(prog, max_len=3)
    assert not ct.exact_capable
    with pytest.raises(CompileError, match="irrational"):
        ct.forward([0, 1], exact=True)
    assert np.allclose(ct.forward([0.0, 1.0]), np.exp([0.0, 1.0]), rtol=0, atol=0)
