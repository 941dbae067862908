"""k-PARITY: the cases of its specification check.

:mod:`attnsim.verify.spec_check` runs them.  Each :class:`~attnsim.constructions.spec_case.SpecCase`
names a spec of ``spec.py``, its textbook formula in ``reference.py``, how to make its operands, the
largest size of each kind worth trying and the symbolic builds proved against the spec (their
programs' size constants are tried too).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from attnsim.constructions.parity import program as kparity
from attnsim.constructions.parity import reference, spec
from attnsim.constructions.spec_case import SpecCase
from attnsim.rasp import core as C

S = C.Size


def parity_operands(sz: Mapping[str, int], rng: np.random.Generator, trial: int) -> dict[str, np.ndarray]:
    """A random bit string x of the given length."""
    return {"x": rng.integers(0, 2, size=(1, sz["length"])).astype(np.float64)}


CASES: tuple[SpecCase, ...] = (
    SpecCase(
        "parity",
        kparity.PAPER_REF,
        spec.__name__,
        "PARITY",
        reference.parity,
        parity_operands,
        {"length": 128},
        (lambda: kparity.parity(S("length")),),
    ),
)

__all__ = ["CASES"]
