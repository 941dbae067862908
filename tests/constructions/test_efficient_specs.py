"""Applications linear attention and Linformer: program == spec for every size; wrong variants refuted."""

from __future__ import annotations

import dataclasses

import numpy as np

from attnsim.constructions.construction import Construction
from attnsim.constructions.efficient import program as F
from attnsim.rasp import core as C
from attnsim.symbolic.program_equals_spec import prove_program_equals_spec

N, D, DV, KP = C.Size("n"), C.Size("d"), C.Size("dv"), C.Size("kp")


def _nodes(con: Construction) -> dict[str, C.RASPExpr]:
    return {x.label: x for x in C.topological([con.program])}


def test_both_proved_for_all_sizes() -> None:
    for con in (F.linear_attention(N, D, DV), F.linformer(N, D, DV, KP)):
        out = prove_program_equals_spec(con, timeout=60)
        assert out.ok is True, out.detail


def test_specs_match_the_references() -> None:
    """Each spec, evaluated on concrete operands, equals the NumPy reference (a wrong spec fails here)."""
    rng = np.random.default_rng(3)
    for con in (F.linear_attention(3, 2, 2), F.linformer(3, 2, 2, 2)):
        ops = [rng.normal(size=con.layout[n].shape) for n in con.inputs]
        assert np.allclose(con.spec(*ops), con.reference(*ops), rtol=0, atol=1e-13)  # measured 2.2e-16


def test_linear_attention_with_the_denominator_of_the_wrong_row_fails() -> None:
    """Dividing num by den read at the wrong row (den of row 0 everywhere): refuted with a counterexample."""
    con = F.linear_attention(N, D, DV)
    nodes = _nodes(con)
    den_blk = con.layout["la.den"]
    src = C.imap(lambda p: den_blk.position(0, 0), C.indices)
    sel = C.select(C.indices, src, "==")
    y = C.apply("div", nodes["la.num"], C.aggregate(sel, nodes["la.den"]))
    out = prove_program_equals_spec(dataclasses.replace(con, program=y), timeout=60)
    assert out.ok is False and "counterexample" in out.detail, out.detail


def test_linformer_without_the_scale_fails() -> None:
    """softmax(Q (E K)^T) without / sqrt(d): refuted (equal only at d = 1)."""
    con = F.linformer(N, D, DV, KP, scale=False)
    con = dataclasses.replace(con, specification=F.linformer(N, D, DV, KP).specification)
    out = prove_program_equals_spec(con, timeout=60)
    assert out.ok is False and "counterexample" in out.detail, out.detail
