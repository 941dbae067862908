"""Stage ``ffn`` (Theorem 6, attention layer 6 of U and its MLP): R, LayerNorm 1, FFN 1.

Over the attention stage's head outputs (read as opaque O(h, i, e)), for i < n: U's Y1 (R = the
residual sum, LayerNorm 1 when post-norm) equals [e < d] y1(i, e) where it is held (``ffn2.Y1`` at
ffn2.products, ``out.Y1`` at out), and U's FFN 1 activation equals [g < f] act(i, g) (``ffn2.u.act``
at ffn2.products, ``gram.u.act`` and ``gram.u2.act`` at ln2.gram_terms, g its f or f2 axis), the
spec's own y1 and act (LayerNorm 2 folded in when pre-norm).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attnsim.proofs.obligation import Outcome
from attnsim.symbolic.layer import Cut, part_cut
from attnsim.symbolic.stages import Stage

# U's nodes: label, grid, the axes of the statement's arguments (row, feature)
Y1 = (("ffn2.Y1", "ffn2.products", ("i", "e")), ("out.Y1", "out", ("i", "e")))
ACT = (
    ("ffn2.u.act", "ffn2.products", ("i", "f")),
    ("gram.u.act", "ln2.gram_terms", ("i", "f")),
    ("gram.u2.act", "ln2.gram_terms", ("i", "f2")),
)


def goals(u: Any) -> list[Cut]:
    """U's Y1 and FFN 1 activations where they are held."""
    grids = {g.name: g for g in u.stage_grids}
    out = [part_cut(lb, grids[g], (("i", "n"),), "y1", "Y1", a, "ffn", ((a[1], "d"),)) for lb, g, a in Y1]
    out += [part_cut(lb, grids[g], (("i", "n"),), "act", "act", a, "ffn", ((a[1], "f"),)) for lb, g, a in ACT]
    return out


def prove(u: Any, goal: Cut, cuts: Mapping[str, Cut], timeout: float) -> Outcome:
    """Not yet proven (issue 14)."""
    return Outcome.unknown(f"ffn: {goal.label} is not proven yet")


FFN = Stage("ffn", goals, ("attention",), prove)

__all__ = ["ACT", "FFN", "Y1", "goals"]
