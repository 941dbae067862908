"""Reading torch modules for T: the optional torch import, a module's parameters in float64, and
the one-line refusals of what T does not simulate (dropout in training mode, MultiheadAttention
options, activations other than ReLU and the two GELUs).

Apart from T (:mod:`attnsim.universal.layer`) because it is torch's side of the bridge: T's
``from_torch`` and the whole-encoder reader (:mod:`attnsim.universal.torch_encoder`) share it, and
nothing here computes T.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnsim.universal.errors import SimulatorError


def _training_dropout(module: Any, nn: Any) -> str:
    """The first submodule in training mode whose dropout is > 0, as "name p = ..." ('' if none)."""
    kinds = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.FeatureAlphaDropout)
    for name, m in module.named_modules():
        if isinstance(m, kinds):
            p = float(m.p)
        elif isinstance(m, nn.MultiheadAttention):
            p = float(m.dropout)
        else:
            continue
        if m.training and p > 0:
            return f"p = {p:g} ({name or 'self'})"
    return ""


def import_torch() -> Any:
    """The torch module, or a one-line error saying how to install it."""
    try:
        import torch
    except ImportError:
        raise SimulatorError(
            "from_torch needs PyTorch: install the optional extra with pip install 'attnsim[torch]'"
        ) from None
    return torch


def _float64_state(module: Any) -> dict[str, np.ndarray]:
    """The module's state dict in float64 (bfloat16 / float16 / float32 weights convert exactly)."""
    out = {}
    for k, v in module.state_dict().items():
        if not v.is_floating_point():
            raise SimulatorError(f"from_torch: parameter {k} has dtype {v.dtype}, not a float dtype")
        if v.is_meta:
            raise SimulatorError(
                f"from_torch: parameter {k} is on the meta device (a shape without values): give the module "
                "its weights first (module.to_empty(device='cpu'), then load_state_dict)"
            )
        out[k] = v.detach().cpu().to(dtype=import_torch().float64).numpy()
    return out


# methods of a stock module that only build or describe it: a subclass may override them freely
_BUILDING = frozenset(
    {"__init__", "__setstate__", "__getstate__", "__repr__", "extra_repr", "_reset_parameters", "reset_parameters"}
)
# nn.Module's own methods through which a call reaches ``forward``
_CALLING = frozenset({"forward", "__call__", "_call_impl", "_wrapped_call_impl"})


def _stock_class(cls: type) -> type:
    """The first class in ``cls``'s MRO that torch itself defines (``cls`` for a stock module)."""
    return next(c for c in cls.__mro__ if c.__module__.split(".")[0] == "torch")


def check_stock(module: Any, torch: Any) -> None:
    """Refuse, in one line naming it, a module or submodule whose computation is not its stock torch
    class's: a subclass (or the instance) overriding ``forward`` or another method of that class
    (``_sa_block``, ``_ff_block``...), or a forward hook.  T is read from the weights and options
    alone, so such a module would be simulated as the stock one: a silent wrong answer."""
    hooks = torch.nn.modules.module
    if getattr(hooks, "_global_forward_hooks", None) or getattr(hooks, "_global_forward_pre_hooks", None):
        raise SimulatorError(
            "from_torch: a global forward hook is registered (register_module_forward_hook), which may change "
            "every module's output; T simulates modules without hooks: remove it"
        )
    slots = _slots(torch)
    for path, m in module.named_modules():
        cls = type(m)
        stock = _stock_class(cls)
        what = f"{path} ({cls.__name__})" if path else cls.__name__
        if stock is torch.nn.Module:  # a class of the user's own, anywhere in the module: its code is unread
            raise SimulatorError(
                f"from_torch: {what} is not a torch module class; T simulates torch's own modules only (it reads "
                "the weights and options, not the code)"
            )
        for name, child in m.named_children():
            allowed = slots.get(stock, {}).get(name)
            if allowed is not None and not isinstance(child, allowed):
                want = " or ".join(f"nn.{a.__name__}" for a in allowed)
                slot = f"{path}.{name}" if path else name
                raise SimulatorError(
                    f"from_torch: {slot} is {type(child).__name__}, where nn.{stock.__name__} holds {want}; "
                    "torch runs it, T would not: use the stock layout"
                )
        methods = set(_CALLING)
        for c in stock.__mro__[: stock.__mro__.index(torch.nn.Module)]:
            methods |= {k for k, v in vars(c).items() if callable(v) and k not in _BUILDING}
        for c in [*cls.__mro__[: cls.__mro__.index(stock)], m]:
            over = sorted(methods & set(vars(c)))
            if over:
                how = f"overrides {over[0]} of" if c is not m else f"has {over[0]} set on the instance, replacing"
                raise SimulatorError(
                    f"from_torch: {what} {how} nn.{stock.__name__}; T simulates the stock nn.{stock.__name__} "
                    "only (it reads the weights and options, not the code): use the stock class"
                )
        if m._forward_hooks or m._forward_pre_hooks:
            raise SimulatorError(
                f"from_torch: {what} has a forward hook, which may change its output; T simulates the module "
                "without hooks: remove it (handle.remove())"
            )


def _slots(torch: Any) -> dict[type, dict[str, tuple[type, ...]]]:
    """The class a stock layer's dropout slots hold: T reads nothing of them (a dropout is the identity
    in eval mode), but torch runs whatever sits there, so anything else is refused.  The other slots
    (attention, linears, norms) are checked where T reads them."""
    nn = torch.nn
    drop = (nn.Dropout, nn.Identity)
    return {nn.TransformerEncoderLayer: {"dropout": drop, "dropout1": drop, "dropout2": drop}}


def _check_attention(mha: Any, where: str) -> None:
    """Refuse, in one line naming the option, a MultiheadAttention T does not simulate."""
    if not mha._qkv_same_embed_dim:
        raise SimulatorError(f"from_torch: {where}MultiheadAttention with kdim/vdim != embed_dim is unsupported")
    if mha.bias_k is not None:
        raise SimulatorError(f"from_torch: {where}MultiheadAttention with add_bias_kv=True is unsupported")
    if mha.add_zero_attn:
        raise SimulatorError(f"from_torch: {where}MultiheadAttention with add_zero_attn=True is unsupported")


def _activation_of(layer: Any, torch: Any) -> str:
    """T's name for an encoder layer's activation: relu, gelu (erf) or gelu_tanh; else a one-line error."""
    fn, F, nn = layer.activation, torch.nn.functional, torch.nn
    if fn is F.relu or isinstance(fn, nn.ReLU):
        return "relu"
    if fn is F.gelu:
        return "gelu"
    if isinstance(fn, nn.GELU):
        if fn.approximate == "tanh":
            return "gelu_tanh"
        if fn.approximate == "none":
            return "gelu"
        raise SimulatorError(f"from_torch: GELU(approximate={fn.approximate!r}) is unsupported")
    raise SimulatorError(f"from_torch: activation {fn!r} is unsupported; T has relu, gelu and GELU(approximate='tanh')")
