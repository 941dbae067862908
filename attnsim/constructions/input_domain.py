"""The declared operand domain of every construction, probed: one obligation per construction.

A construction may declare what its all-sizes proof assumes of an operand (``scalars``: an integer
in a range; ``binary``: 0 or 1); the run's input check enforces the same declaration
(:meth:`~attnsim.constructions.construction.Construction.run`).  The ``input-domain`` obligations probe,
at several sizes and in the float64 and exact backends, that the run refuses exactly what the
proof's premises exclude.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

import numpy as np

from attnsim.constructions.construction import Construction, ConstructionError, _num_value
from attnsim.proofs import registry
from attnsim.proofs.obligation import Obligation, Outcome
from attnsim.rasp import core as C
from attnsim.symbolic.program_equals_spec import public_factories

DOMAIN_SIZES = (1, 2, 3, 7)  # every size parameter at each of these values


def _probes(lo: int, hi: int) -> list[tuple[float, bool]]:
    """Values around the declared range [lo, hi] of an integer operand, each with whether it is inside."""
    out = [(lo - 1, False), (lo, True), (lo + 0.5, False), (hi, True), (hi + 1, False), (hi - 0.5, False)]
    out += [(-1.0, False), (math.nan, False), (math.inf, False), (-math.inf, False), ((lo + hi) // 2, True)]
    return out


BINARY_PROBES = ((0.0, True), (1.0, True), (2.0, False), (-1.0, False), (0.5, False), (math.nan, False))


def _exact_value(v: float) -> Any:
    """A probe value as the exact backend takes it: a Fraction when finite (NaN and inf stay floats)."""
    return Fraction(v) if math.isfinite(v) else v


def _domain_check(example: Callable[[], object], timeout: float) -> Outcome:
    """Each declared operand domain probed at every size of :data:`DOMAIN_SIZES`, in the float64 and
    the exact (Fraction) backends: the run accepts a value exactly when the declaration (the proof's
    premise) says it is inside."""
    con = example()
    if not isinstance(con, Construction) or con.built_by is None:
        return Outcome.bad(f"{con!r:.80}: not built by @sized, so its domain cannot be probed at other sizes")
    module, fname, args = con.built_by
    n = 0
    params = [p for p, a in args if isinstance(a, C.Size) and a.value is None]
    # each size parameter in turn at each of DOMAIN_SIZES, the others at 2 (so rows != cols), and all at 1
    grid = [{**{q: 2 for q in params}, p: v} for p in params for v in DOMAIN_SIZES] + [{q: 1 for q in params}]
    for (called, factory), sizes in itertools.product(public_factories(module, fname), grid):
        call = {p: sizes.get(p, a) for p, a in args}
        at = factory(**call)
        cases: list[tuple[str, float, bool]] = []
        lows: dict[str, float] = {}
        for name, lo, upper, _ in at.scalars:
            lows[name] = float(lo)
            cases += [(name, v, inside) for v, inside in _probes(lo, _num_value(upper))]
        cases += [(name, v, inside) for name in at.binary for v, inside in BINARY_PROBES]
        for (name, v, inside), backend in itertools.product(cases, ("numpy", "exact")):
            value = (lambda x: x) if backend == "numpy" else _exact_value
            ops = {nm: np.full(at.layout[nm].shape, value(lows.get(nm, 0.0)), dtype=object) for nm in at.inputs}
            ops[name] = np.full(at.layout[name].shape, value(v), dtype=object)
            try:
                at.encode(*(ops[nm] for nm in at.inputs), backend=backend)
                accepted = True
            except ConstructionError:
                accepted = False
            if accepted != inside:
                what = "accepts" if accepted else "refuses"
                return Outcome.bad(
                    f"{called}({', '.join(f'{p}={v}' for p, v in call.items() if v is not None)}): the input check "
                    f"{what} {name} = {value(v)} ({'float64' if backend == 'numpy' else 'exact'} backend), which "
                    f"its declared domain (the proof's premise) puts {'outside' if accepted else 'inside'}"
                )
            n += 1
    return Outcome.good(
        f"{n} probes, float64 and exact (Fractions), each size parameter at {DOMAIN_SIZES} in turn: accepted "
        "exactly inside the declared domain"
    )


def input_domain_obligations() -> Iterable[Obligation]:
    """``exact``, one per construction that declares an operand domain (``scalars``, ``binary``)."""
    for name, (ref, example) in registry.constructions().items():
        con = example()
        if isinstance(con, Construction) and (con.scalars or con.binary):
            yield Obligation(
                f"{name}/exact/input-domain",
                name,
                ref,
                "exact",
                functools.partial(_domain_check, example),
                statement="the run's input check refuses exactly what the all-sizes proof's premises exclude "
                "(declared scalars: integers in their range; binary operands: 0 or 1), probed at and around "
                f"each bound in the float64 and exact backends, each size parameter at {DOMAIN_SIZES} in turn",
            )
