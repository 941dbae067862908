"""Stage ``attention`` (Theorem 6 / 9, attention layers 4-5 of U): the row max, the softmax and
the head outputs.

At every entry of a grid where U holds a head output O[h, i, e] (``attn.o`` at attn.heads,
``ffn1.o`` at ffn1.products, ``ln1.o`` and ``ln1.o2`` at ln1.square_terms), with i < n, U's value
equals [h < hh] [e < d] sum_{c<k} out_proj_weight[e, h k + c] sum_{j<n} weight(h, i, j)
proj(2, j, h, c): one head's term of the spec's attn(i, e), its softmax weight the spec's own
([not blocked] / sum_{l<n, not blocked} exp(s_l - s_j)).  The logits are the stage ``scores``'
statement, read as the opaque s(h, i, j); the row max U subtracts cancels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sympy as sp

from attnsim.proofs.obligation import Outcome
from attnsim.symbolic.layer import SIZE, Cut, flag, prove_stage, spec_parts
from attnsim.symbolic.stages import Stage

LOGIT = sp.Function("s")  # the scores stage's opaque name for the logit s(h, i, j)

# U's nodes holding a head output: label, grid, the grid's axis that is the head
HEADS = (
    ("attn.o", "attn.heads", "h"),
    ("ffn1.o", "ffn1.products", "h"),
    ("ln1.o", "ln1.square_terms", "h"),
    ("ln1.o2", "ln1.square_terms", "h2"),
)


def head_output(parts: dict[str, Any], h: Any, i: Any, e: Any, logit: Any = None) -> Any:
    """sum_{c<k} out_proj_weight[e, h k + c] sum_{j<n} weight(h, i, j) proj(2, j, h, c) (read where
    h < hh, e < d);
    with ``logit`` the weight's logits are written as logit(h, i, l) (an opaque function)."""
    n, k = SIZE["n"], SIZE["k"]
    jv, cv = sp.Symbol("j!o", integer=True), sp.Symbol("c!o", integer=True)
    w = sp.sympify(parts["weight"](h, i, jv))
    if logit is not None:
        rep = {sp.sympify(parts["logit"](h, i, jv)): logit(h, i, jv)}
        for den in w.atoms(sp.Sum):
            lv = den.limits[0][0]
            rep[sp.sympify(parts["logit"](h, i, lv))] = logit(h, i, lv)
        w = w.xreplace(rep)
    head = sp.Sum(w * sp.sympify(parts["proj"](2, jv, h, cv)), (jv, 0, n - 1))
    out = sp.Sum(sp.IndexedBase("out_proj_weight")[0, e, h * k + cv] * head, (cv, 0, k - 1))
    return out


def guarded(h: Any, e: Any, value: Any) -> Any:
    """[h < hh] [e < d] value."""
    return flag(sp.Lt(h, SIZE["hh"])) * flag(sp.Lt(e, SIZE["d"])) * value


def goals(u: Any) -> list[Cut]:
    """U's head outputs at the four grids that hold them."""
    parts = spec_parts()
    grids = {g.name: g for g in u.stage_grids}

    def spec(ax: str) -> Any:
        return lambda cs: head_output(parts, cs[ax], cs["i"], cs["e"])

    return [
        Cut(
            label,
            grids[grid],
            (("i", "n"),),
            spec(ax),
            "O",
            (ax, "i", "e"),
            "attention",
            ((ax, "hh"), ("e", "d")),
        )
        for label, grid, ax in HEADS
    ]


def prove(u: Any, goal: Cut, cuts: Mapping[str, Cut], timeout: float) -> Outcome:
    """One head-output node, the logits cut at the scores stage (NOT yet proven: see issue 14)."""
    parts = spec_parts()
    ax = goal.args[0]
    return prove_stage(
        u,
        goal,
        [{"pre": 0}, {"pre": 1}],
        timeout,
        cuts=cuts,
        statement=lambda cs: guarded(cs[ax], cs["e"], head_output(parts, cs[ax], cs["i"], cs["e"], logit=LOGIT)),
        flags=True,
        step_cap=60.0,
    )


ATTENTION = Stage("attention", goals, ("scores",), prove)

__all__ = ["ATTENTION", "HEADS", "LOGIT", "goals", "head_output"]
