"""The value-scored (argmax) head: the mean over the selected keys of maximal score (docs/semantics.md)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim.rasp import core as C
from attnsim.rasp.engine import evaluate
from attnsim.rasp.schedule import cost


def _by_definition(keys: list[int], queries: list[int], score: list[int], values: list[int]) -> list[Fraction]:
    """The semantics written out: per query, the selected keys, those of maximal score, their mean."""
    out = []
    for qv in queries:
        sel = [k for k, kv in enumerate(keys) if kv == qv]
        if not sel:
            out.append(Fraction(0))
            continue
        top = max(score[k] for k in sel)
        win = [values[k] for k in sel if score[k] == top]
        out.append(Fraction(sum(win), len(win)))
    return out


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_fast_dense_and_exact_equal_the_definition(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 12))
    ints = st.lists(st.integers(-3, 3), min_size=n, max_size=n)
    keys, queries, score, values = (data.draw(ints) for _ in range(4))
    x = np.array([*keys, *queries, *score, *values], dtype=np.float64)
    ix = C.indices

    def at(off: int) -> C.SOp:  # position p reads token p + off
        return C.aggregate(C.select(ix, C.imap(lambda p: p + off, ix), "=="), C.tokens)

    key_s, query_s, score_s, value_s = at(0), at(n), at(2 * n), at(3 * n)
    # only positions < n are keys: the others get key values >= 100, never a query's
    key_only = C.apply("add", key_s, C.apply("scale", C.imap(lambda p: p // n, ix), params=(100,)))
    sel = C.select(key_only, query_s, "==")
    head = C.argmax_aggregate(sel, score_s, value_s)
    want = _by_definition(keys, queries, score, values)
    for backend in ("numpy", "exact"):
        for dense in (False, True):
            got = evaluate(head, x, backend, dense_only=dense)[:n]
            if backend == "numpy":  # a float mean of small integers: within 1 ulp of the exact mean
                assert np.allclose(got.astype(float), [float(w) for w in want], rtol=1e-15, atol=0)
            else:
                assert list(got) == want


def test_max_head_is_max_and_symbolic_max() -> None:
    g = C.imap(lambda p: p // 3, C.indices)
    head = C.maximum(C.select(g, g, "=="), C.tokens)
    x = np.array([1.0, 5, 5, -2, -3, -1, 7, 7, 7])
    assert list(evaluate(head, x)) == [5, 5, 5, -1, -1, -1, 7, 7, 7]
    a = sp.symbols("a:6")
    out = evaluate(head, np.array(a, dtype=object), "sympy")
    assert out[0] == sp.Max(*a[:3]) and out[5] == sp.Max(*a[3:])


def test_scored_and_plain_heads_on_one_selector_are_two_heads() -> None:
    g = C.imap(lambda p: p // 3, C.indices)
    sel = C.select(g, g, "==")
    c = cost([C.maximum(sel, C.tokens), C.aggregate(sel, C.tokens)])
    assert c.heads == [2]
