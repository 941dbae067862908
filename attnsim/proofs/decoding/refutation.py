"""A Z3 model or a sample point checked on the original formulas: does it refute the claim?

``_violates`` re-evaluates a model of a rewritten case on the unrewritten goal and assumptions
(the prover reports a counterexample only when the model really violates them: a wrong rewrite
shows up as "does not violate", never as a refutation); :func:`refuted_at` says, without Z3, that
a goal false at a point of its premises cannot be proven (the layer proof's executor skips Z3 for
it).  Neither ever proves anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from attnsim.proofs.decoding.query import _sizes_of
from attnsim.rasp import expr as E


def _violates(goal: E.Expr, assumptions: Sequence[E.Expr], vals: Mapping[str, int]) -> bool | None:
    """True when the values make an assumption undefined or the goal false or undefined (a divisor
    <= 0 is a violation: the claim cannot hold where its terms do not exist); None if unbound."""
    try:
        if not all(int(a.evaluate(vals)) for a in assumptions):
            return False
    except ZeroDivisionError:
        return True
    except E.ExprError as exc:
        return True if "non-positive" in str(exc) else None
    try:
        return not int(goal.evaluate(vals))
    except ZeroDivisionError:
        return True
    except E.ExprError as exc:
        return True if "non-positive" in str(exc) else None


def refuted_at(
    goal: E.Expr,
    assumptions: Sequence[E.Expr],
    coords: Mapping[str, E.Expr],
    minimum: Mapping[str, int],
    env: Mapping[str, int],
) -> bool:
    """True when ``env`` is a point of the premises of :func:`prove` without ``decode`` (every size
    at least its minimum, every coordinate in [0, extent), every assumption defined and true) at
    which ``goal`` is defined and false.  Then ``prove(goal, assumptions, coords=coords,
    minimum=minimum)`` cannot answer proven (its query, premises and not goal, is satisfied there),
    so a caller that only asks whether the goal is proven need not ask Z3.  False otherwise (a
    variable unbound, a divisor < 1, a premise false, or the goal true at ``env``): no conclusion."""
    try:
        for s in _sizes_of(goal, *assumptions, *coords.values()):
            if s not in env or int(env[s]) < minimum.get(s, 1):
                return False
        for c, ext in coords.items():
            if c not in env or not 0 <= int(env[c]) < int(ext.evaluate(env)):
                return False
        if not all(int(a.evaluate(env)) for a in assumptions):
            return False
        return not int(goal.evaluate(env))
    except (E.ExprError, ZeroDivisionError, KeyError, TypeError, ValueError, OverflowError):
        return False


__all__ = ["refuted_at"]
