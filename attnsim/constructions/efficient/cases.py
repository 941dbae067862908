"""Linear attention and Linformer: the cases of its specification check.

:mod:`attnsim.verify.spec_check` runs them.  Each :class:`~attnsim.constructions.spec_case.SpecCase`
names a spec of ``spec.py``, its textbook formula in ``reference.py``, how to make its operands, the
largest size of each kind worth trying and the symbolic builds proved against the spec (their
programs' size constants are tried too).
"""

from __future__ import annotations

from attnsim.constructions.efficient import program as efficient
from attnsim.constructions.efficient import reference, spec
from attnsim.constructions.spec_case import SpecCase, reals, stacked
from attnsim.rasp import core as C

S = C.Size


CASES: tuple[SpecCase, ...] = (
    SpecCase(
        "linear_attention",
        efficient.LINEAR_REF,
        spec.__name__,
        "LINEAR_ATTENTION",
        reference.linear_attention,
        stacked(
            reals,
            {
                "Q": lambda sz: (sz["n"], sz["d"]),
                "K": lambda sz: (sz["n"], sz["d"]),
                "V": lambda sz: (sz["n"], sz["dv"]),
            },
        ),
        {"n": 40, "d": 64, "dv": 64},
        (lambda: efficient.linear_attention(S("n"), S("d"), S("dv")),),
        rtol=1e-9,
        atol=1e-12,
    ),
    SpecCase(
        "linformer",
        efficient.LINFORMER_REF,
        spec.__name__,
        "LINFORMER",
        reference.linformer,
        stacked(
            reals,
            {
                "Q": lambda sz: (sz["n"], sz["d"]),
                "K": lambda sz: (sz["n"], sz["d"]),
                "V": lambda sz: (sz["n"], sz["dv"]),
                "E": lambda sz: (sz["kp"], sz["n"]),
                "F": lambda sz: (sz["kp"], sz["n"]),
            },
        ),
        {"n": 24, "d": 24, "dv": 24, "kp": 8},
        (lambda: efficient.linformer(S("n"), S("d"), S("dv"), S("kp")),),
        rtol=1e-9,
        atol=1e-12,
    ),
)

__all__ = ["CASES"]
