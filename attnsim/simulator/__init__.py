"""The universal simulator: the simulated layer T (reference) and the one program U per capacity."""

from attnsim.simulator.errors import SimulatorError
from attnsim.simulator.reference import TransformerLayer
from attnsim.simulator.universal import UniversalSimulator

__all__ = ["SimulatorError", "TransformerLayer", "UniversalSimulator"]
