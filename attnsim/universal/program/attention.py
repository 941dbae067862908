"""Layers 1-4 of U's program: the projections, the attention scores, the row max and the softmax terms.

Two builds of the scores (the ``variant``): compact (layers 1-3: the projection products, then
Q, K and V as sums, then S = Q K^T and V W_O read at the products (h, i, j, e)) and shallow
(one spread product per (h, i, j, c, l, l2), summed once: one layer less for the scores, a
larger grid).  Both end at the same grid (h, i, j, e), where layer 4 takes the row max of the
allowed logits with one value-scored head and forms exp(logit - max), the softmax numerator
terms and the denominator terms that :mod:`.output` sums.
"""

from __future__ import annotations

from collections.abc import Callable

from attnsim.constructions.forms.contraction import Coords
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp import hints
from attnsim.rasp.intent import Enumeration, Intent, K, Q
from attnsim.rasp.layout import Grid, GridRef
from attnsim.universal.program.blocks import ProgramBlocks, add, mul, sub, where

LOGIT_BOUND = 10**4  # |attention logit| the program declares for its compiled form (compile_domains widens it)


class AttentionStages(ProgramBlocks):
    """Layers 1-4: the scores (compact or shallow), V W_O, and the softmax terms at (h, i, j, e)."""

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
            z_norm = add(mul(mul(sub(x_at, mu0), self._layer_norm_of(mu0, sq0, "ln_x")), g1_at), be1_at)
            z = where(self._g["pre"], z_norm, x_at).named("proj.z")
        else:
            z = self._z(x_at, P1, lambda cs: cs["i"], lambda cs: cs["l"], "ln_x").named("proj.z")
        return GridRef(mul(z, w_at).named("proj.prod"), P1)

    def _projection(self, prod1: GridRef, t: int, t_at: int, tok_axis: str, onto: Grid, name: str) -> C.SOp:
        """Q, K or V (t = 0, 1, 2; at t_at of the products) with its bias, read at ``onto``."""
        s = self._sum(
            name, prod1, ("l",), onto, lambda cs: {"t": E.Const(t_at), "h": cs["h"], "i": cs[tok_axis], "c": cs["c"]}
        )
        b = self._gather(
            f"{name}.bias", self._rec["bqkv"], onto, lambda cs: {"t": E.Const(t), "h": cs["h"], "c": cs["c"]}
        )
        return add(s, b).named(f"{name}.biased")

    def _vwo_products(self, prod1: GridRef, t_at: int) -> GridRef:
        """V W_O products (h, j, c, e): V (a sum of the projection products) times W_O."""
        N, D, H, K = self.N, self.D, self.H, self.K
        VP = self._grid("vwo.products", h=H, j=N, c=K, e=D)
        v_at = self._projection(prod1, 2, t_at, "j", VP, "V")
        wo_at = self._gather("vwo.wo", self._rec["wo"], VP, lambda cs: {"h": cs["h"], "c": cs["c"], "e": cs["e"]})
        return GridRef(mul(v_at, wo_at).named("vwo.prod"), VP)

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
        qk = GridRef(mul(q_at, k_at).named("scores.prod"), SP)
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
            return add(z, one).named(f"{name}.z")

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
        left = mul(z_tilde("i", "l", "spread.q"), w_tilde(0, "l", "spread.wq")).named("spread.left")
        right = mul(w_tilde(1, "l2", "spread.wk"), z_tilde("j", "l2", "spread.k")).named("spread.right")
        prod = GridRef(mul(left, right).named("scores.prod"), SS)
        vwo = self._vwo_products(self._proj_products(2), 0)
        PV = self._attn_grid()
        s_at = self._sum("scores", prod, ("c", "l", "l2"), PV, lambda cs: {"h": cs["h"], "i": cs["i"], "j": cs["j"]})
        return s_at, self._vw_at(vwo, PV), PV

    def _stage_softmax(self, s_at: C.SOp, vw_at: C.SOp, PV: Grid) -> tuple[GridRef, GridRef]:
        """The logits at (h, i, j, e), the row max (one value-scored head), the softmax terms."""
        N, im, g, n_b = self.N, self.map, self._g, self._n_b
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
        q, k = Q, K
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
        ex = where(allowed, C.apply("exp", sub(logit, row_max)), C.full(0)).named("attn.exp")
        numer = GridRef(mul(ex, vw_at).named("attn.numer_terms"), PV)
        denom = GridRef(ex, PV)
        return numer, denom
