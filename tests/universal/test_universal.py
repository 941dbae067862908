"""The universal simulator U: Theorem 6, Corollary 6.1, Theorem 9 / Corollary 9.1 and the hierarchy N >= n."""

import itertools
from collections.abc import Callable

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim import TransformerLayer, UniversalSimulator, evaluate
from attnsim.proofs import z3sel
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.engine import Padded
from attnsim.universal import checks
from attnsim.universal.errors import SimulatorError

CAP = (5, 4, 2, 3, 6)
U = UniversalSimulator(*CAP)


def _attention_then_relu_ffn(T: TransformerLayer, X: np.ndarray) -> np.ndarray:
    """The layer written out here (no residual, no LayerNorm: TransformerLayer.random's defaults),
    independently of the reference: softmax(scale Q_h K_h^T) V_h per head, concatenated, W_o, b_o;
    then max(0, Y W1 + b1) W2 + b2."""
    heads = []
    for h in range(T.n_heads):
        q, k, v = (X @ w[h] + b[h] for w, b in ((T.w_q, T.b_q), (T.w_k, T.b_k), (T.w_v, T.b_v)))
        s = T.scale * q @ k.T
        a = np.exp(s - s.max(axis=1, keepdims=True))
        heads.append(a / a.sum(axis=1, keepdims=True) @ v)
    y = np.concatenate(heads, axis=1) @ T.w_o + T.b_o
    return np.maximum(y @ T.w1 + T.b1, 0.0) @ T.w2 + T.b2


def test_public_api() -> None:
    T = TransformerLayer.random(d_model=4, n_heads=2, d_head=2, d_ff=8, seed=0)
    X = np.random.default_rng(0).normal(size=(3, 4))
    u = UniversalSimulator(max_len=8, d_model=4, n_heads=2, d_head=2, d_ff=8)
    seq = u.encode(T, X)
    assert seq.ndim == 1 and len(seq) == u.positions() == u.layout.total
    out = np.asarray(__import__("attnsim").evaluate(u.program, seq))
    want = _attention_then_relu_ffn(T, X)
    # measured 3.6e-16, 3.1e-16, 3.1e-16
    assert np.max(np.abs(T(X) - want)) <= 1e-14
    assert np.max(np.abs(u.decode(out, 3) - want)) <= 1e-14
    assert np.max(np.abs(u.run(T, X) - want)) <= 1e-14
    tr = u.trace(T, X)
    assert "attn.exp" in tr and "out.R2" in tr and "U" in tr
    c = u.cost()
    assert c["layers"] == 7 and len(c["heads"]) == 7
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


def test_seven_layers_at_every_capacity_2_to_64() -> None:
    """U's depth is 7 attention layers whatever the capacity (max_len = d_model = d_ff = c)."""
    layers = {UniversalSimulator(c, c, min(c, 4), max(1, c // 4), c).cost()["layers"] for c in range(2, 65)}
    layers |= {UniversalSimulator(c, c, h, k, c).cost()["layers"] for c, h, k in ((2, 1, 1), (7, 3, 2), (64, 8, 8))}
    assert layers == {7}


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
    val = lambda e: int(e.evaluate(C.size_bindings(e)))
    ptr, b, S, x_end = int(U.header.positions()[2]), U.base_value, val(U.record_size), val(U.map.x.end_expr())
    # a pass writes X, advances the pointer, keeps the header and the masks...
    assert out[ptr] == seq[ptr] + 1
    keep = np.arange(x_end, b) != ptr
    assert np.array_equal(out[x_end:b][keep], seq[x_end:b][keep])
    # ... and moves the record queue by one record: the next pass reads layer 2 where it read layer 1
    assert np.array_equal(out[b : len(seq) - S], seq[b + S :]) and not np.any(out[len(seq) - S :])


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
    assert checks.whole_check((2, 2, 1, 2, None), (2, 2, 1, 2, None), {})(60).ok is True
    T = TransformerLayer.symbolic(2, 1, 1)
    X = sp.Matrix(2, 2, sp.symbols("x0:4", real=True))
    with pytest.raises(SimulatorError, match="sympy"):
        UniversalSimulator(2, 2, 1, 1).run(T, X)


def test_sympy_backend_tanh_gelu_equals_the_references_exact_form(monkeypatch: pytest.MonkeyPatch) -> None:
    """Corollary 6.1 with torch's tanh-GELU, exactly: U's SymPy run on symbolic X and rational
    weights equals the reference's exact form (0.044715 read as 44715/10^6, sqrt(2/pi) a symbol
    of SymPy's), by congruence; a U whose gelu_tanh branch computes erf-GELU does not."""
    check = checks.whole_check((1, 2, 1, 1, 1), (1, 2, 1, 1, 1), {"norm": "post", "activation": "gelu_tanh"}, False)
    assert check(120).ok is True
    real = C.apply
    monkeypatch.setattr(C, "apply", lambda name, *a, **kw: real("gelu" if name == "gelu_tanh" else name, *a, **kw))
    out = check(120)
    assert out.ok is False and out.detail.startswith("entry (0, 0): U - T(X) = "), out.detail


# The masks of U, written out here (not read from U): 1 exactly at the entries that belong to
# the true sizes of T.  The attention products are (h, i, j, e) with j the key token; the output
# is (i, e) with i the token and e the feature.
EXPECTED_MASKS: dict[str, tuple[str, Callable[[tuple[int, ...], dict[str, int]], bool]]] = {
    "mask.keys": ("attn.products", lambda c, s: c[2] < s["n"]),
    "mask.rows": ("out", lambda c, s: c[0] < s["n"]),
    "mask.cols": ("out", lambda c, s: c[1] < s["d"]),
}


@pytest.mark.parametrize("cap", [(4, 3, 2, 3, 2), (3, 2, 2, 2, 2)])
def test_masks_of_the_real_U_for_every_size(cap: tuple[int, int, int, int, int]) -> None:
    """Hierarchy N >= n (Theorem 6 within capacity): on the real U, every MLP mask is 1 exactly on
    the true n (keys, rows) and d (columns) of T, for every size combination within the capacity.
    (Outputs cannot show a column mask one entry too wide: the extra entry is zero padding.)"""
    u = UniversalSimulator(*cap)
    assert sorted(m.name for m in u.masks) == sorted(EXPECTED_MASKS)
    N, D = cap[:2]
    combos = 0
    for n, d in itertools.product(range(1, N + 1), range(1, D + 1)):
        T = TransformerLayer.random(d, 1, 1, None, seed=combos)
        vals = evaluate([m.sop for m in u.masks], u.encode(T, np.ones((n, d))))
        for m, v in zip(u.masks, vals, strict=True):
            grid, fn = EXPECTED_MASKS[m.name]
            assert m.grid.name == grid
            got = np.asarray(v)[m.grid.positions()]
            exp = np.zeros(got.shape)
            for c in np.ndindex(*got.shape):
                exp[c] = fn(c, {"n": n, "d": d})
            assert np.array_equal(got, exp), (m.name, n, d)
        combos += 1
    assert combos == N * D


def test_checks_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutants: a wrong mask intent and a wrong selector intent are reported as failures."""
    u_small = checks.u_at(2, 2, 1, 1, 1)
    m = next(x for x in u_small.masks if x.name == "mask.keys")
    bad = type(m)(m.name, m.sop, m.grid, lambda c, s: c["j"] <= s["n"])
    monkeypatch.setattr(u_small, "masks", [bad])
    assert checks.mask_check(((2, 2, 1, 1, 1),))(10).ok is False
    u3 = checks.u_at(*checks.SMALL)
    original = dict(u3.intents)
    for name in ("proj.x.gather", "queue.gather", "attn.max.rows", "scores.sum"):
        it = original[name]
        wrong = type(it)(it.name, it.selector, E.Not(it.intent), it.queries, it.statement)
        monkeypatch.setattr(u3, "intents", [(name, wrong)])
        assert checks.decoded_intent_check(name)(20).ok is False, name


def test_record_shift_one_off_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutant: a pass that moves the record queue by S + 1 instead of S fails its intent."""
    u3 = checks.u_at(*checks.SMALL)
    it = dict(u3.intents)["queue.gather"]
    k, q = z3sel.K, z3sel.Q
    off = type(it)(it.name, it.selector, k.eq(q + u3.record_size + 1), it.queries, it.statement)
    monkeypatch.setattr(u3, "intents", [("queue.gather", off)])
    assert checks.decoded_intent_check("queue.gather")(20).ok is False


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


def test_logits_spread_above_1418_are_exact_by_the_row_max() -> None:
    """Theorem 6 in float64: U's softmax shifts by the true row max (one value-scored head), so a
    row of logits [1000, 0, -1000] (or [1600, 0, -1600]) gives torch's finite answer."""
    T = TransformerLayer(w_q=[[[1.0], [0.0]]], w_k=[[[1.0], [0.0]]], w_v=[[[1.0], [0.0]]], w_o=[[1.0, 0.0]], scale=1.0)
    u = UniversalSimulator(3, 2, 1, 1)
    for top in (1000.0**0.5, 40.0):  # logits up to 1000 and 1600
        X = np.array([[top, 0.0], [0.0, 0.0], [-top, 0.0]])
        want = T(X)
        assert np.all(np.isfinite(want))
        assert np.max(np.abs(u.run(T, X) - want)) <= 1e-13  # measured 5.9e-16 and 4.4e-16
        # measured 3.9e-13 and 4.7e-13: the second pass's logits reach 1600, its inputs' rounding moves them
        assert np.max(np.abs(u.run_stack([T, T], X) - T(T(X)))) <= 5e-11


def test_overflow_is_a_one_line_error_never_a_nan() -> None:
    """A value that stops being finite (here the scores q k overflow float64) is refused with one
    line naming the node and primitive, never returned as NaN."""
    T = TransformerLayer(w_q=[[[1.0], [0.0]]], w_k=[[[1.0], [0.0]]], w_v=[[[1.0], [0.0]]], w_o=[[1.0, 0.0]], scale=1.0)
    X = np.array([[1e160, 0.0], [0.0, 0.0]])
    u = UniversalSimulator(3, 2, 1, 1)
    with pytest.raises(SimulatorError, match=r"^U: output position \d+ is nan .*\(overflow\)$"):
        u.run(T, X)


def test_cost_reports_each_mlp_depth_and_generalized_primitives() -> None:
    """Theorem 6's U, its cost per MLP: depth in primitives and the generalized primitives each
    MLP carries (the softmax's exp in one MLP, GELU and tanh-GELU in one, 1/x and sqrt where LayerNorm's
    statistics are); the existing keys stay."""
    c = U.cost()
    L = c["layers"]
    assert len(c["mlp_depth"]) == len(c["mlp_generalized"]) == L + 1 and len(c["heads"]) == L
    carrying = lambda name: [i for i, m in enumerate(c["mlp_generalized"]) if name in m]
    assert len(carrying("exp")) == 1 and len(carrying("gelu")) == 1 and carrying("gelu_tanh") == carrying("gelu")
    assert carrying("sqrt") == carrying("reciprocal") and len(carrying("sqrt")) == 3  # LN of X, R1 and R2
    assert carrying("exp")[0] < carrying("gelu")[0]
    assert sorted({p for m in c["mlp_generalized"] for p in m}) == c["generalized_primitives"]
    assert all(d >= 1 for d, m in zip(c["mlp_depth"], c["mlp_generalized"], strict=True) if m)
    assert {"layers", "heads", "positions", "channels", "capacity", "closed_form", "cost"} <= set(c)


def test_u_over_a_symbolic_capacity() -> None:
    """U's program over unbound capacity sizes N, D, H, K, F (what an all-sizes proof reads): the
    same 7 layers, its positions a closed form in the sizes; running it needs the sizes bound."""
    sizes = [C.Size(s) for s in "NDHKF"]
    u = UniversalSimulator(*sizes)
    c = u.cost()
    assert c["layers"] == 7 and c["positions"] is None
    syms = {str(s): s for s in c["closed_form"]["positions"].free_symbols}
    assert set(syms) == set("NDHKF")
    vals = dict(zip("NDHKF", CAP, strict=True))
    assert c["closed_form"]["positions"].subs({syms[k]: v for k, v in vals.items()}) == U.positions()
    with pytest.raises(SimulatorError, match="symbolic capacity"):
        u.encode(TransformerLayer.random(2, 1, 1), np.zeros((2, 2)))


def test_numeric_runs_hold_the_input_without_its_padding_and_keep_index_maps() -> None:
    """Theorem 6's U, numeric runs: the padded encoding is ``encode``'s sequence; a run on it
    (and the next runs, reading U's memo of position-only index maps) gives T(X) as before."""
    for variant in ("compact", "shallow"):
        U = UniversalSimulator(5, 4, 2, 2, 4, variant=variant)
        T = TransformerLayer.random(4, 2, 2, 4, seed=3, residual=True, norm="post")
        x = np.random.default_rng(3).normal(size=(5, 4))
        pad = U.encode_padded(T, x)
        assert isinstance(pad, Padded) and len(pad.head) == U.positions_of_input() < pad.length == U.positions()
        assert np.array_equal(pad.full(), U.encode(T, x))
        first = U.run(T, x)
        kept = U.memo.summary().kept
        again = U.run(T, x)
        assert kept > 0 and U.memo.summary().hits >= kept and U.last_stats.memo_positions > 0
        c = U.cost()
        assert c["input_positions"] == len(pad.head) and c["memo"].kept == kept
        assert 0 < c["memo"].bytes <= c["memo"].budget_bytes
        assert np.array_equal(first, again) and np.max(np.abs(first - T(x))) < 1e-12


def test_progress_counts_every_pass_of_a_batch_and_a_stack() -> None:
    """Theorem 6 by looping, watched: run_stack tells progress the program's nodes done over all
    passes (2 batch elements x 2 layers), never going back, ending at the total."""
    Ts = [TransformerLayer.random(4, 2, 3, 6, seed=s) for s in (1, 2)]
    X = np.random.default_rng(0).normal(size=(2, 5, 4))
    calls: list[tuple[int, int]] = []
    Y = U.run_stack(Ts, X, progress=lambda k, m: calls.append((k, m)))
    assert np.max(np.abs(Y - Ts[1](Ts[0](X)))) <= 1e-12
    total = calls[-1][1]
    assert calls[-1] == (total, total) and total % 4 == 0 and len(calls) == total
    assert [k for k, _ in calls] == list(range(1, total + 1)) and {m for _, m in calls} == {total}
