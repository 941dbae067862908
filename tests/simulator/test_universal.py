"""The universal simulator U: Theorem 6, Corollary 6.1, Theorem 9 / Corollary 9.1 and the hierarchy N >= n."""

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim import TransformerLayer, UniversalSimulator
from attnsim.rasp import expr as E
from attnsim.simulator import obligations as O
from attnsim.simulator.reference import SimulatorError

CAP = (5, 4, 2, 3, 6)
U = UniversalSimulator(*CAP)


def test_public_api() -> None:
    T = TransformerLayer.random(d_model=4, n_heads=2, d_head=2, d_ff=8, seed=0)
    X = np.random.default_rng(0).normal(size=(3, 4))
    u = UniversalSimulator(max_len=8, d_model=4, n_heads=2, d_head=2, d_ff=8)
    seq = u.encode(T, X)
    assert seq.ndim == 1 and len(seq) == u.positions() == u.layout.total
    out = np.asarray(__import__("attnsim").evaluate(u.program, seq))
    assert np.max(np.abs(u.decode(out, 3) - T(X))) <= 1e-12
    assert np.max(np.abs(u.run(T, X) - T(X))) <= 1e-12
    tr = u.trace(T, X)
    assert "probs" in tr and "R1" in tr and "U" in tr
    c = u.cost()
    assert c["layers"] == 19 and len(c["heads"]) == 19
    syms = {str(s): s for s in c["closed_form"]["positions"].free_symbols}
    vals = {"N": 8, "D": 4, "H": 2, "K": 2, "F": 8}
    assert c["closed_form"]["positions"].subs({syms[k]: v for k, v in vals.items() if k in syms}) == c["positions"]


@settings(max_examples=12, deadline=None)
@given(
    n=st.integers(1, CAP[0]),
    d=st.integers(1, CAP[1]),
    h=st.integers(1, CAP[2]),
    k=st.integers(1, CAP[3]),
    f=st.one_of(st.none(), st.integers(1, CAP[4])),
    residual=st.booleans(),
    norm=st.sampled_from(["none", "post", "pre"]),
    act=st.sampled_from(["relu", "gelu"]),
    seed=st.integers(0, 1000),
)
def test_one_program_for_every_T_within_capacity(
    n: int, d: int, h: int, k: int, f: int | None, residual: bool, norm: str, act: str, seed: int
) -> None:
    """Universality and the hierarchy: the same program object simulates every smaller T, every option."""
    fp, prog = U.fingerprint, U.program
    T = TransformerLayer.random(d, h, k, f, seed=seed, residual=residual, norm=norm, activation=act)
    X = np.random.default_rng(seed).normal(size=(n, d))
    assert np.max(np.abs(U.run(T, X) - T(X))) <= 1e-10
    assert U.program is prog and U.fingerprint == fp


def test_fingerprint_depends_on_capacity_only() -> None:
    assert UniversalSimulator(*CAP).fingerprint == U.fingerprint
    assert UniversalSimulator(5, 4, 2, 3, 7).fingerprint != U.fingerprint


def test_layers_constant_in_capacity() -> None:
    layers = {UniversalSimulator(c, c, h, k, c).cost()["layers"] for c, h, k in ((2, 1, 1), (7, 3, 2), (64, 8, 8))}
    assert layers == {19}


def test_wrong_layer_is_detected() -> None:
    """The comparison can fail: U run on one T is far from another T's output."""
    T1 = TransformerLayer.random(4, 2, 3, 6, seed=1, residual=True)
    T2 = TransformerLayer.random(4, 2, 3, 6, seed=2, residual=True)
    X = np.random.default_rng(0).normal(size=(5, 4))
    assert np.max(np.abs(U.run(T1, X) - T2(X))) > 1e-3


def test_run_stack_is_looping() -> None:
    layers = [
        TransformerLayer.random(4, 2, 3, 6, seed=1, residual=True, norm="post"),
        TransformerLayer.random(4, 1, 1, None, seed=2, residual=True, norm="pre"),
        TransformerLayer.random(4, 2, 2, 3, seed=3, activation="gelu"),
    ]
    X = np.random.default_rng(0).normal(size=(4, 4))
    want = X
    for T in layers:
        want = T(want)
    assert np.max(np.abs(U.run_stack(layers, X) - want)) <= 1e-10
    seq = U.encode(layers, X)
    out = np.asarray(__import__("attnsim").evaluate(U.program, seq))
    ptr = U.header.start + 2
    assert out[ptr] == 1 and np.array_equal(out[U.base_value :], seq[U.base_value :])


@pytest.mark.parametrize(
    ("sizes", "msg"),
    [
        ((6, 4, 2, 3, 6), "n \\(tokens\\) = 6 exceeds the capacity max_len = 5"),
        ((5, 5, 1, 1, None), "d_model = 5 exceeds"),
        ((5, 4, 3, 1, None), "n_heads = 3 exceeds"),
        ((5, 4, 1, 4, None), "d_head = 4 exceeds"),
        ((5, 4, 1, 1, 7), "d_ff = 7 exceeds"),
    ],
)
def test_over_capacity(sizes: tuple, msg: str) -> None:
    n, d, h, k, f = sizes
    with pytest.raises(SimulatorError, match=msg):
        U.run(TransformerLayer.random(d, h, k, f), np.zeros((n, d)))


def test_bad_inputs() -> None:
    T = TransformerLayer.random(4, 1, 1)
    with pytest.raises(SimulatorError, match="NaN"):
        U.run(T, np.full((2, 4), np.nan))
    with pytest.raises(SimulatorError, match="backend"):
        U.run(T, np.zeros((2, 4)), backend="exact")
    with pytest.raises(SimulatorError, match="capacity max_len"):
        UniversalSimulator(0, 2, 1, 1)


def test_sympy_backend_attention() -> None:
    """Theorem 6 on symbols: U == T(X) with symbolic X and weights (congruence check)."""
    assert O.whole_check((2, 2, 1, 2, None), (2, 2, 1, 2, None), {})(60).ok is True
    T = TransformerLayer.symbolic(2, 1, 1)
    X = sp.Matrix(2, 2, sp.symbols("x0:4", real=True))
    with pytest.raises(SimulatorError, match="sympy"):
        UniversalSimulator(2, 2, 1, 1).run(T, X)


def test_checks_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutants: a wrong mask intent and a wrong selector intent are reported as failures."""
    m = U.masks[1]
    bad = type(m)(m.name, m.sop, m.block, lambda h, i, j, s: j <= s["n"])
    u_small = O._u(2, 2, 1, 1, 1)
    monkeypatch.setattr(u_small, "masks", [bad])
    assert O.mask_check(((2, 2, 1, 1, 1),))(10).ok is False
    u3 = O._u(*O.SMALL)
    name, it = u3.intents[0]
    wrong = type(it)(it.name, it.selector, E.Not(it.intent), it.queries, it.statement)
    monkeypatch.setattr(u3, "intents", [(name, wrong)])
    assert O.intent_check(name, None)(10).ok is False


def test_link_and_pointer_checks_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutants: a view read at the wrong row, a record gather read one slot off."""
    u3 = O._u(*O.SMALL)
    ln = u3.links[0]
    shifted = type(ln)(ln.name, ln.producer, ln.consumer, lambda h, r, c: (h, r + 1, c), ln.statement)
    monkeypatch.setattr(u3, "links", [shifted])
    assert O.link_check(ln.name, None)(10).ok is False
    pg = next(p for p in u3.ptr_gathers if p.name == "eps")
    off = type(pg)(pg.name, pg.selector, pg.source, pg.queries, pg.rel + 1, pg.statement)
    monkeypatch.setattr(u3, "ptr_gathers", [off])
    assert O.ptr_check("eps", None)(10).ok is False
