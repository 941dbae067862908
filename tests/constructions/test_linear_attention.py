"""Applications (attention variants): linear attention (Katharopoulos et al. 2020, phi = elu + 1) and
Linformer (Wang et al. 2020), composed from our transpose / matmul / softmax lemmas."""

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim import applications
from attnsim.constructions.checks import symbolic_operands, sympy_check
from attnsim.constructions.construction import ConstructionError
from attnsim.constructions.efficient.program import atomized
from attnsim.rasp import primitives as P


def _elu1(x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x + 1, np.exp(x))


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 6), st.integers(1, 4), st.integers(1, 4), st.integers(0, 10**6))
def test_linear_attention_numeric(n: int, d: int, dv: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    q, k, v = rng.normal(size=(n, d)), rng.normal(size=(n, d)), rng.normal(size=(n, dv))
    fq, fk = _elu1(q), _elu1(k)
    want = (fq @ (fk.T @ v)) / (fq @ fk.sum(axis=0))[:, None]  # the linear (RNN) form
    got = applications.linear_attention(n, d, dv).run(q, k, v)
    np.testing.assert_allclose(got, want, rtol=0, atol=5e-14)  # measured 6.7e-16 over 400 draws


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 6), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(0, 10**6))
def test_linformer_numeric(n: int, d: int, dv: int, kk: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    q, k, v = rng.normal(size=(n, d)), rng.normal(size=(n, d)), rng.normal(size=(n, dv))
    e, f = rng.normal(size=(kk, n)), rng.normal(size=(kk, n))
    s = q @ (e @ k).T / np.sqrt(d)
    w = np.exp(s - s.max(axis=1, keepdims=True))
    want = (w / w.sum(axis=1, keepdims=True)) @ (f @ v)
    got = applications.linformer(n, d, dv, kk).run(q, k, v, e, f)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13)  # measured 2.2e-15 over 400 draws


def test_sympy_proofs_and_that_they_can_fail() -> None:
    assert sympy_check(lambda: applications.linear_attention(2, 2, 1), atomized)(30.0).ok is True
    assert sympy_check(lambda: applications.linformer(2, 1, 1, 2), atomized)(30.0).ok is True
    con = applications.linear_attention(2, 1, 1)
    ops = symbolic_operands(con)
    got = con.run(*ops, backend="sympy")
    unnormalized = con.reference(*ops, backend="sympy") * 2  # a wrong formula must not cancel
    assert atomized(got[0, 0] - unnormalized[0, 0]) != 0


def test_costs_and_backends() -> None:
    la = applications.linear_attention(4, 3, 2)
    lf = applications.linformer(4, 3, 2, 2)
    # linear: phi(K)^T (1) + S = phi(K)^T V (2) + phi(Q) S (2); z, phi(Q) z and the gather run beside
    assert la.cost().layers == 5 and lf.cost().layers == 8
    rng = np.random.default_rng(0)
    with pytest.raises(ConstructionError, match="exact"):
        la.run(rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2)), backend="exact")
    bad = rng.normal(size=(4, 3))
    bad[0, 0] = np.nan
    with pytest.raises(ConstructionError, match="NaN"):
        la.run(bad, bad, rng.normal(size=(4, 2)))
    with pytest.raises(ConstructionError, match="shape"):
        la.run(rng.normal(size=(3, 3)), bad, rng.normal(size=(4, 2)))


def test_elu1_primitive() -> None:
    p = P.get("elu1")
    assert p.realization == "generalized" and p.exact is None
    xs = np.array([-2.0, -0.5, 0.0, 0.5, 3.0])
    np.testing.assert_allclose(p.numpy(xs), _elu1(xs), rtol=0, atol=1e-15)  # measured 0.0
    sym = [float(p.sympy(sp.Rational(int(x * 2), 2))) for x in xs]
    np.testing.assert_allclose(sym, _elu1(xs), rtol=0, atol=1e-15)  # measured 0.0
    assert isinstance(p.sympy(sp.Symbol("x", real=True)), sp.Piecewise)
