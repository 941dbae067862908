"""The generalized forms U is built from (gather_onto, contract) as lemmas: numbers, specs, all-sizes proofs.

A wrong coordinate map (written into the selector, and so into the intent gather_onto derives from
it) must fail the all-sizes obligation against the independent spec, with a counterexample.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim.constructions.construction import Construction
from attnsim.constructions.forms import program as forms
from attnsim.constructions.forms.contraction import Coords, contract, gather_onto
from attnsim.constructions.forms.spec import CONSUMER_MATMUL, PERMUTE3
from attnsim.rasp import core as C
from attnsim.rasp.layout import Grid, GridRef, Layout
from attnsim.symbolic.program_equals_spec import prove_program_equals_spec, spec_obligation

FORMS: dict[str, tuple[Callable[..., Construction], tuple[int, ...]]] = {
    "gathered-transpose": (forms.gathered_transpose, (2, 3)),
    "gathered-permute": (forms.gathered_permute, (2, 3, 4)),
    "broadcast-gather": (forms.broadcast_gather, (3, 2, 4)),
    "consumer-matmul": (forms.consumer_matmul, (2, 3, 4, 2)),
    "two-axis-sum": (forms.two_axis_sum, (2, 3, 4, 2)),
}


@pytest.mark.parametrize("name", list(FORMS))
def test_forms_equal_numpy(name: str) -> None:
    """Program == NumPy reference (float64 and exact) and spec == reference, at distinct sizes."""
    make, sizes = FORMS[name]
    con = make(*sizes)
    assert con.name == name
    rng = np.random.default_rng(0)
    ints = [rng.integers(-9, 10, size=con.layout[n].shape) for n in con.inputs]
    want = con.reference(*ints, backend="exact")
    assert np.array_equal(con.run(*ints, backend="exact"), want)
    assert np.array_equal(con.spec(*ints, backend="exact").reshape(want.shape), want)
    floats = [rng.normal(size=con.layout[n].shape) for n in con.inputs]
    np.testing.assert_allclose(con.run(*floats), con.reference(*floats), rtol=0, atol=1e-15)  # measured <= 4.5e-16


def test_shapes_and_layers() -> None:
    """U's shape: AB (2 x 4) read at every position of a (2, 4, 5) consumer grid, in 2 layers."""
    con = forms.consumer_matmul(2, 3, 4, 5)
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    out = con.run(a, b)
    assert out.shape == (2, 4, 5) and all(np.array_equal(out[:, :, m], a @ b) for m in range(5))
    assert con.cost().layers == 2
    assert forms.gathered_permute(2, 3, 4).run(np.arange(24.0).reshape(2, 3, 4)).shape == (3, 4, 2)
    assert forms.two_axis_sum(2, 3, 4, 2).cost().layers == 1


@settings(max_examples=25, deadline=None)
@given(
    st.tuples(*(st.integers(1, 3) for _ in range(4))),
    st.integers(0, 2**32 - 1),
)
def test_consumer_matmul_hypothesis(sizes: tuple[int, int, int, int], seed: int) -> None:
    """Any sizes, any float64 operands: out[i, j, m] = (AB)[i, j] within 1e-12 of NumPy."""
    r, k, c, x = sizes
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(r, k)) * 10, rng.normal(size=(k, c)) * 10
    out = forms.consumer_matmul(r, k, c, x).run(a, b)
    np.testing.assert_allclose(out, np.repeat((a @ b)[:, :, None], x, axis=2), rtol=0, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.tuples(*(st.integers(1, 3) for _ in range(4))), st.integers(0, 2**32 - 1))
def test_two_axis_sum_hypothesis(sizes: tuple[int, int, int, int], seed: int) -> None:
    d, r, w, c = sizes
    a = np.random.default_rng(seed).normal(size=(d, r, w))
    out = forms.two_axis_sum(d, r, w, c).run(a)
    np.testing.assert_allclose(out, np.repeat(a.sum(axis=(0, 2))[:, None], c, axis=1), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", list(FORMS))
def test_program_equals_spec_for_all_sizes(name: str) -> None:
    make, sizes = FORMS[name]
    names = list(inspect.signature(make).parameters)
    con = make(*map(C.Size, names))
    assert con.free_sizes == set(names)  # an int call is the symbolic build bound:
    assert con.bind(**dict(zip(names, sizes, strict=True))).program.fingerprint == make(*sizes).program.fingerprint
    out = prove_program_equals_spec(con)
    assert out.ok is True and "for all sizes" in out.detail, out.detail


# -- wrong coordinate maps ------------------------------------------------------------------------
def _matmul(b_coords: Callable[[Coords], Coords]) -> Construction:
    """consumer_matmul over unbound sizes, B gathered through ``b_coords``."""
    r, k, c, x = (C.Size(n) for n in ("rows", "inner", "cols", "extra"))
    a = Grid.of("A", 0, i=r, l=k)
    b = Grid.of("B", a.end_expr(), l=k, j=c)
    prod = Grid.of("P", 0, channel="P", i=r, j=c, l=k)
    out = Grid.of("out", 0, channel="out", i=r, j=c, m=x)
    ga, _ = gather_onto(GridRef(C.tokens, a), prod, lambda p: {"i": p["i"], "l": p["l"]}, "P.a")
    gb, _ = gather_onto(GridRef(C.tokens, b), prod, b_coords, "P.b")
    sop, isum = contract(GridRef(C.apply("mul", ga, gb), prod), ("l",), out, lambda o: dict(o), "out")
    return Construction(
        "consumer-matmul",
        forms.MATMUL_REF,
        sop,
        Layout.of(a.block, b.block, prod.block, out.block),
        ("A", "B"),
        lambda *ops, backend="numpy": None,
        intents=[isum],
        specification=CONSUMER_MATMUL.at(rows=r, inner=k, cols=c, extra=x),
    )


def _permute(coords: Callable[[Coords], Coords]) -> Construction:
    d0, d1, d2 = (C.Size(n) for n in ("d0", "d1", "d2"))
    a = Grid.of("A", 0, c=d0, a=d1, b=d2)
    out = Grid.of("out", 0, channel="out", a=d1, b=d2, c=d0)
    sop, it = gather_onto(GridRef(C.tokens, a), out, coords, "out")
    spec = PERMUTE3.at(d0=d0, d1=d1, d2=d2)
    return Construction(
        "gathered-permute",
        "",
        sop,
        Layout.of(a.block, out.block),
        ("A",),
        lambda x: x,
        intents=[it],
        specification=spec,
    )


WRONG: dict[str, Callable[[], Construction]] = {
    "B coords swapped": lambda: _matmul(lambda p: {"l": p["j"], "j": p["l"]}),
    "B read at row i": lambda: _matmul(lambda p: {"l": p["i"], "j": p["j"]}),
    "permutation inverted": lambda: _permute(lambda x: {"c": x["b"], "a": x["c"], "b": x["a"]}),
    "permutation: two axes swapped": lambda: _permute(lambda x: {"c": x["c"], "a": x["b"], "b": x["a"]}),
}


def test_the_wrong_map_builders_are_right_with_the_right_map() -> None:
    assert prove_program_equals_spec(_matmul(lambda p: {"l": p["l"], "j": p["j"]})).ok is True
    assert prove_program_equals_spec(_permute(lambda x: dict(x))).ok is True


@pytest.mark.parametrize("name", list(WRONG))
def test_wrong_coordinate_map_fails_with_a_counterexample(name: str) -> None:
    """The all-sizes obligation (spec_obligation, what verify runs) refutes each with sizes and an entry."""
    out = spec_obligation("wrong", "", [WRONG[name]], "must fail").check(30.0)
    assert out.ok is False and "counterexample" in out.detail, out.detail
