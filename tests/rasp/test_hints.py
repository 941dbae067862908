"""Programs carry the finite domains their builder knows (issue 15 item 3): Theorem 6's U compiles alone."""

from __future__ import annotations

import numpy as np
import pytest

import attnsim
from attnsim import TransformerLayer, UniversalSimulator
from attnsim.rasp import core as C
from attnsim.rasp import hints


def test_declare_and_read() -> None:
    node = C.imap(lambda t: t + 0, C.tokens).named("h")
    assert hints.declared(node, 5) is None
    hints.declare(node, lambda n: range(n - 3))
    assert hints.declared(node, 5) == (0, 1)
    with pytest.raises(ValueError, match="the value set is empty"):
        hints.declare(node, [])
    assert hints.declared_bounds(node) is None
    assert hints.declare_bounds(node, -2, 3) is node and hints.declared_bounds(node) == (-2, 3)
    with pytest.raises(ValueError, match=r"lo = 3 > hi = -2$"):
        hints.declare_bounds(node, 3, -2)


@pytest.mark.parametrize("layers", [1, 2])
def test_u_compiles_without_domains_and_equals_the_interpreter(layers: int) -> None:
    """attnsim.compile_program(U.program, max_len=len(seq)) needs no domains: the program declares its
    attention logits' bound (the row max is a value-scored head, exact under hard attention
    within it; issue 30 item 2); forward == interpreter."""
    U = UniversalSimulator(max_len=3, d_model=2, n_heads=1, d_head=2, d_ff=2)
    T = TransformerLayer.random(d_model=2, n_heads=1, d_head=2, d_ff=2, seed=0)
    X = np.random.default_rng(1).normal(size=(2, 2))
    seq = U.encode([T] * layers, X, pointer=layers - 1)
    ct = attnsim.compile_program(U.program, max_len=len(seq))
    got, want = ct.forward(seq), attnsim.evaluate(U.program, seq, "numpy")
    # measured 6.9e-18 and 1.4e-17 (one and two layers)
    assert got.shape == want.shape and np.max(np.abs(got - want)) <= 1e-15
    assert np.max(np.abs(U.decode(got, 2, 2) - T(X))) <= 2e-15
