"""Sums over padded axes whose terms are guarded differently, and U's 0/1 position indicators.

U adds terms of different kinds in one sum: R[i, e] = sum_{h<H} (O[h, i, e] + [h = 0] c[i, e]) holds
the head outputs (0 past the true head count hh, each carrying the guard flag [h < hh] of the
attention stage's cut) and, once, the residual terms (picked by the indicator [h = 0]).  Two rules
reduce such a sum to the spec's sums, each an identity of finite sums ``Sum_{v=lo}^{hi} f(v)``:

* **term-wise truncation** (linearity, then truncation term by term): the body is expanded and
  each term summed on its own; a term carrying the guard flag ``[v < t]`` (t a true size whose
  capacity is hi + 1, lo = 0) is summed over ``v < t`` without the flag (its terms past t are 0),
  its flags free of v moved out (constant factors); any other term keeps the full range;
* **Kronecker delta**: ``Sum_{v=lo}^{hi} [v = a] g(v) = g(a)`` when a is free of v and
  lo <= a <= hi (shown by the domain's signs: sizes >= 1), the one non-zero term; a term whose a is
  not shown in the range keeps its sum.

**Indicators.**  An index value ``If(c_1 and ... and c_m, x, y)`` (an indicator: inside the grid
and a test on a coordinate) at a position where Z3 proves some conjuncts is the same value with
those conjuncts dropped (one false conjunct: y); a 0/1 flag of a conjunction is the product of its
conjuncts' flags, ``[a and b] = [a] [b]``.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from attnsim.rasp import expr as E
from attnsim.symbolic.ite import Ite


def _guard(f: Any) -> Any:
    """The condition of a 0/1 flag ``Ite(c, 1, 0)`` or of its positive integer power, else None."""
    if isinstance(f, sp.Pow) and f.exp.is_Integer and f.exp > 0:
        f = f.base
    if isinstance(f, Ite) and f.args[1] == 1 and f.args[2] == 0:
        return f.args[0]
    return None


def _flag(c: Any) -> Any:
    return Ite(c, sp.Integer(1), sp.Integer(0))


def split_conjunction_flags(e: Any) -> Any:
    """Every flag ``Ite(a & b & ..., 1, 0)`` as ``Ite(a, 1, 0) Ite(b, 1, 0) ...`` (a product of 0/1
    values is 1 iff each is)."""

    def rw(x: Any) -> Any:
        return sp.Mul(*(_flag(c) for c in x.args[0].args))

    return sp.sympify(e).replace(
        lambda x: isinstance(x, Ite) and x.args[1] == 1 and x.args[2] == 0 and isinstance(x.args[0], sp.And), rw
    )


def decided_conjuncts(ex: Any, ix: E.Expr) -> E.Expr:
    """``ix`` with every ``If(c, a, b)`` whose condition is a conjunction read through ``ex.decide``:
    the conjuncts Z3 proves at the executor's position dropped, ``b`` when one is proven false,
    ``a`` when all are proven."""
    if isinstance(ix, E.If):
        a, b = decided_conjuncts(ex, ix.a), decided_conjuncts(ex, ix.b)
        cond = ix.cond
        if isinstance(cond, E.BinOp) and cond.op == "and":
            cond = ex.decide(cond)
            if isinstance(cond, E.Const):
                return a if cond.value else b
        return E.If(cond, a, b)
    if isinstance(ix, E.BinOp):
        return E.BinOp(ix.op, decided_conjuncts(ex, ix.a), decided_conjuncts(ex, ix.b))
    if isinstance(ix, E.Not):
        return E.Not(decided_conjuncts(ex, ix.a))
    return ix


def _size_facts(sizes: dict[str, Any]) -> dict[Any, Any]:
    """0 < t is true for every true size t (each is >= 1)."""
    out: dict[Any, Any] = {}
    for s in sizes.values():
        out[sp.Lt(0, s)] = sp.true
        out[sp.Gt(s, 0)] = sp.true
    return out


def _in_range(a: Any, lo: Any, hi: Any, signs: Any) -> bool:
    """lo <= a <= hi for every admissible value of the symbols (sizes >= 1, coordinates >= 0)."""
    return (
        signs.signed(sp.expand(a - lo)).is_nonnegative is True
        and signs.signed(sp.expand(hi - a)).is_nonnegative is True
    )


def distribute(e: Any) -> Any:
    """Every Sum factor of ``e`` split term by term (linearity), each term's 0/1 flags free of the
    sum's bound variables moved out (constant factors): so a flag on an outer variable is seen."""

    def split(s: Any) -> Any:
        bound = {lim[0] for lim in s.limits}
        out: Any = sp.Integer(0)
        for term in sp.Add.make_args(sp.expand(s.function)):
            outside: list[Any] = []
            inner: list[Any] = []
            for f in sp.Mul.make_args(term):
                (outside if _guard(f) is not None and not (f.free_symbols & bound) else inner).append(f)
            out += sp.Mul(*outside) * sp.Sum(sp.Mul(*inner), *s.limits)
        return out

    return sp.sympify(e).replace(lambda x: isinstance(x, sp.Sum), split)


def termwise(
    body: Any, v: Any, lo: Any, hi: Any, sizes: dict[str, Any], capacity: dict[str, Any], signs: Any
) -> tuple[Any, list[str]] | None:
    """``Sum_{v=lo}^{hi} body`` by term-wise truncation and the Kronecker delta (module docstring):
    the result and the steps taken, or None when no term is truncated or reduced (the caller keeps
    its sum)."""
    names = {s: t for t, s in sizes.items()}
    groups: dict[Any, list[Any]] = {}  # the true size a term is truncated to (None: the full range)
    reduced: list[Any] = []
    steps: list[str] = []
    for term in sp.Add.make_args(sp.expand(distribute(body))):
        factors = list(sp.Mul.make_args(term))
        mine = [f for f in factors if (g := _guard(f)) is not None and v in g.free_symbols]
        eqs = [f for f in mine if isinstance(_guard(f), sp.Eq)]
        if eqs:
            g = _guard(eqs[0])
            a = g.rhs if g.lhs == v else g.lhs if g.rhs == v else None
            if a is not None and v not in a.free_symbols and _in_range(a, lo, hi, signs):
                rest = sp.Mul(*(f for f in factors if f is not eqs[0]))
                reduced.append(rest.xreplace({v: a}).xreplace(_size_facts(sizes)))
                steps.append(f"sum over {v} of a term with [{sp.sstr(g)}]: the term at {v} = {a} (Kronecker delta)")
                continue
        lts = {_guard(f).rhs for f in mine if isinstance(_guard(f), sp.StrictLessThan) and _guard(f).lhs == v}
        bound = next(iter(lts)) if len(lts) == 1 else None
        t = names.get(bound)
        if bound is not None and t is not None and lo == 0 and sp.expand(hi + 1 - capacity[t]) == 0:
            kept = [f for f in factors if not (_guard(f) is not None and _guard(f) == sp.Lt(v, bound))]
            groups.setdefault(bound, []).append(sp.Mul(*kept))
        else:
            groups.setdefault(None, []).append(term)
    if not reduced and set(groups) <= {None}:
        return None
    total: Any = sp.Add(*reduced)
    for bound, terms in groups.items():
        top = hi if bound is None else bound - 1
        if bound is not None:
            steps.append(f"terms of the sum over {v} < {hi + 1} guarded by [{v} < {bound}] summed over {v} < {bound}")
            inside = {sp.Lt(v, bound): sp.true, sp.Gt(bound, v): sp.true}
            terms = [x.xreplace(inside) for x in terms]
        for term in terms:
            out: list[Any] = []
            inner: list[Any] = []
            for f in sp.Mul.make_args(term):
                (out if _guard(f) is not None and v not in f.free_symbols else inner).append(f)
            total += sp.Mul(*out) * sp.Sum(sp.Mul(*inner), (v, lo, top))
    return total, steps


__all__ = ["decided_conjuncts", "split_conjunction_flags", "termwise"]
