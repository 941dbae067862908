"""The old import path of the lemmas' common base: ``from attnsim.lemmas.base import Construction``.

``base.py`` held the Construction object every lemma returns and the obligations every lemma
shares (712 lines); issue 25 split it by concern, and the code now lives in:

* :mod:`attnsim.lemmas.construction`: the program record (:class:`Construction`, its errors,
  :func:`to_backend`, :func:`sized`, :func:`size_args`);
* :mod:`attnsim.lemmas.checks`: the checks every lemma's obligations share (SymPy, exact,
  float64, Z3 intents, layout);
* :mod:`attnsim.lemmas.input_domain`: the probe of each declared operand domain.

Every name this module offered is re-exported here, so that code written against the old path
keeps working; new code imports from the modules above (this module defines nothing).
"""

from __future__ import annotations

from attnsim.lemmas.checks import (
    exact_check,
    first_difference,
    intent_obligations,
    layout_obligation,
    numeric_check,
    rational_operands,
    standard_obligations,
    symbolic_operands,
    sympy_check,
)
from attnsim.lemmas.construction import (
    Construction,
    ConstructionError,
    NonFiniteResultError,
    VectorConstruction,
    size_args,
    sized,
    to_backend,
)
from attnsim.lemmas.input_domain import BINARY_PROBES, DOMAIN_SIZES, input_domain_obligations
from attnsim.proofs.intents import Intent, prove_layout
from attnsim.rasp.layout import Block, Layout, LayoutError, MatRef

__all__ = [
    "BINARY_PROBES",
    "DOMAIN_SIZES",
    "Block",
    "Construction",
    "ConstructionError",
    "Intent",
    "Layout",
    "LayoutError",
    "MatRef",
    "NonFiniteResultError",
    "VectorConstruction",
    "exact_check",
    "first_difference",
    "input_domain_obligations",
    "intent_obligations",
    "layout_obligation",
    "numeric_check",
    "prove_layout",
    "rational_operands",
    "size_args",
    "sized",
    "standard_obligations",
    "symbolic_operands",
    "sympy_check",
    "to_backend",
]
