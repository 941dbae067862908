"""The compiled transformer: named residual dimensions, explicit weights, a plain NumPy forward.

Conventions (so that nothing must be guessed to use the weights):

* the model runs on ``[BOS] + tokens``; row 0 of the residual stream is BOS;
* embedding: ``X[0] = pos_embed[0]`` (only ``bos`` = 1), ``X[p + 1] = pos_embed[p + 1] + x_p * tok_embed``;
* layer 0 is an MLP only; every later layer is attention (all heads read the same residual,
  outputs are added) followed by an MLP made of *stages* (a ReLU block ``X += relu(X W1) W2``,
  and/or generalized position-wise function nodes), applied in order;
* attention is average hard attention: ``S = (X W_Q)(X W_K)^T``; each query averages
  ``X W_V`` over the keys whose score is maximal, then ``W_O`` maps the average back;
* no biases: affine constants ride the ``one`` dimension (1 on tokens, 0 on BOS), so that the
  BOS row stays exactly zero outside ``bos`` -- BOS is then a key of value 0 whose score sits
  between "selected" and "not selected", giving the empty-selection default 0;
* read-out: the program's value is ``X[1:] @ readout``.

Exact mode runs every matrix product on dtype-object arrays of ints and Fractions; float mode
uses float64, where a key counts as maximal when its score is within half of the head's
score gap of the row maximum (scores of distinct classes differ by at least the gap, so
this only absorbs rounding).

Here: the model, its shape facts and its float64 forward.  The weight records it holds are
:mod:`attnsim.compile.weights`, the exact forward :mod:`attnsim.compile.exact_forward`, the file
``save`` / ``load`` write and read :mod:`attnsim.compile.model_file`, the torch export
:mod:`attnsim.compile.torch_module`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from attnsim.compile import model_file, torch_module
from attnsim.compile.errors import CompileError
from attnsim.compile.exact_forward import _ExactRun
from attnsim.compile.weights import FnNode, Head, Layer, Stage, _rows, as_number, obj
from attnsim.rasp import primitives as P


class _Float:
    """float64 copies of the weights and the non-zero row sets, cached per matrix."""

    def __init__(self) -> None:
        self.cache: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def get(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        key = id(w)
        if key not in self.cache:
            rows = _rows(w)
            self.cache[key] = (rows, w[rows].astype(np.float64), w[rows])
        return self.cache[key]


def _wmean(w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """w @ v where keys of weight 0 contribute nothing even if their value is not finite."""
    fin = np.isfinite(v)
    if fin.all():
        return w @ v
    out = w @ np.where(fin, v, 0.0)
    bad = (w > 0).astype(np.float64) @ (~fin).astype(np.float64) > 0
    out[bad] = np.nan
    return out


_QDIV = np.frompyfunc(lambda a, n: a // n if isinstance(a, int) and a % n == 0 else Fraction(a) / n, 2, 1)


class CompiledTransformer:
    """Explicit transformer weights for a GAHAT-RASP program (see the module docstring)."""

    def __init__(
        self,
        dims: list[str],
        max_len: int,
        pos_embed: np.ndarray,
        tok_embed: np.ndarray,
        layers: list[Layer],
        readout: np.ndarray,
        vocab: tuple[Fraction, ...] | None = None,
        notes: dict[str, Any] | None = None,
        name: str = "program",
    ) -> None:
        self.dims = dims
        self.max_len = max_len
        self.pos_embed = pos_embed
        self.tok_embed = tok_embed
        self.layers = layers
        self.readout = readout
        self.vocab = vocab
        self.notes = notes or {}
        self.name = name
        self._f = _Float()
        self.program: Any = None

    # -- shape facts --------------------------------------------------------------------------
    @property
    def d_model(self) -> int:
        return len(self.dims)

    @property
    def n_layers(self) -> int:
        """Attention layers (layer 0, an MLP before any attention, is not counted)."""
        return len(self.layers) - 1

    @property
    def exact_capable(self) -> bool:
        """True when every function node has a rational (exact) value."""
        return all(P.get(f.prim).exact is not None for lyr in self.layers for st in lyr.mlp for f in st.fns)

    def dim(self, name: str) -> int:
        try:
            return self.dims.index(name)
        except ValueError:
            raise CompileError(f"no residual dimension named {name!r}") from None

    def matrices(self) -> list[tuple[str, np.ndarray]]:
        out: list[tuple[str, np.ndarray]] = [("pos_embed", self.pos_embed), ("tok_embed", self.tok_embed)]
        for li, lyr in enumerate(self.layers):
            for hi, h in enumerate(lyr.heads):
                for nm in ("W_Q", "W_K", "W_V", "W_O"):
                    out.append((f"L{li}.H{hi}.{nm}", getattr(h, nm)))
            for si, st in enumerate(lyr.mlp):
                if st.relu is not None:
                    out.append((f"L{li}.S{si}.W1", st.relu.W1))
                    out.append((f"L{li}.S{si}.W2", st.relu.W2))
                for fi, fn in enumerate(st.fns):
                    out.append((f"L{li}.S{si}.F{fi}.W_in", fn.W_in))
        out.append(("readout", self.readout))
        return out

    def parameter_count(self, nonzero: bool = False) -> int:
        """Entries of every weight matrix (dense, as Tracr counts them), or only the non-zero ones."""
        if nonzero:
            return sum(int(sum(1 for v in m.reshape(-1) if v != 0)) for _, m in self.matrices())
        return sum(int(m.size) for _, m in self.matrices())

    def heads_per_layer(self) -> list[int]:
        return [len(lyr.heads) for lyr in self.layers[1:]]

    def mlp_widths(self) -> list[list[int]]:
        """Hidden width of each ReLU stage, per layer (layer 0 first)."""
        return [[st.relu.W1.shape[1] for st in lyr.mlp if st.relu is not None] for lyr in self.layers]

    def generalized_nodes(self) -> list[str]:
        return [f"L{li}: {fn.note}" for li, lyr in enumerate(self.layers) for st in lyr.mlp for fn in st.fns]

    def summary(self) -> str:
        """Layers, heads, residual width, MLP widths, parameters, selector forms, generalized nodes."""
        lines = [
            f"compiled {self.name}: max_len {self.max_len}, residual width {self.d_model}",
            f"  layers {self.n_layers} (+ layer-0 MLP), heads per layer {self.heads_per_layer()}",
            f"  MLP hidden widths per layer (stages) {self.mlp_widths()}",
            f"  parameters {self.parameter_count():,} dense, {self.parameter_count(nonzero=True):,} non-zero",
            f"  exact forward available: {self.exact_capable}",
        ]
        for li, lyr in enumerate(self.layers):
            for h in lyr.heads:
                lines.append(f"  L{li} head {h.name} [{h.kind}, margin {h.margin}, gap {h.gap}]: {'; '.join(h.forms)}")
        for li, lyr in enumerate(self.layers):
            for st in lyr.mlp:
                if st.relu is not None:
                    for n in st.relu.notes:
                        lines.append(f"  L{li} MLP: {n}")
        gen = self.generalized_nodes()
        lines.append(f"  generalized function nodes: {len(gen)}" + ("" if gen else " (none: every MLP is ReLU-exact)"))
        lines += [f"    {g}" for g in gen]
        for k, v in self.notes.items():
            if isinstance(v, list):
                lines += [f"  {k}: {x}" for x in v]
            else:
                lines.append(f"  {k}: {v}")
        return "\n".join(lines)

    # -- running ------------------------------------------------------------------------------
    def _check(self, tokens: Any, exact: bool) -> np.ndarray:  # noqa: C901
        arr = np.asarray(tokens, dtype=object)
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2:
            raise CompileError(f"inputs must be a token sequence or a batch (B, L); got shape {arr.shape}")
        B, L = arr.shape
        if L < 1 or L > self.max_len:
            raise CompileError(f"sequence length {L} outside 1..max_len={self.max_len}")
        raw = np.asarray(tokens)
        if raw.dtype.kind in "iub":
            ints = raw.reshape(B, L).astype(np.int64)
            if self.vocab is not None:
                ok = np.isin(ints, np.array([int(v) for v in self.vocab if v.denominator == 1], dtype=np.int64))
                if not ok.all():
                    bad = tuple(np.argwhere(~ok)[0])
                    raise CompileError(
                        f"token {bad[1]} = {ints[bad]} is outside the vocabulary the model was compiled for"
                    )
            return ints.astype(object) if exact else ints.astype(np.float64)
        out = np.empty((B, L), dtype=object)
        for ix, v in np.ndenumerate(arr):
            if isinstance(v, (float, np.floating)) and not math.isfinite(float(v)):
                raise CompileError(f"token {ix[1]} is {v}: NaN/inf tokens are rejected")
            try:
                f = Fraction(v) if not isinstance(v, (float, np.floating)) else Fraction(float(v))
            except (TypeError, ValueError):
                raise CompileError(f"token {ix[1]} = {v!r} is not a real number") from None
            if self.vocab is not None and f not in self.vocab:
                raise CompileError(f"token {ix[1]} = {v} is outside the vocabulary the model was compiled for")
            out[ix] = as_number(f) if exact else float(f)
        return out if exact else out.astype(np.float64)

    def _mm(self, x: np.ndarray, w: np.ndarray, exact: bool) -> np.ndarray:
        rows, wf, wx = self._f.get(w)
        if rows.size == 0:
            return obj((*x.shape[:-1], w.shape[1])) if exact else np.zeros((*x.shape[:-1], w.shape[1]))
        if exact:
            return x[..., rows] @ wx
        xs = x[..., rows]
        fin = np.isfinite(xs)
        if fin.all():
            return xs @ wf
        # a non-finite entry (e.g. 0/0 at a position outside a matrix block) reaches only the
        # columns whose weight on it is non-zero, as in the program (0 * nan counts as 0)
        out = np.where(fin, xs, 0.0) @ wf
        bad = (~fin).astype(np.float64) @ (wf != 0).astype(np.float64) > 0
        out[bad] = np.nan
        return out

    def embed(self, tokens: np.ndarray, exact: bool) -> np.ndarray:
        B, L = tokens.shape
        pe = self.pos_embed if exact else self.pos_embed.astype(np.float64)
        te = self.tok_embed if exact else self.tok_embed.astype(np.float64)
        x = np.broadcast_to(pe[: L + 1], (B, L + 1, self.d_model)).copy()
        x[:, 1:, :] = x[:, 1:, :] + tokens[:, :, None] * te[None, None, :]
        return x

    def attend(self, h: Head, x: np.ndarray, exact: bool, beta: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The head's contribution to the residual, and its attention weights (B, T, T)."""
        q, k = self._mm(x, h.W_Q, exact), self._mm(x, h.W_K, exact)
        s = q @ np.swapaxes(k, 1, 2)
        v = self._mm(x, h.W_V, exact)
        if not exact:
            s = np.where(np.isnan(s), -np.inf, s)  # a score the program cannot compare never selects
        if beta is not None:
            s = s.astype(np.float64)
            z = beta * (s - s.max(axis=2, keepdims=True))
            w = np.exp(z)
            w /= w.sum(axis=2, keepdims=True)
            out = _wmean(w, v.astype(np.float64))
        elif exact:
            mx = s.max(axis=2, keepdims=True)
            w = s == mx
            cnt = w.sum(axis=2, keepdims=True)
            out = _QDIV(w.astype(np.int64).astype(object) @ v, cnt)
        else:
            s = s.astype(np.float64)
            mx = s.max(axis=2, keepdims=True)
            w = (s >= mx - min(float(h.gap), 1.0) / 2).astype(np.float64)
            w /= w.sum(axis=2, keepdims=True)
            out = _wmean(w, v)
        return self._mm(out, h.W_O, exact), w

    def mlp_stage(self, st: Stage, x: np.ndarray, exact: bool) -> np.ndarray:
        add = obj(x.shape) if exact else np.zeros(x.shape)
        if st.relu is not None:
            hdn = self._mm(x, st.relu.W1, exact)
            hdn = np.where(hdn > 0, hdn, 0)
            add = add + self._mm(hdn, st.relu.W2, exact)
        one = x[..., self.dims.index("one")]
        for fn in st.fns:
            args = self._mm(x, fn.W_in, exact)
            add[..., fn.out] = add[..., fn.out] + self._apply(fn, args, one, exact)
        return add

    def _apply(self, fn: FnNode, args: np.ndarray, one: np.ndarray, exact: bool) -> np.ndarray:
        prim = P.get(fn.prim)
        if not exact:
            with np.errstate(all="ignore"):
                val = prim.numpy(
                    *(args[..., i].astype(np.float64) for i in range(args.shape[-1])), *map(float, fn.params)
                )
            return np.where(one != 0, val, 0.0)
        if prim.exact is None:
            raise CompileError(f"function node {fn.note} ({fn.prim}) has no exact value; use exact=False")
        out = obj(one.shape)
        for ix in np.ndindex(*one.shape):
            if one[ix] != 0:
                try:
                    out[ix] = as_number(prim.exact(*(Fraction(a) for a in args[ix]), *fn.params))
                except P.PrimitiveError as exc:
                    raise CompileError(f"function node {fn.note}: {exc}") from None
        return out

    def run(  # noqa: C901
        self, tokens: Any, exact: bool | None = None, beta: float | None = None, keep: bool = False
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """The residual stream after the last layer (B, L+1, d); with ``keep``, also after every sublayer."""
        if exact is None:
            exact = self.exact_capable and beta is None
        if exact and beta is not None:
            raise CompileError("soft attention (beta) runs in float64 only")
        if exact and not self.exact_capable:
            raise CompileError("this model has irrational function nodes (exp, gelu...): no exact forward")
        tok = self._check(tokens, exact)
        if exact:
            n, d, states = _ExactRun(self).run(tok, keep)
            return _ExactRun.fractions(n, d), states
        x = self.embed(tok, False)
        states = [x.copy()] if keep else []
        for li, lyr in enumerate(self.layers):
            if li > 0:
                add = np.zeros(x.shape)
                for h in lyr.heads:
                    if h.bound is not None:
                        h.bound.check(h.name, x)
                    add = add + self.attend(h, x, False, beta)[0]
                x = x + add
                if keep:
                    states.append(x.copy())
            for st in lyr.mlp:
                x = x + self.mlp_stage(st, x, False)
            if keep:
                states.append(x.copy())
        return x, states

    def forward(self, tokens: Any, exact: bool | None = None, beta: float | None = None) -> np.ndarray:
        """The program's output per token: shape (L,) for one sequence, (B, L) for a batch.

        ``exact`` (default: whenever possible) runs in ints/Fractions; ``beta`` replaces hard
        attention by softmax at inverse temperature beta (float64).
        """
        if exact is None:
            exact = self.exact_capable and beta is None
        if exact:
            if beta is not None or not self.exact_capable:
                self.run(tokens, exact, beta)  # raises the clear error
            er = _ExactRun(self)
            n, d, _ = er.run(self._check(tokens, True), False)
            yn, yd = er.mm(n[:, 1:, :], d, self.readout[:, None])
            y = _ExactRun.fractions(yn[..., 0], yd)
        else:
            x, _ = self.run(tokens, False, beta)
            y = self._mm(x[:, 1:, :], self.readout[:, None], False)[..., 0]
        return y[0] if np.asarray(tokens, dtype=object).ndim == 1 else y

    __call__ = forward

    # -- persistence --------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write an .npz: float64 weights by name, exact sparse (row, col, value) copies, and the layout."""
        return model_file.write(self, path)

    @staticmethod
    def load(path: str | Path) -> CompiledTransformer:
        """Read a model written by :meth:`save` (weights restored exactly)."""
        return CompiledTransformer(*model_file.read(path))

    # -- torch --------------------------------------------------------------------------------
    def to_torch(self) -> Any:
        """A ``torch.nn.Module`` with the same float64 forward (needs the optional torch extra)."""
        return torch_module.build(self)
