"""Match2: the task itself, in NumPy, sharing no code with the program.

The definition literally (every pair) up to 2048 tokens, and a count of the partners' residues
beyond; the exhaustive, Z3 and random checks of the program compare with it.  It imports NumPy
only (``tests/test_layering.py`` checks that a reference imports nothing of a program).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def match2_spec(x: Any, p: int, include_self: bool = True) -> np.ndarray:
    """The task itself (NumPy, integers): 1 at i iff some j (j != i unless include_self) has p | x_i + x_j."""
    a = np.asarray(x, dtype=object).reshape(-1)
    v = np.array([int(t) for t in a], dtype=np.int64)
    if len(v) <= 2048:  # the definition, literally: all pairs
        hit = (v[:, None] + v[None, :]) % p == 0
        if not include_self:
            np.fill_diagonal(hit, False)
        return hit.any(axis=1).astype(np.int64)
    r = v % p  # long inputs: count the partners' residues (tests check both paths agree)
    partners = np.bincount(r, minlength=p)[(-r) % p]
    if not include_self:
        partners = partners - ((2 * r) % p == 0)
    return (partners > 0).astype(np.int64)


__all__ = ["match2_spec"]
