"""The universal simulator U: Theorem 6, Corollary 6.1, Theorem 9 / Corollary 9.1 and the hierarchy N >= n."""

import itertools
from collections.abc import Callable

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim import TransformerLayer, UniversalSimulator, evaluate
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
    # measured 2.2e-16 (both)
    assert np.max(np.abs(u.decode(out, 3) - T(X))) <= 1e-14
    assert np.max(np.abs(u.run(T, X) - T(X))) <= 1e-14
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
    want = T(X)
    assert np.max(np.abs(U.run(T, X) - want)) <= _tolerance(T, X, want)
    assert U.program is prog and U.fingerprint == fp


def _tolerance(T: TransformerLayer, X: np.ndarray, want: np.ndarray) -> float:
    """U and T round differently, and LayerNorm multiplies those differences by 1/sigma, sigma =
    sqrt(var + eps) of its input row: tiny when a row's features nearly coincide (d = 2 often).
    Measured over 6,000 random draws of this test's strategy: error / max(1, |T(X)|) <= 1.6e-15
    without LayerNorm; error * sigma_min / max(1, |T(X)|) <= 1.3e-14 with it (raw errors up to
    1.1e-11 at d = 2).  The bounds are ~60x and ~75x those."""
    scale = max(1.0, float(np.max(np.abs(want))))
    if T.norm == "none":
        return 1e-13 * scale

    def sd(v: np.ndarray) -> float:
        return float(np.sqrt(v.var(axis=1) + T.eps).min())

    def ln(v: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (v - v.mean(axis=1, keepdims=True)) / np.sqrt(v.var(axis=1, keepdims=True) + T.eps) * w + b

    res = 1.0 if T.residual else 0.0
    if T.norm == "pre":  # LayerNorm inputs: X, then X + attention
        sigmas = [sd(X)]
        y = T.attention(ln(X, T.ln1_weight, T.ln1_bias)) + res * X
        if T.d_ff is not None:
            sigmas.append(sd(y))
    else:  # post: X + attention, then y1 + FFN
        r1 = T.attention(X) + res * X
        sigmas = [sd(r1)]
        if T.d_ff is not None:
            y1 = ln(r1, T.ln1_weight, T.ln1_bias)
            sigmas.append(sd(T.ffn(y1) + res * y1))
    return 1e-12 * scale / min(sigmas)


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
    assert np.max(np.abs(U.run_stack(layers, X) - want)) <= 1e-14  # measured 3.9e-16
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


# The masks of U, written out here (not read from U): at entry (h, i, j) of the mask's block,
# 1 exactly when the entry belongs to the true sizes n, d, heads, d_head, d_ff of T, else 0.
# X^T is d_model x max_len (feature i, token j); QKV^T rows are 3 H K (i // K mod H is the
# head, i mod K the head coordinate); the scores are H x N x N (column j is a key token);
# the FFN hidden block is d_ff x max_len.
def _expected_masks(cap: tuple[int, int, int, int, int]) -> dict[str, Callable[[int, int, int, dict[str, int]], bool]]:
    _, _, H, K, _ = cap
    return {
        "mask_d": lambda h, i, j, s: i < s["d"],
        "mask_n": lambda h, i, j, s: j < s["n"],
        "mask_heads": lambda h, i, j, s: (i // K) % H < s["heads"],
        "mask_dhead": lambda h, i, j, s: i % K < s["d_head"],
        "probs.mask": lambda h, i, j, s: j < s["n"],
        "mask_dff": lambda h, i, j, s: i < s["d_ff"],
    }


@pytest.mark.parametrize("cap", [(4, 3, 2, 3, 2), (3, 2, 2, 2, 2)])
def test_masks_of_the_real_U_for_every_size(cap: tuple[int, int, int, int, int]) -> None:
    """Hierarchy N >= n (Theorem 6 within capacity): on the real U, every MLP mask is 1 exactly on
    the true n, d, heads, d_head, d_ff of T, for every size combination within the capacity.
    (Outputs cannot show a mask one entry too wide: the extra entry multiplies zero padding.)"""
    u = UniversalSimulator(*cap)
    want = _expected_masks(cap)
    assert sorted(m.name for m in u.masks) == sorted(want)
    N, D, H, K, F = cap
    combos = 0
    for n, d, h, k, f in itertools.product(
        range(1, N + 1), range(1, D + 1), range(1, H + 1), range(1, K + 1), range(0, F + 1)
    ):
        T = TransformerLayer.random(d, h, k, f or None, seed=combos)
        vals = evaluate([m.sop for m in u.masks], u.encode(T, np.ones((n, d))))
        sizes = {"n": n, "d": d, "heads": h, "d_head": k, "d_ff": f}
        for m, v in zip(u.masks, vals, strict=True):
            got = np.asarray(v)[m.block.start : m.block.end].reshape(m.block.shape)
            got = got.reshape((-1, *got.shape[-2:]))
            fn = want[m.name]
            exp = np.zeros(got.shape)
            for hh, i, j in np.ndindex(*got.shape):
                exp[hh, i, j] = fn(hh, i, j, sizes)
            assert np.array_equal(got, exp), (m.name, sizes)
        combos += 1
    assert combos == N * D * H * K * (F + 1)


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


def test_a_batch_runs_each_element_and_stacks() -> None:
    """Theorem 6 / Corollary 6.1 on a batch (B, n, d), batch first: U.run, U.run_stack and T
    itself run each element on its own and stack the results."""
    T1 = TransformerLayer.random(4, 2, 3, 6, seed=1, residual=True, norm="post")
    T2 = TransformerLayer.random(4, 1, 2, None, seed=2, residual=True, norm="pre", activation="gelu")
    X = np.random.default_rng(3).normal(size=(3, 5, 4))
    want = np.stack([T1(x) for x in X])
    assert np.array_equal(T1(X), want)
    got = U.run(T1, X)
    assert got.shape == (3, 5, 4)
    assert np.max(np.abs(got - want)) <= 1e-13  # measured 5.6e-16
    assert np.array_equal(got[1], U.run(T1, X[1]))
    stack = U.run_stack([T1, T2], X)
    assert stack.shape == (3, 5, 4)
    assert np.max(np.abs(stack - T2(T1(X)))) <= 1e-13  # measured 6.7e-16


@pytest.mark.parametrize(
    ("shape", "msg"),
    [
        ((4,), r"X must have shape \(n, d_model\) or \(B, n, d_model\) \(batch first\), got \(4,\)"),
        ((1, 2, 3, 4), r"X must have shape \(n, d_model\) or \(B, n, d_model\) \(batch first\), got \(1, 2, 3, 4\)"),
        ((0, 2, 4), r"X: a batch \(B, n, d_model\) needs B >= 1, got shape \(0, 2, 4\)"),
        ((2, 2, 3), r"layer 0 has d_model = 4 but X has 3 features"),
        ((2, 6, 4), r"n \(tokens\) = 6 exceeds the capacity max_len = 5"),
    ],
)
def test_batch_shapes_are_checked(shape: tuple[int, ...], msg: str) -> None:
    T = TransformerLayer.random(4, 1, 1)
    for call in (lambda x: U.run(T, x), lambda x: U.run_stack([T], x)):
        with pytest.raises(SimulatorError, match=f"^{msg}$"):
            call(np.zeros(shape))


def test_exp_overflow_is_a_one_line_error_never_a_nan() -> None:
    """Theorem 6 in float64: attention logits past ~709 overflow U's exp (its softmax shifts by
    nothing yet); U.run and U.run_stack refuse with one line naming the node and primitive,
    where they returned NaN before."""
    T = TransformerLayer(w_q=[[[1.0], [0.0]]], w_k=[[[1.0], [0.0]]], w_v=[[[1.0], [0.0]]], w_o=[[1.0, 0.0]], scale=1.0)
    X = np.array([[40.0, 0.0], [0.0, 0.0], [-40.0, 0.0]])  # logits up to 1600
    assert np.all(np.isfinite(T(X)))  # the reference shifts by the row max
    u = UniversalSimulator(3, 2, 1, 1)
    want = r"^U: output position \d+ is nan .*node 'probs\.exp' \(primitive exp\), which gave inf at position \d+ "
    want += r"\(overflow\)$"
    for call in (lambda: u.run(T, X), lambda: u.run_stack([T, T], X), lambda: u.run(T, np.stack([X / 40, X]))):
        with pytest.raises(SimulatorError, match=want):
            call()
    small = X / 2  # logits up to 400: fine
    assert np.max(np.abs(u.run(T, small) - T(small))) <= 1e-12  # measured 2.2e-16


def test_cost_reports_each_mlp_depth_and_generalized_primitives() -> None:
    """Theorem 6's U, its cost per MLP: depth in primitives and the generalized primitives each
    MLP carries (the softmax's exp in one MLP, GELU in one, 1/x and sqrt where LayerNorm's
    statistics are); the existing keys stay."""
    c = U.cost()
    L = c["layers"]
    assert len(c["mlp_depth"]) == len(c["mlp_generalized"]) == L + 1 and len(c["heads"]) == L
    carrying = lambda name: [i for i, m in enumerate(c["mlp_generalized"]) if name in m]
    assert len(carrying("exp")) == 1 and len(carrying("gelu")) == 1
    assert carrying("sqrt") == carrying("reciprocal") and len(carrying("sqrt")) == 3  # LN of X, R1 and R2
    assert carrying("exp")[0] < carrying("gelu")[0]
    assert sorted({p for m in c["mlp_generalized"] for p in m}) == c["generalized_primitives"]
    assert all(d >= 1 for d, m in zip(c["mlp_depth"], c["mlp_generalized"], strict=True) if m)
    assert {"layers", "heads", "positions", "channels", "capacity", "closed_form", "cost"} <= set(c)
