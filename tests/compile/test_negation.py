"""Executable extraction (Theorem 6 made concrete): negated selectors compile to the interpreter's
selection.

The compiler lowers ``not``, and an ``and``/``or`` under a ``not``, by negating comparisons
(``attnsim/compile/heads.py``, ``_NEG``); a wrong entry there makes compiled weights select other
keys than the interpreter on every input it matters for.  Each negated comparison is compiled in
every lowering the compiler distinguishes (two SOps, either orientation; a condition on the keys
alone; on the queries alone; two constants) and run on every input up to length 4 over 4 symbols;
random ``and``/``or``/``not`` trees are run on random inputs (hypothesis).  Both the selection's
width and the mean of the selected positions must equal the exact interpreter's.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from attnsim.compile import CompileError
from attnsim.compile.compiler import compile_program
from attnsim.rasp import core as C
from attnsim.rasp.engine import evaluate

VOCAB = 4
MAX_LEN = 4

# (keys, queries) of a single comparison, one per lowering the compiler distinguishes
SIDES: dict[str, tuple[C.SOp, C.SOp]] = {
    "tokens vs indices": (C.tokens, C.indices),
    "indices vs tokens": (C.indices, C.tokens),
    "tokens vs tokens": (C.tokens, C.tokens),
    "key condition": (C.tokens, C.full(1)),
    "query condition": (C.full(2), C.indices),
    "two constants (true)": (C.full(1), C.full(2)),
    "two constants (false)": (C.full(2), C.full(1)),
}


def _programs(sel: C.Selector) -> list[C.SOp]:
    """Two read-outs of a selection: its width, and the mean of the selected key positions."""
    return [C.selector_width(sel), C.aggregate(sel, C.indices)]


def _agree(sel: C.Selector, inputs: list[list[int]], vocab: int = VOCAB, max_len: int = MAX_LEN) -> None:
    for prog in _programs(sel):
        ct = compile_program(prog, max_len=max_len, vocab=range(vocab))
        by_len: dict[int, list[list[int]]] = {}
        for x in inputs:
            by_len.setdefault(len(x), []).append(x)
        for xs in by_len.values():
            for x, y in zip(xs, ct.forward(np.array(xs)), strict=True):
                want = list(evaluate(prog, x, "exact"))
                assert list(y) == want, f"{prog!r} on {x}: compiled {list(y)}, interpreter {want}"


EVERY_INPUT = [list(x) for n in range(1, MAX_LEN + 1) for x in itertools.product(range(VOCAB), repeat=n)]


@pytest.mark.parametrize("side", sorted(SIDES))
@pytest.mark.parametrize("cmp", C.COMPARISONS)
def test_every_negated_comparison_compiles_to_the_interpreter(cmp: str, side: str) -> None:
    """not(k cmp q), every comparison and lowering: compiled == interpreter on every input of
    length <= 4 over 4 symbols (so every order of a key and a query value occurs)."""
    keys, queries = SIDES[side]
    _agree(~C.select(keys, queries, cmp), EVERY_INPUT)


@pytest.mark.parametrize("cmp", C.COMPARISONS)
def test_negation_under_and_or_not(cmp: str) -> None:
    """Negations the lowering pushes inward: not(a or b), (not a) and b, not(not a), every input."""
    a = C.select(C.tokens, C.indices, cmp)
    b = C.select(C.indices, C.full(2), "<=")
    for sel in (~(a | b), ~a & b, ~~a, ~(b | ~a)):
        _agree(sel, EVERY_INPUT)


# -- random selector trees over one key SOp and one query SOp (every tree then compiles: as an AND
#    of conditions when the lowering finds one, else as a predicate table) --------------------------
def _trees(keys: C.SOp, queries: C.SOp) -> st.SearchStrategy[C.Selector]:
    side_k = st.one_of(st.just(keys), st.integers(0, VOCAB).map(C.full))
    side_q = st.one_of(st.just(queries), st.integers(0, VOCAB).map(C.full))
    leaf = st.builds(C.select, side_k, side_q, st.sampled_from(C.COMPARISONS))
    return st.recursive(
        leaf,
        lambda t: st.one_of(
            t.map(lambda s: ~s),
            st.tuples(t, t).map(lambda ab: ab[0] & ab[1]),
            st.tuples(t, t).map(lambda ab: ab[0] | ab[1]),
        ),
        max_leaves=5,
    )


@st.composite
def _case(draw: st.DrawFn) -> tuple[C.Selector, list[list[int]]]:
    keys = draw(st.sampled_from([C.tokens, C.indices]))
    queries = draw(st.sampled_from([C.tokens, C.indices]))
    sel = draw(_trees(keys, queries))
    inputs = draw(st.lists(st.lists(st.integers(0, VOCAB), min_size=1, max_size=5), min_size=1, max_size=12))
    return sel, inputs


@settings(max_examples=80, deadline=None)
@given(_case())
def test_random_and_or_not_trees_compile_to_the_interpreter(case: tuple[C.Selector, list[list[int]]]) -> None:
    """Random and/or/not trees of comparisons (negations at any depth, constants on either side):
    compiled == exact interpreter on random inputs up to length 5 over 5 symbols."""
    sel, inputs = case
    try:
        _agree(sel, inputs, vocab=VOCAB + 1, max_len=5)
    except CompileError as exc:  # a tree whose every comparison is between constants has no table
        assume("OR/NOT over 0 key SOps" not in str(exc) and "and 0 query SOps" not in str(exc))
        raise
