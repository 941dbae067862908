"""Stage ``output`` (Theorem 6, attention layer 7 of U and its MLP): FFN 2, LayerNorm 2, Y.

Over the ffn stage's Y1 and FFN 1 activations (opaque Y1(i, e), act(i, g)): at every entry (i, e)
of the out grid, U's ``Y`` equals [i < n] [e < d] out(i, e), the spec's output (FFN 2, the
residual, LayerNorm 2 when post-norm with its variance through the Gram matrix W2 W2^T, or y1
without an FFN); padding entries are 0, so the next pass reads a valid encoding.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attnsim.proofs.obligation import Outcome
from attnsim.symbolic.layer import Cut
from attnsim.symbolic.stages import Stage


def goals(u: Any) -> list[Cut]:
    """U's Y at every entry of its out grid."""
    grid = next(g for g in u.stage_grids if g.name == "out")
    return [Cut.of_part("Y", grid, (), "out", "Y", ("i", "e"), "output", (("i", "n"), ("e", "d")))]


def prove(u: Any, goal: Cut, cuts: Mapping[str, Cut], timeout: float) -> Outcome:
    """Not yet proven (issue 14)."""
    return Outcome.unknown(f"output: {goal.label} is not proven yet")


OUTPUT = Stage("output", goals, ("ffn",), prove)

__all__ = ["OUTPUT", "goals"]
