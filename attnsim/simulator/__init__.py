"""A facade: the universal simulator's public names, kept where users imported them from.

U lives in :mod:`attnsim.universal` (its builder, runtime, torch reading and layer proof);
``from attnsim.simulator import UniversalSimulator`` keeps working through this re-export.
"""

from attnsim.universal import SimulatorError, TransformerLayer, UniversalSimulator

__all__ = ["SimulatorError", "TransformerLayer", "UniversalSimulator"]
