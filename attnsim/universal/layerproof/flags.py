"""Products of 0/1 flags in one form: ``[c]^k = [c]``, ``[b > a] = [a < b]`` and
``[a and b] = [a] [b]``.

A flag is ``Ite(c, 1, 0)`` (:mod:`attnsim.symbolic.if_then_else`), 0 or 1, so a positive power of it is
itself and two flags of one condition are one flag; a condition is read the same written either way
round (``b > a`` is ``a < b``, ``b >= a`` is ``a <= b``).  U's value and a statement then agree
on their flags when they guard by the same conditions, however often and in whichever direction:
e.g. the output stage's ``[e < d]`` from the cut's guard and ``[d > e]`` from U's column mask.
Both rewrites are identities of real numbers, applied everywhere (inside sums too: pointwise).
A flag of a conjunction is the product of its conjuncts' flags (:func:`split_conjunctions`: a
product of 0/1 values is 1 iff each is), so a Kronecker delta inside U's indicator
``[h = 0 and h2 = 0]`` is a factor a sum can sum out (:func:`attnsim.symbolic.sumsplit.sum_deltas`).

**The flag form of U's value.**  ``where(c, x, 0)`` on a data flag is ``[c != 0] x``, one 0/1 flag
per factor of c, each factor read with the other flag factors' conditions true (where one is false
the product is 0: :func:`nonzero_flags`).  In the flag form of U's value (:func:`flag_form`,
``StageProofOptions(flags=True)``) an ``Ite(c, a, 0)`` is ``[c] a`` (:func:`as_flags`) and a product's
factors are read with its flags' conditions true, ``[c] x = [c] x|_{c = true}``
(:func:`absorb_flags`: x is defined everywhere, both sides are 0 where c is false; never inside a
Sum or max that binds a symbol of c: :func:`assuming`).
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from attnsim.symbolic.if_then_else import Ite
from attnsim.symbolic.maxover import MaxOver


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


def flag(cond: Any) -> Any:
    """The 0/1 guard ``Ite(cond, 1, 0)``."""
    return Ite(cond, sp.Integer(1), sp.Integer(0))


def flags_of(term: Any) -> set[Any]:
    """The 0/1 flags among the factors of a product ``term`` (a power of a flag as the flag)."""
    return {f.base if isinstance(f, sp.Pow) else f for f in sp.Mul.make_args(term) if flag_condition(f) is not None}


def nonzero_flags(c: Any) -> Any:
    """``[c != 0]`` as a product of 0/1 flags, one per factor of ``c`` (a product is non-zero iff
    every factor is): a flag factor is its own indicator; ``1 - x`` gives ``[x != 1]``.  The other
    factors are read with the flag factors' conditions true (:func:`assuming`: where one is false
    the product is 0 either way)."""
    out: Any = sp.Integer(1)
    given = {g: sp.true for f in sp.Mul.make_args(c) if (g := flag_condition(f)) is not None}
    for f in sp.Mul.make_args(c):
        if flag_condition(f) is None:
            f = assuming(f, given)
        if flag_condition(f) is not None:
            out *= flag(flag_condition(f))
        elif isinstance(x := sp.expand(1 - f), sp.Indexed):
            out *= flag(sp.Ne(x, 1))
        else:
            out *= flag(sp.Ne(f, 0))
    return out


def assuming(e: Any, truths: dict[Any, Any]) -> Any:
    """``e`` with each condition of ``truths`` replaced by its truth value, except inside a Sum or
    MaxOver that binds a symbol of that condition (its occurrences there are another variable's)."""
    if not truths:
        return e
    if e in truths:
        return truths[e]
    if isinstance(e, (sp.Sum, MaxOver)):
        bound = {lim[0] for lim in e.limits}
        inner = {c: t for c, t in truths.items() if not (c.free_symbols & bound)}
        return e.func(assuming(e.function, inner), *e.limits)
    if not e.args or isinstance(e, (sp.Indexed, sp.Symbol)):
        return e
    return e.func(*(assuming(a, truths) for a in e.args))


def absorb_flags(e: Any) -> Any:
    """In every product, the factors other than a 0/1 flag ``[c]`` read with c true (bottom-up):
    ``[c] x = [c] x|_{c = true}`` for a value x defined wherever its symbols are in the domain (where c
    is false both sides are 0, where c is true the two x are one value).  U's values are (every
    divisor proven positive; a stage that reads a max over a data-selected key set states the
    premise that makes it finite).  E.g. ``[h < hh] exp(Ite(h < hh, s, pad))`` = ``[h < hh] exp(s)``."""

    def rw(x: Any) -> Any:
        factors = sp.Mul.make_args(x)
        truths = {g: sp.true for f in factors if (g := flag_condition(f)) is not None}
        if not truths:
            return x
        return sp.Mul(*(f if flag_condition(f) is not None else assuming(f, truths) for f in factors))

    return sp.sympify(e).replace(lambda x: isinstance(x, sp.Mul), rw)


def as_flags(e: Any) -> Any:
    """Every ``Ite(c, a, 0)`` as ``[c] a`` and ``Ite(c, 0, b)`` as ``[not c] b`` (real a, b: the
    same value), bottom-up."""

    def rw(x: Any) -> Any:
        c, a, b = x.args
        if b == 0 and not (a == 1):
            return flag(c) * a
        if a == 0:
            return flag(sp.Not(c)) * b
        return x

    return sp.sympify(e).replace(lambda x: isinstance(x, Ite), rw)


def flag_form(e: Any) -> Any:
    """``e`` in its 0/1-flag form: :func:`as_flags`, then :func:`absorb_flags`, then :func:`merge_flags`."""
    return merge_flags(absorb_flags(as_flags(e)))


__all__ = [
    "absorb_flags",
    "as_flags",
    "assuming",
    "canonical_relations",
    "flag",
    "flag_condition",
    "flag_form",
    "flags_of",
    "merge_flags",
    "nonzero_flags",
    "split_conjunctions",
]
