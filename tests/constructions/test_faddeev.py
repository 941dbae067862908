"""General n x n det and inverse (beyond the paper's 3x3 lemma) by Faddeev-LeVerrier.

Exact over the rationals for every n, composed only of lemma forms (matmul, transpose, trace,
Frobenius sum), depth 2n - 2 (n >= 2); float64 accuracy as measured and stated here.
"""

import functools
import re
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sympy.polys.matrices import DomainMatrix

from attnsim import lemmas
from attnsim.constructions.det_checks import AUTHORS_EXAMPLE, accuracy_check, rational_identity_check
from attnsim.constructions.det_n.program import METHODS, depth, faddeev_ref, powers_depth, powers_ref
from attnsim.lemmas import ConstructionError, SingularMatrixError
from attnsim.proofs.obligation import Obligation
from attnsim.rasp import core as C
from attnsim.rasp.engine import evaluate
from attnsim.rasp.layout import Block, MatRef

rationals = st.fractions(min_value=-9, max_value=9, max_denominator=5)


@st.composite
def square(draw: st.DrawFn, max_n: int = 5) -> np.ndarray:
    n = draw(st.integers(1, max_n))
    xs = draw(st.lists(rationals, min_size=n * n, max_size=n * n))
    return np.array(xs, dtype=object).reshape(n, n)


@settings(max_examples=20, deadline=None)
@given(square(), st.sampled_from(METHODS))
def test_det_and_inverse_exact(a: np.ndarray, method: str) -> None:
    """det(n).run(A, 'exact') == SymPy's det; inverse == SymPy's inverse, or a singular error."""
    n = a.shape[0]
    m = sp.Matrix(a.tolist())
    d = lemmas.det(n, method=method).run(a, backend="exact")
    assert d.shape == () and isinstance(d[()], Fraction) and d == m.det()
    if m.det() == 0:
        with pytest.raises(SingularMatrixError, match="singular matrix"):
            lemmas.inverse(n, method=method).run(a, backend="exact")
    else:
        inv = lemmas.inverse(n, method=method).run(a, backend="exact")
        assert inv.shape == (n, n) and all(g == w for g, w in zip(inv.flat, m.inv(), strict=True))


@pytest.mark.parametrize("method", METHODS)
def test_authors_example(method: str) -> None:
    a = np.array(AUTHORS_EXAMPLE)
    assert lemmas.det(3, method=method).run(a, backend="exact") == 45
    inv = lemmas.inverse(3, method=method).run(a, backend="exact")
    assert all(g == w for g, w in zip(inv.flat, sp.Matrix(AUTHORS_EXAMPLE).inv(), strict=True))


def test_symbolic_small() -> None:
    """On symbols (n <= 3 here; n = 4 is an obligation): equal as rational functions."""
    for n in (1, 2, 3):
        for make in (lemmas.det, lemmas.inverse):
            for method in METHODS:
                assert rational_identity_check(functools.partial(make, n, method=method))(10.0).ok is True


def test_depth_is_linear_in_n() -> None:
    """1 layer for n = 1, 2n - 2 after; at most 3 heads per layer; n^3 positions (n >= 3)."""
    for n in range(1, 8):
        for make in (lemmas.det, lemmas.inverse):
            cost = make(n).cost()
            assert cost.layers == depth(n)
            assert max(cost.heads) <= 3
            assert cost.positions == max(n**3 if n >= 3 else n * n, 1)
    assert lemmas.inverse(3).cost().layers < 5 and lemmas.det(3).cost().layers <= 4  # the paper's 3x3 counts


def test_powers_depth_is_logarithmic() -> None:
    """The power-sum variant: 2 ceil(log2(n-1)) + 1 layers (n >= 3), at most 4 heads per layer."""
    for n in (1, 2, 3, 4, 5, 8, 9, 10):
        cost = lemmas.inverse(n, method="powers").cost()
        assert cost.layers == powers_depth(n) and max(cost.heads) <= 4
    assert [powers_depth(n) for n in (3, 4, 5, 9, 16, 17, 33)] == [3, 5, 5, 7, 9, 9, 11]
    assert powers_depth(16) < depth(16) == 30
    with pytest.raises(ConstructionError, match="unknown method"):
        lemmas.det(3, method="gauss")


# float64 accuracy of inverse(n), written here (not read from the module): max |float64 - exact|
# / max |exact| over 2 standard normal matrices (seed 0), against the exact inverse of the same
# (binary-rational) entries.  Measured: faddeev 4.7e-16 (n = 3), 2.2e-13 (n = 8); powers 1.5e-15,
# 4.3e-13.  Bounds ~30-50x those.
ACCURACY = {("faddeev", 3): 2e-14, ("faddeev", 8): 1e-11, ("powers", 3): 5e-14, ("powers", 8): 2e-11}


def _exact_inverse(a: np.ndarray) -> np.ndarray:
    n = a.shape[0]
    rows = [[sp.QQ(Fraction(x).numerator, Fraction(x).denominator) for x in row] for row in a.tolist()]
    inv = DomainMatrix(rows, (n, n), sp.QQ).inv().to_Matrix()
    return np.array([[float(inv[i, j]) for j in range(n)] for i in range(n)])


@pytest.mark.parametrize(("method", "n"), sorted(ACCURACY))
def test_numeric_accuracy_as_stated(method: str, n: int) -> None:
    """float64 det/inverse (beyond the paper's 3x3): accuracy against the exact rational inverse."""
    rng = np.random.default_rng(0)
    con = lemmas.inverse(n, method=method)
    worst = 0.0
    for _ in range(2):
        a = rng.normal(size=(n, n))
        truth = _exact_inverse(a)
        worst = max(worst, float(np.max(np.abs(con.run(a) - truth)) / np.max(np.abs(truth))))
    assert worst <= ACCURACY[(method, n)]


def test_accuracy_obligation_can_fail() -> None:
    """The registered float64 accuracy check fails below the achievable error."""
    out = accuracy_check(lambda: lemmas.inverse(8), 1e-17, trials=2)(10.0)
    assert out.ok is False and out.detail.startswith("max relative error vs exact")


def test_singular_and_bad_input() -> None:
    sing = np.array([[1, 2, 3, 4], [2, 4, 6, 8], [0, 1, 0, 1], [5, 0, 2, 1]])
    assert lemmas.det(4).run(sing, backend="exact") == 0
    for backend in ("exact", "numpy", "sympy"):
        for method in METHODS:
            with pytest.raises(SingularMatrixError, match="singular matrix"):
                lemmas.inverse(4, method=method).run(sing, backend=backend)
    with pytest.raises(SingularMatrixError, match="singular matrix: det = 0"):
        lemmas.inverse(1).run(np.zeros((1, 1)), backend="exact")
    with pytest.raises(ConstructionError, match=r"shape \(4, 4\)"):
        lemmas.det(4).run(np.zeros((4, 3)))
    with pytest.raises(ConstructionError, match=r"shape \(3, 3\)"):
        lemmas.inverse(3).run(np.zeros((4, 4)))
    with pytest.raises(ConstructionError, match="NaN"):
        lemmas.det(2).run(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(ConstructionError, match="positive int"):
        lemmas.det(0)
    with pytest.raises(ConstructionError, match="square"):
        faddeev_ref(MatRef(C.tokens, Block.of("A", 0, 2, 3)))


def test_every_selector_has_a_proven_intent() -> None:
    """Each iteration reuses the same selector patterns: the intents cover every selector."""
    for n, method in ((4, "faddeev"), (7, "faddeev"), (4, "powers"), (9, "powers")):
        con = lemmas.inverse(n, method=method)
        used = {x.selector.fingerprint for x in C.topological([con.program]) if isinstance(x, C.Aggregate)}
        assert used == {i.selector.fingerprint for i in con.intents}
    assert {i.name for i in lemmas.det(4).intents} == {i.name for i in lemmas.det(7).intents}


def test_composes_at_an_offset() -> None:
    """The composable forms work with A anywhere in the sequence."""
    a_blk = Block.of("A", 3, 3, 3)
    for build in (faddeev_ref, powers_ref):
        det, inv, _, _ = build(MatRef(C.tokens, a_blk), name="f")
        seq = np.zeros(30, dtype=object)
        seq[3:12] = np.array(AUTHORS_EXAMPLE, dtype=object).reshape(-1)
        out_det, out_inv = evaluate([det.sop, inv.sop], seq, "exact")
        assert out_det[0] == 45
        want = sp.Matrix(AUTHORS_EXAMPLE).inv()
        assert all(g == w for g, w in zip(out_inv[inv.block.start : inv.block.end], want, strict=True))


def _hilbert(n: int) -> np.ndarray:
    return 1 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1.0)


@pytest.mark.parametrize("what", ["det", "inverse"])
def test_float64_never_silently_wrong(what: str) -> None:
    """Issue 15: Faddeev-LeVerrier in float64 on the 6 x 6 Hilbert matrix (cond 1.5e7) is off by O(1)
    (max |A X - I| = 27, det 130 % off): run refuses it with the measured residual, never returns it."""
    from attnsim.constructions.det_n.float_accuracy import FLOAT_TOL, InaccurateResultError

    con = getattr(lemmas, what)(6)
    label = "max |A X - I|" if what == "inverse" else r"\|det - det_LU\| / \|det_LU\|"
    with pytest.raises(
        InaccurateResultError, match=rf"{label} = \d\.\d\de\+\d\d > 1e-06 \(cond\(A\) = 1.5e\+07"
    ) as exc:
        con.run(_hilbert(6))
    assert exc.value.residual > 1 and exc.value.result.shape == ((6, 6) if what == "inverse" else ())
    assert con.float_tolerance == FLOAT_TOL == 1e-6
    con.on_inaccurate = "warn"
    with pytest.warns(UserWarning, match="misses its stated accuracy"):
        con.run(_hilbert(6))
    exact = getattr(lemmas, what)(6).run(np.array(_hilbert(6), dtype=object), backend="exact")  # no error at all
    assert exact.shape == ((6, 6) if what == "inverse" else ())


def test_float64_within_stated_accuracy_passes() -> None:
    """On well-conditioned inputs the stated accuracy holds, and it is checked (a tighter bound refuses)."""
    from attnsim.constructions.det_n.float_accuracy import InaccurateResultError, float_residual

    a = np.random.default_rng(0).normal(size=(8, 8))
    inv = lemmas.inverse(8)
    x = inv.run(a)
    assert float_residual("inverse", a, x)[0] <= 3e-12  # measured 3.1e-14
    inv.float_tolerance = 1e-30
    with pytest.raises(InaccurateResultError, match=r"> 1e-30"):
        inv.run(a)


def _default_obligations(prefixes: tuple[str, ...]) -> list[Obligation]:
    import attnsim.catalog
    from attnsim.proofs import registry

    attnsim.catalog.load()
    return [o for o in registry.all_obligations(include_deep=False) if o.id.startswith(prefixes)]


def test_default_run_checks_every_n_up_to_8_exactly() -> None:
    """det(n), inverse(n) (beyond the paper's 3 x 3 lemma): the default `attnsim verify` checks each
    construction and method with ==, as rational functions (SymPy) or on rationals, at every n from
    1 to 8, odd n >= 5 included (the signs of Faddeev-LeVerrier depend on the parity of n)."""
    sizes: dict[tuple[str, str], set[int]] = {}
    for o in _default_obligations(("det/", "inverse/")):
        cid, method, tag = o.id.split("/")
        m = re.fullmatch(r"(powers-)?n(\d+)", tag)
        if method in ("exact", "sympy") and m:
            sizes.setdefault((cid, "powers" if m.group(1) else "faddeev"), set()).add(int(m.group(2)))
    assert set(sizes) == {(c, meth) for c in ("det", "inverse") for meth in METHODS}
    for key, ns in sizes.items():
        assert set(range(1, 9)) <= ns, (key, sorted(ns))


def test_default_run_catches_a_sign_flipped_at_odd_n(monkeypatch: pytest.MonkeyPatch) -> None:
    """A det whose sign is flipped at n = 5 and n = 7 only (right at every n the default run
    checked before: 1-4 by SymPy, 6 and 8 exactly, 3, 8 and 16 in float64) fails the default
    run's det obligations at exactly those sizes."""
    from attnsim.constructions.det_n import program as faddeev

    real = faddeev.faddeev_ref

    def flipped(a: MatRef, name: str = "det", inverse: bool = True) -> tuple:  # type: ignore[type-arg]
        det, inv, intents, aux = real(a, name=name, inverse=inverse)
        if int(a.block.shape[0]) in (5, 7):
            det = MatRef(C.apply("neg", det.sop).named(f"{name}.det"), det.block)
        return det, inv, intents, aux

    monkeypatch.setattr(faddeev, "faddeev_ref", flipped)
    failed = [
        o.id
        for o in _default_obligations(("det/",))
        if o.method in ("exact", "sympy", "numeric") and o.check(60.0).ok is not True
    ]
    assert failed == ["det/exact/n5", "det/exact/n7"]
