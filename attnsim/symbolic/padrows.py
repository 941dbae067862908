"""Padding rows: what U's nodes hold at a row i >= n, proven (no premise).

A stage's cut (:class:`attnsim.symbolic.cut.Cut`) says what U's node holds in the proven region
(rows i < n).  At a padding row the encoding holds 0 in every token of that row (X, the masks:
:meth:`attnsim.simulator.record.InputMap.encode`), and U computes the row by the same arithmetic
as a true row; a stage that needs it there (the output stage: LayerNorm 2's variance of a padding
row, E[x^2] - E[x]^2 read from several nodes, must be shown >= 0 before the row is multiplied by
its 0 flag) reads the cut's **padding value** ``name~(args)`` (``Cut.padded``): one real per
argument tuple, shared by every node whose cut has that name, times the cut's guard flags.  It is
proven by :func:`attnsim.symbolic.paddingproof.prove_padding` in the stage that proves the cut: each node
executed at a row past n equals the representative node of the name there, is a function of the
arguments only and is 0 past each guard.  The chain scores -> attention -> ffn proves it for
attn.logit (s~), the head outputs (O~) and the ffn stage's Y1 (Y1~) and FFN 1 activations (act~).
"""

from __future__ import annotations

from typing import Any

import sympy as sp


def reads_padding(e: Any) -> bool:
    """Whether ``e`` holds a padding value (an opaque ``name~(...)``)."""
    return any(str(x.func).endswith("~") for x in sp.sympify(e).atoms(sp.core.function.AppliedUndef))


__all__ = ["reads_padding"]
