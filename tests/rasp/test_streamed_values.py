"""The engine's streamed values (Lazy): long values read at their own positions (or summed by
groups) are computed piece by piece where they are read.  With the thresholds lowered, random
programs run streamed must equal the plain run (every value whole) and the dense semantics."""

from collections.abc import Iterator
from contextlib import contextmanager
from unittest.mock import patch

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim import TransformerLayer, UniversalSimulator, evaluate
from attnsim.rasp import aggregate, apply, full, imap, indices, long_values, select, tokens
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.engine import Run, arithmetic

from .test_engine import programs


@contextmanager
def streamed(lazy_min: int = 2, piece: int = 3) -> Iterator[None]:
    """Stream every value whose head is longer than ``lazy_min``, in pieces of ``piece``."""
    with patch.object(long_values, "LAZY_MIN", lazy_min), patch.object(long_values, "PIECE", piece):
        yield


def plain(prog: C.SOp, toks: object) -> np.ndarray:
    """The run without compact or streamed values (a tracking run keeps every value whole)."""
    run = Run([prog], toks, arithmetic("numpy"), track=True)
    assert not run.compact
    run.execute()
    return run.value(prog)


class Spy(Run):
    """A run that records how many values were streamed at once."""

    most = 0

    def compute(self, node: C.SOp) -> None:
        super().compute(node)
        Spy.most = max(Spy.most, len(self.lazy))


KEYS = [
    lambda p: p // 2,
    lambda p: p % 3,
    lambda p: E.if_(p < 4, p, -1),
    lambda p: 7 - p,
]


@st.composite
def eq_programs(draw: st.DrawFn) -> C.SOp:
    """Chains of maps, gathers (keys = indices) and group sums (keys an index map) over index
    maps, the tokens and constants: the shapes U streams."""
    pool: list[C.SOp] = [tokens, apply("affine", tokens, params=(2, 1)), full(draw(st.integers(-2, 2)))]
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["gather", "sum", "map", "map"]))
        v = draw(st.sampled_from(pool))
        q = imap(draw(st.sampled_from(KEYS)), indices)
        if kind == "gather":
            sel = select(indices, q, "==")
            if draw(st.booleans()):
                sel = sel & select(full(draw(st.integers(0, 5))), indices, draw(st.sampled_from(["<", ">="])))
            pool.append(aggregate(sel, v))
        elif kind == "sum":
            k = imap(draw(st.sampled_from(KEYS)), indices)
            sel = select(k, q, "==")
            if draw(st.booleans()):
                sel = sel & select(indices, full(draw(st.integers(0, 5))), draw(st.sampled_from(["<", ">="])))
            pool.append(aggregate(sel, v))
        else:
            op = draw(st.sampled_from(["add", "mul", "sub"]))
            pool.append(apply(op, v, draw(st.sampled_from(pool))))
    return pool[-1]


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(eq_programs(), programs()),
    st.lists(st.integers(-3, 3), min_size=1, max_size=14),
    st.integers(1, 5),
    st.integers(1, 4),
)
def test_streamed_run_equals_the_plain_run_and_the_dense_semantics(
    prog: C.SOp, toks: list[int], lazy_min: int, piece: int
) -> None:
    with streamed(lazy_min, piece):
        a = evaluate(prog, toks)
    b = plain(prog, toks)
    d = evaluate(prog, toks, dense_only=True)
    # pieces sum groups in parts: the same terms, a different rounding order
    np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(a, d, rtol=1e-13, atol=1e-13)


def test_a_long_chain_is_streamed_and_read_once_whole() -> None:
    """A group sum of a product of two gathers over 40 positions: streamed in pieces of 3."""
    toks = np.random.default_rng(1).normal(size=40)
    x = aggregate(select(indices, imap(lambda p: (p * 7) % 40, indices), "=="), tokens)
    y = apply("mul", x, apply("add", x, tokens))
    s = aggregate(select(imap(lambda p: p % 5, indices), imap(lambda p: p // 8, indices), "=="), y)
    out = apply("add", s, y)
    Spy.most = 0
    with streamed(2, 3):
        run = Spy([out], toks, arithmetic("numpy"))
        run.execute()
        a = run.value(out)
    assert Spy.most >= 3
    np.testing.assert_allclose(a, plain(out, toks), rtol=1e-14, atol=1e-14)


def test_streamed_shallow_u_equals_the_plain_run() -> None:
    u = UniversalSimulator(3, 3, 2, 2, 3, variant="shallow")
    T = TransformerLayer.random(3, 2, 2, 3, seed=4, residual=True, norm="pre", activation="gelu")
    seq = u.encode(T, np.random.default_rng(3).normal(size=(3, 3)))
    Spy.most = 0
    with streamed(64, 1000):
        run = Spy([u.program], seq, arithmetic("numpy"))
        run.execute()
        a = run.value(u.program)
    assert Spy.most > 0
    assert np.max(np.abs(a - plain(u.program, seq))) <= 1e-12
