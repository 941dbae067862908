"""Stage ``write`` (Theorem 6: U(<T, X>) = T(X)): a pass writes Y over the X block.

At every entry (i, l) of X (i < N, l < D), U's output ``U`` equals [i < n] [l < d] out(i, l): the
spec's output on the true entries and 0 on the padding, so the next pass reads a valid encoding
(with the frame lemma, :mod:`attnsim.universal.layerproof.frame`, the stack).  Reads the output stage's Y.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attnsim.proofs.obligation import Outcome
from attnsim.universal.layerproof.cut import Cut, part_cut
from attnsim.universal.layerproof.stage_proof import prove_stage
from attnsim.universal.layerproof.stages import Stage

OPTIONS_FREE: list[dict[str, int]] = [{}]  # one case: every option stays a symbol


def goals(u: Any) -> list[Cut]:
    """The pass's output at every entry of X: the whole layer's statement."""
    return [part_cut("U", u.map.x, (), "out", "T", ("i", "l"), "write", (("i", "n"), ("l", "d")))]


def prove(u: Any, goal: Cut, cuts: Mapping[str, Cut], timeout: float) -> Outcome:
    """U's output at X reads Y at the same entry of the out grid: stated as the spec's out given as
    the output stage's Y (which states exactly out), so nothing of the spec is built."""
    return prove_stage(u, goal, OPTIONS_FREE, timeout, cuts=cuts, spec_over={"out": "Y"})


WRITE = Stage("write", goals, ("output",), prove)

__all__ = ["WRITE", "goals"]
