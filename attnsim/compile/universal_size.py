"""U's size as a function of its capacity: layers, heads, positions, residual width, parameters.

U (:class:`attnsim.universal.universal.UniversalSimulator`) is one program per capacity (max_len
N, d_model D, n_heads H, d_head K, d_ff F).  :func:`universal_size` gives, per variant, its size
as SymPy expressions in N, D, H, K, F, each obtained from the code, none written by hand:

* **layers** and **heads per layer**: the schedule's cost of the program built over the unbound
  capacity symbols (:meth:`UniversalSimulator.cost`; heads are distinct selectors per layer);
* **positions** (the sequence length of ``<T, X>`` with one layer's record): the program's own
  closed form (``cost()["closed_form"]["positions"]``);
* **residual width** and **parameters** of U compiled to weights (:func:`compile_program` with
  ``max_len`` = positions): the compiler needs a concrete ``max_len``, so these are *fitted*.
  Every weight matrix of a compiled model has the residual width W as one of its dimensions
  (the position embedding is (max_len + 1) x W), so the dense parameter count is exactly
  ``W * (positions + 1 + C)``, with C the other dimensions summed (the token embedding, the
  read-out, each head's query, key and value columns twice, each ReLU stage's hidden width twice,
  each function node's arguments).  W and C are fitted as affine functions of N, D, H, K, F,
  solved exactly from compiles at :data:`FIT_CAPACITIES` (seven points for six coefficients: one
  more than needed, so a capacity that breaks the affine law makes the fit fail).

The counts are those of U at capacities in *general position*.  At a capacity where two
index expressions of the program happen to coincide (sizes of equal value, H = 1, D = N^2...),
the program's structural hashing merges their nodes or selectors, and U there has fewer heads, a
narrower residual stream and fewer parameters than the formula: the formula is then an upper
bound (layers and positions stay exact).  ``tests/compile/test_universal_size.py`` checks both:
equality at held-out capacities in general position, and the bound at small random ones.

SymPy is imported by the functions that build expressions, never at module level.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from attnsim.compile.compiler import compile_program
from attnsim.compile.model import CompiledTransformer
from attnsim.universal.program import VARIANTS
from attnsim.universal.universal import CAPACITY_NAMES, UniversalSimulator, closed_form

if TYPE_CHECKING:
    import sympy as sp

Capacity = tuple[int, int, int, int, int]  # (N, D, H, K, F)

FIT_CAPACITIES: tuple[Capacity, ...] = (
    (3, 2, 4, 5, 6),
    (3, 4, 2, 5, 6),
    (4, 2, 3, 5, 6),
    (3, 2, 5, 4, 6),
    (3, 2, 4, 6, 5),
    (3, 5, 2, 4, 6),
    (4, 2, 3, 5, 7),
)
"""Capacities in general position (N >= 3, H >= 2, no coincidence merging nodes), small enough
that the shallow variant (H K N^2 (D + 1)^2 positions) compiles in seconds."""


@dataclass(frozen=True)
class CompiledSize:
    """U compiled at one capacity: what the compiled model itself reports."""

    variant: str
    capacity: Capacity
    layers: int
    heads: tuple[int, ...]
    positions: int
    residual_width: int
    other_dims: int  # C: parameters = residual_width * (positions + 1 + other_dims)
    parameters: int


@dataclass(frozen=True)
class SizeAt:
    """U's size evaluated at one capacity (from the formulas)."""

    variant: str
    capacity: Capacity
    layers: int
    heads: tuple[int, ...]
    heads_total: int
    positions: int
    residual_width: int
    parameters: int


@dataclass(frozen=True)
class UniversalSize:
    """U's size for one variant as SymPy expressions in the capacity symbols N, D, H, K, F.

    ``derived`` are read off the program built over the symbols; ``residual_width``,
    ``other_dims`` and so ``parameters`` are fitted from the compiles ``fitted_from``."""

    variant: str
    symbols: tuple[sp.Symbol, ...]
    layers: sp.Expr
    heads: tuple[sp.Expr, ...]
    heads_total: sp.Expr
    positions: sp.Expr
    residual_width: sp.Expr
    other_dims: sp.Expr
    parameters: sp.Expr
    fitted_from: tuple[CompiledSize, ...]

    def at(self, capacity: Sequence[int]) -> SizeAt:
        """The formulas at one capacity (N, D, H, K, F)."""
        cap = _capacity(capacity)
        subs = dict(zip(self.symbols, cap, strict=True))

        def v(e: sp.Expr) -> int:
            return int(e.subs(subs))

        return SizeAt(
            self.variant,
            cap,
            v(self.layers),
            tuple(v(h) for h in self.heads),
            v(self.heads_total),
            v(self.positions),
            v(self.residual_width),
            v(self.parameters),
        )


def _capacity(capacity: Sequence[int]) -> Capacity:
    cap = tuple(int(c) for c in capacity)
    if len(cap) != 5 or any(c < 1 for c in cap):
        raise ValueError(f"a capacity is five positive ints (N, D, H, K, F), got {tuple(capacity)!r}")
    return (cap[0], cap[1], cap[2], cap[3], cap[4])


def other_dims(ct: CompiledTransformer) -> int:
    """C of ``parameters = d_model * (max_len + 1 + C)``: every matrix but the position embedding,
    each counted by its dimension other than the residual width (which every matrix has)."""
    d, total = ct.d_model, 0
    for name, m in ct.matrices():
        if name == "pos_embed":
            continue
        if m.size % d or d not in m.shape:
            raise ValueError(f"{name} has shape {m.shape}, none of it the residual width {d}")
        total += m.size // d
    return total


def compiled_size(capacity: Sequence[int], variant: str = "compact") -> CompiledSize:
    """Compile U at ``capacity`` (max_len = its positions) and read its size off the model."""
    cap = _capacity(capacity)
    u = UniversalSimulator(*cap, variant=variant)
    ct = compile_program(u.program, u.positions(), domains=u.compile_domains())
    c = other_dims(ct)
    if ct.parameter_count() != ct.d_model * (ct.max_len + 1 + c):
        raise AssertionError(f"U{cap}: parameters are not d_model * (max_len + 1 + C)")
    return CompiledSize(
        variant, cap, ct.n_layers, tuple(ct.heads_per_layer()), ct.max_len, ct.d_model, c, ct.parameter_count()
    )


def _fit_affine(points: Sequence[tuple[Capacity, int]], symbols: tuple[sp.Symbol, ...]) -> sp.Expr:
    """The affine c0 + c1 N + ... + c5 F through every point, solved exactly; ValueError if none."""
    import sympy as sp

    cs = sp.symbols("c0:6")
    eqs = [cs[0] + sum(c * x for c, x in zip(cs[1:], cap, strict=True)) - y for cap, y in points]
    sol = sp.linsolve(eqs, *cs)
    if not sol:
        raise ValueError(f"no affine law in {', '.join(CAPACITY_NAMES)} through {points}")
    (coeffs,) = sol
    if any(c.free_symbols for c in coeffs):
        raise ValueError(f"the points {[p for p, _ in points]} do not determine an affine law")
    return sp.expand(coeffs[0] + sum(c * s for c, s in zip(coeffs[1:], symbols, strict=True)))


@functools.cache
def universal_size(variant: str = "compact") -> UniversalSize:
    """U's size for ``variant`` as formulas in N, D, H, K, F (see the module docstring); compiles
    U at the seven :data:`FIT_CAPACITIES` (a few seconds each for ``shallow``), once per process."""
    import sympy as sp

    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; use one of {', '.join(VARIANTS)}")
    cost: dict[str, Any] = UniversalSimulator.over_symbolic_capacity(variant).cost()
    cf = cost["closed_form"]
    positions = cf["positions"]
    # the closed forms' own symbols (positive integers), so that the expressions combine
    symbols = tuple(closed_form_symbol(n) for n in CAPACITY_NAMES)
    fits = tuple(compiled_size(cap, variant) for cap in FIT_CAPACITIES)
    heads = tuple(sp.Integer(h) for h in cf["heads"])
    for f in fits:
        if f.layers != cost["layers"] or f.heads != tuple(cost["heads"]):
            raise ValueError(f"U{f.capacity} ({variant}) is not in general position: heads {f.heads}")
        subs = dict(zip(symbols, f.capacity, strict=True))
        if positions.subs(subs) != f.positions:
            raise ValueError(f"U{f.capacity} ({variant}): positions {f.positions} against the closed form")
    width = _fit_affine([(f.capacity, f.residual_width) for f in fits], symbols)
    other = _fit_affine([(f.capacity, f.other_dims) for f in fits], symbols)
    return UniversalSize(
        variant=variant,
        symbols=symbols,
        layers=sp.Integer(cost["layers"]),
        heads=heads,
        heads_total=sp.Integer(sum(cf["heads"])),
        positions=positions,
        residual_width=width,
        other_dims=other,
        parameters=width * (positions + 1 + other),
        fitted_from=fits,
    )


def closed_form_symbol(name: str) -> sp.Symbol:
    """The capacity symbol ``name`` as :func:`attnsim.universal.universal.closed_form` writes it."""
    import sympy as sp

    from attnsim.rasp import expr as E

    e = closed_form(E.Var(name))
    if not isinstance(e, sp.Symbol):
        raise ValueError(f"{name} is not a capacity symbol")
    return e


__all__ = [
    "FIT_CAPACITIES",
    "CompiledSize",
    "SizeAt",
    "UniversalSize",
    "closed_form_symbol",
    "compiled_size",
    "other_dims",
    "universal_size",
]
