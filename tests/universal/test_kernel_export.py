"""U's program exported to Coq node by node (Theorem 6 in the kernel, step 1): the exported term is
the one the Python program builds, Coq accepts it, and Coq's evaluator on it equals the engine."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest

from attnsim.proofs.coq import export_nodes
from attnsim.rasp import core as C
from attnsim.universal import kernel_export as KE
from attnsim.universal.program import VARIANTS
from attnsim.universal.universal import UniversalSimulator

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed")


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_node_of_u_is_one_definition_the_last_one_u(variant: str) -> None:
    """One definition per node of the program graph, names unique, each over the five capacity
    sizes; the last is the pass itself; the value selector, sqrt and both GELU forms are in it."""
    U = UniversalSimulator.over_symbolic_capacity(variant)
    text = KE.export_universal(variant).text
    names = re.findall(r"^Definition (\S+) \(N D H K F : Z\) : (?:sop|isop|sel) :=", text, re.M)
    assert len(names) == len(C.topological([U.program])) == len(set(names))
    assert names[-1] == KE.program_name(variant)
    for piece in ("VSelect", "Maximum", "PSqrt", "PGelu ", "PGeluTanh", "PExp"):
        assert piece in text, piece
    assert "let " not in text  # no definition holds another node's term: each is read by name


def test_the_export_is_read_from_the_program_the_python_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The export is a function of the program object: a fresh build prints the same text, and a U
    built with its GELU branch computing tanh-GELU (a changed program) prints another."""
    fresh = export_nodes("U_compact", UniversalSimulator.over_symbolic_capacity("compact").program, KE.SIZES)
    assert fresh.text == KE.export_universal("compact").text
    real = C.apply
    monkeypatch.setattr(C, "apply", lambda name, *a, **kw: real("gelu_tanh" if name == "gelu" else name, *a, **kw))
    wrong = export_nodes("U_compact", UniversalSimulator.over_symbolic_capacity("compact").program, KE.SIZES)
    assert wrong.text != fresh.text and "PGelu " not in wrong.text


def test_the_differential_inputs_run_every_gate_and_stay_small() -> None:
    """Both variants' inputs cover pre, post and no norm, ReLU, GELU, tanh-GELU and no FFN, residual
    on and off; their outputs are not all zero and no number in them exceeds the bound."""
    seen = [o for v in VARIANTS for o in KE.CASES[v]]
    assert {o["norm"] for o in seen} == {"none", "pre", "post"}
    assert {o["activation"] for o in seen} == {"relu", "gelu", "gelu_tanh", None}
    assert {o["residual"] for o in seen} == {True, False}
    for v in VARIANTS:
        for c in KE.diff_cases(v):
            assert any(y != 0 for y in c.exact[:1]), c.options  # Y[0, 0], the layer's output
            assert max(max(abs(f.numerator), f.denominator) for f in (*c.tokens, *c.exact)) <= KE.MAGNITUDE


@needs_coq
@pytest.mark.parametrize("variant", VARIANTS)
def test_coqs_evaluator_on_u_equals_the_engine(variant: str) -> None:
    out = KE.differential_check(variant)(0.0)
    assert out.ok is True, out.detail


@needs_coq
def test_an_export_with_one_primitive_swapped_fails_the_differential() -> None:
    """The check is not vacuous: U's export with its GELU node read as tanh-GELU (an exporter
    mapping one primitive to another) is refuted by Coq's evaluation on the pre-norm GELU input."""
    good = KE.export_universal("compact")
    bad = replace(good, text=good.text.replace("(Map1 PGelu ", "(Map1 PGeluTanh "))
    assert bad.text != good.text
    out = KE.differential_check("compact", bad)(0.0)
    assert out.ok is False and "differs from the engine's exact run (residual=True, norm=pre" in out.detail


def test_a_division_by_zero_is_zero_on_the_engine_side_as_in_mathcomp() -> None:
    """U divides 0 by 0 at positions no output reads; the differential's engine side gives 0 there,
    as MathComp's field does, so that the exact run is total (the Python backends raise)."""
    arith = KE._TotalStandinExact()
    from attnsim.rasp import primitives as P

    zero = np.array([Fraction(0), Fraction(3)], dtype=object)
    out = arith._apply(P.get("div"), (), [np.array([Fraction(5), Fraction(6)], dtype=object), zero])
    assert list(out) == [0, 2]
    assert list(arith._apply(P.get("reciprocal"), (), [zero])) == [0, Fraction(1, 3)]
