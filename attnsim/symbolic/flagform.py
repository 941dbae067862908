"""Products of 0/1 flags in one form: ``[c]^k = [c]``, ``[b > a] = [a < b]`` and
``[a and b] = [a] [b]``.

A flag is ``Ite(c, 1, 0)`` (:mod:`attnsim.symbolic.ite`), 0 or 1, so a positive power of it is
itself and two flags of one condition are one flag; a condition is read the same written either way
round (``b > a`` is ``a < b``, ``b >= a`` is ``a <= b``).  U's value and a statement then agree
on their flags when they guard by the same conditions, however often and in whichever direction:
e.g. the output stage's ``[e < d]`` from the cut's guard and ``[d > e]`` from U's column mask.
Both rewrites are identities of real numbers, applied everywhere (inside sums too: pointwise).
A flag of a conjunction is the product of its conjuncts' flags (:func:`split_conjunctions`: a
product of 0/1 values is 1 iff each is), so a Kronecker delta inside U's indicator
``[h = 0 and h2 = 0]`` is a factor a sum can sum out (:func:`attnsim.symbolic.sumsplit.sum_deltas`).
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from attnsim.symbolic.ite import Ite


def canonical_relations(e: Any) -> Any:
    """Every ``b > a`` as ``a < b`` and ``b >= a`` as ``a <= b`` (the same condition)."""
    return sp.sympify(e).replace(
        lambda x: isinstance(x, (sp.StrictGreaterThan, sp.GreaterThan)),
        lambda x: (
            sp.Lt(x.rhs, x.lhs, evaluate=False)
            if isinstance(x, sp.StrictGreaterThan)
            else sp.Le(x.rhs, x.lhs, evaluate=False)
        ),
    )


def flag_condition(f: Any) -> Any:
    """The condition of a flag or of a positive integer power of one, else None."""
    if isinstance(f, sp.Pow) and f.exp.is_Integer and f.exp > 0:
        f = f.base
    if isinstance(f, Ite) and f.args[1] == 1 and f.args[2] == 0:
        return f.args[0]
    return None


def split_conjunctions(e: Any) -> Any:
    """Every flag ``Ite(a & b & ..., 1, 0)`` as ``Ite(a, 1, 0) Ite(b, 1, 0) ...``."""
    return sp.sympify(e).replace(
        lambda x: isinstance(x, Ite) and x.args[1] == 1 and x.args[2] == 0 and isinstance(x.args[0], sp.And),
        lambda x: sp.Mul(*(Ite(c, sp.Integer(1), sp.Integer(0)) for c in x.args[0].args)),
    )


def merge_flags(e: Any) -> Any:
    """``e`` with its relations canonical (:func:`canonical_relations`) and in every product the flags
    of one condition merged into one flag (``[c]^j [c]^k = [c]``), bottom-up."""

    def rw(x: Any) -> Any:
        seen: set[Any] = set()
        kept = []
        for f in sp.Mul.make_args(x):
            c = flag_condition(f)
            if c is None:
                kept.append(f)
            elif c not in seen:
                seen.add(c)
                kept.append(Ite(c, sp.Integer(1), sp.Integer(0)))
        return sp.Mul(*kept)

    out = canonical_relations(e)
    out = out.replace(lambda x: isinstance(x, sp.Pow) and flag_condition(x) is not None, lambda x: x.base)
    return out.replace(lambda x: isinstance(x, sp.Mul), rw)


__all__ = ["canonical_relations", "flag_condition", "merge_flags", "split_conjunctions"]
