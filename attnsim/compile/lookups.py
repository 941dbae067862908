"""Lowering, the lookups: a function on a finite point set as exact piecewise-linear ReLU units.

A function g on t_0 < ... < t_n is the interpolant ``g(t_0) relu(one) + sum_i c_i relu(x - t_i one)``
(c_i the slope changes): exact at every point, one hidden unit per kink.  Index maps,
finite-domain primitives, the squares, one-hots and indicators that selectors need, and the count
read-outs of ``selector_width``/``length`` are lookups.  A lookup of a lookup composes (same hidden
bank).  Lookups of ``indices`` alone become position-embedding columns.  A lookup whose points lie
on a line folds into a linear form (no unit).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from attnsim.compile.model import CompileError
from attnsim.compile.residual import IDX, ONE, Form, LoweringState, ReluItem, form_key, lin, unit
from attnsim.compile.weights import as_number
from attnsim.rasp import core as C
from attnsim.rasp import domain as D


class Lookups(LoweringState):
    """Lookups (``lookup``), read from a node's source form (``source``), composed (``feature``)."""

    def lookup(self, src: Form, points: Sequence[Fraction], table: Sequence[Fraction | None], name: str) -> Form:
        """A form equal to table[i] whenever src == points[i] (exact at the points)."""
        pts = [as_number(p) for p in points]  # Python ints where possible: much faster than Fractions
        vals = [0 if v is None else as_number(v) for v in table]
        if not pts:
            return {}
        key = (form_key(src), tuple(pts), tuple(vals))
        if key in self.lookup_cache:
            return self.lookup_cache[key]
        defined = [(p, v) for p, v, t in zip(pts, vals, table, strict=True) if t is not None]
        if len(defined) <= 1 or _affine(defined):
            (p0, v0) = defined[0] if defined else (0, 0)
            slope = Fraction(defined[1][1] - v0) / (defined[1][0] - p0) if len(defined) > 1 else Fraction(0)
            out = lin((v0 - slope * p0, unit(ONE)), (slope, src))
            self.lookup_cache[key] = out
            return out
        if form_key(src) == ((IDX, Fraction(1)),):
            d = self.new_dim(name, (0, 0))
            col = [Fraction(0)] * self.N
            for p, v in zip(pts, vals, strict=True):
                if isinstance(p, int) and 0 <= p < self.N:
                    col[p] = Fraction(v)
            self.emb[d] = col
            self.lookup_cache[key] = unit(d)
            return unit(d)
        layer, depth = self.place([src])
        d = self.new_dim(name, (layer, depth))
        units: list[Form] = [unit(ONE)]
        coefs: list[tuple[int, Fraction]] = [(0, Fraction(vals[0]))]
        prev: Fraction | int = 0
        for i in range(len(pts) - 1):
            dv, dp = vals[i + 1] - vals[i], pts[i + 1] - pts[i]
            sl = dv // dp if isinstance(dv, int) and isinstance(dp, int) and dv % dp == 0 else Fraction(dv) / dp
            c = sl - prev
            prev = sl
            if c != 0:
                units.append(lin((1, src), (-pts[i], unit(ONE))))
                coefs.append((len(units) - 1, Fraction(c)))
        self.items.append(ReluItem(layer, depth, units, [(d, coefs)], f"lookup {name}: {len(pts)} points", len(pts)))
        self.lookup_cache[key] = unit(d)
        return unit(d)

    def source(
        self, node: C.SOp, integer_only: bool = False
    ) -> tuple[Form, tuple[Fraction, ...], list[Fraction | None]]:
        """(form, points, value of the node at each point) to look functions of ``node`` up from."""
        r = self.realize(node)
        if r.origin is not None:
            vals = list(r.origin.table)
            if integer_only:
                vals = [v if v is not None and v.denominator == 1 else None for v in vals]
            return r.origin.src, r.origin.points, vals
        what = f"{self.name(node)}"
        if integer_only:
            pts: tuple[Fraction, ...] = tuple(Fraction(p) for p in r.domain.integer_points(what))
        else:
            pts = r.domain.require_points(what)
        return r.form, pts, list(pts)

    def feature(self, node: C.SOp, tag: str, g: Callable[..., Any], integer_only: bool = False) -> Form:
        """A form equal to g(node) (a lookup composed on the node's source)."""
        key = (node.fingerprint, tag)
        if key in self.feat_cache:
            return self.feat_cache[key]
        try:
            src, pts, vals = self.source(node, integer_only)
        except D.DomainError as exc:
            raise CompileError(f"{exc} (needed for {tag} of {self.name(node)}; pass vocab= or domains=)") from None
        table = [None if v is None else Fraction(g(v)) for v in vals]
        out = self.lookup(src, pts, table, f"{self.name(node)}:{tag}")
        self.feat_cache[key] = out
        return out


def _affine(pairs: list[tuple[Any, Any]]) -> bool:
    """All points on the line through the first two (cross-multiplied: no division)."""
    (p0, v0), (p1, v1) = pairs[0], pairs[1]
    dv, dp = v1 - v0, p1 - p0
    return all((v - v0) * dp == dv * (p - p0) for p, v in pairs)
