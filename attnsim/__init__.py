"""attnsim: a formal-proof companion, with executable extraction, for "On the Existence of
Universal Simulators of Attention" (arXiv:2506.18739).

Every construction is one GAHAT-RASP program run three ways: exactly (Fraction / SymPy),
in Z3 (its selectors proven to pick the intended keys) and in NumPy (the numeric twin).

The public names below are imported when first used (PEP 562), so ``import attnsim`` loads
neither Z3 nor SymPy; ``attnsim.compile`` is the compiler's package and
``attnsim.compile_program(program, max_len=...)`` its verb.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from attnsim.version import __version__

# public name -> the module that defines it
_LAZY = {
    "compile_program": "attnsim.compile.compiler",  # attnsim.compile_program(program, max_len=...) -> weights
    "evaluate": "attnsim.rasp.engine",
    "trace": "attnsim.rasp.engine",
    "cost": "attnsim.rasp.schedule",
    "Size": "attnsim.rasp.sizes",  # Size("r"): an unbound size; lemmas.matmul(rows=Size("r"), ...)
    "TransformerLayer": "attnsim.universal.layer",
    "UniversalSimulator": "attnsim.universal.universal",
}

if TYPE_CHECKING:
    from attnsim.compile.compiler import compile_program
    from attnsim.rasp.engine import evaluate, trace
    from attnsim.rasp.schedule import cost
    from attnsim.rasp.sizes import Size
    from attnsim.universal.layer import TransformerLayer
    from attnsim.universal.universal import UniversalSimulator


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'attnsim' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "Size",
    "TransformerLayer",
    "UniversalSimulator",
    "__version__",
    "compile_program",
    "cost",
    "evaluate",
    "trace",
]
