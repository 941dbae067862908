"""The compiled model's exact forward: every product an integer product over one common
denominator, the same rational arithmetic as Fractions without a gcd per entry.

Apart from the model (:mod:`attnsim.compile.model`, whose ``run`` and ``forward`` call it with
``exact=True``) because it is a second implementation of the forward, with its own integer
representation and caches; the float64 forward stays with the model.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from attnsim.compile.weights import _rows, as_number, obj

if TYPE_CHECKING:  # the model calls _ExactRun; the type only, so no import circle
    from attnsim.compile.model import CompiledTransformer


class _ExactRun:
    """Exact forward: the residual is an integer array N (Python ints) over ONE common denominator D.

    Every weight matrix is an integer matrix over its own denominator, so each product is an
    integer product; an attention average multiplies by lcm(1..T) / count.  This is the same
    rational arithmetic as Fractions, only much faster (no per-entry gcd).
    """

    def __init__(self, model: CompiledTransformer) -> None:
        self.m = model
        if not hasattr(model, "_int_cache"):
            model._int_cache = {}  # type: ignore[attr-defined]
        self.cache: dict[Any, Any] = model._int_cache  # type: ignore[attr-defined]

    def intmat(self, w: np.ndarray) -> tuple[np.ndarray, int]:
        """w as (integer matrix, denominator), cached per weight matrix."""
        key = ("int", id(w))
        if key not in self.cache:
            self.cache[key] = self.to_int(w)
        out: tuple[np.ndarray, int] = self.cache[key]
        return out

    def weights(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        key = ("rows", id(w))
        if key not in self.cache:
            wi, den = self.intmat(w)
            rows = _rows(w)
            self.cache[key] = (rows, wi[rows], den)
        out: tuple[np.ndarray, np.ndarray, int] = self.cache[key]
        return out

    def mm(self, n: np.ndarray, d: int, w: np.ndarray) -> tuple[np.ndarray, int]:
        rows, wi, wd = self.weights(w)
        if rows.size == 0:
            return obj((*n.shape[:-1], w.shape[1])), 1
        return n[..., rows] @ wi, d * wd

    @staticmethod
    def to_int(a: np.ndarray) -> tuple[np.ndarray, int]:
        dens = np.array([Fraction(v).denominator for v in a.reshape(-1)] or [1], dtype=object)
        den = int(np.lcm.reduce(dens))
        out = np.empty(a.shape, dtype=object)
        for ix, v in np.ndenumerate(a):
            out[ix] = int(Fraction(v) * den)
        return out, den

    @staticmethod
    def add(n1: np.ndarray, d1: int, n2: np.ndarray, d2: int) -> tuple[np.ndarray, int]:
        ll = math.lcm(d1, d2)
        return n1 * (ll // d1) + n2 * (ll // d2), ll

    @staticmethod
    def reduce(n: np.ndarray, d: int) -> tuple[np.ndarray, int]:
        g = math.gcd(int(np.gcd.reduce(n.reshape(-1))) if n.size else 0, d)
        return (n // g, d // g) if g > 1 else (n, d)

    @staticmethod
    def fractions(n: np.ndarray, d: int) -> np.ndarray:
        out = np.empty(n.shape, dtype=object)
        for ix, v in np.ndenumerate(n):
            out[ix] = as_number(Fraction(v, d))
        return out

    def embed(self, tok: np.ndarray) -> tuple[np.ndarray, int]:
        m = self.m
        B, L = tok.shape
        pi, pd = self.intmat(m.pos_embed)
        ti, td = self.intmat(m.tok_embed)
        pi = pi[: L + 1]
        ki, kd = self.to_int(tok)
        den = math.lcm(pd, td * kd)
        n = np.broadcast_to(pi * (den // pd), (B, L + 1, m.d_model)).copy()
        n[:, 1:, :] = n[:, 1:, :] + ki[:, :, None] * ti[None, None, :] * (den // (td * kd))
        return n, den

    def run(self, tok: np.ndarray, keep: bool) -> tuple[np.ndarray, int, list[np.ndarray]]:
        m = self.m
        n, d = self.embed(tok)
        states = [self.fractions(n, d)] if keep else []
        T = n.shape[1]
        lc = math.lcm(*range(1, T + 1))
        for li, lyr in enumerate(m.layers):
            if li > 0:
                acc, ad = obj(n.shape), 1
                for h in lyr.heads:
                    if h.bound is not None:
                        h.bound.check(h.name, self.fractions(n, d))
                    nq, _ = self.mm(n, d, h.W_Q)
                    nk, _ = self.mm(n, d, h.W_K)
                    s = nq @ np.swapaxes(nk, 1, 2)
                    w = s == s.max(axis=2, keepdims=True)
                    cnt = w.sum(axis=2, keepdims=True).astype(object)
                    nv, dv = self.mm(n, d, h.W_V)
                    avg = (w.astype(np.int64).astype(object) @ nv) * (lc // cnt)
                    no, do = self.mm(avg, dv * lc, h.W_O)
                    acc, ad = self.add(acc, ad, no, do)
                n, d = self.reduce(*self.add(n, d, acc, ad))
                if keep:
                    states.append(self.fractions(n, d))
            for st in lyr.mlp:
                acc, ad = obj(n.shape), 1
                if st.relu is not None:
                    hn, hd = self.mm(n, d, st.relu.W1)
                    hn = np.where(hn > 0, hn, 0)
                    acc, ad = self.mm(hn, hd, st.relu.W2)
                one = n[..., m.dims.index("one")]
                for fn in st.fns:
                    an, adn = self.mm(n, d, fn.W_in)
                    args = self.fractions(an, adn)
                    vi, vd = self.to_int(m._apply(fn, args, one, True))
                    col = obj(n.shape)
                    col[..., fn.out] = vi
                    acc, ad = self.add(acc, ad, col, vd)
                n, d = self.reduce(*self.add(n, d, acc, ad))
            if keep:
                states.append(self.fractions(n, d))
        return n, d, states
