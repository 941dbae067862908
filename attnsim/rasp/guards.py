"""Input guards shared by every entry point: complex numbers are refused, never silently cut.

``np.asarray(z, dtype=np.float64)`` keeps only the real part of a complex array (NumPy merely
warns), so a complex operand would run as a different, real one.  Every place where operands
enter (the engine's backends, ``Construction.run``, ``TransformerLayer``, ``U.run``) calls
:func:`complex_entry` first and raises its own error class with the message.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _is_complex(v: Any) -> bool:
    if isinstance(v, (complex, np.complexfloating)):
        return True
    if type(v).__module__.startswith("sympy"):
        import sympy as sp

        return bool(isinstance(v, sp.Basic) and (v.has(sp.I) or (v.is_real is False and v.is_number)))
    return False


def complex_entry(values: Any) -> str | None:
    """A message naming the first complex entry of ``values`` (any array-like), or None if there is none."""
    if isinstance(values, (complex, np.complexfloating)):
        return f"complex input {values!r} is not supported: pass real numbers"
    try:
        a = np.asarray(values)
    except Exception:  # ragged or exotic input: let the caller's own conversion report it
        return None
    if a.dtype.kind == "c":
        flat = a.reshape(-1)
        idx = int(np.flatnonzero(flat.imag != 0)[0]) if np.any(flat.imag != 0) else 0
        return f"complex input is not supported (entry {idx} is {flat[idx]}, dtype {a.dtype}): pass real numbers" + (
            " (the imaginary parts are all 0: pass x.real)" if not np.any(flat.imag != 0) else ""
        )
    if a.dtype == object:
        for i, v in enumerate(a.reshape(-1)):
            if _is_complex(v):
                return f"complex input is not supported (entry {i} is {v}): pass real numbers"
    return None


def sympy_instance(x: Any, cls: str) -> bool:
    """True when ``x`` is an instance of SymPy's class named ``cls`` (``"Basic"``,
    ``"MatrixBase"``), recognized by its classes without importing SymPy: a numeric run never loads
    it, and no SymPy object exists before SymPy is loaded."""
    return any(c.__name__ == cls and c.__module__.startswith("sympy.") for c in type(x).__mro__)
