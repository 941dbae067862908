"""Truncation of U's sums from a capacity to a true size (the layer executor's sums).

**Truncation.**  A sum over an axis of capacity C (``l < C``) whose every term carries the guard
flag ``l < t`` of the true size t of that axis equals the sum over ``l < t`` without the flag
(the terms with ``t <= l < C`` are 0; flags are 0/1, so a flag's power is the flag).  It is
applied only when the bound is literally the capacity matching t; else the sum is kept as it is
and the comparison fails (reported, never assumed).

**The last term.**  A sum over ``lo <= v <= hi`` (hi >= lo, shown from the sizes' signs) whose
body compares v with hi (``v < hi``, ``v = hi``, ``v >= hi`` ...; v bound nowhere inside) is
``Sum_{v=lo}^{hi-1} f(v) + f(hi)``: on the first part each such comparison has one truth value
(v - hi <= -1) and is replaced by it (:func:`below_last`), the guard flags every term of an inner
sum carries are then moved out of it (a factor free of a sum's variable: :func:`hoist_all`), and
the first part is truncated as above; f(hi) evaluates the comparisons.  So U's sum over l < D + 1
(the appended column l = D) becomes the sum over l < d plus the bias term.

**Split sums.**  A sum left at a capacity because its terms are guarded differently is split into
its terms, its Kronecker deltas summed out and each piece truncated again
(:meth:`Truncation.retruncate`, :mod:`attnsim.symbolic.sumsplit`; docs/semantics.md).
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from attnsim.symbolic.sumsplit import split_terms, sum_deltas
from attnsim.universal.layerproof.encoder_spec import SIZE
from attnsim.universal.layerproof.flags import flag_condition, flags_of
from attnsim.universal.layerproof.frame import FrameExecutor


def hoist(s: Any) -> Any:
    """``Sum(g f)`` -> ``g Sum(f)`` for the guard flags g free of the bound variable that every term
    carries (a factor free of the summation variable moves out of a finite sum; g^p = g)."""
    if not isinstance(s, sp.Sum) or len(s.limits) != 1:
        return s
    v = s.limits[0][0]
    terms = sp.Add.make_args(sp.expand(s.function))
    common = set.intersection(*(flags_of(t) for t in terms))
    common = {g for g in common if v not in g.free_symbols}
    if not common:
        return s
    strip = lambda t: sp.Mul(
        *(f for f in sp.Mul.make_args(t) if (f.base if isinstance(f, sp.Pow) else f) not in common)
    )
    return sp.Mul(*common) * sp.Sum(sp.Add(*(strip(t) for t in terms)), s.limits[0])


def hoist_all(e: Any) -> Any:
    """``e`` with :func:`hoist` applied to every sum, innermost first (each limit of a multiple
    sum a sum of its own): guard flags every term of a sum carries move out of it."""
    if isinstance(e, sp.Sum):
        acc = hoist_all(e.function)
        for lim in e.limits:  # innermost first
            acc = hoist(sp.Sum(acc, lim))
        return acc
    if not getattr(e, "args", ()) or isinstance(e, (sp.Indexed, sp.Symbol)):
        return e
    return e.func(*(hoist_all(a) for a in e.args))


def below_last(r: Any, v: Any, hi: Any) -> Any:
    """The truth value of the comparison ``r`` for every v <= hi - 1, when r compares v with hi
    (``r.lhs - r.rhs`` is ``v - hi``, < 0 there, or ``hi - v``, > 0 there); else None."""
    delta = sp.expand(r.lhs - r.rhs)
    if delta == sp.expand(v - hi):
        negative = True
    elif delta == sp.expand(hi - v):
        negative = False
    else:
        return None
    truth = {
        sp.StrictLessThan: negative,
        sp.LessThan: negative,
        sp.StrictGreaterThan: not negative,
        sp.GreaterThan: not negative,
        sp.Equality: False,
        sp.Unequality: True,
    }
    t = truth.get(type(r))
    return None if t is None else sp.true if t else sp.false


class Truncation(FrameExecutor):
    """The layer executor's truncation of sums (a mixin of
    :class:`~attnsim.universal.layerproof.executor.LayerExecutor`, whose field ``capacity`` it reads)."""

    capacity: dict[str, Any]  # true size name -> its capacity (SymPy)

    def at_capacity(self, s: Any) -> bool:
        """A Sum with a limit over a whole capacity [0, C) (not yet cut to a true size)."""
        caps = [sp.expand(c) for c in self.capacity.values()]
        return any(lo == 0 and any(sp.expand(hi + 1 - c) == 0 for c in caps) for _, lo, hi in s.limits)

    def retruncate(self, e: Any) -> Any:
        """A sum left at a capacity because its terms carry different guards: split into its terms
        (:func:`split_terms`), the Kronecker deltas summed out (:func:`sum_deltas`), and each piece
        truncated again (:meth:`truncate`).  E.g. U's ``sum_{e, f} ([f = 0] c2(e) + act(f) w2[e, f])``:
        the first term is ``sum_e c2(e)``, the second ``sum_{f < f} ...``."""
        sums = [x for x in sp.sympify(e).atoms(sp.Sum) if self.at_capacity(x)]
        if not sums:
            return e
        split = sp.sympify(e).replace(lambda x: isinstance(x, sp.Sum) and self.at_capacity(x), split_terms)
        summed = sum_deltas(split, self.signs, self.steps)
        return summed.replace(lambda x: isinstance(x, sp.Sum) and self.at_capacity(x), self.truncate)

    def truncate(self, s: Any) -> Any:
        """Each limit of the Sum cut from a capacity to the true size every term is guarded by."""
        if not isinstance(s, sp.Sum):
            return s
        body = s.function
        for v, lo, hi in s.limits:  # innermost first
            split = self._split_last(body, v, lo, hi)
            if split is None:
                body = hoist(self._truncate_one(body, v, lo, hi))
            else:
                head, last = split
                body = hoist(self._truncate_one(head, v, lo, hi - 1)) + last
        return body

    def _split_last(self, body: Any, v: Any, lo: Any, hi: Any) -> tuple[Any, Any] | None:
        """``Sum_{v=lo}^{hi} f(v) = Sum_{v=lo}^{hi-1} f(v) + f(hi)`` (hi >= lo, shown from the
        sizes' signs) when some condition in f compares v with hi (``v < hi``, ``v = hi``, ...):
        such a condition is decided on v <= hi - 1 and substituted in the first sum (whose inner
        sums then have their common guard flags hoisted, so the first sum can be truncated), and
        f(hi) decides it by evaluation.  Returns (first sum's body, f(hi)); None when no
        condition compares v with hi or hi >= lo is not shown."""
        body = sp.sympify(body)
        rels = body.atoms(sp.core.relational.Relational)
        decided = {r: t for r in rels if (t := below_last(r, v, hi)) is not None}
        if not decided or not self.signs.positive(sp.expand(hi - lo + 1)):
            return None
        if any(v in {lim[0] for lim in s.limits} for s in body.atoms(sp.Sum)):
            return None  # v is also bound inside: its conditions there are not about this sum's v
        head = hoist_all(body.xreplace(decided))
        last = body.xreplace({v: hi})
        self.steps.append(f"sum over {v} <= {hi}: its last term {v} = {hi} split off")
        return head, last

    def _truncate_one(self, body: Any, v: Any, lo: Any, hi: Any) -> Any:
        terms = sp.Add.make_args(sp.expand(body))
        cut: Any = None
        kept = []
        for term in terms:
            factors = list(sp.Mul.make_args(term))
            mine = [
                f
                for f in factors
                if (g := flag_condition(f)) is not None and isinstance(g, sp.StrictLessThan) and g.lhs == v
            ]
            bounds = {flag_condition(f).rhs for f in mine}
            if len(bounds) != 1:
                return sp.Sum(body, (v, lo, hi))
            m = bounds.pop()
            if cut is None:
                cut = m
            if m != cut:
                return sp.Sum(body, (v, lo, hi))
            kept.append(sp.Mul(*(f for f in factors if f not in mine)))
        names = {str(m): t for t, m in SIZE.items()}
        t = names.get(str(cut))
        if t is None or lo != 0 or sp.expand(hi + 1 - self.capacity[t]) != 0:
            return sp.Sum(body, (v, lo, hi))
        self.steps.append(f"sum over {v} < {hi + 1} truncated to {v} < {cut} (every term guarded)")
        inside = {sp.Lt(v, cut): sp.true, sp.Gt(cut, v): sp.true}  # true on the range 0 <= v < cut
        return sp.Sum(sp.Add(*kept).xreplace(inside), (v, 0, cut - 1))


__all__ = ["Truncation", "below_last", "hoist", "hoist_all"]
