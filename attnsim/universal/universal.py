"""The universal simulator U (Theorem 6, Corollary 6.1, Theorem 9, Corollary 9.1, hierarchy N >= n): its runtime API.

ONE GAHAT-RASP program per capacity (max_len N, d_model D, n_heads H, d_head K, d_ff F), built
by :class:`attnsim.universal.program.UniversalProgram` (seven attention layers at every capacity,
``variant="compact"``; the stages and what each layer computes are described there).  The
simulated layer T travels in the input <T, X> (:mod:`attnsim.universal.record`: every token is 0,
a gate, a size or one entry of T, X or the masks), so the program never depends on T.
:class:`UniversalSimulator` is the facade over one built program: it encodes <T, X>, runs the
program, decodes the output, traces a run and reports its cost.

Smaller n, d, h, d_head, d_ff run on the same program: padding is zero, keys j >= n are not
allowed, LayerNorm divides by the true d.  A pass writes the output over X, advances the pointer
and shifts the record queue by one (record l + 1 moves into the slot a pass reads), so running the
same program m times on <T1..Tm, X> simulates an m-layer encoder (``run_stack``).
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.arith import BackendError
from attnsim.rasp.domain import Interval
from attnsim.rasp.engine import Padded, RunStats, StructuralMemo, Trace, evaluate
from attnsim.rasp.engine import trace as engine_trace
from attnsim.rasp.guards import complex_entry
from attnsim.rasp.intent import Intent
from attnsim.rasp.layout import Grid, Layout, value_of
from attnsim.rasp.schedule import Cost, cost
from attnsim.universal.errors import SimulatorError
from attnsim.universal.layer import TransformerLayer
from attnsim.universal.layer_arithmetic import is_sympy_matrix
from attnsim.universal.masks import attention_mask, split_key_padding
from attnsim.universal.memory import MemoryEstimate, check_fits, estimate
from attnsim.universal.program import VARIANTS, Mask, UniversalProgram
from attnsim.universal.program.attention import LOGIT_BOUND
from attnsim.universal.record import GATES, HEADER, InputMap
from attnsim.universal.torch_encoder import TorchEncoder

if TYPE_CHECKING:
    import sympy as sp

GATED_ACTIVATIONS = ("relu", "gelu", "gelu_tanh")  # U's MLP selects by the record's gelu and gelu_tanh gates
SEQ = E.Var("seq_len")
CAPACITY_NAMES = ("N", "D", "H", "K", "F")
_CLOSED_FORMS: dict[str, sp.Expr] = {}  # an index expression's text -> it in SymPy over the capacity symbols


def closed_form(e: E.Expr) -> sp.Expr:
    """``e`` over the capacity symbols N, D, H, K, F (positive integers) in SymPy, kept by its text:
    U's positions are the same expression at every capacity of a variant, and SymPy's Max of its
    grid ends takes ~1 s.  SymPy is imported here, by the first closed form asked for."""
    import sympy as sp

    key = E.render(e)
    if key not in _CLOSED_FORMS:
        symbols = {s: sp.Symbol(s, positive=True, integer=True) for s in CAPACITY_NAMES}
        _CLOSED_FORMS[key] = e.to_sympy(symbols)
    return _CLOSED_FORMS[key]


def _is_torch_encoder(m: Any) -> bool:
    """True for a ``torch.nn.TransformerEncoder`` (recognized without importing torch)."""
    name = "torch.nn.modules.transformer.TransformerEncoder"
    return any(f"{c.__module__}.{c.__name__}" == name for c in type(m).__mro__)


def _sequence_first(layers: Sequence[Any], X: Any) -> bool:
    """True when X is a batch and the layers read it sequence first, (n, B, d) (torch's
    ``batch_first=False``); layers that disagree on the order are refused in one line."""
    orders = [getattr(L, "batch_first", True) for L in layers]
    if len(set(orders)) > 1:
        i = orders.index(not orders[0])
        raise SimulatorError(
            f"layer 0 has batch_first={orders[0]} but layer {i} has batch_first={orders[i]}: "
            "a batch has one order; give every layer the same (T.with_options(batch_first=...))"
        )
    return not orders[0] and not is_sympy_matrix(X) and np.ndim(X) == 3


Progress = Callable[[int, int], None]


def _pass_progress(progress: Progress, done_passes: int, passes: int) -> Progress:
    """A pass's (nodes done, nodes) told to ``progress`` as nodes done over all ``passes``."""
    return lambda k, m: progress(done_passes * m + k, passes * m)


def _pos_int(name: str, v: Any) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise SimulatorError(f"capacity {name} must be a positive int, got {v!r}")
    return v


class UniversalSimulator:
    """U for a capacity: any T with n <= max_len, d <= d_model, h <= n_heads, d_head, d_ff."""

    def __init__(
        self,
        max_len: int | C.Size,
        d_model: int | C.Size,
        n_heads: int | C.Size,
        d_head: int | C.Size,
        d_ff: int | C.Size | None = None,
        *,
        variant: str = "compact",
    ) -> None:
        if variant not in VARIANTS:
            raise SimulatorError(f"unknown variant {variant!r}; use one of {', '.join(VARIANTS)}")
        self.variant = variant
        given = {"max_len": max_len, "d_model": d_model, "n_heads": n_heads, "d_head": d_head, "d_ff": d_ff}
        syms: dict[str, E.Expr] = {}
        self.capacity: dict[str, Any] = {}
        for (nm, v), s in zip(given.items(), "NDHKF", strict=True):
            if nm == "d_ff" and v is None:
                v = 1
            if isinstance(v, C.Size):
                syms[s] = v
                self.capacity[nm] = v
            else:
                syms[s] = C.Size(s, _pos_int(nm, v))
                self.capacity[nm] = v
        self.N, self.D, self.H, self.K, self.F = (syms[s] for s in "NDHKF")
        self.symbolic = any(not getattr(s, "bound", True) for s in syms.values())
        # U's index maps over positions only, computed on the first run and read by the next ones
        self.memo = StructuralMemo()
        # what the last run_stack computed (its passes' counts, numpy backend)
        self.last_stats = RunStats()
        built = UniversalProgram(syms, variant)
        # what the build wrote (see UniversalProgram): the pass, where Y lives, and what the proofs read
        self.map: InputMap = built.map
        self.intents: list[tuple[str, Intent]] = built.intents
        self.masks: list[Mask] = built.masks
        self.stage_grids: list[Grid] = built.stage_grids
        self.program: C.SOp = built.program
        self.out_grid: Grid = built.out_grid

    @classmethod
    def over_symbolic_capacity(cls, variant: str = "compact") -> UniversalSimulator:
        """U built over unbound capacity sizes N, D, H, K, F: the program the all-sizes proofs
        execute (it cannot run; bind its sizes for that)."""
        return cls(*(C.Size(s) for s in "NDHKF"), variant=variant)

    # -- sizes ---------------------------------------------------------------------------------
    def _positions_expr(self, layers: int = 1) -> E.Expr:
        out: E.Expr = self.map.base + layers * self.map.record_size
        for gr in self.stage_grids:
            out = E.emax(out, gr.end_expr())
        return out

    @property
    def record_size(self) -> E.Expr:
        return self.map.record_size

    @property
    def base(self) -> E.Expr:
        return self.map.base

    @property
    def base_value(self) -> int:
        return value_of(self.map.base)

    @property
    def header(self) -> Grid:
        return self.map.header

    @property
    def fingerprint(self) -> str:
        """The program's structural hash (depends on the capacity only)."""
        return self.program.fingerprint

    @property
    def layout(self) -> Layout:
        """Where X, the header, the masks and layer 0's record live in the input tokens, and U's stage grids."""
        blocks = [g.block for g in self.map.grids] + [g.block for g in self.stage_grids]
        return Layout.of(*blocks, length=self._positions_expr())

    def positions_of_input(self, layers: int = 1) -> int:
        """Tokens <T1..T_layers, X> occupies: X, header, masks and the records (the rest is padding)."""
        return value_of(self.map.base + layers * self.map.record_size)

    def positions(self, layers: int = 1) -> int:
        """Sequence length for an encoding with ``layers`` records."""
        return value_of(self._positions_expr(layers))

    # -- input ---------------------------------------------------------------------------------
    def _check(self, T: TransformerLayer, n: int) -> None:
        cap = self.capacity
        if not isinstance(T, TransformerLayer):
            raise SimulatorError(f"T must be a TransformerLayer, got {type(T).__name__}")
        if T.d_ff is not None and T.activation not in GATED_ACTIVATIONS:  # the record's gate would read ReLU
            raise SimulatorError(
                f"activation {T.activation!r} is not in U's program, "
                f"which carries {' and '.join(GATED_ACTIVATIONS)}; run the reference T instead"
            )
        checks = [
            ("n (tokens)", n, "max_len"),
            ("d_model", T.d_model, "d_model"),
            ("n_heads", T.n_heads, "n_heads"),
            ("d_head", T.d_head, "d_head"),
        ]
        if T.d_ff is not None:
            checks.append(("d_ff", T.d_ff, "d_ff"))
        for what, v, cname in checks:
            if v > cap[cname]:
                raise SimulatorError(f"{what} = {v} exceeds the capacity {cname} = {cap[cname]}")

    def encode(
        self,
        T: TransformerLayer | Sequence[TransformerLayer],
        X: Any,
        pointer: int = 0,
        *,
        additive: Any = None,
        blocked: Any = None,
    ) -> np.ndarray:
        """The 1-D sequence <T, X> (or <T1..Tm, X> for a list), generated from the input map;
        float64 unless something is symbolic.  ``additive`` (n x n, finite) and ``blocked``
        (n x n, bool) are the attention mask (see :mod:`attnsim.universal.masks`)."""
        return self._encode(T, X, pointer, additive, blocked, self.positions)

    def encode_padded(
        self, T: TransformerLayer | Sequence[TransformerLayer], X: Any, *, additive: Any = None, blocked: Any = None
    ) -> Padded:
        """``encode``'s sequence held as the tokens the input occupies (X, header, masks,
        records: ``positions_of_input``) followed by zeros up to ``positions``: what a numeric
        run reads, without the zero padding (most of shallow U's length) in memory."""
        head = self._encode(T, X, 0, additive, blocked, self.positions_of_input)
        layers = 1 if isinstance(T, TransformerLayer) else len(T)
        return Padded(head, self.positions(layers), head.dtype.type(0) if head.dtype != object else 0)

    def _encode(  # noqa: C901, PLR0912
        self, T: Any, X: Any, pointer: int, additive: Any, blocked: Any, total: Callable[[int], int]
    ) -> np.ndarray:
        """The first ``total(layers)`` tokens of <T1..Tm, X> (``encode`` checks and builds them)."""
        if self.symbolic:
            raise SimulatorError("U was built over a symbolic capacity: bind its sizes to run it")
        layers = [T] if isinstance(T, TransformerLayer) else list(T)
        if not layers:
            raise SimulatorError("need at least one layer")
        if is_sympy_matrix(X):
            X = np.array(X.tolist(), dtype=object)
        x = np.asarray(X)
        bad_complex = complex_entry(x)
        if bad_complex:
            raise SimulatorError(f"X: {bad_complex}")
        if x.ndim != 2 or x.shape[0] < 1:
            raise SimulatorError(f"encode takes one sequence X of shape (n, d_model) with n >= 1, got {x.shape}")
        if x.dtype != object:
            x = x.astype(np.float64)
            if not np.all(np.isfinite(x)):
                raise SimulatorError("X contains NaN or inf")
        n, d = x.shape
        for li, L in enumerate(layers):
            self._check(L, n)
            if L.d_model != d:
                raise SimulatorError(f"layer {li} has d_model = {L.d_model} but X has {d} features")
        if not 0 <= pointer:
            raise SimulatorError(f"pointer {pointer} must be >= 0")
        add_m = np.zeros((n, n)) if additive is None else np.asarray(additive, dtype=np.float64)
        blk_m = np.zeros((n, n), dtype=bool) if blocked is None else np.asarray(blocked, dtype=bool)
        if add_m.shape != (n, n) or blk_m.shape != (n, n):
            raise SimulatorError(f"the attention mask must have shape ({n}, {n}), got {add_m.shape} and {blk_m.shape}")
        if not np.all(np.isfinite(add_m)):
            raise SimulatorError("the additive mask must be finite (-inf entries are blocked keys)")
        full_rows = np.flatnonzero(blk_m.all(axis=1))
        if full_rows.size:
            raise SimulatorError(f"query {int(full_rows[0])} has every key masked: its attention is undefined")
        symbolic = x.dtype == object or any(L.symbolic_params or not isinstance(L.scale, float) for L in layers)
        return self.map.encode(layers, x, add_m, blk_m, total(len(layers)), pointer, symbolic)

    def decode(self, out: np.ndarray, n: int, d: int | None = None) -> np.ndarray:
        """The output sequence's X block as an (n, d) array (d defaults to the capacity d_model)."""
        D, N = value_of(self.D), value_of(self.N)
        d = D if d is None else d
        if not (1 <= n <= N and 1 <= d <= D):
            raise SimulatorError(f"decode: n = {n}, d = {d} must be within 1..{N}, 1..{D}")
        arr = np.asarray(out)
        if arr.ndim != 1 or arr.shape[0] < D * N:
            raise SimulatorError(f"decode needs a 1-D output sequence of length >= {D * N}, got shape {arr.shape}")
        return arr[: D * N].reshape(N, D)[:n, :d]

    def _decoded(self, n: int, d: int) -> np.ndarray:
        """The positions ``decode(out, n, d)`` reads: X entries (i, e) with i < n, e < d."""
        D = value_of(self.D)
        return (np.arange(n)[:, None] * D + np.arange(d)[None, :]).reshape(-1)

    def _evaluate(
        self, seq: np.ndarray | Padded, backend: str, finite: Any = True, progress: Progress | None = None
    ) -> np.ndarray | Padded:
        """One pass of U; ``finite``: the output positions that must be finite (numpy backend).
        A Padded input (numpy backend) gives a Padded output; ``progress`` is told each node done."""
        if backend not in ("numpy", "sympy"):
            raise SimulatorError(f"unknown backend {backend!r}; use 'numpy' or 'sympy'")
        padded = isinstance(seq, Padded)
        if backend == "numpy" and (seq.head if isinstance(seq, Padded) else seq).dtype == object:
            raise SimulatorError("T or X is symbolic: use backend='sympy'")
        if padded and backend != "numpy":
            seq = seq.full()  # type: ignore[union-attr]
            padded = False
        try:
            out = evaluate(
                self.program,
                seq,
                backend,
                finite=finite,
                memo=self.memo,
                stats=self.last_stats,
                padded_output=padded,
                progress=progress,
            )
            return out if padded else np.asarray(out)
        except BackendError as exc:
            raise SimulatorError(f"U: {exc}") from None

    @staticmethod
    def _batch(X: Any, batch_first: bool = True) -> tuple[list[Any], bool]:
        """X (n, d) -> ([X], False); a batch (B, n, d) -> (its B elements, True) (``batch_first``:
        the order the caller was given a batch in, for the error message)."""
        if is_sympy_matrix(X):
            return [X], False
        x = np.asarray(X)
        if x.ndim == 3:
            if x.shape[0] < 1:
                raise SimulatorError(f"X: a batch (B, n, d_model) needs B >= 1, got shape {x.shape}")
            return list(x), True
        if x.ndim != 2:
            batch = "(B, n, d_model) (batch first)" if batch_first else "(n, B, d_model) (batch_first=False)"
            raise SimulatorError(f"X must have shape (n, d_model) or {batch}, got {x.shape}")
        return [X], False

    @staticmethod
    def _masks(n: int, src_mask: Any, is_causal: bool, key_padding: Any) -> tuple[Any, Any]:
        """(additive, blocked) for one sequence, as torch defines the three mask arguments."""
        if src_mask is None and not is_causal and key_padding is None:
            return None, None
        m = attention_mask(n, src_mask=src_mask, is_causal=is_causal, src_key_padding_mask=key_padding)
        return m.additive, m.blocked

    def run(
        self,
        T: TransformerLayer | Any,
        X: Any,
        *,
        src_mask: Any = None,
        is_causal: bool = False,
        src_key_padding_mask: Any = None,
        backend: str = "numpy",
        progress: Progress | None = None,
    ) -> np.ndarray:
        """U(<T, X>) decoded: equals T(X) (with torch's mask arguments).

        X has shape (n, d_model) or is a batch in T's order: (B, n, d_model) when
        ``T.batch_first`` (the default), (n, B, d_model) for a T read from a torch module built
        with ``batch_first=False``, as that module takes it.  U's program reads one sequence, so a
        batch runs each element on its own (with its row of ``src_key_padding_mask``, always
        (B, n)) and the results are stacked in X's order.  T may be a torch module (read by
        ``from_torch``; an ``nn.TransformerEncoder`` runs as :meth:`run_stack` does).  A run
        estimated to need more memory than is available is refused first (:meth:`memory_estimate`);
        ``progress(done, total)`` is told the program's nodes done over all passes."""
        if not isinstance(T, TransformerLayer) and hasattr(T, "state_dict"):
            T = T if _is_torch_encoder(T) else TransformerLayer.from_torch(T)
        masks = {"src_mask": src_mask, "is_causal": is_causal, "src_key_padding_mask": src_key_padding_mask}
        return self.run_stack(
            T if not isinstance(T, TransformerLayer) else [T], X, **masks, backend=backend, progress=progress
        )

    def run_stack(
        self,
        layers: Sequence[TransformerLayer] | TorchEncoder | Any,
        X: Any,
        *,
        src_mask: Any = None,
        is_causal: bool = False,
        src_key_padding_mask: Any = None,
        backend: str = "numpy",
        progress: Progress | None = None,
    ) -> np.ndarray:
        """Depth by looping: run the same program m times on <T1..Tm, X>; equals Tm(...T1(X)).

        X has shape (n, d_model) or is a batch in the layers' order (``batch_first``, which they
        must share: one line refuses a mix), each element run on its own; the masks apply to
        every layer, as in torch's ``nn.TransformerEncoder``.  ``layers`` may be
        an ``nn.TransformerEncoder`` or a :class:`TorchEncoder`: its final norm runs as one more
        pass, and padded rows are zeros where torch's nested-tensor path would give zeros."""
        if isinstance(layers, TorchEncoder) or _is_torch_encoder(layers):
            enc = layers if isinstance(layers, TorchEncoder) else TorchEncoder.from_torch(layers)
            masks = {"src_mask": src_mask, "is_causal": is_causal, "src_key_padding_mask": src_key_padding_mask}
            return enc.run(self.run_stack, X, **masks, backend=backend, progress=progress)
        layers = list(layers)
        if not layers:
            raise SimulatorError("need at least one layer")
        seq_first = _sequence_first(layers, X)
        if seq_first:  # (n, B, d) as the layers' torch module takes it: run as (B, n, d)
            X = np.swapaxes(np.asarray(X), 0, 1)
        xs, batched = self._batch(X, layers[0].batch_first if isinstance(layers[0], TransformerLayer) else True)
        n, d = np.asarray(xs[0]).shape[0], layers[0].d_model
        check_fits(self, n, len(layers))  # one line, with the estimate, if it cannot fit in memory
        self.last_stats = RunStats()
        passes = len(xs) * len(layers)
        # key padding per batch element, (B, n), as the reference T splits it
        pads = split_key_padding(src_key_padding_mask, len(xs), n) if batched else [src_key_padding_mask]
        outs = []
        for b, (x, pad) in enumerate(zip(xs, pads, strict=True)):
            add_m, blk_m = self._masks(n, src_mask, is_causal, pad)
            # numeric runs: the input and each pass's output held without their padding
            seq: np.ndarray | Padded = (
                self.encode_padded(layers, x, additive=add_m, blocked=blk_m)
                if backend == "numpy"
                else self.encode(layers, x, additive=add_m, blocked=blk_m)
            )
            for i in range(len(layers)):
                # a pass's whole output is the next pass's input; the last is read at the decoded block
                last = i == len(layers) - 1
                tell = None if progress is None else _pass_progress(progress, b * len(layers) + i, passes)
                seq = self._evaluate(seq, backend, self._decoded(n, d) if last else True, tell)
            read = value_of(self.D) * value_of(self.N)
            outs.append(self.decode(seq.upto(read) if isinstance(seq, Padded) else seq, n, d))
        if not batched:
            return outs[0]
        return np.swapaxes(np.stack(outs), 0, 1) if seq_first else np.stack(outs)

    def trace(self, T: TransformerLayer, X: Any, backend: str = "numpy") -> Trace:
        """Every stage's values (and selector matrices when small), by label."""
        return engine_trace(self.program, self.encode(T, X), backend)

    def compile_domains(self, logit_bound: float = LOGIT_BOUND) -> dict[str, Any]:
        """A ``domains=`` for ``attnsim.compile_program(U.program, ...)`` with another bound on the attention
        logits, which the row-max head scores its keys by (the compiled max is exact under hard
        attention for every logit in [-logit_bound, logit_bound]; the compiled model refuses
        inputs with larger logits).  The program itself declares ``LOGIT_BOUND``."""

        return {"attn.logit": Interval(-logit_bound, logit_bound)}

    def cost(self, *, closed_forms: bool = True) -> dict[str, Any]:
        """Layers, heads per layer, positions; closed forms in the capacity symbols; per MLP (0 =
        before any attention, l = after attention layer l) its depth in primitives and the
        generalized primitives it carries (name -> number of Maps); the positions a numeric run's
        input occupies (``input_positions``, held without the padding after them) and the memo
        of position-only index maps (``memo``: kept maps, bytes, budget).  The closed forms are
        SymPy's, imported for them; ``closed_forms=False`` leaves them out (no ``closed_form``
        key) and SymPy unloaded."""
        positions = None if self.symbolic else self.positions()
        c: Cost = cost(self.program, positions=positions)
        out: dict[str, Any] = {
            "layers": c.layers,
            "heads": c.heads,
            "positions": c.positions,
            "channels": c.channels,
            "capacity": dict(self.capacity),
            "variant": self.variant,
        }
        if closed_forms:
            import sympy as sp

            out["closed_form"] = {
                "layers": sp.Integer(c.layers),
                "heads": [sp.Integer(h) for h in c.heads],
                "positions": closed_form(self._positions_expr()),
                "positions_per_extra_layer": closed_form(self.record_size),
            }
        return out | {
            "generalized_primitives": c.generalized,
            # what a numeric run holds besides its values: the input without its padding, and the
            # position-only index maps kept across runs (within the memo's budget)
            "input_positions": None if self.symbolic else self.positions_of_input(),
            "memo": self.memo.summary(),
            "mlp_depth": c.mlp_depth,
            "mlp_generalized": c.mlp_generalized,
            "cost": c,
        }

    def memory_estimate(self, n: int | None = None, layers: int = 1) -> MemoryEstimate:
        """The memory a numeric run on ``n`` tokens (default max_len) with ``layers`` records is
        estimated to hold, by part (:mod:`attnsim.universal.memory`); ``run`` refuses a run whose
        estimate exceeds the memory available."""
        return estimate(self, value_of(self.N) if n is None else n, layers)

    def measure(self, T: TransformerLayer, X: Any, progress: Progress | None = None) -> dict[str, Any]:
        """Run once with timing and peak traced memory; error vs the reference."""
        tracemalloc.start()
        t0 = time.perf_counter()
        y = self.run(T, X, progress=progress)
        secs = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        err = float(np.max(np.abs(y - T(X))))
        return {"max_abs_error": err, "seconds": secs, "peak_bytes": peak}


__all__ = ["GATED_ACTIVATIONS", "GATES", "HEADER", "LOGIT_BOUND", "SEQ", "VARIANTS", "Mask", "UniversalSimulator"]
