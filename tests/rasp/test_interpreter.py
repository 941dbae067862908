"""The reference interpreter against docs/semantics.md, entry by entry, on hand-computed cases."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import sympy as sp

from attnsim.rasp import core as C
from attnsim.rasp.exact import ExactArith, SympyArith
from attnsim.rasp.interpreter import Interpreter
from attnsim.rasp.numeric import NumpyArith


def run(prog: C.SOp, toks: list[object], arith: object = None) -> np.ndarray:
    a = arith or NumpyArith()
    x = a.from_input(np.array(toks, dtype=object), False)  # type: ignore[attr-defined]
    return Interpreter(a, x).run([prog])[0]  # type: ignore[arg-type]


def test_leaves_and_maps() -> None:
    assert list(run(C.indices, [5, 5, 5])) == [0, 1, 2]
    assert list(run(C.length, [5, 5])) == [2, 2]
    assert list(run(C.full(Fraction(1, 2)), [0, 0])) == [0.5, 0.5]
    assert list(run(C.imap(lambda p: (p * 2) % 3, C.indices), [0] * 4)) == [0, 2, 1, 0]
    assert list(run(C.apply("mul", C.tokens, C.indices), [3, 4])) == [0, 4]


def test_aggregate_is_the_mean_over_the_selected_keys_and_zero_when_none() -> None:
    # query q selects keys k < q: the mean of the tokens before q, 0 at q = 0
    prog = C.aggregate(C.select(C.indices, C.indices, "<"), C.tokens)
    assert list(run(prog, [2, 4, 9, 1])) == [0, 2, 3, 5]
    got = run(prog, [2, 4, 9, 1], ExactArith())
    assert list(got) == [0, 2, 3, 5] and isinstance(got[1], Fraction)


def test_selector_connectives_and_width() -> None:
    sel = (C.select(C.indices, C.full(1), ">=") & ~C.select(C.indices, C.indices, "==")) | C.select(
        C.indices, C.full(0), "=="
    )
    # keys k >= 1 other than q itself, or k = 0: every key but q (for q >= 1), every key for q = 0
    assert list(run(C.selector_width(sel), [0, 0, 0, 0])) == [4, 3, 3, 3]


def test_value_scored_heads_average_the_tied_maxima_among_the_selected_keys() -> None:
    everything = C.select(C.indices, C.indices, "TRUE")
    score = C.imap(lambda p: p % 2, C.indices)  # keys 1 and 3 tie at the maximum
    assert list(run(C.argmax_aggregate(everything, score, C.tokens), [10, 20, 30, 60])) == [40.0] * 4
    # a key outside the selection never competes, whatever its score
    first_two = C.select(C.indices, C.full(2), "<")
    assert list(run(C.maximum(first_two, C.tokens), [5, 1, 99, 7])) == [5.0] * 4
    # a NaN score among the selected keys: no key is maximal, the value is NaN (not 0)
    a = NumpyArith()
    nan = Interpreter(a, a.from_input([1.0, np.nan], True)).run([C.maximum(everything, C.tokens)])
    assert np.isnan(nan[0]).all()


def test_sympy_values_and_decidable_selectors() -> None:
    x = sp.symbols("x0:3")
    prog = C.aggregate(C.select(C.indices, C.full(2), "<"), C.tokens)
    got = run(prog, list(x), SympyArith())
    assert all(sp.simplify(g - (x[0] + x[1]) / 2) == 0 for g in got)
