"""The universal simulator: the simulated layer T (reference) and the one program U per capacity."""

from attnsim.universal.errors import SimulatorError
from attnsim.universal.layer import TransformerLayer
from attnsim.universal.universal import UniversalSimulator

__all__ = ["SimulatorError", "TransformerLayer", "UniversalSimulator"]
