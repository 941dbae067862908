"""Complex input is refused wherever operands enter (issue 15: the imaginary part was silently dropped)."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from attnsim import TransformerLayer, UniversalSimulator, lemmas
from attnsim.constructions.construction import ConstructionError
from attnsim.rasp.arith import BackendError
from attnsim.rasp.engine import evaluate
from attnsim.rasp.guards import complex_entry
from attnsim.universal.errors import SimulatorError


def test_complex_entry_names_the_entry() -> None:
    assert complex_entry([1.0, 2.0]) is None and complex_entry(np.array([sp.Symbol("x")], dtype=object)) is None
    assert "entry 1 is (2+1j)" in (complex_entry(np.array([1, 2 + 1j])) or "")
    assert "pass x.real" in (complex_entry(np.array([1 + 0j])) or "")
    assert "entry 0 is I" in (complex_entry(np.array([sp.I], dtype=object)) or "")
    assert complex_entry(np.array([1j], dtype=object)) is not None


@pytest.mark.parametrize("backend", ["numpy", "exact", "sympy"])
def test_construction_run_refuses_complex(backend: str) -> None:
    """Proposition 1's encoding carries real numbers: Construction.run refuses a complex operand."""
    con = lemmas.transpose(2, 2)
    with pytest.raises(ConstructionError, match=r"^A: complex input is not supported \(entry 1 is 1j"):
        con.run(np.array([[1, 1j], [0, 1]]), backend=backend)


@pytest.mark.parametrize("backend", ["numpy", "exact", "sympy"])
def test_engine_refuses_complex_tokens(backend: str) -> None:
    con = lemmas.transpose(2, 2)
    with pytest.raises(BackendError, match="complex input is not supported"):
        evaluate(con.program, np.array([1, 2, 3, 4 + 1j]), backend)


def test_nan_and_inf_refused() -> None:
    con = lemmas.transpose(2, 2)
    with pytest.raises(ConstructionError, match="NaN or inf"):
        con.run(np.array([[1, np.nan], [0, 1]]))
    with pytest.raises(ConstructionError, match="NaN or inf"):
        con.run(np.array([[1, np.inf], [0, 1]]), backend="exact")


def test_simulator_refuses_complex_x_and_weights() -> None:
    """Theorem 6's U: complex X (U.run, T(X)) and complex weights (TransformerLayer) are refused."""
    T = TransformerLayer.random(d_model=2, n_heads=1, d_head=2, d_ff=None, seed=0)
    U = UniversalSimulator(3, 2, 1, 2)
    x = np.ones((2, 2)) + 1j
    with pytest.raises(SimulatorError, match=r"^X: complex input is not supported"):
        U.run(T, x)
    with pytest.raises(SimulatorError, match=r"^X: complex input is not supported"):
        T(x)
    with pytest.raises(SimulatorError, match="complex input is not supported"):
        TransformerLayer(w_q=T.w_q * 1j, w_k=T.w_k, w_v=T.w_v, w_o=T.w_o)
    with pytest.raises(SimulatorError, match="NaN or inf"):
        U.run(T, np.full((2, 2), np.nan))
