"""The Lipschitz / Hölder approximator: the obligations `attnsim verify` runs (registered by
:mod:`attnsim.catalog`; their checks: :mod:`attnsim.constructions.application_checks`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

from attnsim.constructions.application_checks import (
    _approx_check,
    _exact_network_check,
)
from attnsim.constructions.checks import exact_check, intent_obligations, layout_obligation, numeric_check
from attnsim.constructions.lipschitz import program as lipschitz
from attnsim.proofs.obligation import Obligation


def _small_interp() -> lipschitz.LipschitzNetwork:
    return lipschitz.lipschitz_approximator(math.sin, 1.0, 0.5, (-1.0, 1.0))


def lipschitz_obligations() -> Iterable[Obligation]:
    """Z3 intents + layout (small net), program == architecture (exact, numeric; random weights),
    program == network with the constructed weights (exact), sup error <= epsilon (float64, fine grid)."""
    ref = lipschitz.PAPER_REF
    yield from intent_obligations("lipschitz", ref, lipschitz.small_network)
    yield layout_obligation("lipschitz", ref, lipschitz.small_network)
    for it in intent_obligations("lipschitz", ref, _small_interp):
        yield dataclasses.replace(it, id=it.id.replace(f"{it.method}/", f"{it.method}/interp-"))
    yield Obligation(
        "lipschitz/exact/architecture-random-weights",
        "lipschitz",
        ref,
        "exact",
        exact_check(lipschitz.small_network),
        "for random rational weights and points, the program == the GroupSort network (Fractions, ==)",
    )
    yield Obligation(
        "lipschitz/numeric/architecture-random-weights",
        "lipschitz",
        ref,
        "numeric",
        numeric_check(lipschitz.small_network, 1e-12),
        "for random float weights and points, the program == the GroupSort network within 1e-12",
    )
    cases = [("abs", 0.5, "mcshane"), ("sin", 0.5, "mcshane"), ("sawtooth", 1.0, "mcshane"), ("cone", 1.0, "mcshane")]
    cases += [("abs", 0.1, "interpolation"), ("sin", 0.05, "interpolation"), ("sawtooth", 0.05, "interpolation")]
    for name, eps, method in cases:
        yield Obligation(
            f"lipschitz/exact/network-{method}-{name}-eps{eps}",
            "lipschitz",
            ref,
            "exact",
            _exact_network_check(name, eps, method),
            f"{name}: the program computes the constructed network exactly at rational points",
        )
    cases = [(n, 0.1, "mcshane") for n in ("abs", "sin", "sawtooth")] + [("cone", 0.2, "mcshane")]
    cases += [(n, e, "interpolation") for n in ("abs", "sin", "sawtooth") for e in (0.1, 0.01)]
    for name, eps, method in cases:
        yield Obligation(
            f"lipschitz/numeric/sup-error-{method}-{name}-eps{eps}",
            "lipschitz",
            ref,
            "numeric",
            _approx_check(name, eps, 5, method),
            f"{name}: sup |f - network| <= {eps} on a fine grid; the program == the network at sample points",
        )


__all__ = ["lipschitz_obligations"]
