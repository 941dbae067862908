"""attnsim: a formal-proof companion, with executable extraction, for "On the Existence of
Universal Simulators of Attention" (arXiv:2506.18739).

Every construction is one GAHAT-RASP program run three ways: exactly (Fraction / SymPy),
in Z3 (its selectors proven to pick the intended keys) and in NumPy (the numeric twin).
"""

from attnsim.compile import compile  # attnsim.compile(program, max_len=...) -> weights
from attnsim.rasp.engine import evaluate, trace
from attnsim.rasp.schedule import cost
from attnsim.rasp.sizes import Size  # Size("r"): an unbound size; lemmas.matmul(rows=Size("r"), ...)
from attnsim.universal import TransformerLayer, UniversalSimulator
from attnsim.version import __version__

__all__ = ["Size", "TransformerLayer", "UniversalSimulator", "__version__", "compile", "cost", "evaluate", "trace"]
