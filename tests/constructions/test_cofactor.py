"""Lemma (inverse, determinant; the paper's fixed-order 3x3 cofactor construction).

Cofactors by four cyclic gathers, det by first-row expansion (count x masked mean), inverse as
adj(A)/det in 2 layers; exact on rationals, symbolic on symbols, singular input rejected.
"""

from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim import lemmas
from attnsim.constructions.construction import Construction
from attnsim.constructions.det3.program import cofactor_reference
from attnsim.constructions.det_checks import (
    AUTHORS_EXAMPLE,
    accuracy_check,
    rational_identity_check,
    singular_check,
)
from attnsim.lemmas import ConstructionError, SingularMatrixError
from attnsim.rasp import core as C
from attnsim.rasp.engine import evaluate
from attnsim.rasp.layout import Block, Layout, MatRef

rationals = st.fractions(min_value=-20, max_value=20, max_denominator=9)
matrices3 = st.lists(rationals, min_size=9, max_size=9).map(lambda xs: np.array(xs, dtype=object).reshape(3, 3))


def test_authors_example_inverse_exact() -> None:
    """The authors' 3x3 example (det 45): the exact inverse equals SymPy's with ==."""
    a = np.array(AUTHORS_EXAMPLE)
    inv = lemmas.inverse3().run(a, backend="exact")
    assert inv.dtype == object and isinstance(inv[0, 0], Fraction)
    want = sp.Matrix(AUTHORS_EXAMPLE).inv()
    assert all(Fraction(int(w.p), int(w.q)) == g for g, w in zip(inv.flat, want, strict=True))
    assert lemmas.det3().run(a, backend="exact") == 45
    truth = np.array([[float(x) for x in row] for row in want.tolist()])
    assert np.max(np.abs(lemmas.inverse3().run(a) - truth)) <= 1e-15 * np.max(np.abs(truth))  # measured 0.0


@settings(max_examples=25, deadline=None)
@given(matrices3)
def test_exact_on_random_rationals(a: np.ndarray) -> None:
    m = sp.Matrix(a.tolist())
    d = lemmas.det3().run(a, backend="exact")
    assert d.shape == () and d == m.det()
    cof = lemmas.cofactor3().run(a, backend="exact")
    assert all(g == w for g, w in zip(cof.flat, m.adjugate().T, strict=True))
    if m.det() == 0:
        with pytest.raises(SingularMatrixError, match="singular matrix"):
            lemmas.inverse3().run(a, backend="exact")
    else:
        inv = lemmas.inverse3().run(a, backend="exact")
        assert all(g == w for g, w in zip(inv.flat, m.inv(), strict=True))


def test_symbolic_and_public_shapes() -> None:
    s = sp.Matrix(3, 3, sp.symbols("a0:9"))
    d = lemmas.det3().run(s, backend="sympy")
    assert d.shape == () and sp.expand(d[()] - s.det()) == 0
    inv = lemmas.inverse3().run(s, backend="sympy")
    assert inv.shape == (3, 3) and all(sp.cancel(g - w) == 0 for g, w in zip(inv.flat, s.inv(), strict=True))
    assert lemmas.det3().run(np.eye(3)).shape == ()
    assert lemmas.det3().run(np.eye(3)).dtype == np.float64


def test_costs_beat_the_paper() -> None:
    """det 2 layers (paper 4), inverse 2 layers (paper 5); cofactor one layer of 4 gathers."""
    for make, layers, heads in ((lemmas.cofactor3, 1, [4]), (lemmas.det3, 2, [4, 1]), (lemmas.inverse3, 2, [5, 1])):
        con = make()
        cost = con.cost()
        assert (cost.layers, cost.heads) == (layers, heads)
        assert con.paper_cost is not None and cost.layers < con.paper_cost["layers"]
        assert sum(cost.heads) <= sum(con.paper_cost["heads"])


def test_singular_and_bad_input() -> None:
    sing = np.array([[1, 2, 3], [2, 4, 6], [1, 1, 1]])
    assert lemmas.det3().run(sing, backend="exact") == 0
    for backend in ("exact", "numpy", "sympy"):
        with pytest.raises(SingularMatrixError, match="singular matrix"):
            lemmas.inverse3().run(sing, backend=backend)
    with pytest.raises(ConstructionError, match=r"shape \(3, 3\)"):
        lemmas.det3().run(np.zeros((3, 4)))
    with pytest.raises(ConstructionError, match="NaN"):
        lemmas.inverse3().run(np.full((3, 3), np.nan))
    with pytest.raises(ConstructionError, match="3x3"):
        lemmas.cofactor3_ref(MatRef(C.tokens, Block.of("A", 0, 2, 2)))


def test_composes_at_an_offset() -> None:
    """The composable forms work wherever A sits in the sequence (no glue)."""
    a_blk = Block.of("A", 5, 3, 3)
    inv, _ = lemmas.inverse3_ref(MatRef(C.tokens, a_blk), name="inv")
    det, _ = lemmas.det3_ref(MatRef(C.tokens, a_blk), name="det")
    seq = np.zeros(14, dtype=object)
    seq[5:] = np.array(AUTHORS_EXAMPLE, dtype=object).reshape(-1)
    out_inv, out_det = evaluate([inv.sop, det.sop], seq, "exact")
    assert out_det[0] == 45
    assert all(
        g == w for g, w in zip(out_inv[inv.block.start : inv.block.end], sp.Matrix(AUTHORS_EXAMPLE).inv(), strict=True)
    )


def test_every_selector_has_an_intent() -> None:
    for make in (lemmas.cofactor3, lemmas.det3, lemmas.inverse3):
        con = make()
        used = {n.selector.fingerprint for n in C.topological([con.program]) if isinstance(n, C.Aggregate)}
        assert used == {i.selector.fingerprint for i in con.intents}


def _wrong() -> Construction:
    """A mutant: the det3 program checked against the wrong reference (the cofactor matrix's (0,0))."""
    con = lemmas.det3()
    con.reference_fn = lambda a, backend="numpy": cofactor_reference(a, backend)[0, 0]
    return con


def test_checks_can_fail() -> None:
    """The obligations' checks reject a wrong construction (a check that cannot fail is a defect)."""
    assert rational_identity_check(lambda: _wrong())(5.0).ok is False
    assert accuracy_check(lambda: _wrong(), 1e-6)(5.0).ok is False
    bare = lemmas.inverse3()
    unguarded = Construction(
        bare.name, bare.paper_ref, bare.program, bare.layout, bare.inputs, bare.reference_fn, intents=bare.intents
    )
    assert singular_check(lambda: unguarded, [[1, 2, 3], [2, 4, 6], [1, 1, 1]])(5.0).ok is False


def test_layout() -> None:
    con = lemmas.inverse3()
    assert isinstance(con.layout, Layout) and con.layout.total == 9
