"""Layers 5-7 of U's program and its write: the head outputs, R, LayerNorm 1, FFN 1 and 2, LayerNorm 2.

From the softmax terms of :mod:`.attention` (at (h, i, j, e)):

5. the head outputs O[h, i, e] read where the sums of layer 6 need them; the MLP forms the
   products of FFN 1 (:meth:`OutputStages._ffn1_products`), the terms of R^2 for LayerNorm 1's
   statistics (:meth:`~OutputStages._ln1_square_terms`) and the terms of R itself
   (:meth:`~OutputStages._residual_terms`), gathered in :class:`HeadTerms`;
6. R = X + attention, its row statistics and FFN 1's linear part (LayerNorm folded in); the MLP
   applies the activation (:meth:`~OutputStages._activation`) and forms FFN 2's products and the
   terms of LayerNorm 2's statistics (:meth:`~OutputStages._ffn2_products`,
   :meth:`~OutputStages._ln2_gram_terms`), gathered in :class:`FfnTerms`;
7. FFN 2's sum and LayerNorm 2's statistics; the MLP writes the output Y at (i, e)
   (:meth:`~OutputStages._output`).

The write (:meth:`~OutputStages._stage_next`) puts Y over X, advances the pointer and shifts the
record queue by one record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from attnsim.constructions.forms.contraction import Coords
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.intent import Intent, K, Q
from attnsim.rasp.layout import Grid, GridRef
from attnsim.universal.program.blocks import ProgramBlocks, add, mul, sub, where


@dataclass(frozen=True)
class HeadTerms:
    """What layer 5's MLP leaves for layer 6's sums: the products over the head outputs O."""

    norm_on: C.SOp  # 1 when a LayerNorm precedes FFN 1 (pre- or post-norm)
    ffn1: Grid  # (i, f, h, e), where rgw, gw and bw live
    rgw: C.SOp  # (O + [h = 0] c) gamma W1
    gw: C.SOp  # [h = 0] gamma W1
    bw: C.SOp  # [h = 0] beta W1
    square: GridRef  # the terms of R^2 at (i, e, h, h2)
    r_terms: GridRef  # O + [h = 0] c at (i, e, h): R summed over h


@dataclass(frozen=True)
class FfnTerms:
    """What layer 6's MLP leaves for layer 7's sums: FFN 2's products and LayerNorm 2's terms."""

    ffn2: Grid  # (i, e, f), where aw, sum_terms and sq_terms live
    aw: C.SOp  # act[i, f] W2[f, e]
    sum_terms: C.SOp  # the terms of sum_e R2
    sq_terms: C.SOp  # the terms of sum_e R2^2 but the Gram part
    gram: GridRef  # act_f act_f2 (W2 W2^T)[f, f2] at (i, f, f2)


class OutputStages(ProgramBlocks):
    """Layers 5-7 (the head outputs, residual, FFN, LayerNorms: Y at (i, e)) and the write."""

    def _stage_heads_ffn(self, numer: GridRef, denom: GridRef) -> tuple[C.SOp, Grid]:
        """The head outputs, R, LayerNorm 1, FFN 1 and FFN 2, LayerNorm 2: Y at (i, e)."""
        g = self._g
        # the FFN-input LayerNorm parameters: LN1's (post-norm), LN2's (pre-norm); gamma 1 without one
        norm_on = add(g["pre"], g["post"]).named("norm_on")
        ffn1, rgw, gw, bw = self._ffn1_products(numer, denom)
        square = self._ln1_square_terms(numer, denom)
        r_terms = self._residual_terms(numer, denom)
        heads = HeadTerms(norm_on, ffn1, rgw, gw, bw, square, r_terms)
        ffn2, aw, sum_terms, sq_terms = self._ffn2_products(heads)
        ffn = FfnTerms(ffn2, aw, sum_terms, sq_terms, self._ln2_gram_terms(heads))
        return self._output(heads, ffn)

    # -- 5. per-head outputs O[h, i, e] where the sums of step 6 need them ---------------------
    def _head_out(self, numer: GridRef, denom: GridRef, onto: Grid, h: Callable[[Coords], E.Expr], name: str) -> C.SOp:
        num = self._sum(f"{name}.num", numer, ("j",), onto, lambda cs: {"h": h(cs), "i": cs["i"], "e": cs["e"]})
        den = self._sum(f"{name}.den", denom, ("j",), onto, lambda cs: {"h": h(cs), "i": cs["i"], "e": E.Const(0)})
        return C.apply("div", num, den).named(name)

    def _resid_terms(self, onto: Grid, name: str) -> C.SOp:
        """c[i, e] = b_o[e] + residual * X[i, e] at the grid's positions."""
        bo = self._gather(f"{name}.bo", self._rec["bo"], onto, lambda cs: {"e": cs["e"]})
        xr = self._gather(f"{name}.x", self.map.x, onto, lambda cs: {"i": cs["i"], "l": cs["e"]})
        return add(bo, mul(self._g["residual"], xr)).named(f"{name}.c")

    def _ffn_in_ln(self, onto: Grid, name: str) -> tuple[C.SOp, C.SOp]:
        """The FFN-input LayerNorm's gamma and beta at the grid's positions."""
        g = self._g
        gp = {
            nm: self._gather(f"{name}.{nm}", self._rec[nm], onto, lambda cs: {"e": cs["e"]})
            for nm in ("g1", "be1", "g2", "be2")
        }
        gam = where(g["post"], gp["g1"], where(g["pre"], gp["g2"], C.full(1)))
        bet = where(g["post"], gp["be1"], gp["be2"])  # read only when a LayerNorm is on (norm_on)
        return gam.named(f"{name}.gamma"), bet.named(f"{name}.beta")

    def _ffn1_products(self, numer: GridRef, denom: GridRef) -> tuple[Grid, C.SOp, C.SOp, C.SOp]:
        """(i, f, h, e): the terms of sum_{h, e} of R-terms x gamma W1, and of gamma W1, beta W1."""
        FP = self._grid("ffn1.products", i=self.N, f=self.F, h=self.H, e=self.D)
        o_fp = self._head_out(numer, denom, FP, lambda cs: cs["h"], "ffn1.o")
        c_fp = self._resid_terms(FP, "ffn1")
        h0_fp = self._indicator("ffn1.h0", FP, lambda cs: cs["h"].eq(0))
        gam_fp, bet_fp = self._ffn_in_ln(FP, "ffn1")
        w1_fp = self._gather("ffn1.w1", self._rec["w1"], FP, lambda cs: {"e": cs["e"], "f": cs["f"]})
        gw = mul(mul(gam_fp, w1_fp), h0_fp).named("ffn1.gw")
        bw = mul(mul(bet_fp, w1_fp), h0_fp).named("ffn1.bw")
        rgw = mul(add(o_fp, mul(h0_fp, c_fp)), mul(gam_fp, w1_fp)).named("ffn1.rgw")
        return FP, rgw, gw, bw

    def _ln1_square_terms(self, numer: GridRef, denom: GridRef) -> GridRef:
        """(i, e, h, h2): the terms of sum_{e, h, h2} of R^2."""
        QP = self._grid("ln1.square_terms", i=self.N, e=self.D, h=self.H, h2=self.H)
        o1 = self._head_out(numer, denom, QP, lambda cs: cs["h"], "ln1.o")
        o2 = self._head_out(numer, denom, QP, lambda cs: cs["h2"], "ln1.o2")
        c_qp = self._resid_terms(QP, "ln1")
        h2z = self._indicator("ln1.h2_0", QP, lambda cs: cs["h2"].eq(0))
        hz = self._indicator("ln1.h_0", QP, lambda cs: cs["h"].eq(0) & cs["h2"].eq(0))
        sq_terms = add(
            add(mul(o1, o2), mul(h2z, C.apply("scale", mul(o1, c_qp), params=(2,)))), mul(hz, C.apply("square", c_qp))
        )
        return GridRef(sq_terms.named("ln1.square_terms"), QP)

    def _residual_terms(self, numer: GridRef, denom: GridRef) -> GridRef:
        """(i, e, h): O itself (plus c at h = 0), for R at the positions that need R."""
        OB = self._grid("attn.heads", i=self.N, e=self.D, h=self.H)
        o_ob = self._head_out(numer, denom, OB, lambda cs: cs["h"], "attn.o")
        c_ob = self._resid_terms(OB, "attn")
        h0_ob = self._indicator("attn.h0", OB, lambda cs: cs["h"].eq(0))
        return GridRef(add(o_ob, mul(h0_ob, c_ob)).named("attn.r_terms"), OB)

    # -- 6. R, LayerNorm 1 statistics, FFN 1 ---------------------------------------------------
    def _r_stats(self, heads: HeadTerms, onto: Grid, name: str) -> tuple[C.SOp | None, C.SOp, C.SOp]:
        """R[i, e] (when the grid has an axis e), mu1[i] and rstd1[i] at the grid's positions."""
        r = None
        if "e" in onto.axes:
            r = self._sum(f"{name}.R", heads.r_terms, ("h",), onto, lambda cs: {"i": cs["i"], "e": cs["e"]})
        s1 = self._sum(f"{name}.R_sum", heads.r_terms, ("e", "h"), onto, lambda cs: {"i": cs["i"]})
        s2 = self._sum(f"{name}.R_sq", heads.square, ("e", "h", "h2"), onto, lambda cs: {"i": cs["i"]})
        mu = C.apply("div", s1, self._d_b).named(f"{name}.mu1")
        rstd = self._layer_norm_of(mu, C.apply("div", s2, self._d_b), f"{name}.ln1")
        return r, mu, rstd

    def _ffn1_act(
        self, heads: HeadTerms, onto: Grid, f: Callable[[Coords], E.Expr], mu: C.SOp, rstd: C.SOp, name: str
    ) -> C.SOp:
        """FFN 1's activation at feature f(x): LayerNorm folded into the sums of layer 5's products."""
        grp = lambda cs: {"i": cs["i"], "f": f(cs)}
        s_rgw = self._sum(f"{name}.rgw", GridRef(heads.rgw, heads.ffn1), ("h", "e"), onto, grp)
        s_gw = self._sum(f"{name}.gw", GridRef(heads.gw, heads.ffn1), ("h", "e"), onto, grp)
        s_bw = self._sum(f"{name}.bw", GridRef(heads.bw, heads.ffn1), ("h", "e"), onto, grp)
        b1 = self._gather(f"{name}.b1", self._rec["b1"], onto, lambda cs: {"f": f(cs)})
        normed = add(mul(rstd, sub(s_rgw, mul(mu, s_gw))), s_bw)
        pre = add(where(heads.norm_on, normed, s_rgw), b1).named(f"{name}.pre")
        return self._activation(pre).named(f"{name}.act")

    def _activation(self, pre: C.SOp) -> C.SOp:
        """The MLP's activation of FFN 1's pre-activation, selected by the record's gelu and gelu_tanh gates."""
        tanh_or_relu = where(self._g["gelu_tanh"], C.apply("gelu_tanh", pre), C.apply("relu", pre))
        return where(self._g["gelu"], C.apply("gelu", pre), tanh_or_relu)

    def _y1_of(self, onto: Grid, r: C.SOp | None, mu: C.SOp, rstd: C.SOp, name: str) -> C.SOp:
        """Y1 = LayerNorm 1 (R) (post-norm) or R at the grid's positions."""
        assert r is not None
        g1 = self._gather(f"{name}.g1", self._rec["g1"], onto, lambda cs: {"e": cs["e"]})
        be1 = self._gather(f"{name}.be1", self._rec["be1"], onto, lambda cs: {"e": cs["e"]})
        return where(self._g["post"], add(mul(mul(sub(r, mu), rstd), g1), be1), r).named(f"{name}.Y1")

    def _c2_of(self, onto: Grid, y1: C.SOp, name: str) -> C.SOp:
        """c2 = residual * Y1 + b2: FFN 2's output without its sum."""
        b2 = self._gather(f"{name}.b2", self._rec["b2"], onto, lambda cs: {"e": cs["e"]})
        return add(mul(self._g["residual"], y1), b2).named(f"{name}.c2")

    def _ffn2_products(self, heads: HeadTerms) -> tuple[Grid, C.SOp, C.SOp, C.SOp]:
        """(i, e, f): FFN 2's products and the terms of sum_e R2 and sum_e R2^2."""
        EP = self._grid("ffn2.products", i=self.N, e=self.D, f=self.F)
        r_ep, mu_ep, rstd_ep = self._r_stats(heads, EP, "ffn2")
        act_ep = self._ffn1_act(heads, EP, lambda cs: cs["f"], mu_ep, rstd_ep, "ffn2.u")
        w2_ep = self._gather("ffn2.w2", self._rec["w2"], EP, lambda cs: {"f": cs["f"], "e": cs["e"]})
        aw = mul(act_ep, w2_ep).named("ffn2.prod")
        c2_ep = self._c2_of(EP, self._y1_of(EP, r_ep, mu_ep, rstd_ep, "ffn2"), "ffn2")
        f0 = self._indicator("ffn2.f0", EP, lambda cs: cs["f"].eq(0))
        v1 = add(aw, mul(f0, c2_ep)).named("ln2.sum_terms")
        v2 = add(mul(C.apply("scale", c2_ep, params=(2,)), aw), mul(f0, C.apply("square", c2_ep))).named("ln2.sq_terms")
        return EP, aw, v1, v2

    def _ln2_gram_terms(self, heads: HeadTerms) -> GridRef:
        """(i, f, f2): act_f act_f2 (W2 W2^T)[f, f2]; the Gram matrix from (f, f2, e) products."""
        F, rec = self.F, self._rec
        WG = self._grid("gram.products", f=F, f2=F, e=self.D)
        wa = self._gather("gram.a", rec["w2"], WG, lambda cs: {"f": cs["f"], "e": cs["e"]})
        wb = self._gather("gram.b", rec["w2"], WG, lambda cs: {"f": cs["f2"], "e": cs["e"]})
        GP = self._grid("ln2.gram_terms", i=self.N, f=F, f2=F)
        gram = self._sum(
            "gram", GridRef(mul(wa, wb).named("gram.prod"), WG), ("e",), GP, lambda cs: {"f": cs["f"], "f2": cs["f2"]}
        )
        _, mu_gp, rstd_gp = self._r_stats(heads, GP, "gram1")
        act_f = self._ffn1_act(heads, GP, lambda cs: cs["f"], mu_gp, rstd_gp, "gram.u")
        act_f2 = self._ffn1_act(heads, GP, lambda cs: cs["f2"], mu_gp, rstd_gp, "gram.u2")
        return GridRef(mul(mul(act_f, act_f2), gram).named("ln2.gram_terms"), GP)

    # -- 7. FFN 2, LayerNorm 2, the output at (i, e) -------------------------------------------
    def _output(self, heads: HeadTerms, ffn: FfnTerms) -> tuple[C.SOp, Grid]:
        """Y at (i, e): FFN 2's sum and LayerNorm 2 (when the layer has an FFN), zero outside n x d."""
        g, d_b, EP = self._g, self._d_b, ffn.ffn2
        OUT = self._grid("out", i=self.N, e=self.D)
        r_o, mu_o, rstd_o = self._r_stats(heads, OUT, "out")
        y1 = self._y1_of(OUT, r_o, mu_o, rstd_o, "out")
        c2 = self._c2_of(OUT, y1, "out")
        fw = self._sum("out.ffn", GridRef(ffn.aw, EP), ("f",), OUT, lambda cs: {"i": cs["i"], "e": cs["e"]})
        s1 = self._sum("out.R2_sum", GridRef(ffn.sum_terms, EP), ("e", "f"), OUT, lambda cs: {"i": cs["i"]})
        s2 = self._sum("out.R2_sq", GridRef(ffn.sq_terms, EP), ("e", "f"), OUT, lambda cs: {"i": cs["i"]})
        s3 = self._sum("out.R2_gram", ffn.gram, ("f", "f2"), OUT, lambda cs: {"i": cs["i"]})
        r2 = add(c2, fw).named("out.R2")
        mu2 = C.apply("div", s1, d_b).named("out.mu2")
        rstd2 = self._layer_norm_of(mu2, C.apply("div", add(s2, s3), d_b), "out.ln2")
        g2 = self._gather("out.g2", self._rec["g2"], OUT, lambda cs: {"e": cs["e"]})
        be2 = self._gather("out.be2", self._rec["be2"], OUT, lambda cs: {"e": cs["e"]})
        y2 = where(g["post"], add(mul(mul(sub(r2, mu2), rstd2), g2), be2), r2).named("out.Y2")
        y = where(g["ffn"], y2, y1)
        rows_ok = self._below("mask.rows", OUT, lambda cs: cs["i"], self._n_b, lambda c, s: c["i"] < s["n"])
        cols_ok = self._below("mask.cols", OUT, lambda cs: cs["e"], d_b, lambda c, s: c["e"] < s["d"])
        return mul(y, mul(rows_ok, cols_ok)).named("Y"), OUT

    # -- the write -----------------------------------------------------------------------------
    def _stage_next(self, y: C.SOp, OUT: Grid) -> None:
        """The next sequence: Y over X, the pointer advanced, the record queue shifted by one."""
        im = self.map
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
        q, k = Q, K
        self.intents.append(
            (
                f"{name}.gather",
                Intent("shift", sel, k.eq(q + size), q >= base, "record position p reads position p + S (next record)"),
            )
        )
        return C.aggregate(sel, C.tokens).named(name)
