"""Corollary 6.1 / Theorem 9 at the torch boundary: every nn.TransformerEncoderLayer /
nn.TransformerEncoder option is simulated to float64 rounding or refused in one line
(issue 30, items 1, 4, 5, 6, 7).  Skipped without torch (the test extra installs it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from attnsim import TransformerLayer, UniversalSimulator
from attnsim.universal.errors import SimulatorError
from attnsim.universal.torch_encoder import TorchEncoder

try:
    import torch
except ImportError:  # collected and skipped, not hidden: the paper map cites these tests
    torch = None  # type: ignore[assignment]

pytestmark = pytest.mark.skipif(torch is None, reason="torch is not installed (pip install '.[test]')")

U = UniversalSimulator(5, 8, 4, 4, 16)


@pytest.fixture
def slow_path() -> Iterator[None]:
    """torch's documented (slow) path: its inference fast path is wrong for float masks (docs/torch.md)."""
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        torch.backends.mha.set_fastpath_enabled(True)


def _layer(seed: int = 0, **kw: Any) -> Any:
    torch.manual_seed(seed)
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, dtype=torch.float64, **kw)
    with torch.no_grad():
        for p in layer.parameters():
            p.add_(torch.randn_like(p) * 0.2)  # non-trivial LayerNorm weights and biases
    return layer.eval()


def _x(seed: int = 1, b: int = 2, n: int = 4) -> Any:
    return torch.randn(b, n, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))


def _torch(module: Any, x: Any, **kw: Any) -> np.ndarray:
    with torch.no_grad():
        return np.asarray(module(x, **kw).numpy())


def test_tanh_gelu_is_simulated_by_t_and_by_u(slow_path: None) -> None:
    """Item 1: GELU(approximate="tanh") is read as tanh-GELU, not as erf-GELU (which is off by
    ~1e-4: the mutation below), and U runs it through its record's gelu_tanh gate."""
    layer = _layer(activation=torch.nn.GELU(approximate="tanh"))
    x = _x()
    want = _torch(layer, x)
    T = TransformerLayer.from_torch(layer)
    assert T.activation == "gelu_tanh"
    assert np.max(np.abs(T(x.numpy()) - want)) <= 1e-13  # measured 1.3e-15
    assert np.max(np.abs(U.run(layer, x.numpy()) - want)) <= 1e-13  # measured 1.3e-15
    as_erf = T.with_options(activation="gelu")  # the defect of issue 30: tanh read as erf
    assert np.max(np.abs(as_erf(x.numpy()) - want)) > 1e-6  # measured 2.1e-4
    attention_only = TransformerLayer.random(8, 2, 4, activation="gelu_tanh")  # no FFN: the activation is unread
    got = U.run(attention_only, x.numpy()[0])
    assert np.max(np.abs(got - attention_only(x.numpy()[0]))) <= 1e-13  # measured 8.9e-16


def test_a_u_whose_tanh_gelu_branch_is_erf_differs_from_torch(slow_path: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutation of item 1 inside U: its gelu_tanh branch computing erf-GELU is off by ~1e-4,
    far above the 1e-13 the test above asks (so that test fails on this U)."""
    from attnsim.rasp import core as C

    real = C.apply
    monkeypatch.setattr(C, "apply", lambda name, *a, **kw: real("gelu" if name == "gelu_tanh" else name, *a, **kw))
    wrong = UniversalSimulator(5, 8, 4, 4, 16)
    layer = _layer(activation=torch.nn.GELU(approximate="tanh"))
    x = _x()
    assert np.max(np.abs(wrong.run(layer, x.numpy()) - _torch(layer, x))) > 1e-6  # measured 2.1e-4
    with pytest.raises(SimulatorError, match=r"^from_torch: GELU\(approximate='sigmoid'\) is unsupported$"):
        bad = _layer(activation=torch.nn.GELU())
        bad.activation.approximate = "sigmoid"
        TransformerLayer.from_torch(bad)


def test_refused_options_name_the_option() -> None:
    """Item 4: a module T does not simulate is refused in one line naming the option."""
    layer = _layer()
    layer.norm2 = torch.nn.Identity()
    with pytest.raises(SimulatorError, match=r"^from_torch: norm2 is Identity, not nn.LayerNorm; T has LayerNorm"):
        TransformerLayer.from_torch(layer)
    layer = _layer(activation=torch.nn.SiLU())
    with pytest.raises(SimulatorError, match=r"^from_torch: activation SiLU\(\) is unsupported"):
        TransformerLayer.from_torch(layer)
    mha = torch.nn.MultiheadAttention(4, 2, add_bias_kv=True).eval()
    with pytest.raises(SimulatorError, match=r"^from_torch: MultiheadAttention with add_bias_kv=True is unsupported$"):
        TransformerLayer.from_torch(mha)
    with pytest.raises(SimulatorError, match=r"^from_torch takes one layer; for a whole nn.TransformerEncoder"):
        TransformerLayer.from_torch(torch.nn.TransformerEncoder(_layer(), 1, enable_nested_tensor=False))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_low_precision_weights_are_read_exactly(dtype: str) -> None:
    """Item 4: a bfloat16 / float16 / float32 model imports (its weights widen exactly to float64)."""
    layer = _layer().to(getattr(torch, dtype))
    T = TransformerLayer.from_torch(layer)
    w = layer.self_attn.out_proj.weight.detach().to(torch.float64).numpy()
    assert np.array_equal(T.w_o, w.T)


def test_layer_norm_without_affine(slow_path: None) -> None:
    """Item 7: LayerNorm(elementwise_affine=False) is LayerNorm with weight 1 and bias 0 (U equals
    torch); reading it with another weight (the mutation) does not."""
    layer = _layer()
    layer.norm1 = torch.nn.LayerNorm(8, elementwise_affine=False, dtype=torch.float64)
    x = _x()
    want = _torch(layer, x)
    T = TransformerLayer.from_torch(layer)
    assert np.max(np.abs(U.run(T, x.numpy()) - want)) <= 1e-13  # measured 7.8e-16
    assert np.max(np.abs(T.with_options(ln1_weight=np.full(8, 1.1))(x.numpy()) - want)) > 1e-3


def _encoder(norm: bool) -> Any:
    final = torch.nn.LayerNorm(8, dtype=torch.float64)
    with torch.no_grad():
        final.weight.add_(0.3)
        final.bias.add_(0.2)
    return torch.nn.TransformerEncoder(_layer(), 2, norm=final if norm else None).eval()


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_whole_encoder_with_final_norm() -> None:
    """Item 7: U.run_stack on an nn.TransformerEncoder runs its layers and its final norm (one more
    pass whose attention is exactly 0); without the norm (the mutation) the output is off."""
    enc, x = _encoder(norm=True), _x()
    want = _torch(enc, x)
    assert np.max(np.abs(U.run_stack(enc, x.numpy()) - want)) <= 1e-13  # measured 2.2e-15
    assert np.max(np.abs(U.run(enc, x.numpy()) - want)) <= 1e-13
    model = TorchEncoder.from_torch(enc)
    assert np.max(np.abs(U.run_stack(list(model.layers), x.numpy()) - want)) > 1e-2
    with pytest.raises(SimulatorError, match=r"^the encoder's norm is Identity|^from_torch: the encoder's norm is"):
        enc.norm = torch.nn.Identity()
        TorchEncoder.from_torch(enc)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("norm", [False, True])
@pytest.mark.parametrize("grad", [False, True])
def test_nested_tensor_padding(norm: bool, grad: bool) -> None:
    """Item 6: with enable_nested_tensor (the default) and a key padding mask, torch's inference
    path returns zeros on padded rows (then the final norm), its grad path the rows' values; U
    follows whichever path torch takes now.  Always returning the values (the mutation) fails."""
    enc, x = _encoder(norm), _x(b=3, n=5)
    pad = np.array([[0, 0, 0, 1, 1], [0, 0, 0, 0, 0], [0, 1, 1, 1, 1]], dtype=bool)
    with torch.set_grad_enabled(grad):
        want = enc(x, src_key_padding_mask=torch.from_numpy(pad)).detach().numpy()
        got = U.run_stack(enc, x.numpy(), src_key_padding_mask=pad)
        nested = TorchEncoder.from_torch(enc).nested_padding(3, None, pad)
    assert (nested is not None) == (not grad)
    assert np.max(np.abs(got - want)) <= 1e-13  # measured <= 2.2e-15 over the 4 cases
    values = U.run_stack([*TorchEncoder.from_torch(enc).layers], x.numpy(), src_key_padding_mask=pad)
    if norm:
        values = TorchEncoder.from_torch(enc).final_norm(values)  # type: ignore[misc]
    assert (np.max(np.abs(values - want)) > 1e-2) == (not grad)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_is_causal_without_src_mask_is_the_documented_causal_mask() -> None:
    """Item 5: ``is_causal=True`` alone applies the causal mask, as torch's documentation of
    TransformerEncoderLayer.forward says and as torch computes with the explicit mask; torch 2.13
    itself ignores the flag in inference and raises with grad enabled (docs/torch.md).  This test
    pins that finding: if torch starts honouring the flag, the first assertion tells us."""
    layer, x = _layer(), _x()
    causal = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    ignored = _torch(layer, x, is_causal=True)
    assert np.max(np.abs(ignored - _torch(layer, x))) == 0.0  # torch 2.13 inference: flag ignored
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        layer(x, is_causal=True)
    want = _torch(layer, x, src_mask=causal, is_causal=True)
    got = U.run(TransformerLayer.from_torch(layer), x.numpy(), is_causal=True)
    assert np.max(np.abs(got - want)) <= 1e-13  # measured 8.9e-16
    assert np.max(np.abs(got - ignored)) > 1e-2  # causal and unmasked differ on this input


if torch is not None:

    class _DoubledInput(torch.nn.TransformerEncoderLayer):
        def forward(self, src: Any, *args: Any, **kw: Any) -> Any:
            return super().forward(2 * src, *args, **kw)

    class _HalfAttention(torch.nn.TransformerEncoderLayer):
        def _sa_block(self, x: Any, *args: Any, **kw: Any) -> Any:
            return 0.5 * super()._sa_block(x, *args, **kw)

    class _HalfFeedForward(torch.nn.TransformerEncoderLayer):
        def _ff_block(self, x: Any) -> Any:
            return 0.5 * super()._ff_block(x)

    class _OnlyInit(torch.nn.TransformerEncoderLayer):
        def __init__(self) -> None:  # builds the stock layer: computes what it computes
            super().__init__(8, 2, 16, dropout=0.0, batch_first=True, dtype=torch.float64)

    class _ScaledMHA(torch.nn.MultiheadAttention):
        def forward(self, *args: Any, **kw: Any) -> Any:
            out, w = super().forward(*args, **kw)
            return 3 * out, w

    class _ShiftedLinear(torch.nn.Linear):
        def forward(self, x: Any) -> Any:
            return super().forward(x) + 1

    class _Doubling(torch.nn.Module):  # a module class of the user's own
        def forward(self, x: Any) -> Any:
            return 2 * x


def _same_weights(cls: Any) -> Any:
    """A float64 eval module of ``cls`` with _layer()'s weights."""
    m = cls(8, 2, 16, dropout=0.0, batch_first=True, dtype=torch.float64)
    m.load_state_dict(_layer().state_dict())
    return m.eval()


def _overridden(kind: str) -> tuple[Any, str]:
    """A module whose computation is not its stock class's, and the message naming what differs."""
    if kind in ("forward", "_sa_block", "_ff_block"):
        cls = {"forward": _DoubledInput, "_sa_block": _HalfAttention, "_ff_block": _HalfFeedForward}[kind]
        return _same_weights(cls), f"{cls.__name__} overrides {kind} of nn.TransformerEncoderLayer"
    layer = _layer()
    if kind == "mha":
        mha = _ScaledMHA(8, 2, batch_first=True, dtype=torch.float64)
        mha.load_state_dict(layer.self_attn.state_dict())
        layer.self_attn = mha.eval()
        return layer, r"self_attn \(_ScaledMHA\) overrides forward of nn.MultiheadAttention"
    if kind == "linear":
        lin = _ShiftedLinear(8, 16, dtype=torch.float64)
        lin.load_state_dict(layer.linear1.state_dict())
        layer.linear1 = lin
        return layer, r"linear1 \(_ShiftedLinear\) overrides forward of nn.Linear"
    if kind == "instance":
        stock = layer.forward
        layer.forward = lambda src, *a, **kw: stock(src + 1, *a, **kw)  # type: ignore[method-assign]
        return layer, "TransformerEncoderLayer has forward set on the instance, replacing nn.TransformerEncoderLayer;"
    if kind == "tanh-in-a-dropout-slot":  # a stock torch module where the layer holds a dropout
        layer.dropout2 = torch.nn.Tanh()
        return layer, r"dropout2 is Tanh, where nn.TransformerEncoderLayer holds nn.Dropout or nn.Identity"
    if kind == "own-class":
        layer.norm1 = _Doubling()
        return layer, r"norm1 \(_Doubling\) is not a torch module class"
    layer.norm2.register_forward_hook(lambda mod, args, out: out * 2)
    return layer, r"norm2 \(LayerNorm\) has a forward hook, which may change its output"


@pytest.mark.parametrize(
    "kind",
    ["forward", "_sa_block", "_ff_block", "mha", "linear", "instance", "hook", "tanh-in-a-dropout-slot", "own-class"],
)
def test_a_module_computing_other_than_its_stock_class_is_refused(slow_path: None, kind: str) -> None:
    """Corollary 6.1 at the torch boundary: T is read from a module's weights and options, so a
    subclass overriding forward or a sublayer method (or a forward hook) computes what T does not
    (read as the stock layer, U was off by 0.11-0.21 on such modules); it is refused in one line
    naming the method, for the layer, inside an encoder, and by U.run."""
    module, what = _overridden(kind)
    x = _x()
    assert np.max(np.abs(_torch(module, x) - _torch(_layer(), x))) > 1e-2  # it computes another function
    with pytest.raises(SimulatorError, match=rf"^from_torch: {what}"):
        TransformerLayer.from_torch(module)
    with pytest.raises(SimulatorError, match=rf"^from_torch: {what}"):
        U.run(module, x.numpy())
    encoder = torch.nn.TransformerEncoder(_layer(), 2, enable_nested_tensor=False)
    encoder.layers[1] = module
    with pytest.raises(SimulatorError, match=r"^from_torch: layers\.1"):
        TorchEncoder.from_torch(encoder)


def test_a_subclass_overriding_only_its_constructor_is_read(slow_path: None) -> None:
    """A subclass that only builds the stock layer computes what it computes: read, and simulated."""
    module = _OnlyInit()
    module.load_state_dict(_layer().state_dict())
    module.eval()
    x = _x()
    assert np.max(np.abs(U.run(module, x.numpy()) - _torch(module, x))) <= 1e-13  # measured 8.9e-16


def test_an_encoder_overriding_forward_is_refused() -> None:
    class _Encoder(torch.nn.TransformerEncoder):
        def forward(self, src: Any, *args: Any, **kw: Any) -> Any:
            return super().forward(src, *args, **kw) + 1

    encoder = _Encoder(_layer(), 2, enable_nested_tensor=False)
    with pytest.raises(SimulatorError, match=r"^from_torch: _Encoder overrides forward of nn.TransformerEncoder;"):
        U.run(encoder, _x().numpy())
