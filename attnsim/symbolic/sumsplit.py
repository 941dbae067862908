"""Splitting a Sum into its terms, summing out Kronecker deltas, and a row variance >= 0.

Identities of finite sums ``Sum_{v=lo}^{hi} f(v)`` (docs/semantics.md lists them), applied to U's
values where its program sums a product grid whose terms differ in their guards:

* :func:`split_terms`: ``Sum(a + b) = Sum(a) + Sum(b)`` (linearity), each term with its own limits;
* :func:`sum_deltas`: ``Sum_{v=lo}^{hi} [v = c] g(v) = g(c)`` when lo <= c <= hi
  (:func:`within_range`, decided from the domain's signs; else not applied), c an integer free of
  the Sum's bound variables: the one term with v = c is the only non-zero one (U's indicator ``[f = 0]``
  that puts a row's constant term in one slot of a sum over f);
* :func:`row_variance_nonnegative`: ``var >= 0`` when the Sum normal form shows
  ``var = (1/m) Sum_{w<m} (y(w) - S/m)^2`` with ``S = Sum_{w<m} y(w)`` read off var itself (the
  square of the row total it subtracts): a mean of squares of reals, m >= 1.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sympy as sp

from attnsim.symbolic.if_then_else import Ite
from attnsim.symbolic.positivity import Signs
from attnsim.symbolic.sums import fresh_bound, same_normal_form


def split_terms(e: Any) -> Any:
    """Every Sum in ``e`` (outermost first) as the sum over the terms of its expanded body, each a
    Sum with the same limits (a term free of every bound variable is that term times the count)."""

    def rw(s: Any) -> Any:
        terms = sp.Add.make_args(sp.expand(s.function))
        if len(terms) == 1:
            return s
        return sp.Add(*(sp.Sum(t, *s.limits) for t in terms))

    return sp.sympify(e).replace(lambda x: isinstance(x, sp.Sum), rw)


def within_range(c: Any, lo: Any, hi: Any, signs: Signs) -> bool:
    """``lo <= c <= hi`` for every admissible value of the symbols (sizes >= their minimum)."""
    above = signs.signed(sp.expand(c - lo)).is_nonnegative is True
    return above and signs.signed(sp.expand(hi - c)).is_nonnegative is True


def _delta(f: Any, v: Any) -> Any:
    """c when ``f`` is the flag ``[v = c]`` (or ``[c = v]``), else None."""
    if isinstance(f, sp.Pow) and f.exp.is_Integer and f.exp > 0:
        f = f.base
    if not (isinstance(f, Ite) and f.args[1] == 1 and f.args[2] == 0 and isinstance(f.args[0], sp.Eq)):
        return None
    a, b = f.args[0].args
    if a == v and v not in b.free_symbols:
        return b
    if b == v and v not in a.free_symbols:
        return a
    return None


def sum_deltas(e: Any, signs: Signs, steps: list[str] | None = None) -> Any:
    """Every Sum of ``e`` whose body is a product with a delta flag ``[v = c]`` on one of its bound
    variables v, c free of the Sum's bound variables and within v's range (:func:`within_range`)
    and no other limit's bounds mentioning v: the body at v = c, that limit dropped (bottom-up)."""

    def rw(s: Any) -> Any:
        names = {lim[0] for lim in s.limits}
        factors = sp.Mul.make_args(s.function)
        for k, (v, lo, hi) in enumerate(s.limits):
            if any(v in (a.free_symbols | b.free_symbols) for _, a, b in s.limits):
                continue
            for f in factors:
                c = _delta(f, v)
                if c is None or c.is_integer is not True or (c.free_symbols & names):
                    continue
                if not within_range(c, lo, hi, signs):
                    continue
                body = sp.Mul(*(g for g in factors if g is not f)).xreplace({v: c})
                if steps is not None:
                    steps.append(f"sum over {v} in [{lo}, {hi}] of [{v} = {c}] g: g at {v} = {c}")
                rest = s.limits[:k] + s.limits[k + 1 :]
                return sp.Sum(body, *rest) if rest else body
        return s

    out = sp.sympify(e)
    while True:  # one delta per pass, innermost Sums first (replace is bottom-up)
        new = out.replace(lambda x: isinstance(x, sp.Sum), rw)
        if new == out:
            return out
        out = new


def _row_functions(total: Any, signs: Signs) -> list[tuple[Callable[[Any], Any], Any]]:
    """Ways to read ``total`` as ``Sum_{w<m} y(w)``: each of its terms ``c Sum(body, limits)`` (c free
    of the bound variables) sums over one limit ``(v, 0, m - 1)`` with the same m >= 1; y(w) is the
    sum of the terms with v := w and that limit dropped."""
    terms = sp.Add.make_args(total)
    pieces = []
    for t in terms:
        sums = [f for f in sp.Mul.make_args(t) if isinstance(f, sp.Sum)]
        if len(sums) != 1:
            return []
        pieces.append((sp.Mul(*(f for f in sp.Mul.make_args(t) if f is not sums[0])), sums[0]))
    first = pieces[0][1]
    out: list[tuple[Callable[[Any], Any], Any]] = []
    for _, lo0, hi0 in first.limits:
        m = sp.expand(hi0 + 1)
        if lo0 != 0 or not signs.positive(m):
            continue
        chosen = []
        for coeff, s in pieces:
            lim = [lim for lim in s.limits if lim[1] == 0 and sp.expand(lim[2] + 1 - m) == 0]
            if not lim:
                break
            v = lim[0][0]
            if any(v in (a.free_symbols | b.free_symbols) for _, a, b in s.limits):
                break
            chosen.append((coeff, s, v))
        else:

            def y(w: Any, chosen: list[tuple[Any, Any, Any]] = chosen) -> Any:
                parts = []
                for coeff, s, v in chosen:
                    rest = [lim for lim in s.limits if lim[0] != v]
                    body = s.function.xreplace({v: w})
                    parts.append(coeff * (sp.Sum(body, *rest) if rest else body))
                return sp.Add(*parts)

            out.append((y, m))
    return out


def row_variance_nonnegative(var: Any, signs: Signs, steps: list[str] | None = None) -> bool:
    """``var >= 0``: for a square ``S^2`` in var (S a row total, :func:`_row_functions`), the Sum
    normal form shows ``var = (1/m) Sum_{w<m} (y(w) - S/m)^2``."""
    squares = [p.base for p in sp.sympify(var).atoms(sp.Pow) if p.exp == 2 and p.base.has(sp.Sum)]
    for total in squares:
        for y, m in _row_functions(total, signs):
            w = fresh_bound(var, total)  # not a Dummy: the same square each time (its normal form kept)
            square = sp.Sum((y(w) - total / m) ** 2, (w, 0, m - 1)) / m
            same = same_normal_form(var, square)
            if same:
                if steps is not None:
                    steps.append(f"variance {sp.sstr(var)[:60]}... is a mean of squares over a row of {m} (>= 0)")
                return True
    return False


__all__ = ["row_variance_nonnegative", "split_terms", "sum_deltas", "within_range"]
