"""A whole ``torch.nn.TransformerEncoder`` as Ts: its layers, its final norm as one more layer T
whose attention is zero, and torch's nested-tensor path on padded batches, reproduced.

Apart from T (:mod:`attnsim.universal.layer`, one layer) because it is a stack read from torch
and run by a given runner (U's ``run_stack`` or the reference), built on top of the layer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnsim.universal.errors import SimulatorError
from attnsim.universal.layer import TransformerLayer
from attnsim.universal.torch_reading import _float64_state, check_stock, import_torch


def _norm_layer(ln: Any, d: int, torch: Any, batch_first: bool) -> TransformerLayer:
    """A LayerNorm as a layer T whose attention is exactly 0 (zero weights): post-norm of X + 0 = LN(X)."""
    if not isinstance(ln, torch.nn.LayerNorm):
        raise SimulatorError(f"from_torch: the encoder's norm is {type(ln).__name__}, not nn.LayerNorm or None")
    if tuple(ln.normalized_shape) != (d,):
        shape = tuple(ln.normalized_shape)
        raise SimulatorError(f"from_torch: the encoder's norm normalizes shape {shape}, not ({d},)")
    sd = _float64_state(ln)
    return TransformerLayer(
        w_q=np.zeros((1, d, 1)),
        w_k=np.zeros((1, d, 1)),
        w_v=np.zeros((1, d, 1)),
        w_o=np.zeros((1, d)),
        residual=True,
        norm="post",
        ln1_weight=sd.get("weight", np.ones(d)),
        ln1_bias=sd.get("bias", np.zeros(d)),
        eps=float(ln.eps),
        meta={"torch": "final norm"},
        batch_first=batch_first,
    )


StackRunner = Callable[..., np.ndarray]


@dataclass(frozen=True, eq=False)
class TorchEncoder:
    """A whole ``torch.nn.TransformerEncoder``: its layers as Ts, its final ``norm`` (None, or a layer
    T whose attention is zero, so U runs it as one more pass), and the module itself, asked at run
    time whether torch would take its nested-tensor path.

    On that path (eval, no grad, fast path enabled, ``enable_nested_tensor``, a left-aligned
    ``src_key_padding_mask``, no ``mask``) torch drops the padded tokens, runs the layers on the
    rest and returns zeros on the padded rows (then the final norm); a float padding mask counts
    every nonzero entry as padding there.  :meth:`run` reproduces that; elsewhere the padded rows
    hold their values, as torch's slow path gives them."""

    layers: tuple[TransformerLayer, ...]
    final_norm: TransformerLayer | None
    module: Any

    @staticmethod
    def from_torch(module: Any) -> TorchEncoder:
        """Read an ``nn.TransformerEncoder``; a layer or norm T does not simulate is refused in one line."""
        torch = import_torch()
        if not isinstance(module, torch.nn.TransformerEncoder):
            raise SimulatorError(f"TorchEncoder.from_torch takes nn.TransformerEncoder, got {type(module).__name__}")
        check_stock(module, torch)
        layers = []
        for i, lyr in enumerate(module.layers):
            try:
                layers.append(TransformerLayer.from_torch(lyr))
            except SimulatorError as exc:
                raise SimulatorError(f"layer {i}: {exc}") from None
        if not layers:
            raise SimulatorError("the encoder has no layers")
        bf = layers[0].batch_first
        norm = None if module.norm is None else _norm_layer(module.norm, layers[0].d_model, torch, bf)
        return TorchEncoder(tuple(layers), norm, module)

    def nested_padding(self, x_ndim: int, src_mask: Any, src_key_padding_mask: Any) -> np.ndarray | None:
        """The (B, n) bool mask of the rows torch's nested-tensor path returns as zeros (None when
        torch 2.x would not take that path now: the conditions of ``TransformerEncoder.forward``)."""
        torch = import_torch()
        m, first = self.module, self.module.layers[0]
        if src_key_padding_mask is None or src_mask is not None or x_ndim != 3:
            return None
        if not (torch.backends.mha.get_fastpath_enabled() and getattr(m, "use_nested_tensor", False)):
            return None
        if first.training or torch.is_autocast_enabled():
            return None
        if torch.is_grad_enabled() and any(p.requires_grad for p in m.parameters()):
            return None
        pad = src_key_padding_mask
        pad = pad.detach().cpu().numpy() if hasattr(pad, "detach") else np.asarray(pad)
        valid = ~pad if pad.dtype == bool else pad == 0  # torch: logical_not of the (float) mask
        left_aligned = all(np.array_equal(row, np.sort(row)[::-1]) for row in valid)
        if getattr(m, "mask_check", True) and not left_aligned:  # torch keeps the padded tensor
            return None
        return np.asarray(~valid, dtype=bool)

    def run(
        self,
        stack: StackRunner,
        X: Any,
        *,
        src_mask: Any = None,
        is_causal: bool = False,
        src_key_padding_mask: Any = None,
        **kw: Any,
    ) -> np.ndarray:
        """The encoder's output, each stack of layers run by ``stack(layers, X, **masks)`` (U's
        ``run_stack`` or the reference), padded rows as torch's current path gives them."""
        x = np.asarray(X)
        zeroed = self.nested_padding(x.ndim, src_mask, src_key_padding_mask)
        if zeroed is None:
            layers = [*self.layers, *([self.final_norm] if self.final_norm else [])]
            masks = {"src_mask": src_mask, "is_causal": is_causal, "src_key_padding_mask": src_key_padding_mask}
            return stack(layers, X, **masks, **kw)
        y = stack(list(self.layers), X, src_mask=None, is_causal=is_causal, src_key_padding_mask=zeroed, **kw)
        rows = zeroed if self.layers[0].batch_first else zeroed.T  # (B, n) as y's first two axes
        y = np.where(rows[..., None], 0.0, y)
        return y if self.final_norm is None else stack([self.final_norm], y, **kw)

    def __call__(self, X: Any, **masks: Any) -> np.ndarray:
        """The reference: the layers' Ts one after the other (same mask rules as :meth:`run`)."""

        def reference(layers: list[TransformerLayer], x: Any, **kw: Any) -> np.ndarray:
            for T in layers:
                x = T(x, **kw)
            return np.asarray(x)

        return self.run(reference, X, **masks)
