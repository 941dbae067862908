"""Application (approximation of Lipschitz functions): a MaxMin (GroupSort) network built from our
matmul and MaxMin lemmas approximates an L-Lipschitz f within epsilon (McShane/Whitney midpoint bound)."""

import itertools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim import applications
from attnsim.constructions.construction import ConstructionError
from attnsim.constructions.lipschitz.program import EXAMPLES, exact_points, sup_error


def test_size_formula_matches_the_program() -> None:
    cases = [(1.0, 0.5, (-1, 1)), (1.0, 0.1, (-1, 1)), (3.0, 0.1, (0, 2)), (1.0, 0.5, ((-1, 1), (-1, 1)))]
    for (lip, eps, dom), method in itertools.product(cases, ("auto", "mcshane")):
        net = applications.lipschitz_approximator(lambda *x: 0.0, lip, eps, dom, method=method)
        size, formula = net.size(), applications.size_formula(lip, eps, dom, method=method)
        assert size["nodes"] == formula["nodes"]
        assert size["layers"] == formula["layers"] and size["matmuls"] == formula["matmuls"]
        assert net.bound <= eps + 1e-12


def _nodes(lip: float, eps: float, dom: list[tuple[float, float]]) -> list[Any]:
    """The grid of the module docstring, written here: spacing h = 2 eps / (L d), ceil((hi - lo) / h) + 1
    evenly spaced nodes per axis, end points included (1e-12: a quotient that is an integer up to rounding)."""
    h = 2 * eps / (lip * len(dom))
    return [np.linspace(lo, hi, max(2, math.ceil((hi - lo) / h - 1e-12) + 1)) for lo, hi in dom]


def _formula(f: Callable[..., float], lip: float, eps: float, dom: Any, method: str, x: Any) -> Any:
    """g(x) computed directly, independently of the network: the piecewise-linear interpolant of f
    on the grid (np.interp), or McShane's (max_k (f_k - L |x - y_k|_1) + min_k (f_k + L |x - y_k|_1)) / 2.
    Floats in, float out; Fractions in (``x`` and the grid read exactly), Fraction out."""
    box = [tuple(map(float, ab)) for ab in np.reshape(dom, (-1, 2))]
    axes = _nodes(lip, eps, box)
    exact = isinstance(x[0], Fraction)
    if method == "interpolation":
        g, fv = axes[0], [float(f(v)) for v in axes[0]]
        if not exact:
            return float(np.interp(x[0], g, fv))
        q = [Fraction(v) for v in g]
        k = max(0, min(len(q) - 2, sum(1 for v in q if v <= x[0]) - 1))  # x in [q_k, q_(k+1)] (or beyond the ends)
        slope = (Fraction(fv[k + 1]) - Fraction(fv[k])) / (q[k + 1] - q[k])
        return Fraction(fv[k]) + slope * (x[0] - q[k])
    conv = Fraction if exact else float
    nodes = list(itertools.product(*axes))
    dist = [sum(abs(x[a] - conv(y[a])) for a in range(len(box))) for y in nodes]
    fk = [conv(float(f(*y))) for y in nodes]
    lower = max(v - conv(lip) * r for v, r in zip(fk, dist, strict=True))
    upper = min(v + conv(lip) * r for v, r in zip(fk, dist, strict=True))
    return (lower + upper) / 2


@pytest.mark.parametrize(
    ("name", "method"),
    [(n, m) for n in sorted(EXAMPLES) for m in ("interpolation", "mcshane") if n != "cone" or m == "mcshane"],
)
def test_examples_within_epsilon_and_program_equals_the_formula(name: str, method: str) -> None:
    """The program equals g computed here from f, the grid and L (not from the network it
    evaluates), and is within epsilon of f."""
    f, lip, dom = EXAMPLES[name]
    eps = 0.25
    net = applications.lipschitz_approximator(f, lip, eps, dom, method=method)
    assert net.method == method
    assert net.nodes_per_axis == tuple(len(g) for g in _nodes(lip, eps, np.reshape(dom, (-1, 2)).tolist()))
    assert sup_error(net, f, dom, 2001 if net.dim == 1 else 61) <= eps * (1 + 1e-9)
    rng = np.random.default_rng(0)
    box = np.reshape(dom, (-1, 2))
    for _ in range(3):
        x = box[:, 0] + (box[:, 1] - box[:, 0]) * rng.random(net.dim)
        got = net.run(x)[0, 0]
        assert abs(got - _formula(f, lip, eps, dom, method, x)) <= 1e-13  # measured <= 2.3e-15 (50 points per example)
        assert abs(got - net.network(x[None, :])[0]) <= 1e-14  # measured <= 2.2e-16 (all examples)
        assert abs(got - f(*x)) <= eps


def test_exact_backend_equals_the_formula() -> None:
    """In exact arithmetic, McShane's program is the formula itself (its weights are f's float
    values, L and the nodes, read exactly); the interpolant's slopes are rounded to float64 when the
    weights are built, so it is within float rounding of the exact interpolant."""
    for method in ("interpolation", "mcshane"):
        net = applications.lipschitz_approximator(math.sin, 1.0, 0.5, (-math.pi, math.pi), method=method)
        net = net.without_domain()  # [-2, 2] is inside [-pi, pi] here, but exact_points does not promise it
        for x in exact_points(net, 2):
            got = net.run(x, backend="exact")[0, 0]
            assert got == net.reference(x, backend="exact")[0, 0]
            want = _formula(math.sin, 1.0, 0.5, (-math.pi, math.pi), method, list(x[0]))
            if method == "mcshane":
                assert got == want
            else:
                assert abs(got - want) <= Fraction(1, 10**14)  # measured <= 1.8e-16 (20 points)


def test_interpolation_has_constant_depth() -> None:
    layers = {applications.lipschitz_approximator(math.sin, 1.0, e, (-3, 3)).cost().layers for e in (0.5, 0.05, 0.005)}
    assert layers == {5}


def test_batch() -> None:
    net = applications.lipschitz_approximator(abs, 1.0, 0.25, (-1, 1), batch=4)
    x = np.array([[-0.9], [-0.1], [0.33], [0.8]])
    np.testing.assert_allclose(net.run(x)[:, 0], net.network(x), rtol=0, atol=1e-14)  # measured 1.1e-16
    want = [_formula(abs, 1.0, 0.25, (-1, 1), "interpolation", p) for p in x]
    np.testing.assert_allclose(net.run(x)[:, 0], want, rtol=0, atol=1e-14)  # measured 1.1e-16


@settings(max_examples=15, deadline=None)
@given(st.floats(0.2, 2.0), st.floats(0.5, 4.0), st.sampled_from([0.1, 0.2, 0.4]))
def test_random_sines_within_epsilon(a: float, b: float, eps: float) -> None:
    lip = a * b
    f = lambda x: a * math.sin(b * x)
    for method in ("interpolation", "mcshane"):
        net = applications.lipschitz_approximator(f, lip, eps, (-2.0, 2.0), method=method)
        assert sup_error(net, f, (-2.0, 2.0), 3001) <= eps * (1 + 1e-9)


def test_bad_inputs() -> None:
    with pytest.raises(ConstructionError, match="epsilon"):
        applications.lipschitz_approximator(abs, 1.0, 0.0, (-1, 1))
    with pytest.raises(ConstructionError, match="lipschitz_constant"):
        applications.lipschitz_approximator(abs, -1.0, 0.1, (-1, 1))
    with pytest.raises(ConstructionError, match="lo < hi"):
        applications.lipschitz_approximator(abs, 1.0, 0.1, (1, -1))
    with pytest.raises(ConstructionError, match="Lipschitz"):
        applications.lipschitz_approximator(lambda x: 10 * x, 1.0, 0.1, (-1, 1))
    with pytest.raises(ConstructionError, match="1-D only"):
        applications.lipschitz_approximator(lambda x, y: 0.0, 1.0, 0.5, ((-1, 1), (-1, 1)), method="interpolation")
    with pytest.raises(ConstructionError, match="method"):
        applications.lipschitz_approximator(abs, 1.0, 0.5, (-1, 1), method="spline")
    with pytest.raises(ConstructionError, match="nodes"):
        applications.lipschitz_approximator(lambda x, y: 0.0, 1.0, 1e-4, ((-1, 1), (-1, 1)))
    net = applications.lipschitz_approximator(abs, 1.0, 0.5, (-1, 1))
    with pytest.raises(ConstructionError, match="NaN"):
        net.run([np.nan])
    with pytest.raises(ConstructionError, match="shape"):
        net.run([0.1, 0.2])


def test_points_outside_the_domain_are_refused() -> None:
    """Issue 15: the approximation theorem holds on its domain only; sin on [-pi, pi] at x = 10 is an error."""
    net = applications.lipschitz_approximator(math.sin, 1.0, 0.01, (-math.pi, math.pi))
    with pytest.raises(ConstructionError, match=r"coordinate 0 = 10.0 is outside the domain \[-3.141592653589793, "):
        net.run(np.array([10.0]))
    # just past the bound: the point and the bound print differently (issue 30 item 12: both were 3.14159)
    with pytest.raises(ConstructionError, match=r"= 3.141592654589793 is outside the domain \[-3.141592653589793, "):
        net.run(np.array([math.pi + 1e-9]))
    with pytest.raises(ConstructionError, match="outside the domain"):
        net.network(np.array([[-4.0]]))
    with pytest.raises(ConstructionError, match="outside the domain"):
        net.run(np.array([Fraction(7, 2)], dtype=object), backend="exact")
    assert abs(net.run(np.array([math.pi]))[0, 0] - math.sin(math.pi)) <= 0.01  # the boundary is inside
    with pytest.raises(ConstructionError, match="complex input is not supported"):
        net.run(np.array([1 + 1j]))
    with pytest.raises(ConstructionError, match="NaN or inf"):
        net.network(np.array([[np.nan]]))
