"""U's size as formulas in its capacity (issue 44, item 5): the formulas of
``attnsim.compile.universal_size`` are what U compiled to weights reports, exactly at capacities in
general position not used by the fit, and as an upper bound at small random capacities; the
symbolic counts (layers, heads, positions) are the program's own at any capacity.
"""

from __future__ import annotations

import dataclasses

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim import UniversalSimulator
from attnsim.compile.universal_size import (
    FIT_CAPACITIES,
    CompiledSize,
    SizeAt,
    _fit_affine,
    compiled_size,
    universal_size,
)

# capacities in general position that the fit did not see (shallow kept small: H K N^2 (D+1)^2 positions)
HELD_OUT = (
    ("compact", (8, 6, 3, 5, 7)),
    ("compact", (7, 3, 2, 4, 5)),
    ("shallow", (3, 2, 4, 5, 7)),
)


def mismatches(at: SizeAt, got: CompiledSize) -> list[str]:
    """Where the formulas at a capacity differ from the compiled model there."""
    pairs = {
        "layers": (at.layers, got.layers),
        "heads": (at.heads, got.heads),
        "positions": (at.positions, got.positions),
        "residual width": (at.residual_width, got.residual_width),
        "parameters": (at.parameters, got.parameters),
    }
    return [f"{k}: formula {a}, compiled {b}" for k, (a, b) in pairs.items() if a != b]


@pytest.mark.parametrize(("variant", "capacity"), HELD_OUT)
def test_the_formulas_are_the_compiled_size_at_held_out_capacities(variant: str, capacity: tuple[int, ...]) -> None:
    assert capacity not in FIT_CAPACITIES
    size = universal_size(variant)
    assert mismatches(size.at(capacity), compiled_size(capacity, variant)) == []


def test_a_wrong_formula_is_caught() -> None:
    """The comparison above fails on a formula off by one anywhere (width, parameters, a head)."""
    size = universal_size("compact")
    got = size.fitted_from[0]
    assert mismatches(size.at(got.capacity), got) == []
    N = size.symbols[0]
    for wrong in (
        dataclasses.replace(size, residual_width=size.residual_width + 1),
        dataclasses.replace(size, parameters=size.parameters + N),
        dataclasses.replace(size, heads=(size.heads[0] - 1, *size.heads[1:])),
    ):
        assert mismatches(wrong.at(got.capacity), got) != []


def test_the_formulas_are_in_the_capacity_symbols() -> None:
    size = universal_size("compact")
    assert [s.name for s in size.symbols] == ["N", "D", "H", "K", "F"]
    assert size.residual_width.free_symbols <= set(size.symbols)
    assert size.parameters.free_symbols <= set(size.symbols)
    assert size.layers == 7 and universal_size("shallow").layers == 6
    assert size.heads_total == sum(size.heads)


def test_the_fit_refuses_points_off_an_affine_law() -> None:
    """A capacity out of general position (U(2, 2, 1, 2, 2) compiles to width 291) breaks the fit."""
    size = universal_size("compact")
    points = [(f.capacity, f.residual_width) for f in size.fitted_from]
    assert _fit_affine(points, size.symbols) == size.residual_width
    with pytest.raises(ValueError, match="no affine law"):
        _fit_affine([*points, ((2, 2, 1, 2, 2), 291)], size.symbols)
    with pytest.raises(ValueError, match="do not determine"):
        _fit_affine(points[:3], size.symbols)


@settings(max_examples=6, deadline=None)
@given(st.tuples(*(st.integers(1, 4) for _ in range(5))))
def test_the_formulas_bound_the_compiled_size_at_small_capacities(capacity: tuple[int, int, int, int, int]) -> None:
    """Out of general position nodes merge: never more heads, width or parameters than the formulas."""
    at = universal_size("compact").at(capacity)
    got = compiled_size(capacity, "compact")
    assert (got.layers, got.positions) == (at.layers, at.positions)
    assert all(g <= a for g, a in zip(got.heads, at.heads, strict=True))
    assert got.residual_width <= at.residual_width
    assert got.parameters <= at.parameters


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(("compact", "shallow")), st.tuples(*(st.integers(1, 64) for _ in range(5))))
def test_layers_heads_and_positions_are_the_programs(variant: str, capacity: tuple[int, int, int, int, int]) -> None:
    """The symbolic counts at any capacity, against the program built there (no compile)."""
    at = universal_size(variant).at(capacity)
    u = UniversalSimulator(*capacity, variant=variant)
    c = u.cost(closed_forms=False)
    assert (c["layers"], u.positions()) == (at.layers, at.positions)
    assert all(g <= a for g, a in zip(c["heads"], at.heads, strict=True))
    assert sp.Integer(at.heads_total) == universal_size(variant).heads_total
