"""to_torch(): the compiled weights as a torch.nn.Module with the same forward (optional extra)."""

from __future__ import annotations

import numpy as np
import pytest

from attnsim.compile import classic
from attnsim.compile.compiler import compile_program


def test_to_torch_matches_numpy() -> None:
    torch = pytest.importorskip("torch")
    prog = classic.sort_unique()
    ct = compile_program(prog, max_len=6, vocab=range(4))
    x = np.array([[3, 1, 0, 2, 1, 0], [2, 0, 1, 3, 3, 3]])
    y = ct.to_torch()(torch.tensor(x, dtype=torch.float64)).numpy()
    assert np.array_equal(y, ct.forward(x, exact=False))
