"""Stages of one pass of U equal the encoder layer's specification, for every capacity and size.

U (:mod:`attnsim.simulator.universal`) is built over unbound capacity sizes N, D, H, K, F; the
simulated layer has true sizes n <= N, d <= D, hh <= H, k <= K, f <= F.  A stage's value is
computed by symbolic execution of U's own program at a symbolic entry of the grid where U holds
it, and compared with the statement written from the specification's own intermediate quantities
by the Sum normal form (``simplify`` is never called).  The proof is split by concern:

- :mod:`attnsim.symbolic.layerspec`: the true sizes' symbols, eps, the option cases, the spec's parts;
- :mod:`attnsim.symbolic.cut`: a stage's proven statement (:class:`Cut`), read by later stages;
- :mod:`attnsim.symbolic.layerexec`: the executor (:class:`LayerExecutor`), tokens read through the
  input map, with its mixins :mod:`~attnsim.symbolic.gathercases`, :mod:`~attnsim.symbolic.truncation`,
  :mod:`~attnsim.symbolic.layerpositivity` and :mod:`~attnsim.symbolic.intentlisting`;
- :mod:`attnsim.symbolic.flagform`: products of 0/1 flags and the flag form of U's value;
- :mod:`attnsim.symbolic.stageproof`: the stage proof (:func:`prove_stage`);
- :mod:`attnsim.symbolic.paddingproof`: the padding rows (:func:`prove_padding`);
- :mod:`attnsim.symbolic.refutation`: counterexamples for a stage that did not go through.

This module re-exports their names (the stages import from the modules themselves).
"""

from __future__ import annotations

from attnsim.symbolic.cut import Cut, part_cut, statement_over_cuts
from attnsim.symbolic.flagform import absorb_flags, as_flags, assuming, flag, nonzero_flags
from attnsim.symbolic.layerexec import LayerExecutor
from attnsim.symbolic.layerpositivity import RowWitness
from attnsim.symbolic.layerspec import EPS, OPTIONS, SIZE, fix, option_cases, spec_parts
from attnsim.symbolic.paddingproof import prove_padding
from attnsim.symbolic.refutation import POINTS, past_divisors, refuted
from attnsim.symbolic.stageproof import node_of, prove_stage, setup
from attnsim.symbolic.truncation import below_last, hoist_all

__all__ = [
    "EPS",
    "OPTIONS",
    "POINTS",
    "SIZE",
    "Cut",
    "LayerExecutor",
    "RowWitness",
    "absorb_flags",
    "as_flags",
    "assuming",
    "below_last",
    "fix",
    "flag",
    "hoist_all",
    "node_of",
    "nonzero_flags",
    "option_cases",
    "part_cut",
    "past_divisors",
    "prove_padding",
    "prove_stage",
    "refuted",
    "setup",
    "spec_parts",
    "statement_over_cuts",
]
