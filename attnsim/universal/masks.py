"""Attention masks as torch defines them, for one sequence of n tokens.

``torch.nn.TransformerEncoderLayer.forward(src, src_mask, src_key_padding_mask, is_causal)`` and
``torch.nn.MultiheadAttention`` take three kinds of mask; :func:`attention_mask` turns them into
one :class:`AttentionMask`: a finite additive part (added to the logits) and a set of blocked
(query, key) pairs.  The masked softmax of a row i is then

    a[i, j] = exp(s[i, j] + additive[i, j]) / sum_{l not blocked} exp(s[i, l] + additive[i, l])

for j not blocked, and 0 for blocked j (``AttentionMask.apply``).  torch's rules, checked against
torch 2.13 (float64, eval mode; tests/universal/test_masks.py, test_torch_live.py):

* ``src_mask`` (n, n): bool, True = the key may NOT be attended to; or float, added to the logits,
  where ``-inf`` blocks the key.  We keep ``-inf`` as a blocked flag (never an infinite float) and
  every finite entry, ``-1e9`` included, as an additive term; ``+inf`` and NaN are refused (torch
  would return NaN).  torch also accepts 3-D per-head masks (B * heads, n, n); they are refused here.
* ``is_causal=True``: key j > query i is blocked.  torch's documentation of
  ``TransformerEncoderLayer.forward`` says "If specified, applies a causal mask as src mask" and,
  for ``MultiheadAttention``, that ``is_causal`` is a *hint* that ``src_mask`` is the causal mask.
  torch 2.13 does not behave the same on every path: the eval fast path ignores ``is_causal``
  (without ``src_mask`` the output is the unmasked one), the slow path (training, odd head count,
  fast path disabled) raises "Need attn_mask if specifying the is_causal hint", and with
  ``src_mask`` it may run the causal kernel instead of the given mask.  We follow the
  documentation: ``is_causal=True`` always blocks j > i, and when ``src_mask`` is given too both
  apply (the union of the blocked pairs, src_mask's additive part kept), which equals torch whenever
  the hint is true, i.e. whenever src_mask is causal as torch requires.
* ``src_key_padding_mask`` (n,) for one sequence, (B, n) for a batch (:func:`split_key_padding`):
  bool, True = padded key, blocked for every query; or float, added to every query's logit for
  that key (``-inf`` blocks it).
* A query whose every key is blocked has no softmax (torch returns NaN on the fast path and zeros
  on the SDPA path); we raise :class:`SimulatorError` instead.

Masks are numeric only (bool or float arrays, or torch tensors); the logits may be SymPy objects.
torch's eval fast path treats a float ``src_mask`` as bool (nonzero = blocked, pytorch/pytorch
issue 118628) and returns NaN for finite additive masks; the documented additive meaning, which the
slow path computes, is the one implemented here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from attnsim.universal.errors import SimulatorError


def _numeric(m: Any, what: str) -> np.ndarray:
    """A bool or float mask as a NumPy array (torch tensors accepted); anything else is refused."""
    if hasattr(m, "detach"):
        m = m.detach().cpu().numpy()
    a = np.asarray(m)
    if a.dtype == bool:
        return a
    if a.dtype.kind != "f":
        raise SimulatorError(f"{what} must be a bool or float array (as torch), got dtype {a.dtype}")
    if np.isnan(a).any():
        raise SimulatorError(f"{what} contains NaN")
    if np.isposinf(a).any():
        raise SimulatorError(f"{what} contains +inf (only -inf, which blocks a key, is allowed)")
    return a.astype(np.float64)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(additive, blocked) of one bool or float mask: bool True and float -inf block; finite floats add."""
    if a.dtype == bool:
        return np.zeros(a.shape), a.copy()
    blocked = np.isneginf(a)
    return np.where(blocked, 0.0, a), blocked


@dataclass(frozen=True, eq=False)
class AttentionMask:
    """One sequence's mask: ``additive`` (n, n) finite float64, ``blocked`` (n, n) bool (True = key j
    not allowed for query i).  Every query has at least one allowed key."""

    additive: np.ndarray
    blocked: np.ndarray

    def __post_init__(self) -> None:
        add = np.asarray(self.additive, dtype=np.float64)
        blk = np.asarray(self.blocked, dtype=bool)
        if add.ndim != 2 or add.shape[0] != add.shape[1] or blk.shape != add.shape:
            raise SimulatorError(f"additive and blocked must both have shape (n, n), got {add.shape} and {blk.shape}")
        if not np.all(np.isfinite(add)):
            raise SimulatorError("additive mask must be finite (block a key with blocked, not -inf)")
        full = np.flatnonzero(blk.all(axis=1))
        if full.size:
            i = int(full[0])
            raise SimulatorError(
                f"query {i} has every key masked ({add.shape[1]} of {add.shape[1]} blocked): its softmax is "
                "undefined (torch gives NaN or zeros)"
            )
        add.setflags(write=False)
        blk.setflags(write=False)
        object.__setattr__(self, "additive", add)
        object.__setattr__(self, "blocked", blk)

    @property
    def n(self) -> int:
        return int(self.additive.shape[0])

    def apply(self, logits: Any) -> np.ndarray:
        """Row-wise masked softmax of ``logits`` (n, n): exp(logit + additive) over the unblocked keys,
        normalized; 0 at blocked keys.  float64 is shifted by the row max over the unblocked keys
        (stable for any spread); SymPy logits get the plain exp / sum."""
        s = np.asarray(logits)
        if s.shape != self.additive.shape:
            raise SimulatorError(f"logits must have shape {self.additive.shape}, got {s.shape}")
        if s.dtype == object:
            import sympy as sp

            out = np.zeros(s.shape, dtype=object)
            for i in range(self.n):
                keep = [j for j in range(self.n) if not self.blocked[i, j]]
                num = {j: sp.exp(s[i, j] + float(self.additive[i, j])) for j in keep}
                total = sum(num.values(), sp.Integer(0))
                for j in keep:
                    out[i, j] = num[j] / total
            return out
        z = s.astype(np.float64) + self.additive
        z = np.where(self.blocked, -np.inf, z)
        z = z - z.max(axis=-1, keepdims=True)  # every row has an unblocked key: the max is finite
        e = np.where(self.blocked, 0.0, np.exp(z))
        return e / e.sum(axis=-1, keepdims=True)


def causal(n: int) -> np.ndarray:
    """The causal blocked pattern: key j > query i (torch's ``generate_square_subsequent_mask``)."""
    return np.triu(np.ones((n, n), dtype=bool), k=1)


def attention_mask(
    n: int, *, src_mask: Any = None, is_causal: bool = False, src_key_padding_mask: Any = None
) -> AttentionMask:
    """The mask of one sequence of n tokens from torch's three arguments (module docstring)."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise SimulatorError(f"n must be a positive int, got {n!r}")
    if not isinstance(is_causal, (bool, np.bool_)):
        raise SimulatorError(f"is_causal must be a bool, got {is_causal!r}")
    additive = np.zeros((n, n))
    blocked = causal(n) if is_causal else np.zeros((n, n), dtype=bool)
    if src_mask is not None:
        m = _numeric(src_mask, "src_mask")
        if m.ndim == 3:
            raise SimulatorError(
                f"src_mask of shape {m.shape}: 3-D per-head masks (B * heads, n, n) are not supported; give one (n, n)"
            )
        if m.shape != (n, n):
            raise SimulatorError(f"src_mask must have shape ({n}, {n}), got {m.shape}")
        add, blk = _split(m)
        additive, blocked = additive + add, blocked | blk
    if src_key_padding_mask is not None:
        m = _numeric(src_key_padding_mask, "src_key_padding_mask")
        if m.shape != (n,):
            raise SimulatorError(f"src_key_padding_mask must have shape ({n},) for one sequence, got {m.shape}")
        add, blk = _split(m)
        with np.errstate(over="ignore"):  # checked just below
            additive = additive + add[None, :]
        blocked = blocked | blk[None, :]
    if not np.all(np.isfinite(additive)):
        raise SimulatorError("src_mask + src_key_padding_mask overflows float64 (finite parts too large)")
    return AttentionMask(additive, blocked)


def split_key_padding(src_key_padding_mask: Any, batch: int, n: int) -> list[np.ndarray | None]:
    """A batch's key padding mask (B, n) as one (n,) mask per element (``None`` -> B times None)."""
    if src_key_padding_mask is None:
        return [None] * batch
    m = _numeric(src_key_padding_mask, "src_key_padding_mask")
    if m.shape != (batch, n):
        raise SimulatorError(f"src_key_padding_mask must have shape ({batch}, {n}) for a batch, got {m.shape}")
    return list(m)


__all__ = ["AttentionMask", "attention_mask", "causal", "split_key_padding"]
