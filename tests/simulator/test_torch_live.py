"""Corollary 6.1 / Theorem 9 against live torch modules (skipped when torch is not installed)."""

import numpy as np
import pytest

from attnsim import TransformerLayer, UniversalSimulator

try:
    import torch
except ImportError:  # collected and skipped (not hidden from collection): the paper map cites these tests
    torch = None  # type: ignore[assignment]

pytestmark = pytest.mark.skipif(torch is None, reason="torch is not installed (pip install '.[torch]')")


@pytest.mark.parametrize(("norm_first", "act"), [(False, "relu"), (True, "gelu"), (False, "gelu")])
def test_encoder_layer(norm_first: bool, act: str) -> None:
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(
        6, 3, 10, dropout=0.0, activation=act, batch_first=True, norm_first=norm_first, dtype=torch.float64
    ).eval()
    x = torch.randn(1, 4, 6, dtype=torch.float64)
    with torch.no_grad():
        want = layer(x)[0].numpy()
    T = TransformerLayer.from_torch(layer)
    U = UniversalSimulator(5, 8, 3, 2, 12)
    # measured: reference <= 6.7e-16, U <= 6.7e-16 over the three parametrizations
    assert np.max(np.abs(T(x[0].numpy()) - want)) <= 5e-14
    assert np.max(np.abs(U.run(T, x[0].numpy()) - want)) <= 5e-14


def test_multihead_attention() -> None:
    torch.manual_seed(1)
    mha = torch.nn.MultiheadAttention(4, 2, batch_first=True, dtype=torch.float64).eval()
    x = torch.randn(1, 3, 4, dtype=torch.float64)
    with torch.no_grad():
        want = mha(x, x, x, need_weights=False)[0][0].numpy()
    T = TransformerLayer.from_torch(mha)
    assert np.max(np.abs(UniversalSimulator(3, 4, 2, 2).run(T, x[0].numpy()) - want)) <= 1e-14  # measured 1.1e-16


def test_unsupported_module() -> None:
    with pytest.raises(ValueError, match="from_torch takes"):
        TransformerLayer.from_torch(torch.nn.Linear(2, 2))


@pytest.mark.parametrize(
    ("make", "where"),
    [
        (lambda: torch.nn.TransformerEncoderLayer(4, 2, 8, batch_first=True), "p = 0.1 \\(self_attn\\)"),
        (lambda: torch.nn.MultiheadAttention(4, 2, dropout=0.2), "p = 0.2 \\(self\\)"),
    ],
)
def test_train_mode_dropout_is_refused(make: object, where: str) -> None:
    """Corollary 6.1's T has eval semantics: a module that would drop units is refused, not run
    silently as if in eval mode; after .eval() (or with dropout = 0) it imports."""
    module = make()  # type: ignore[operator]
    with pytest.raises(ValueError, match=f"training mode with dropout {where}.*: call .eval\\(\\) or set dropout=0$"):
        TransformerLayer.from_torch(module)
    TransformerLayer.from_torch(module.eval())
    TransformerLayer.from_torch(torch.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0))  # train mode, no dropout


def test_batch_against_torch() -> None:
    """Corollary 6.1 on a batch (B, n, d), batch first as torch's batch_first=True."""
    torch.manual_seed(2)
    layer = torch.nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, batch_first=True, dtype=torch.float64).eval()
    x = torch.randn(3, 4, 4, dtype=torch.float64)
    with torch.no_grad():
        want = layer(x).numpy()
    T = TransformerLayer.from_torch(layer)
    assert np.max(np.abs(T(x.numpy()) - want)) <= 5e-14  # measured 4.4e-16
    assert np.max(np.abs(UniversalSimulator(4, 4, 2, 2, 6).run(T, x.numpy()) - want)) <= 5e-14  # measured 6.7e-16
