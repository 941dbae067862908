"""One pass of U equals the encoder layer's specification, stage by stage, for every capacity.

Each stage module proves some nodes of U's own program equal to statements written from
ENCODER_LAYER's intermediate quantities (:class:`attnsim.universal.layerproof.cut.Cut`), reading the nodes
proven by earlier stages as opaque functions.  :class:`Stage` says what a stage proves and which
stages it reads; the whole-layer obligation runs them in order and hands each stage only the
cuts that earlier stages proved in the same run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from attnsim.proofs.obligation import Outcome
from attnsim.universal.layerproof.cut import Cut


@dataclass(frozen=True)
class Stage:
    """A stage: the statements it proves for a U (``goals``), the stages whose statements it reads
    (``requires``), and its proof of one goal given those statements."""

    name: str
    goals: Callable[[Any], list[Cut]]
    requires: tuple[str, ...]
    prove: Callable[[Any, Cut, Mapping[str, Cut], float], Outcome]


__all__ = ["Stage"]
