"""Counterexamples for a stage whose proof did not go through: U's value and the statement compared
at sampled points of the domain (concrete sizes and coordinates, operands fixed rationals).

This can refute a stage, never prove one: a difference at a point is a counterexample
(:func:`refuted`), else the stage is unknown ("not shown equal").  Besides the fixed points
(:data:`POINTS`), a size the difference compares with a constant c (``Ite(D > 32, ...)``: a value
that changes past a size) is sampled at c + 1, c + 2, c and c - 1 (:func:`threshold_points`), so a
bug that starts past some size is found there.  A divisor of U's value not shown > 0 is searched
past (:func:`past_divisors`): U's value is executed again with such divisors recorded, and a point
counts only where each is > 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import sympy as sp

from attnsim.proofs.obligation import Outcome
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.symbolic.execute import ExecutionFailed
from attnsim.symbolic.maxover import MaxOver
from attnsim.universal.layerproof.cut import Cut
from attnsim.universal.layerproof.divisors import RowWitness
from attnsim.universal.layerproof.encoder_spec import EPS, fix
from attnsim.universal.layerproof.executor import LayerExecutor

SAMPLE = {"N": 3, "D": 3, "H": 3, "K": 3, "F": 3, "n": 2, "d": 2, "hh": 2, "k": 2, "f": 2}
# the entry sampled; then the same entry with n = 1 and with d = 1 (row i = 1 or column e = 1 past
# its true size: a padding entry, where U must give 0); the last entry of a full capacity; the origin
ENTRY = {"h!": 1, "i!": 1, "j!": 0, "e!": 1, "f!": 0, "h2!": 1, "l!": 1, "f2!": 1, "c!": 1}
_FULL = {**SAMPLE, **{t: SAMPLE[c] for c, t in zip("NDHKF", ("n", "d", "hh", "k", "f"), strict=True)}}
_COORDS = ("h!", "i!", "j!", "e!", "f!", "h2!", "l!", "f2!", "c!")
POINTS = (
    {**SAMPLE, **ENTRY},
    {**SAMPLE, **ENTRY, "n": 1},
    {**SAMPLE, **ENTRY, "d": 1},
    {**_FULL, **dict.fromkeys(_COORDS, SAMPLE["N"] - 1)},  # every true size at the capacity, the last entry
    {**SAMPLE, **dict.fromkeys(_COORDS, 0)},  # the origin
)


_PAIRS = (("N", "n"), ("D", "d"), ("H", "hh"), ("K", "k"), ("F", "f"))  # (capacity, true size)
MAX_SAMPLED = 130  # a threshold point past this size is not sampled (its sums expand to that many terms)


def threshold_points(diff: Any) -> list[dict[str, int]]:  # noqa: C901
    """Points where a size the difference ``diff`` compares with a constant c takes c + 1, c + 2, c,
    c - 1 (each at least 3, at most :data:`MAX_SAMPLED`): once with the other sizes as sampled (a
    true size raised with it when it passes its capacity, a true size lowered to a capacity set
    below it) and once with that pair's true size equal to its capacity; each at the sampled entry,
    the origin and the entry (2, ..., 2)."""
    consts: dict[str, set[int]] = {}
    for rel in sp.sympify(diff).atoms(sp.core.relational.Relational):
        for side, other in ((rel.lhs, rel.rhs), (rel.rhs, rel.lhs)):
            if isinstance(side, sp.Symbol) and side.name in SAMPLE and other.is_Integer:
                consts.setdefault(side.name, set()).add(int(other))
    out: list[dict[str, int]] = []
    for name, cs in sorted(consts.items()):
        cap, true = next((c, t) for c, t in _PAIRS if name in (c, t))
        for c in sorted(cs):
            for v in (c + 1, c + 2, c, c - 1):
                if not 3 <= v <= MAX_SAMPLED:
                    continue
                p = {**SAMPLE, **ENTRY, name: v}
                if name == true and v > p[cap]:
                    p[cap] = v
                if name == cap and v < p[true]:
                    p[true] = v
                for q in (p, {**p, true: p[cap]}):
                    for entry in (ENTRY, dict.fromkeys(_COORDS, 0), dict.fromkeys(_COORDS, 2)):
                        r = {**q, **entry}
                        if r not in out:
                            out.append(r)
    return out


def _sample(e: Any, point: dict[str, int], fixed: Mapping[str, int] | None = None, flip: bool = False) -> Any:
    """``e`` at concrete sizes and coordinates, its sums and maxima expanded and every operand entry
    and every opaque value (a proven stage's ``name(args)``, an unknown ``pad``) a fixed
    pseudo-random rational (eps positive; ``flip``: every other one of the opposite sign), the
    operands named in ``fixed`` at their given value: one point of the domain."""
    e = sp.sympify(e).xreplace({sp.Symbol(k, integer=True): sp.Integer(v) for k, v in point.items()})
    e = e.replace(lambda x: isinstance(x, (sp.Sum, MaxOver)), lambda x: x.doit())
    rep = {}
    for x in e.atoms(sp.Indexed, sp.core.function.AppliedUndef):
        seed = sum((7 + 13 * k) * ord(ch) for k, ch in enumerate(sp.sstr(x)))
        rep[x] = sp.Rational(seed % 97 + 1, 17) * (1 if x == EPS or (seed % 2 == 1) != flip else -1)
        if isinstance(x, sp.Indexed) and str(x.base) in (fixed or {}):
            rep[x] = sp.Integer((fixed or {})[str(x.base)])
    return e.xreplace(rep)


def refuted(
    what: str,
    got: Any,
    want: Any,
    shown: str,
    fixed: Mapping[str, int] | None = None,
    divisors: tuple[Any, ...] = (),
) -> Outcome:
    """A counterexample when U's value and the statement differ at one of the sampled points
    (:data:`POINTS`: a true entry, padding entries, the last capacity entry, the origin; then the
    :func:`threshold_points` of the difference; then all of them again with the operands' signs
    flipped), else unknown, "not shown equal".  ``divisors``:
    divisors of U's value not shown > 0 (a counterexample search past them): a point counts only
    where each evaluates to a positive number (U's value there is then the expression's)."""
    problem = ""
    points = [*POINTS, *threshold_points(got - want)]
    for point, flip in [*((p, False) for p in points), *((p, True) for p in points)]:
        try:
            a, b = _sample(got, point, fixed, flip), _sample(want, point, fixed, flip)
            lows = [sp.N(_sample(x, point, fixed, flip), 50) for x in divisors]
        except (TypeError, ValueError) as exc:  # a value that does not evaluate: no counterexample
            problem = f" ({exc})"
            continue
        if not all(x.is_number and x.is_extended_real and x > 0 for x in lows):
            continue
        diff = sp.N(a - b, 50)  # exact for rational values; else 50 digits, far above any rounding here
        if diff.is_number and diff.is_extended_real and diff.is_finite and abs(diff) > sp.Float(10) ** -30:
            free = sp.sympify(got - want).free_symbols
            shown_at = [k for k in point if k in SAMPLE or sp.Symbol(k, integer=True) in free]
            where = ", ".join(f"{k} = {point[k]}" for k in shown_at)
            held = "".join(f", {k} = {v}" for k, v in (fixed or {}).items())
            opaque = sorted({str(x.func) for x in sp.sympify(got - want).atoms(sp.core.function.AppliedUndef)})
            sampled = "operands" + (f" and the opaque values {', '.join(opaque)}" if opaque else "")
            sampled += ", signs flipped," if flip else ""
            past = f"; the divisors not shown > 0 are > 0 there: {len(divisors)}" if divisors else ""
            return Outcome(
                False,
                f"{what}: counterexample at {where} ({sampled} fixed rationals{held}): U gives {a}, the spec {b}{past}",
                counterexample=tuple((k, point[k]) for k in shown_at),
            )
    told = f"{what}: U's value and the statement are not shown equal{problem}: {shown[:300]}"
    return Outcome(None, told, cause="not shown equal")


# the fields of a failed case's executor that its execution past the divisors reads as they are
_SHARED_WITH_AGAIN = (
    "sources",
    "options",
    "capacity",
    "below",
    "cuts",
    "step_cap",
    "intent_proofs",
    "witnesses",
    "above",
)


def past_divisors(
    ex: LayerExecutor,
    node: C.SOp,
    pos: E.Expr,
    goal: Cut,
    cs: dict[str, Any],
    case: dict[str, int],
    statement: Callable[[dict[str, Any]], Any] | None,
    witnesses: tuple[RowWitness, ...],
    what: str,
) -> Outcome:
    """U's value computed again with the divisors it could not show > 0 recorded (``sampling``), and
    :func:`refuted` at the points where each is > 0: a counterexample, or unknown."""
    again = LayerExecutor(
        ex.con, max(0.5, ex.timeout), sampling=True, **{name: getattr(ex, name) for name in _SHARED_WITH_AGAIN}
    )
    again.coords.update({k: v for k, v in ex.coords.items() if k.endswith("!")})  # the entry's coordinates
    # the values computed before the failure (each proven as usual); a head computed again gets
    # the same summation names (derived from the computation, attnsim.symbolic.summation_names)
    again._memo.update(ex._memo)
    try:
        got = again.value(node, pos)
    except ExecutionFailed as exc:
        return exc.outcome
    want = fix(goal.statement(cs) if statement is None else statement(cs), case)
    fixed = {k: v for w in witnesses for k, v in w.sample}
    where = f"{goal.stage} ({what}): {goal.label} at {goal.grid.name}"
    return refuted(where, got, want, "", fixed, tuple(again.unshown))


__all__ = ["POINTS", "past_divisors", "refuted"]
