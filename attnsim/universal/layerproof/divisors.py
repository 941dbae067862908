"""Positivity and finiteness of U's values in the layer proof: every divisor shown > 0.

**Positivity** of the LayerNorm divisor ``sqrt(var + eps)``: U computes var as
``E[x^2] - E[x]^2``.  It is shown >= 0 by proving, in the Sum normal form, that it equals
``(1/m) Sum_{l<m} (x_l - E[x])^2`` (a mean of squares of reals, m >= 1), so var + eps > 0 with
eps > 0.  A row held as several sums (R = sum_h O_h + c) is read off its squared total
(:func:`~attnsim.symbolic.sumsplit.row_variance_nonnegative`).  A variance every term of which
carries a 0/1 guard flag g is g times a mean of squares, >= 0.  ReLU and GELU:
:mod:`attnsim.universal.layerproof.activation`.

**Premises and positivity of a softmax denominator.**  A :class:`RowWitness` is a premise of the
domain, stated in the Outcome: every row r < t has a key v < t' with ``holds(r, v)`` (every query has
an unblocked key).  Under it ``Sum_{v=0}^{hi} [c_1] ... [c_m] p`` (p a product of positive factors,
hi + 1 the true size or its capacity) is > 0 when every c_i holds at such a key of a row r the stage
takes below t: every term is >= 0 and that key's term is > 0.

**Finiteness.**  With ``spec_flags`` the statement's ``Ite(c, a, 0)`` becomes ``[c] a`` only where a
is shown finite (:meth:`Positivity.finite`: e.g. ``1 / D`` with D shown > 0).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sympy as sp

from attnsim.symbolic.if_then_else import Ite
from attnsim.symbolic.positivity import Signs
from attnsim.symbolic.sums import fresh_bound, same_normal_form
from attnsim.symbolic.sumsplit import row_variance_nonnegative
from attnsim.universal.layerproof.cut import reads_padding
from attnsim.universal.layerproof.encoder_spec import EPS, SIZE
from attnsim.universal.layerproof.flags import assuming, flag, flag_condition, flags_of
from attnsim.universal.layerproof.frame import FrameExecutor
from attnsim.universal.record import TRUE


@dataclass(frozen=True)
class RowWitness:
    """A premise of the domain, stated in the Outcome of every proof that uses it: every row
    ``r < rows`` has a key ``v < keys`` with ``holds(r, v)`` (rows, keys: true sizes; ``holds`` a
    SymPy condition).  E.g. every query row has an unblocked key (``AttentionMask`` enforces it)."""

    text: str
    rows: str
    keys: str
    holds: Callable[[Any, Any], Any]
    sample: tuple[tuple[str, int], ...] = ()  # operand values at which the premise holds (counterexamples)


class Positivity(FrameExecutor):
    """The layer executor's positivity and finiteness (a mixin of
    :class:`~attnsim.universal.layerproof.executor.LayerExecutor`, whose fields below it reads)."""

    capacity: dict[str, Any]  # true size name -> its capacity (SymPy)
    below: dict[str, str]  # entry coordinate -> the true size it is below
    witnesses: tuple[RowWitness, ...]  # premises of the domain (see witnessed_sum)
    padding_reads: int  # reads of a cut's proven padding values by a variance

    @property
    def signs(self) -> Signs:
        base = super().signs
        return Signs({**base.sizes, **dict.fromkeys(TRUE, 1)}, dict(base.scalars))

    def positive(self, e: sp.Expr) -> bool:
        if super().positive(e):
            return True
        if isinstance(e, sp.Pow) and e.exp.is_real:
            return self.positive(e.base)
        if isinstance(e, sp.Add) and EPS in e.args:
            var = e - EPS
            if self.nonnegative_variance(var) or self.flagged_nonnegative_variance(var):
                return True
            if row_variance_nonnegative(var, self.signs, self.steps):
                self.padding_reads += int(reads_padding(var))
                return True
            return False
        if isinstance(e, sp.Sum) and self.witnessed_sum(e):
            return True
        return False

    def witnessed_sum(self, s: sp.Sum) -> bool:
        """``Sum_{v=0}^{hi} [c_1(v)] ... [c_m(v)] p(v) > 0`` (0/1 flags times p, a product of factors
        each > 0) when a premise (:class:`RowWitness`) gives a key v* < keys with ``holds(r, v*)``, for
        a row r (an entry coordinate taken below the premise's rows, or 0) such that each c_i(v*)
        holds (:meth:`implied`), and the range contains [0, keys): every term is >= 0 and the term
        of v* is p(v*) > 0."""
        if len(s.limits) != 1:
            return False
        v, lo, hi = s.limits[0]
        factors = [
            f.base if isinstance(f, sp.Pow) and flag_condition(f) is not None else f
            for f in sp.Mul.make_args(s.function)
        ]
        conds = {flag_condition(f) for f in factors if flag_condition(f) is not None}
        rest = [f for f in factors if flag_condition(f) is None]
        if not conds or lo != 0 or not all(self.positive(f) for f in rest):
            return False
        for w in self.witnesses:
            t = SIZE[w.keys]
            if sp.expand(hi + 1 - t) != 0 and sp.expand(hi + 1 - self.capacity.get(w.keys, t)) != 0:
                continue  # the range is neither [0, keys) nor [0, capacity) (keys <= capacity)
            rows = [sp.Integer(0)] + [sp.Symbol(c, integer=True) for c, b in self.below.items() if b == w.rows]
            for r in rows:
                if all(self.implied(c, v, t, w.holds(r, v)) for c in conds):
                    self.steps.append(f"{sp.sstr(s)[:60]}... > 0: a key of row {r} passes ({w.text})")
                    return True
        return False

    def implied(self, cond: Any, v: Any, t: Any, holds: Any) -> bool:
        """``cond`` holds at every v with ``v < t`` and ``holds``: it is literally true once those two
        are (:func:`assuming`); or it is ``v < m`` with m >= t by the domain's signs; or an
        (in)equality ``a ~ b`` with ``a - b = +-(x - y)`` for ``holds`` = ``x ~ y`` (same relation)."""
        c = assuming(cond, {sp.Lt(v, t): sp.true, holds: sp.true})
        if c == sp.true:
            return True
        if isinstance(c, sp.StrictLessThan) and c.lhs == v:
            return self.signs.signed(c.rhs - t).is_nonnegative is True
        if isinstance(c, (sp.Eq, sp.Ne)) and type(c) is type(holds):
            a, b = sp.expand(c.lhs - c.rhs), sp.expand(holds.lhs - holds.rhs)
            return sp.expand(a - b) == 0 or sp.expand(a + b) == 0
        return False

    def finite(self, e: Any) -> bool:
        """A sound, syntactic test that ``e`` is a finite real wherever its symbols are in the
        domain: operands, sizes, opaque functions (reals), exp, erf, tanh, |x|, sums, products, finite
        sums and Ite of finite values, integer powers >= 0, and other powers of a base shown > 0
        (:meth:`positive`).  Anything else (MaxOver, -oo, ...) is not shown finite."""
        if isinstance(e, (sp.Indexed, sp.Symbol)) or (e.is_number and e.is_finite):
            return True
        if isinstance(e, sp.core.function.AppliedUndef):
            return all(self.finite(a) for a in e.args)
        if isinstance(e, (sp.Add, sp.Mul, sp.exp, sp.erf, sp.tanh, sp.Abs)):
            return all(self.finite(a) for a in e.args)
        if isinstance(e, sp.Pow):
            if e.exp.is_Integer and e.exp >= 0:
                return self.finite(e.base)
            return self.finite(e.base) and self.finite(e.exp) and self.positive(e.base)
        if isinstance(e, Ite):
            return self.finite(e.args[1]) and self.finite(e.args[2])
        if isinstance(e, sp.Sum):
            return self.finite(e.function)
        return False

    def as_flags_where_finite(self, e: Any) -> Any:
        """Every ``Ite(c, a, 0)`` as ``[c] a`` and ``Ite(c, 0, b)`` as ``[not c] b`` (bottom-up), only
        where the branch that becomes a factor is shown finite (:meth:`finite`): then ``0 x = 0``
        holds where c picks the other branch.  (The spec's ``Ite(blocked, 0, 1 / D)`` has D > 0 by
        :meth:`witnessed_sum`.)"""

        def rw(x: Any) -> Any:
            c, a, b = x.args
            if b == 0 and a != 1 and self.finite(a):
                return flag(c) * a
            if a == 0 and self.finite(b):
                return flag(sp.Not(c)) * b
            return x

        return sp.sympify(e).replace(lambda x: isinstance(x, Ite), rw)

    def nonnegative_variance(self, var: Any) -> bool:
        """``var`` = (1/m) Sum_{l<m} (y_l - mean)^2 by the normal form, for a Sum of y and of y^2 in it."""
        sums = [s for s in var.atoms(sp.Sum) if len(s.limits) == 1]
        for s in sums:
            v, lo, hi = s.limits[0]
            m = hi - lo + 1
            if not self.signs.positive(sp.expand(m)):
                continue
            y = s.function
            w = fresh_bound(var)  # not a Dummy: the same square each time (its normal form kept)
            mean = s / m
            square = sp.Sum((y.xreplace({v: w}) - mean) ** 2, (w, lo, hi)) / m
            same = same_normal_form(var, square)
            if same:
                self.steps.append(f"variance {sp.sstr(var)[:60]}... is a mean of squares (>= 0)")
                return True
        return False

    def flagged_nonnegative_variance(self, var: Any) -> bool:
        """``var`` = g v with g the 0/1 guard flags every term of ``var`` carries (``g^p = g``) and v
        a mean of squares (:meth:`nonnegative_variance`): g >= 0 and v >= 0 give var >= 0.  (A row
        past its true size is read with its guard flag: E[x^2] and E[x]^2 of a padded row.)"""
        terms = sp.Add.make_args(sp.expand(var))
        common = set.intersection(*(flags_of(t) for t in terms))
        if not common:
            return False
        bare = sp.Add(
            *(
                sp.Mul(*(f for f in sp.Mul.make_args(t) if (f.base if isinstance(f, sp.Pow) else f) not in common))
                for t in terms
            )
        )
        return self.nonnegative_variance(bare)


__all__ = ["Positivity", "RowWitness"]
