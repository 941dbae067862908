"""The universal simulator U (Theorem 6, Corollary 6.1, Theorem 9, Corollary 9.1, hierarchy N >= n).

ONE GAHAT-RASP program per capacity (max_len N, d_model D, n_heads H, d_head K, d_ff F), built
from two composable lemma forms (:mod:`attnsim.lemmas.contraction`: a gather whose index map
folds transposes, views and broadcasts; a sum read at its consumer's positions) and one
value-scored max head.  The simulated layer T travels in the input <T, X>
(:mod:`attnsim.simulator.record`: every token is 0, a gate, a size or one entry of T, X or the
masks), so the program never depends on T.

Seven attention layers at every capacity (``variant="compact"``), each a set of heads followed by
an MLP:

1. gather X[i, l] and W_{q,k,v}[h, l, c] onto the projection products; the row statistics of X
   (pre-norm); MLP: LayerNorm 1 (pre-norm) and the products;
2. the projections Q, K (read at the score products (h, i, j, c)) and V (read at the V W_O
   products (h, j, c, e)); MLP: q k and v W_O;
3. the scores S[h, i, j] and (V W_O)[h, j, e], read at the products (h, i, j, e); MLP: logits
   (scale, additive mask) and which keys are allowed (j < n, not blocked);
4. the row max of the allowed logits (one value-scored head); MLP: exp(logit - max), numerator
   terms;
5. the softmax numerator and denominator per head, read where the next sums need them; MLP:
   the head outputs O[h, i, e] and the products for LayerNorm 1 and FFN 1;
6. R = X + attention (residual), its row statistics, FFN 1's linear part (with LayerNorm folded
   in: pre = rstd (sum R g W1 - mu sum g W1) + sum beta W1 + b1); MLP: LayerNorm 1, the
   activation, the FFN 2 products and the terms of LayerNorm 2's statistics (via W2 W2^T);
7. FFN 2's sum and LayerNorm 2's statistics; MLP: the output.

Smaller n, d, h, d_head, d_ff run on the same program: padding is zero, keys j >= n are not
allowed, LayerNorm divides by the true d.  A pass writes the output over X, advances the pointer
and shifts the record queue by one (record l + 1 moves into the slot a pass reads), so running the
same program m times on <T1..Tm, X> simulates an m-layer encoder (``run_stack``).
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from attnsim.lemmas.contraction import Coords, contract, gather_onto
from attnsim.proofs import z3sel
from attnsim.proofs.intents import Intent
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp import hints
from attnsim.rasp.arith import BackendError
from attnsim.rasp.domain import Interval
from attnsim.rasp.engine import Padded, RunStats, StructuralMemo, Trace, evaluate
from attnsim.rasp.engine import trace as engine_trace
from attnsim.rasp.guards import complex_entry
from attnsim.rasp.layout import Grid, GridRef, Layout, value_of
from attnsim.rasp.schedule import Cost, cost
from attnsim.simulator.errors import SimulatorError
from attnsim.simulator.masks import attention_mask, split_key_padding
from attnsim.simulator.record import GATES, HEADER, InputMap
from attnsim.simulator.reference import TorchEncoder, TransformerLayer
from attnsim.symbolic.execute import Enumeration

VARIANTS = ("compact", "shallow")
LOGIT_BOUND = 10**4  # |attention logit| the program declares for its compiled form (compile_domains widens it)
GATED_ACTIVATIONS = ("relu", "gelu", "gelu_tanh")  # U's MLP selects by the record's gelu and gelu_tanh gates
SEQ = E.Var("seq_len")


def _is_torch_encoder(m: Any) -> bool:
    """True for a ``torch.nn.TransformerEncoder`` (recognized without importing torch)."""
    name = "torch.nn.modules.transformer.TransformerEncoder"
    return any(f"{c.__module__}.{c.__name__}" == name for c in type(m).__mro__)


@dataclass(frozen=True)
class Mask:
    """A 0/1 MLP mask: ``sop`` at the positions of ``grid`` is 1 iff ``intent(coords, sizes)``."""

    name: str
    sop: C.SOp
    grid: Grid
    intent: Callable[[dict[str, int], dict[str, int]], bool]


def _pos_int(name: str, v: Any) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise SimulatorError(f"capacity {name} must be a positive int, got {v!r}")
    return v


def _mul(a: C.SOp, b: C.SOp) -> C.SOp:
    return C.apply("mul", a, b)


def _add(a: C.SOp, b: C.SOp) -> C.SOp:
    return C.apply("add", a, b)


def _sub(a: C.SOp, b: C.SOp) -> C.SOp:
    return C.apply("sub", a, b)


def _where(c: C.SOp, a: C.SOp, b: C.SOp) -> C.SOp:
    return C.apply("where", c, a, b)


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
        self.map = InputMap.of(syms)
        self.intents: list[tuple[str, Intent]] = []
        self.masks: list[Mask] = []
        self.stage_grids: list[Grid] = []
        # U's index maps over positions only, computed on the first run and read by the next ones
        self.memo = StructuralMemo()
        # what the last run_stack computed (its passes' counts, numpy backend)
        self.last_stats = RunStats()
        self._build()

    @classmethod
    def over_symbolic_capacity(cls, variant: str = "compact") -> UniversalSimulator:
        """U built over unbound capacity sizes N, D, H, K, F: the program the all-sizes proofs
        execute (it cannot run; bind its sizes for that)."""
        return cls(*(C.Size(s) for s in "NDHKF"), variant=variant)

    # -- building blocks -----------------------------------------------------------------------
    def _grid(self, name: str, **dims: E.Expr | int) -> Grid:
        g = Grid.of(name, 0, channel=name, **dims)
        self.stage_grids.append(g)
        return g

    def _gather(
        self,
        name: str,
        src: Grid,
        onto: Grid | None,
        coords: Callable[[Coords], Coords],
        *,
        when: Callable[[Coords], E.Expr] | None = None,
        otherwise: tuple[Grid, Callable[[Coords], Coords]] | None = None,
    ) -> C.SOp:
        sop, it = gather_onto(GridRef(C.tokens, src), onto, coords, name, when=when, otherwise=otherwise)
        self.intents.append((f"{name}.gather", it))
        return sop

    def _sum(
        self, name: str, prod: GridRef, over: tuple[str, ...], onto: Grid, group: Callable[[Coords], Coords]
    ) -> C.SOp:
        sop, it = contract(prod, over, onto, group, name)
        self.intents.append((f"{name}.sum", it))
        return sop

    def _indicator(self, name: str, grid: Grid, test: Callable[[Coords], E.Expr] | None = None) -> C.SOp:
        """1 at the grid's positions (whose coordinates pass ``test``), else 0: index arithmetic only."""

        def ind(p: E.Expr) -> E.Expr:
            inside = grid.contains(p)
            return E.if_(inside if test is None else inside & test(grid.coords(p)), 1, 0)

        return C.imap(ind, C.indices).named(name)

    def _below(
        self,
        name: str,
        grid: Grid,
        coord: Callable[[Coords], E.Expr],
        bound: C.SOp,
        intent: Callable[[dict[str, int], dict[str, int]], bool],
    ) -> C.SOp:
        """A 0/1 mask: 1 where coord(x) < bound (a size token broadcast), inside the grid."""
        c = C.imap(lambda p: E.if_(grid.contains(p), coord(grid.coords(p)), -1), C.indices).named(f"{name}.coord")
        inside = self._indicator(f"{name}.inside", grid)
        m = C.apply("mul", C.apply("lt", c, bound), inside).named(name)
        self.masks.append(Mask(name, m, grid, intent))
        return m

    # -- the program: stages shared by both variants -------------------------------------------
    def _build(self) -> None:
        self._common()
        if self.variant == "compact":
            s_at, vw_at, PV = self._stage_scores_compact()
        else:
            s_at, vw_at, PV = self._stage_scores_shallow()
        numer, denom = self._stage_softmax(s_at, vw_at, PV)
        y, OUT = self._stage_heads_ffn(numer, denom)
        self._stage_next(y, OUT)

    def _common(self) -> None:
        """The sizes and gates broadcast to every position, X, the record's grids."""
        N, D = self.N, self.D
        im = self.map

        def bcast(pos: E.Expr, name: str) -> C.SOp:
            one = Grid.of(f"{name}@", pos, s=1)
            return self._gather(name, one, None, lambda cs: {"s": E.Const(0)})

        self._n_b = hints.declare(bcast(im.header_position("n"), "n"), lambda max_len: range(1, value_of(N) + 1))
        self._d_b = hints.declare(bcast(im.header_position("d"), "d"), lambda max_len: range(1, value_of(D) + 1))
        self._g = {nm: bcast(im.gate_position(nm), nm) for nm in GATES}
        self._tok2 = C.apply("square", C.tokens).named("tokens_sq")
        self._rec = {gr.name: gr for gr in im.record}

    def _rows_mean(self, name: str, onto: Grid, row: Callable[[Coords], E.Expr], values: C.SOp) -> C.SOp:
        """(1/d) sum_{l < D} values[X entry (row(x), l)] (padding is 0: the sum is over the true d)."""
        s = self._sum(name, GridRef(values, self.map.x), ("l",), onto, lambda cs: {"i": row(cs)})
        return C.apply("div", s, self._d_b).named(f"{name}.per_d")

    def _layer_norm_of(self, mean: C.SOp, meansq: C.SOp, name: str) -> C.SOp:
        var = _sub(meansq, C.apply("square", mean))
        return C.apply("reciprocal", C.apply("sqrt", _add(var, self._g["eps"]))).named(f"{name}.rstd")

    def _z(
        self,
        x_at: C.SOp,
        onto: Grid,
        row: Callable[[Coords], E.Expr],
        feat: Callable[[Coords], E.Expr],
        name: str,
        when: Callable[[Coords], E.Expr] | None = None,
    ) -> C.SOp:
        """Z = LayerNorm 1 (X) (pre-norm) or X at the grid's positions: x_at is X[row(x), feat(x)]."""
        rec, g = self._rec, self._g
        mu = self._rows_mean(f"{name}.mean", onto, row, C.tokens)
        sq = self._rows_mean(f"{name}.meansq", onto, row, self._tok2)
        g1 = self._gather(f"{name}.g1", rec["g1"], onto, lambda cs: {"e": feat(cs)}, when=when)
        be1 = self._gather(f"{name}.be1", rec["be1"], onto, lambda cs: {"e": feat(cs)}, when=when)
        z_norm = _add(_mul(_mul(_sub(x_at, mu), self._layer_norm_of(mu, sq, name)), g1), be1)
        return _where(g["pre"], z_norm, x_at)

    def _proj_products(self, t: int | None) -> GridRef:
        """(t, h, i, c, l): Z[i, l] W[t, h, l, c] for t = q, k, v (t None) or one t."""
        N, D, H, K = self.N, self.D, self.H, self.K
        P1 = self._grid("proj.products", t=3 if t is None else 1, h=H, i=N, c=K, l=D)
        tt: Callable[[Coords], E.Expr] = (lambda cs: cs["t"]) if t is None else (lambda cs: E.Const(t))
        x_at = self._gather("proj.x", self.map.x, P1, lambda cs: {"i": cs["i"], "l": cs["l"]})
        w_at = self._gather(
            "proj.w", self._rec["wqkv"], P1, lambda cs: {"t": tt(cs), "h": cs["h"], "l": cs["l"], "c": cs["c"]}
        )
        if t is None:  # the compact build's names (and program) are kept as they were
            mu0 = self._rows_mean("ln_x.mean", P1, lambda cs: cs["i"], C.tokens)
            sq0 = self._rows_mean("ln_x.meansq", P1, lambda cs: cs["i"], self._tok2)
            g1_at = self._gather("proj.g1", self._rec["g1"], P1, lambda cs: {"e": cs["l"]})
            be1_at = self._gather("proj.be1", self._rec["be1"], P1, lambda cs: {"e": cs["l"]})
            z_norm = _add(_mul(_mul(_sub(x_at, mu0), self._layer_norm_of(mu0, sq0, "ln_x")), g1_at), be1_at)
            z = _where(self._g["pre"], z_norm, x_at).named("proj.z")
        else:
            z = self._z(x_at, P1, lambda cs: cs["i"], lambda cs: cs["l"], "ln_x").named("proj.z")
        return GridRef(_mul(z, w_at).named("proj.prod"), P1)

    def _projection(self, prod1: GridRef, t: int, t_at: int, tok_axis: str, onto: Grid, name: str) -> C.SOp:
        """Q, K or V (t = 0, 1, 2; at t_at of the products) with its bias, read at ``onto``."""
        s = self._sum(
            name, prod1, ("l",), onto, lambda cs: {"t": E.Const(t_at), "h": cs["h"], "i": cs[tok_axis], "c": cs["c"]}
        )
        b = self._gather(
            f"{name}.bias", self._rec["bqkv"], onto, lambda cs: {"t": E.Const(t), "h": cs["h"], "c": cs["c"]}
        )
        return _add(s, b).named(f"{name}.biased")

    def _vwo_products(self, prod1: GridRef, t_at: int) -> GridRef:
        """V W_O products (h, j, c, e): V (a sum of the projection products) times W_O."""
        N, D, H, K = self.N, self.D, self.H, self.K
        VP = self._grid("vwo.products", h=H, j=N, c=K, e=D)
        v_at = self._projection(prod1, 2, t_at, "j", VP, "V")
        wo_at = self._gather("vwo.wo", self._rec["wo"], VP, lambda cs: {"h": cs["h"], "c": cs["c"], "e": cs["e"]})
        return GridRef(_mul(v_at, wo_at).named("vwo.prod"), VP)

    def _attn_grid(self) -> Grid:
        return self._grid("attn.products", h=self.H, i=self.N, j=self.N, e=self.D)

    def _vw_at(self, vwo: GridRef, PV: Grid) -> C.SOp:
        return self._sum("vw", vwo, ("c",), PV, lambda cs: {"h": cs["h"], "j": cs["j"], "e": cs["e"]})

    def _stage_scores_compact(self) -> tuple[C.SOp, C.SOp, Grid]:
        """Layers 1-3 (compact): projection products; Q, K, V; scores and V W_O at (h, i, j, e)."""
        N, H, K = self.N, self.H, self.K
        prod1 = self._proj_products(None)
        SP = self._grid("scores.products", h=H, i=N, j=N, c=K)
        q_at = self._projection(prod1, 0, 0, "i", SP, "Q")
        k_at = self._projection(prod1, 1, 1, "j", SP, "K")
        qk = GridRef(_mul(q_at, k_at).named("scores.prod"), SP)
        vwo = self._vwo_products(prod1, 2)
        PV = self._attn_grid()
        s_at = self._sum("scores", qk, ("c",), PV, lambda cs: {"h": cs["h"], "i": cs["i"], "j": cs["j"]})
        return s_at, self._vw_at(vwo, PV), PV

    def _stage_scores_shallow(self) -> tuple[C.SOp, C.SOp, Grid]:
        """Layers 1-3 (shallow): the scores straight from X in one spread product,
        S[h, i, j] = sum_{c, l, l2} Z~[i, l] Wq~[h, l, c] Wk~[h, l2, c] Z~[j, l2], Z~ = [Z, 1] and
        W~ = [W; b] (row D holds the bias), read at (h, i, j, e) after layer 2; V and V W_O as in
        the compact build, one layer later (V W_O read at (h, i, j, e) after layer 3)."""
        N, D, H, K = self.N, self.D, self.H, self.K
        rec = self._rec
        SS = self._grid("scores.spread", h=H, i=N, j=N, c=K, l=D + 1, l2=D + 1)

        def z_tilde(tok: str, ax: str, name: str) -> C.SOp:
            feat = lambda cs: cs[ax]
            inside = lambda cs: cs[ax] < D
            x_at = self._gather(f"{name}.x", self.map.x, SS, lambda cs: {"i": cs[tok], "l": cs[ax]}, when=inside)
            z = self._z(x_at, SS, lambda cs: cs[tok], feat, f"{name}.ln", when=inside)
            one = self._indicator(f"{name}.one", SS, lambda cs: cs[ax].eq(D))
            return _add(z, one).named(f"{name}.z")

        def w_tilde(t: int, ax: str, name: str) -> C.SOp:
            return self._gather(
                name,
                rec["wqkv"],
                SS,
                lambda cs: {"t": E.Const(t), "h": cs["h"], "l": cs[ax], "c": cs["c"]},
                when=lambda cs: cs[ax] < D,
                otherwise=(rec["bqkv"], lambda cs: {"t": E.Const(t), "h": cs["h"], "c": cs["c"]}),
            )

        # one factor at a time: (Z~_i Wq~) (Wk~ Z~_j), each product as soon as its factors exist
        left = _mul(z_tilde("i", "l", "spread.q"), w_tilde(0, "l", "spread.wq")).named("spread.left")
        right = _mul(w_tilde(1, "l2", "spread.wk"), z_tilde("j", "l2", "spread.k")).named("spread.right")
        prod = GridRef(_mul(left, right).named("scores.prod"), SS)
        vwo = self._vwo_products(self._proj_products(2), 0)
        PV = self._attn_grid()
        s_at = self._sum("scores", prod, ("c", "l", "l2"), PV, lambda cs: {"h": cs["h"], "i": cs["i"], "j": cs["j"]})
        return s_at, self._vw_at(vwo, PV), PV

    def _stage_softmax(self, s_at: C.SOp, vw_at: C.SOp, PV: Grid) -> tuple[GridRef, GridRef]:
        """The logits at (h, i, j, e), the row max (one value-scored head), the softmax terms."""
        N, im, g, n_b = self.N, self.map, self._g, self._n_b
        mul, add, sub_, where = _mul, _add, _sub, _where
        # logits (scale, additive mask) and which keys are allowed (j < n, not blocked)
        add_at = self._gather("mask.add", im.mask_add, PV, lambda cs: {"i": cs["i"], "j": cs["j"]})
        blk_at = self._gather("mask.blocked", im.mask_blocked, PV, lambda cs: {"i": cs["i"], "j": cs["j"]})
        key_ok = self._below("mask.keys", PV, lambda cs: cs["j"], n_b, lambda c, s: c["j"] < s["n"])
        hints.declare(blk_at, (0, 1))  # the encoding writes 0/1 flags there (for the compiler)
        allowed = hints.declare(mul(key_ok, C.apply("affine", blk_at, params=(-1, 1))).named("attn.allowed"), (0, 1))
        # the row max below is a value-scored head: compiled, it is exact for logits within these bounds
        logit = hints.declare_bounds(add(mul(s_at, g["scale"]), add_at).named("attn.logit"), -LOGIT_BOUND, LOGIT_BOUND)

        # 4. the row max of the allowed logits: one value-scored head ------------------------------
        def row_id(p: E.Expr) -> E.Expr:
            cs = PV.coords(p)
            return E.if_(PV.contains(p), cs["h"] * N + cs["i"], -2)

        def key_row(p: E.Expr) -> E.Expr:
            cs = PV.coords(p)
            return E.if_(PV.contains(p) & cs["e"].eq(0), cs["h"] * N + cs["i"], -1)

        rows_q = C.imap(row_id, C.indices).named("attn.max.query_row")
        rows_k = C.imap(key_row, C.indices).named("attn.max.key_row")
        row_sel = C.select(rows_k, rows_q, "==").named("attn.max.rows")
        q, k = z3sel.Q, z3sel.K
        ck, cq = PV.coords(k), PV.coords(q)
        self.intents.append(
            (
                "attn.max.rows",
                Intent(
                    "rows",
                    row_sel,
                    PV.contains(k) & ck["e"].eq(0) & ck["h"].eq(cq["h"]) & ck["i"].eq(cq["i"]),
                    PV.contains(q),
                    "product (h, i, j, e) selects the entries (h, i, j', 0), j' < N, of its score row",
                    keys=Enumeration(  # a hint for the all-sizes stage proofs (proven there)
                        key=lambda qp, lv: PV.position(PV.coords(qp)["h"], PV.coords(qp)["i"], lv, E.Const(0)),
                        witness=lambda kp: PV.coords(kp)["j"],
                        count=N,
                    ),
                ),
            )
        )
        allowed_sel = (row_sel & C.select(allowed, C.full(1), "==")).named("attn.max.allowed")
        row_max = C.maximum(allowed_sel, logit).named("attn.max")
        # a blocked key may overflow exp (its logit can exceed the allowed max): where() drops it
        ex = where(allowed, C.apply("exp", sub_(logit, row_max)), C.full(0)).named("attn.exp")
        numer = GridRef(mul(ex, vw_at).named("attn.numer_terms"), PV)
        denom = GridRef(ex, PV)
        return numer, denom

    def _stage_heads_ffn(self, numer: GridRef, denom: GridRef) -> tuple[C.SOp, Grid]:
        """The head outputs, R, LayerNorm 1, FFN 1 and FFN 2, LayerNorm 2: Y at (i, e)."""
        N, D, H, F = self.N, self.D, self.H, self.F
        im, rec, g, n_b, d_b = self.map, self._rec, self._g, self._n_b, self._d_b
        mul, add, sub_, where = _mul, _add, _sub, _where
        X = im.x
        layer_norm_of = self._layer_norm_of

        # 5. per-head outputs O[h, i, e] where the sums of step 6 need them -----------------------
        def head_out(onto: Grid, h: Callable[[Coords], E.Expr], name: str) -> C.SOp:
            num = self._sum(f"{name}.num", numer, ("j",), onto, lambda cs: {"h": h(cs), "i": cs["i"], "e": cs["e"]})
            den = self._sum(f"{name}.den", denom, ("j",), onto, lambda cs: {"h": h(cs), "i": cs["i"], "e": E.Const(0)})
            return C.apply("div", num, den).named(name)

        def resid_terms(onto: Grid, name: str) -> C.SOp:
            """c[i, e] = b_o[e] + residual * X[i, e] at the grid's positions."""
            bo = self._gather(f"{name}.bo", rec["bo"], onto, lambda cs: {"e": cs["e"]})
            xr = self._gather(f"{name}.x", X, onto, lambda cs: {"i": cs["i"], "l": cs["e"]})
            return add(bo, mul(g["residual"], xr)).named(f"{name}.c")

        # the FFN-input LayerNorm parameters: LN1's (post-norm), LN2's (pre-norm); gamma 1 without one
        norm_on = add(g["pre"], g["post"]).named("norm_on")

        def ffn_in_ln(onto: Grid, name: str) -> tuple[C.SOp, C.SOp]:
            gp = {
                nm: self._gather(f"{name}.{nm}", rec[nm], onto, lambda cs: {"e": cs["e"]})
                for nm in ("g1", "be1", "g2", "be2")
            }
            gam = where(g["post"], gp["g1"], where(g["pre"], gp["g2"], C.full(1)))
            bet = where(g["post"], gp["be1"], gp["be2"])  # read only when a LayerNorm is on (norm_on)
            return gam.named(f"{name}.gamma"), bet.named(f"{name}.beta")

        # (i, f, h, e): sum_{h, e} of R-terms x gamma W1, and of gamma W1, beta W1
        FP = self._grid("ffn1.products", i=N, f=F, h=H, e=D)
        o_fp = head_out(FP, lambda cs: cs["h"], "ffn1.o")
        c_fp = resid_terms(FP, "ffn1")
        h0_fp = self._indicator("ffn1.h0", FP, lambda cs: cs["h"].eq(0))
        gam_fp, bet_fp = ffn_in_ln(FP, "ffn1")
        w1_fp = self._gather("ffn1.w1", rec["w1"], FP, lambda cs: {"e": cs["e"], "f": cs["f"]})
        gw = mul(mul(gam_fp, w1_fp), h0_fp).named("ffn1.gw")
        bw = mul(mul(bet_fp, w1_fp), h0_fp).named("ffn1.bw")
        rgw = mul(add(o_fp, mul(h0_fp, c_fp)), mul(gam_fp, w1_fp)).named("ffn1.rgw")

        # (i, e, h, h2): sum_{e, h, h2} of the terms of R^2
        QP = self._grid("ln1.square_terms", i=N, e=D, h=H, h2=H)
        o1 = head_out(QP, lambda cs: cs["h"], "ln1.o")
        o2 = head_out(QP, lambda cs: cs["h2"], "ln1.o2")
        c_qp = resid_terms(QP, "ln1")
        h2z = self._indicator("ln1.h2_0", QP, lambda cs: cs["h2"].eq(0))
        hz = self._indicator("ln1.h_0", QP, lambda cs: cs["h"].eq(0) & cs["h2"].eq(0))
        sq_terms = add(
            add(mul(o1, o2), mul(h2z, C.apply("scale", mul(o1, c_qp), params=(2,)))), mul(hz, C.apply("square", c_qp))
        )
        sq_terms = sq_terms.named("ln1.square_terms")
        # (i, e, h): O itself, for R at the positions that need R
        OB = self._grid("attn.heads", i=N, e=D, h=H)
        o_ob = head_out(OB, lambda cs: cs["h"], "attn.o")
        c_ob = resid_terms(OB, "attn")
        h0_ob = self._indicator("attn.h0", OB, lambda cs: cs["h"].eq(0))
        r_terms = GridRef(add(o_ob, mul(h0_ob, c_ob)).named("attn.r_terms"), OB)

        # 6. R, LayerNorm 1 statistics, FFN 1 ------------------------------------------------------
        def r_stats(onto: Grid, name: str) -> tuple[C.SOp | None, C.SOp, C.SOp]:
            """R[i, e] (when the grid has an axis e), mu1[i] and rstd1[i] at the grid's positions."""
            r = None
            if "e" in onto.axes:
                r = self._sum(f"{name}.R", r_terms, ("h",), onto, lambda cs: {"i": cs["i"], "e": cs["e"]})
            s1 = self._sum(f"{name}.R_sum", r_terms, ("e", "h"), onto, lambda cs: {"i": cs["i"]})
            s2 = self._sum(f"{name}.R_sq", GridRef(sq_terms, QP), ("e", "h", "h2"), onto, lambda cs: {"i": cs["i"]})
            mu = C.apply("div", s1, d_b).named(f"{name}.mu1")
            rstd = layer_norm_of(mu, C.apply("div", s2, d_b), f"{name}.ln1")
            return r, mu, rstd

        def ffn1_pre(onto: Grid, f: Callable[[Coords], E.Expr], mu: C.SOp, rstd: C.SOp, name: str) -> C.SOp:
            grp = lambda cs: {"i": cs["i"], "f": f(cs)}
            s_rgw = self._sum(f"{name}.rgw", GridRef(rgw, FP), ("h", "e"), onto, grp)
            s_gw = self._sum(f"{name}.gw", GridRef(gw, FP), ("h", "e"), onto, grp)
            s_bw = self._sum(f"{name}.bw", GridRef(bw, FP), ("h", "e"), onto, grp)
            b1 = self._gather(f"{name}.b1", rec["b1"], onto, lambda cs: {"f": f(cs)})
            normed = add(mul(rstd, sub_(s_rgw, mul(mu, s_gw))), s_bw)
            pre = add(where(norm_on, normed, s_rgw), b1)
            tanh_or_relu = where(g["gelu_tanh"], C.apply("gelu_tanh", pre), C.apply("relu", pre))
            return where(g["gelu"], C.apply("gelu", pre), tanh_or_relu).named(f"{name}.act")

        def y1_of(onto: Grid, r: C.SOp | None, mu: C.SOp, rstd: C.SOp, name: str) -> C.SOp:
            assert r is not None
            g1 = self._gather(f"{name}.g1", rec["g1"], onto, lambda cs: {"e": cs["e"]})
            be1 = self._gather(f"{name}.be1", rec["be1"], onto, lambda cs: {"e": cs["e"]})
            return where(g["post"], add(mul(mul(sub_(r, mu), rstd), g1), be1), r).named(f"{name}.Y1")

        def c2_of(onto: Grid, y1: C.SOp, name: str) -> C.SOp:
            b2 = self._gather(f"{name}.b2", rec["b2"], onto, lambda cs: {"e": cs["e"]})
            return add(mul(g["residual"], y1), b2).named(f"{name}.c2")

        # (i, e, f): FFN 2 products and the terms of sum_e R2 and sum_e R2^2
        EP = self._grid("ffn2.products", i=N, e=D, f=F)
        r_ep, mu_ep, rstd_ep = r_stats(EP, "ffn2")
        act_ep = ffn1_pre(EP, lambda cs: cs["f"], mu_ep, rstd_ep, "ffn2.u")
        w2_ep = self._gather("ffn2.w2", rec["w2"], EP, lambda cs: {"f": cs["f"], "e": cs["e"]})
        aw = mul(act_ep, w2_ep).named("ffn2.prod")
        c2_ep = c2_of(EP, y1_of(EP, r_ep, mu_ep, rstd_ep, "ffn2"), "ffn2")
        f0 = self._indicator("ffn2.f0", EP, lambda cs: cs["f"].eq(0))
        v1 = add(aw, mul(f0, c2_ep)).named("ln2.sum_terms")
        v2 = add(mul(C.apply("scale", c2_ep, params=(2,)), aw), mul(f0, C.apply("square", c2_ep))).named("ln2.sq_terms")
        # (i, f, f2): act_f act_f2 (W2 W2^T)[f, f2]; the Gram matrix from (f, f2, e) products
        WG = self._grid("gram.products", f=F, f2=F, e=D)
        wa = self._gather("gram.a", rec["w2"], WG, lambda cs: {"f": cs["f"], "e": cs["e"]})
        wb = self._gather("gram.b", rec["w2"], WG, lambda cs: {"f": cs["f2"], "e": cs["e"]})
        GP = self._grid("ln2.gram_terms", i=N, f=F, f2=F)
        gram = self._sum(
            "gram", GridRef(mul(wa, wb).named("gram.prod"), WG), ("e",), GP, lambda cs: {"f": cs["f"], "f2": cs["f2"]}
        )
        _, mu_gp, rstd_gp = r_stats(GP, "gram1")
        act_f = ffn1_pre(GP, lambda cs: cs["f"], mu_gp, rstd_gp, "gram.u")
        act_f2 = ffn1_pre(GP, lambda cs: cs["f2"], mu_gp, rstd_gp, "gram.u2")
        v3 = mul(mul(act_f, act_f2), gram).named("ln2.gram_terms")

        # 7. FFN 2, LayerNorm 2, the output at (i, e) ---------------------------------------------
        OUT = self._grid("out", i=N, e=D)
        r_o, mu_o, rstd_o = r_stats(OUT, "out")
        y1 = y1_of(OUT, r_o, mu_o, rstd_o, "out")
        c2 = c2_of(OUT, y1, "out")
        fw = self._sum("out.ffn", GridRef(aw, EP), ("f",), OUT, lambda cs: {"i": cs["i"], "e": cs["e"]})
        s1 = self._sum("out.R2_sum", GridRef(v1, EP), ("e", "f"), OUT, lambda cs: {"i": cs["i"]})
        s2 = self._sum("out.R2_sq", GridRef(v2, EP), ("e", "f"), OUT, lambda cs: {"i": cs["i"]})
        s3 = self._sum("out.R2_gram", GridRef(v3, GP), ("f", "f2"), OUT, lambda cs: {"i": cs["i"]})
        r2 = add(c2, fw).named("out.R2")
        mu2 = C.apply("div", s1, d_b).named("out.mu2")
        rstd2 = layer_norm_of(mu2, C.apply("div", add(s2, s3), d_b), "out.ln2")
        g2 = self._gather("out.g2", rec["g2"], OUT, lambda cs: {"e": cs["e"]})
        be2 = self._gather("out.be2", rec["be2"], OUT, lambda cs: {"e": cs["e"]})
        y2 = where(g["post"], add(mul(mul(sub_(r2, mu2), rstd2), g2), be2), r2).named("out.Y2")
        y = where(g["ffn"], y2, y1)
        rows_ok = self._below("mask.rows", OUT, lambda cs: cs["i"], n_b, lambda c, s: c["i"] < s["n"])
        cols_ok = self._below("mask.cols", OUT, lambda cs: cs["e"], d_b, lambda c, s: c["e"] < s["d"])
        y = mul(y, mul(rows_ok, cols_ok)).named("Y")
        return y, OUT

    def _stage_next(self, y: C.SOp, OUT: Grid) -> None:
        """The next sequence: Y over X, the pointer advanced, the record queue shifted by one."""
        im = self.map
        where = _where
        size = im.record_size
        shifted_rec = self._gather_rel("queue", size)
        is_x = self._indicator("is_X", im.x)
        is_rec = C.imap(lambda p: E.if_(p >= im.base, 1, 0), C.indices).named("is_record")
        ptr_pos = im.header_position("ptr")
        is_p = C.imap(lambda p: E.if_(p.eq(ptr_pos), 1, 0), C.indices).named("is_ptr")
        rest = where(is_rec, shifted_rec, where(is_p, C.apply("affine", C.tokens, params=(1, 1)), C.tokens))
        # Y lives at OUT's positions (i, e) = X's positions (i, l): the same row-major order
        self.program: C.SOp = where(is_x, y, rest).named("U")
        self.out_grid = OUT

    def _gather_rel(self, name: str, size: E.Expr) -> C.SOp:
        """Every position p reads token p + S; the pass keeps it at the record positions p >= base
        only (``is_record``), so the queue moves by one record (one test of base, not two)."""
        base = self.map.base
        src = C.imap(lambda p: p + size, C.indices).named(f"{name}.source")
        sel = C.select(C.indices, src, "==").named(f"{name}.gather")
        q, k = z3sel.Q, z3sel.K
        self.intents.append(
            (
                f"{name}.gather",
                Intent("shift", sel, k.eq(q + size), q >= base, "record position p reads position p + S (next record)"),
            )
        )
        return C.aggregate(sel, C.tokens).named(name)

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
        (n x n, bool) are the attention mask (see :mod:`attnsim.simulator.masks`)."""
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

    def _encode(
        self, T: Any, X: Any, pointer: int, additive: Any, blocked: Any, total: Callable[[int], int]
    ) -> np.ndarray:
        """The first ``total(layers)`` tokens of <T1..Tm, X> (``encode`` checks and builds them)."""
        if self.symbolic:
            raise SimulatorError("U was built over a symbolic capacity: bind its sizes to run it")
        layers = [T] if isinstance(T, TransformerLayer) else list(T)
        if not layers:
            raise SimulatorError("need at least one layer")
        if isinstance(X, sp.MatrixBase):
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

    def _evaluate(self, seq: np.ndarray | Padded, backend: str, finite: Any = True) -> np.ndarray | Padded:
        """One pass of U; ``finite``: the output positions that must be finite (numpy backend).
        A Padded input (numpy backend) gives a Padded output."""
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
            )
            return out if padded else np.asarray(out)
        except BackendError as exc:
            raise SimulatorError(f"U: {exc}") from None

    @staticmethod
    def _batch(X: Any) -> tuple[list[Any], bool]:
        """X (n, d) -> ([X], False); a batch (B, n, d), batch first -> (its B elements, True)."""
        if isinstance(X, sp.MatrixBase):
            return [X], False
        x = np.asarray(X)
        if x.ndim == 3:
            if x.shape[0] < 1:
                raise SimulatorError(f"X: a batch (B, n, d_model) needs B >= 1, got shape {x.shape}")
            return list(x), True
        if x.ndim != 2:
            raise SimulatorError(f"X must have shape (n, d_model) or (B, n, d_model) (batch first), got {x.shape}")
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
    ) -> np.ndarray:
        """U(<T, X>) decoded: equals T(X) (with torch's mask arguments).

        X has shape (n, d_model) or (B, n, d_model), batch first; U's program reads one sequence,
        so a batch runs each element on its own (with its row of ``src_key_padding_mask``) and
        stacks the results to (B, n, d_model).  T may be a torch module (read by ``from_torch``; an
        ``nn.TransformerEncoder`` runs as :meth:`run_stack` does)."""
        if not isinstance(T, TransformerLayer) and hasattr(T, "state_dict"):
            T = T if _is_torch_encoder(T) else TransformerLayer.from_torch(T)
        if not isinstance(T, TransformerLayer):
            return self.run_stack(
                T, X, src_mask=src_mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask, backend=backend
            )
        return self.run_stack(
            [T], X, src_mask=src_mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask, backend=backend
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
    ) -> np.ndarray:
        """Depth by looping: run the same program m times on <T1..Tm, X>; equals Tm(...T1(X)).

        X has shape (n, d_model) or (B, n, d_model), batch first (each element runs on its own);
        the masks apply to every layer, as in torch's ``nn.TransformerEncoder``.  ``layers`` may be
        an ``nn.TransformerEncoder`` or a :class:`TorchEncoder`: its final norm runs as one more
        pass, and padded rows are zeros where torch's nested-tensor path would give zeros."""
        if isinstance(layers, TorchEncoder) or _is_torch_encoder(layers):
            enc = layers if isinstance(layers, TorchEncoder) else TorchEncoder.from_torch(layers)
            masks = {"src_mask": src_mask, "is_causal": is_causal, "src_key_padding_mask": src_key_padding_mask}
            return enc.run(self.run_stack, X, **masks, backend=backend)
        layers = list(layers)
        if not layers:
            raise SimulatorError("need at least one layer")
        xs, batched = self._batch(X)
        n, d = np.asarray(xs[0]).shape[0], layers[0].d_model
        self.last_stats = RunStats()
        # key padding per batch element, (B, n), as the reference T splits it
        pads = split_key_padding(src_key_padding_mask, len(xs), n) if batched else [src_key_padding_mask]
        outs = []
        for x, pad in zip(xs, pads, strict=True):
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
                seq = self._evaluate(seq, backend, self._decoded(n, d) if last else True)
            read = value_of(self.D) * value_of(self.N)
            outs.append(self.decode(seq.upto(read) if isinstance(seq, Padded) else seq, n, d))
        return np.stack(outs) if batched else outs[0]

    def trace(self, T: TransformerLayer, X: Any, backend: str = "numpy") -> Trace:
        """Every stage's values (and selector matrices when small), by label."""
        return engine_trace(self.program, self.encode(T, X), backend)

    def compile_domains(self, logit_bound: float = LOGIT_BOUND) -> dict[str, Any]:
        """A ``domains=`` for ``attnsim.compile(U.program, ...)`` with another bound on the attention
        logits, which the row-max head scores its keys by (the compiled max is exact under hard
        attention for every logit in [-logit_bound, logit_bound]; the compiled model refuses
        inputs with larger logits).  The program itself declares ``LOGIT_BOUND``."""

        return {"attn.logit": Interval(-logit_bound, logit_bound)}

    def cost(self) -> dict[str, Any]:
        """Layers, heads per layer, positions; closed forms in the capacity symbols; per MLP (0 =
        before any attention, l = after attention layer l) its depth in primitives and the
        generalized primitives it carries (name -> number of Maps); the positions a numeric run's
        input occupies (``input_positions``, held without the padding after them) and the memo
        of position-only index maps (``memo``: kept maps, bytes, budget)."""
        positions = None if self.symbolic else self.positions()
        c: Cost = cost(self.program, positions=positions)
        syms = {s: sp.Symbol(s, positive=True, integer=True) for s in ("N", "D", "H", "K", "F")}
        pos = self._positions_expr().to_sympy(dict(syms))
        return {
            "layers": c.layers,
            "heads": c.heads,
            "positions": c.positions,
            "channels": c.channels,
            "capacity": dict(self.capacity),
            "variant": self.variant,
            "closed_form": {
                "layers": sp.Integer(c.layers),
                "heads": [sp.Integer(h) for h in c.heads],
                "positions": pos,
                "positions_per_extra_layer": self.record_size.to_sympy(dict(syms)),
            },
            "generalized_primitives": c.generalized,
            # what a numeric run holds besides its values: the input without its padding, and the
            # position-only index maps kept across runs (within the memo's budget)
            "input_positions": None if self.symbolic else self.positions_of_input(),
            "memo": self.memo.summary(),
            "mlp_depth": c.mlp_depth,
            "mlp_generalized": c.mlp_generalized,
            "cost": c,
        }

    def measure(self, T: TransformerLayer, X: Any) -> dict[str, Any]:
        """Run once with timing and peak traced memory; error vs the reference."""
        tracemalloc.start()
        t0 = time.perf_counter()
        y = self.run(T, X)
        secs = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        err = float(np.max(np.abs(y - T(X))))
        return {"max_abs_error": err, "seconds": secs, "peak_bytes": peak}


__all__ = ["GATED_ACTIVATIONS", "GATES", "HEADER", "LOGIT_BOUND", "SEQ", "VARIANTS", "Mask", "UniversalSimulator"]
