"""The driver of U's program: the stages of :mod:`.attention` and :mod:`.output` run in order.

:class:`UniversalProgram` builds ONE GAHAT-RASP program from the capacity sizes; what a build
writes is listed on the class.  :class:`~attnsim.universal.universal.UniversalSimulator` builds
one and runs it (the runtime API: encode, run, decode, trace, cost, measure).
"""

from __future__ import annotations

from attnsim.rasp import expr as E
from attnsim.universal.program.attention import AttentionStages
from attnsim.universal.program.output import OutputStages

VARIANTS = ("compact", "shallow")


class UniversalProgram(AttentionStages, OutputStages):
    """U's program for the capacity sizes N, D, H, K, F (bound to ints, or unbound for the proofs).

    A build writes: ``program`` (the pass, labelled ``U``), ``out_grid`` (where Y lives: X's
    positions), ``intents`` (per gather and sum, what its selector must select), ``masks`` (the
    0/1 MLP masks and what each must equal) and ``stage_grids`` (the grids of intermediate
    values, in the order they were created), besides the sizes and the input map ``map``."""

    def __init__(self, sizes: dict[str, E.Expr], variant: str = "compact") -> None:
        super().__init__(sizes)
        self.variant = variant
        self._common()
        if variant == "compact":
            s_at, vw_at, PV = self._stage_scores_compact()
        else:
            s_at, vw_at, PV = self._stage_scores_shallow()
        numer, denom = self._stage_softmax(s_at, vw_at, PV)
        y, OUT = self._stage_heads_ffn(numer, denom)
        self._stage_next(y, OUT)
