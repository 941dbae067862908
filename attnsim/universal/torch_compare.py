"""U against torch itself, on a user's module: torch's slow path, its inference fast path, U.

torch 2.x runs ``nn.TransformerEncoderLayer`` / ``nn.TransformerEncoder`` /
``nn.MultiheadAttention`` on two paths that do not always agree (docs/torch.md): the documented
*slow* path (taken when grad is enabled and the weights require it, or the fast path is
disabled) and the *fast* path of inference (eval + no_grad).  :func:`compare_torch` runs both,
and U on the module as :meth:`UniversalSimulator.run` reads it, and returns the three pairwise
max-abs differences as a typed record; a path that raises (torch refusing ``is_causal`` without
a mask, U refusing an option it does not simulate) is recorded with its one-line message.  The
verdict (``agrees``) compares U with the slow path run in float64 (on a float64 copy of a module
of another dtype, whose weights convert exactly, as U reads them), within :data:`TOLERANCE`.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnsim.universal.errors import SimulatorError
from attnsim.universal.layer import TransformerLayer
from attnsim.universal.torch_encoder import TorchEncoder
from attnsim.universal.torch_reading import import_torch
from attnsim.universal.universal import UniversalSimulator

#: U against torch's slow path in float64: max abs difference <= TOLERANCE * max(1, max |torch|)
#: (measured <= 1.8e-15 on 56 float64 configurations, tests/universal/test_torch_compare.py)
TOLERANCE = 1e-10


@dataclass(frozen=True)
class PathResult:
    """One way of computing the module's output: the output, or the one-line reason it has none."""

    name: str
    output: np.ndarray | None
    refused: str | None = None


@dataclass(frozen=True)
class TorchComparison:
    """U, torch's slow path and torch's fast path on one input, and their max-abs differences
    (None where a path refused); ``slow64``: the slow path on a float64 copy of a module of another
    dtype (None for a float64 module, whose slow path is that already)."""

    slow: PathResult
    fast: PathResult
    u: PathResult
    capacity: tuple[int, int, int, int, int | None]
    slow64: PathResult | None = None

    @staticmethod
    def _diff(a: PathResult, b: PathResult) -> float | None:
        if a.output is None or b.output is None:
            return None
        return float(np.max(np.abs(a.output - b.output)))

    @property
    def u_vs_slow(self) -> float | None:
        return self._diff(self.u, self.slow)

    @property
    def u_vs_fast(self) -> float | None:
        return self._diff(self.u, self.fast)

    @property
    def slow_vs_fast(self) -> float | None:
        return self._diff(self.slow, self.fast)

    @property
    def reference(self) -> PathResult:
        """What the verdict compares U with: torch's slow path in float64."""
        return self.slow if self.slow64 is None else self.slow64

    @property
    def u_vs_slow64(self) -> float | None:
        return self._diff(self.u, self.reference)

    @property
    def tolerance(self) -> float | None:
        """TOLERANCE scaled by max(1, max |torch's float64 output|); None when that path refused."""
        ref = self.reference.output
        return None if ref is None else TOLERANCE * max(1.0, float(np.max(np.abs(ref))))

    @property
    def agrees(self) -> bool:
        """U ran, torch's float64 slow path ran, and they differ by at most ``tolerance``."""
        d, tol = self.u_vs_slow64, self.tolerance
        return d is not None and tol is not None and d <= tol

    def verdict(self) -> str:
        """One line: U agrees with torch within the tolerance, or why not."""
        ref = self.reference
        if self.u.refused is not None:
            return f"U did not run: {self.u.refused}"
        if ref.refused is not None:
            return f"U not compared: {ref.name} did not run ({ref.refused})"
        rel = f"U vs {ref.name}: {self.u_vs_slow64:.3g}"
        if self.agrees:
            return f"{rel} <= the tolerance {self.tolerance:.3g}"
        return f"{rel}, beyond the tolerance {self.tolerance:.3g}: U does not simulate this module"

    def lines(self) -> list[str]:
        """The comparison as printable lines (the record stays the result)."""
        out = []
        for p in (self.u, self.slow, self.fast, *([self.slow64] if self.slow64 else [])):
            out.append(f"{p.name:>10}: " + ("ran" if p.refused is None else f"refused: {p.refused}"))
        diffs = [("U vs slow", self.u_vs_slow), ("U vs fast", self.u_vs_fast), ("slow vs fast", self.slow_vs_fast)]
        if self.slow64 is not None:
            diffs.append(("U vs slow float64", self.u_vs_slow64))
        for nm, v in diffs:
            out.append(f"{nm:>12}: " + ("-" if v is None else f"{v:.3g}"))
        out.append(f"{'verdict':>12}: {self.verdict()}")
        return out


def layers_of(module: Any) -> list[TransformerLayer]:
    """The layers T a torch module is read as (an encoder: its layers, then its final norm), or a
    one-line :class:`SimulatorError` naming what is not supported."""
    torch = import_torch()
    if isinstance(module, torch.nn.TransformerEncoder):
        enc = TorchEncoder.from_torch(module)
        return [*enc.layers, *([enc.final_norm] if enc.final_norm else [])]
    return [TransformerLayer.from_torch(module)]


@contextlib.contextmanager
def _path(fast: bool) -> Iterator[None]:
    """torch's fast path (fast path enabled, no_grad) or its slow path (fast path disabled, grad on)."""
    torch = import_torch()
    before = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(fast)
    try:
        with torch.set_grad_enabled(not fast):
            yield
    finally:
        torch.backends.mha.set_fastpath_enabled(before)


def _run(name: str, fn: Callable[[], np.ndarray]) -> PathResult:
    """The path's output, or its refusal: any exception torch raises (its fast path crashes with an
    AttributeError on LayerNorm(elementwise_affine=False)) or U's one-line SimulatorError."""
    try:
        return PathResult(name, fn())
    except SimulatorError as exc:
        return PathResult(name, None, str(exc))
    except Exception as exc:  # torch's own refusal or failure, recorded as one line
        return PathResult(name, None, f"{type(exc).__name__}: {' '.join(str(exc).split())}")


def compare_torch(
    module: Any,
    X: Any,
    *,
    src_mask: Any = None,
    is_causal: bool = False,
    src_key_padding_mask: Any = None,
) -> TorchComparison:
    """Run ``module`` (eval mode; an encoder layer, a whole encoder or a MultiheadAttention) on
    X (B, n, d), batch first, on torch's slow and fast paths, and U (at the smallest capacity
    holding the module) on the same input; masks as torch takes them (NumPy or torch)."""
    torch = import_torch()
    x = np.asarray(X, dtype=np.float64)
    if x.ndim != 3:
        raise SimulatorError(f"X must have shape (B, n, d_model), batch first, got {x.shape}")
    dtype = next(module.parameters()).dtype
    as_t = lambda m: None if m is None else (m if hasattr(m, "detach") else torch.from_numpy(np.asarray(m)))
    masks = {"src_mask": as_t(src_mask), "is_causal": is_causal, "src_key_padding_mask": as_t(src_key_padding_mask)}
    is_mha = isinstance(module, torch.nn.MultiheadAttention)

    attn = module if is_mha else (module.layers[0] if isinstance(module, torch.nn.TransformerEncoder) else module)
    seq_first = not getattr(attn if is_mha else getattr(attn, "self_attn", attn), "batch_first", True)

    def run_torch(module: Any, dtype: Any) -> np.ndarray:
        """torch's output, batch first; a module built with batch_first=False (torch's default)
        reads and returns (n, B, d), so X goes in and the output comes out transposed."""
        xt = torch.from_numpy(x).to(dtype)
        xt = xt.transpose(0, 1) if seq_first else xt
        if is_mha:
            pad = masks["src_key_padding_mask"]
            out = module(xt, xt, xt, attn_mask=masks["src_mask"], key_padding_mask=pad, need_weights=False)[0]
        elif isinstance(module, torch.nn.TransformerEncoder):
            pad = masks["src_key_padding_mask"]
            out = module(xt, mask=masks["src_mask"], src_key_padding_mask=pad, is_causal=is_causal or None)
        else:
            out = module(xt, **masks)
        out = out.transpose(0, 1) if seq_first else out
        return np.asarray(out.detach().to(torch.float64).numpy())

    def slow() -> np.ndarray:
        with _path(fast=False):
            return run_torch(module, dtype)

    def fast() -> np.ndarray:
        with _path(fast=True):
            return run_torch(module, dtype)

    def slow64() -> np.ndarray:
        """The slow path on a float64 copy of the module (its weights convert exactly)."""
        with _path(fast=False):
            return run_torch(copy.deepcopy(module).to(torch.float64), torch.float64)

    layers = layers_of(module)
    cap = (
        x.shape[1],
        max(T.d_model for T in layers),
        max(T.n_heads for T in layers),
        max(T.d_head for T in layers),
        max([T.d_ff for T in layers if T.d_ff is not None], default=None),
    )

    def run_u() -> np.ndarray:
        """U's output, batch first; U reads X in the module's order, as torch does."""
        U = UniversalSimulator(*cap)
        xu = np.swapaxes(x, 0, 1) if seq_first else x
        with _path(fast=False):  # U follows torch's documented path (padded rows kept, as there)
            y = U.run(module, xu, src_mask=src_mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask)
        return np.swapaxes(y, 0, 1) if seq_first else y

    ref64 = None if dtype == torch.float64 else _run("torch slow float64", slow64)
    return TorchComparison(_run("torch slow", slow), _run("torch fast", fast), _run("U", run_u), cap, ref64)


__all__ = ["PathResult", "TorchComparison", "compare_torch", "layers_of"]
