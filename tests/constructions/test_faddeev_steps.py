"""det(n) / inverse(n) by Faddeev-LeVerrier (beyond the paper): each step, over unbound sizes, is
proven program == spec for every n (and any offset and padding); wrong steps are refuted."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from attnsim.constructions.construction import Construction
from attnsim.constructions.det_n import steps as F
from attnsim.constructions.det_n.program import plus_identity
from attnsim.constructions.matmul.program import matmul_ref
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.layout import MatRef
from attnsim.symbolic.program_equals_spec import prove_program_equals_spec


def _nodes(con: Construction) -> dict[str, Any]:
    return {x.label: x for x in C.topological([con.program])}


@pytest.mark.parametrize("name", list(F.STEPS))
def test_every_step_proved_for_all_sizes(name: str) -> None:
    out = prove_program_equals_spec(F.STEPS[name][0]())
    assert out.ok is True, out.detail


@pytest.mark.parametrize("name", list(F.STEPS))
def test_spec_matches_the_reference(name: str) -> None:
    """The specification of each step agrees with its NumPy reference (a wrong spec fails here)."""
    con = F.STEPS[name][0]()
    con = con.bind(**{s: 3 for s in con.free_sizes})
    rng = np.random.default_rng(0)
    ops = [rng.integers(-4, 5, size=con.layout[n].shape) for n in con.inputs]
    got = np.asarray(con.spec(*ops, backend="exact"), dtype=object).reshape(-1)
    want = np.asarray(con.reference(*ops, backend="exact"), dtype=object).reshape(-1)
    assert all(g == w for g, w in zip(got, want, strict=True))


def _with_scale(con: Construction, factor: Callable[[E.Expr], Any]) -> Construction:
    """The same construction with its last scale constant k replaced by factor(k)."""
    p = con.program
    assert isinstance(p, C.Map) and isinstance(p.fn, C.Prim) and p.fn.name == "scale"
    return dataclasses.replace(con, program=C.apply("scale", p.inner, params=(factor(p.fn.consts[0]),)))


def _refuted(con: Construction) -> None:
    out = prove_program_equals_spec(con)
    assert out.ok is False and "counterexample" in out.detail, out.detail


def test_trace_wrong_scale_fails() -> None:
    _refuted(_with_scale(F.trace_step(), lambda k: k + 1))


def test_frobenius_scale_rows_only_fails() -> None:
    _refuted(_with_scale(F.frobenius_step(), lambda k: F.ROWS))


def test_trace_over_first_column_fails() -> None:
    """A selector over column 0 instead of the diagonal (hint unchanged): refused."""
    con = F.trace_step()
    blk = con.layout["A"]
    flag = C.imap(lambda p: blk.contains(p) & blk.coords(p)[2].eq(0), C.indices)
    sel = C.select(flag, C.full(1), "==")
    prog = C.apply("scale", C.aggregate(sel, C.tokens), params=(F.N,))
    out = prove_program_equals_spec(
        dataclasses.replace(con, program=prog, intents=[dataclasses.replace(con.intents[0], selector=sel)])
    )
    assert out.ok is False, out.detail


def test_first_step_plus_trace_fails() -> None:
    """M_2 = A + tr(A) I (sign lost): refuted."""
    con = F.first_step()
    nodes = _nodes(con)
    _refuted(dataclasses.replace(con, program=C.apply("add", C.tokens, C.apply("mul", nodes["tr"], nodes["out.eye"]))))


def test_general_step_wrong_sign_of_c_fails() -> None:
    con = F.general_step()
    nodes = _nodes(con)
    c = C.apply("neg", nodes["c.everywhere"])
    _refuted(dataclasses.replace(con, program=C.apply("add", nodes["P"], C.apply("mul", c, nodes["out.eye"]))))


def test_general_step_product_in_wrong_order_fails() -> None:
    """M A instead of A M: refuted."""
    con = F.general_step()
    a, m = con.layout["A"], con.layout["M"]
    prod, its = matmul_ref(MatRef(C.tokens, m), MatRef(C.tokens, a), name="P")
    out = plus_identity(prod, _nodes(con)["c.everywhere"], "out")
    _refuted(dataclasses.replace(con, program=out.sop, intents=[*its, con.intents[-1]]))


def test_coefficient_step_without_transpose_fails() -> None:
    """<A^T, A^T> instead of <A^T, M>: refuted."""
    con = F.coefficient_step()
    nodes = _nodes(con)
    mean = C.aggregate(nodes["out.sum"], C.apply("mul", nodes["At"], nodes["At"]))
    p = con.program
    assert isinstance(p, C.Map) and isinstance(p.fn, C.Prim)
    _refuted(dataclasses.replace(con, program=C.apply("scale", mean, params=(p.fn.consts[0],))))


def test_iteration_with_the_wrong_step_constant_fails() -> None:
    """-1/(k + 2) instead of -1/(k + 1): wrong at every k, refuted."""
    _refuted(_with_scale(F.iteration_step(), lambda r: C.Ratio(r.num, r.den + 1)))
