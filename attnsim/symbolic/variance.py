"""A variance U computes as E[x^2] - E[x]^2 over a row held as several sums is >= 0.

U's LayerNorm over R = sum_h O_h + c reads the row's sum as an Add of sums (the head outputs
summed over e < d and h < hh, the residual terms over e < d alone): ``S = sum_k c_k Sum(f_k, (v_k, 0,
m - 1), ...)``, each summand a sum over one common range v_k < m (m > 0).  Then with
``y(w) = sum_k c_k Sum(f_k[v_k := w], other limits)`` (the row's entry w) S = sum_{w<m} y(w), and
a value ``var`` is >= 0 when it equals ``(1/m) sum_{w<m} (y(w) - S/m)^2`` in the Sum normal form
(a mean of squares of reals).  :func:`mean_of_squares` tries each ``S^2`` in ``var`` and each
common range.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from attnsim.symbolic.sums import equal_by_normal_form


def _summands(base: Any) -> list[tuple[Any, sp.Sum]] | None:
    """``base`` as (c_k, Sum_k) pairs, c_k free of the sum's variables; None if a summand has no Sum."""
    out = []
    for term in sp.Add.make_args(base):
        sums = [f for f in sp.Mul.make_args(term) if isinstance(f, sp.Sum)]
        if len(sums) != 1:
            return None
        c = sp.Mul(*(f for f in sp.Mul.make_args(term) if f is not sums[0]))
        out.append((c, sums[0]))
    return out


def _row(summands: list[tuple[Any, sp.Sum]], m: Any, w: Any) -> Any:
    """y(w): each summand with its limit over [0, m) read at w (None if a summand has no such limit)."""
    y: Any = sp.Integer(0)
    for c, s in summands:
        lim = next((lim for lim in s.limits if lim[1] == 0 and sp.expand(lim[2] + 1 - m) == 0), None)
        if lim is None:
            return None
        body = s.function.xreplace({lim[0]: w})
        others = [x for x in s.limits if x is not lim]
        y += c * (sp.Sum(body, *others) if others else body)
    return y


def mean_of_squares(var: Any, positive: Any) -> str | None:
    """A description of ``var`` as (1/m) sum_{w<m} (y(w) - S/m)^2 (module docstring), or None when
    not shown; ``positive`` shows the count m > 0."""
    for p in sorted(var.atoms(sp.Pow), key=sp.default_sort_key):
        if p.exp != 2:
            continue
        summands = _summands(p.base)
        if not summands:
            continue
        ranges = {sp.expand(lim[2] + 1) for lim in summands[0][1].limits if lim[1] == 0}
        for m in sorted(ranges, key=sp.default_sort_key):
            if not positive(m):
                continue
            w = sp.Dummy("w")
            y = _row(summands, m, w)
            if y is None:
                continue
            square = sp.Sum(sp.expand((y - p.base / m) ** 2), (w, 0, m - 1)) / m
            same, _, _ = equal_by_normal_form(var, square)
            if same:
                return f"variance {sp.sstr(var)[:60]}... is a mean of squares over {m} entries (>= 0)"
    return None


__all__ = ["mean_of_squares"]
