"""A premise on U's padding rows: the nodes of one proven statement hold one value there.

A stage's cut (:class:`attnsim.symbolic.layer.Cut`) says what U's node holds in the proven region
(rows i < n); outside it a later stage reads one unknown per node and entry (``pad[label]``),
nothing relating two nodes.  :class:`PaddingRows` is a premise of the domain, stated in the
Outcome of every proof that uses it: on the rows outside the region, every node whose cut has one
of the ``names`` holds one real value per entry of the statement's arguments, ``name~(args)``, times
the cut's guard flags (0 past the true size of a guarded axis).  E.g. the ffn stage's FFN 1
activations at three grids hold one act~(i, g) at a padding row i >= n (0 for g >= f), and its Y1
nodes one Y1~(i, e) (0 for e >= d): U computes them by the same arithmetic from the same padding
rows (not proven here: the ffn stage is proven on the rows i < n only).  The output stage needs it
where LayerNorm 2's variance at a padding row must be shown >= 0 (a mean of squares of one row of
values) before the row is multiplied by its 0 flag.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp


@dataclass(frozen=True)
class PaddingRows:
    """The premise (see the module docstring): the cuts named ``names`` hold ``name~(args)`` outside
    their region."""

    text: str
    names: tuple[str, ...]

    def covers(self, name: str) -> bool:
        return name in self.names

    def value(self, name: str, args: tuple[Any, ...]) -> Any:
        """The one value ``name~(args)`` (an opaque real)."""
        return sp.Function(f"{name}~")(*args)

    @staticmethod
    def reads(e: Any) -> bool:
        """Whether ``e`` holds a padding value of the premise."""
        return any(str(x.func).endswith("~") for x in sp.sympify(e).atoms(sp.core.function.AppliedUndef))


__all__ = ["PaddingRows"]
