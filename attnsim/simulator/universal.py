"""The universal simulator U (Theorem 6, Corollary 6.1, Theorem 9, Corollary 9.1, hierarchy N >= n).

ONE GAHAT-RASP program per capacity (max_len N, d_model D, n_heads H, d_head K, d_ff F),
composed from the lemma constructions' composable forms (``matmul_ref``, ``transpose_ref``,
masked ``softmax_ref``) with no Python glue between stages.  The simulated layer T travels in
the input sequence <T, X>, so the program never depends on T:

* tokens ``[0, D N)``: X^T (D x N, row-major; U works on the transposed activations so that
  every projection is one spread matmul W^T @ Z^T with stacked per-head outputs);
* header ``[D N, D N + 3)``: the true n, the true d and the layer pointer;
* then one *record* per layer (layer l at ``D N + 3 + l S``): gates (residual, pre-norm,
  post-norm, gelu, ffn), scale, eps, the true h, d_head, d_ff, and the zero-padded weights
  W_qkv^T (3HK x D), b_qkv, W_o^T (D x HK), b_o, W1^T, b1, W2^T, b2, LayerNorm weights/biases.

Smaller n, d, h, d_head, d_ff run on the same program: padding is zero and the masks (keys
j < n inside the softmax, features j < d inside LayerNorm means, heads/d_head/d_ff on the
projections) are computed in the MLP from the size tokens, never by value-dependent
selectors.  A pass reads the record the pointer names (one gather head), replaces X^T by the
layer's output, advances the pointer and keeps the rest of the sequence: running the same
program m times on <T1..Tm, X> simulates an m-layer encoder (``run_stack``).
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from attnsim.lemmas.base import Intent
from attnsim.lemmas.matmul import matmul_ref
from attnsim.lemmas.softmax import softmax_ref
from attnsim.lemmas.transpose import transpose_ref
from attnsim.numeric.guards import complex_entry
from attnsim.proofs import z3sel
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp import hints
from attnsim.rasp.arith import BackendError
from attnsim.rasp.engine import Trace, evaluate
from attnsim.rasp.engine import trace as engine_trace
from attnsim.rasp.layout import Block, Layout, MatRef
from attnsim.rasp.schedule import Cost, cost
from attnsim.simulator.reference import SimulatorError, TransformerLayer

GATES = ("residual", "pre", "post", "gelu", "ffn", "scale", "eps", "heads", "d_head", "d_ff")
HEADER = ("n", "d", "ptr")
PTR = E.Var("ptr")
SEQ = E.Var("seq_len")


@dataclass(frozen=True)
class PtrGather:
    """A gather whose source depends on the layer pointer: query q reads ``base + ptr S + rel(q)``."""

    name: str
    selector: C.Selector
    source: C.SOp
    queries: E.Expr
    rel: E.Expr
    statement: str


@dataclass(frozen=True)
class Link:
    """Stage composition: entry (h, i, j) of ``consumer`` is entry ``coords`` of ``producer``."""

    name: str
    producer: Block
    consumer: Block
    coords: Callable[[E.Expr, E.Expr, E.Expr], tuple[E.Expr, E.Expr, E.Expr]]
    statement: str


@dataclass(frozen=True)
class Mask:
    """A 0/1 MLP mask: ``sop`` at the positions of ``block`` is 1 iff ``intent(h, i, j, sizes)``."""

    name: str
    sop: C.SOp
    block: Block
    intent: Callable[[int, int, int, dict[str, int]], bool]


class UniversalSimulator:
    """U for a capacity: any T with n <= max_len, d <= d_model, h <= n_heads, d_head, d_ff."""

    def __init__(self, max_len: int, d_model: int, n_heads: int, d_head: int, d_ff: int | None = None) -> None:
        for nm, v in (("max_len", max_len), ("d_model", d_model), ("n_heads", n_heads), ("d_head", d_head)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise SimulatorError(f"capacity {nm} must be a positive int, got {v!r}")
        if d_ff is not None and (not isinstance(d_ff, int) or isinstance(d_ff, bool) or d_ff < 1):
            raise SimulatorError(f"capacity d_ff must be a positive int or None, got {d_ff!r}")
        self.capacity = {"max_len": max_len, "d_model": d_model, "n_heads": n_heads, "d_head": d_head}
        self.capacity["d_ff"] = d_ff if d_ff is not None else 1
        self.N, self.D, self.H, self.K = (
            C.Size(s, v) for s, v in zip("NDHK", (max_len, d_model, n_heads, d_head), strict=True)
        )
        self.F = C.Size("F", self.capacity["d_ff"])
        self.intents: list[tuple[str, Intent]] = []
        self.ptr_gathers: list[PtrGather] = []
        self.links: list[Link] = []
        self.masks: list[Mask] = []
        self.stage_blocks: list[Block] = []
        self._build()

    # -- layout ------------------------------------------------------------------------------
    def _record(self, channel: str, base: E.Expr | int) -> list[Block]:
        D, H, K, F = self.D, self.H, self.K, self.F
        spec: list[tuple[str, E.Expr | int, E.Expr | int]] = [
            ("gates", 1, len(GATES)),
            ("wqkv", 3 * H * K, D),
            ("bqkv", 3 * H * K, 1),
            ("wo", D, H * K),
            ("bo", D, 1),
            ("w1", F, D),
            ("b1", F, 1),
            ("w2", D, F),
            ("b2", D, 1),
            ("g1", D, 1),
            ("be1", D, 1),
            ("g2", D, 1),
            ("be2", D, 1),
        ]
        out: list[Block] = []
        off: E.Expr = E.lift(base)
        for name, r, c in spec:
            b = Block.of(name, off, r, c, channel=channel)
            out.append(b)
            off = b.end_expr()
        return out

    def _build(self) -> None:
        N, D, H, K = self.N, self.D, self.H, self.K
        ix, tok = C.indices, C.tokens
        xt = Block.of("XT", 0, D, N)
        header = Block.of("header", xt.end_expr(), 1, len(HEADER))
        base = header.end_expr()
        rec_rel = self._record("cur", 0)
        S = rec_rel[-1].end_expr()
        self.record_size = S
        self.base = base
        rec = {b.name: b for b in rec_rel}
        tok_rec = self._record("tokens", base)
        self.xt, self.header = xt, header
        q, k = z3sel.Q, z3sel.K

        # layer 1: broadcasts of the header (structural gathers) ---------------------------
        def bcast(slot: int, name: str) -> C.SOp:
            pos = header.position(0, slot)
            src = C.imap(lambda p: pos + 0 * p, ix).named(f"{name}.source")
            sel = C.select(ix, src, "==").named(f"{name}.broadcast")
            it = Intent("broadcast", sel, k.eq(pos), q >= 0, f"every position selects exactly the {name} token")
            self.intents.append((f"{name}.broadcast", it))
            return C.aggregate(sel, tok).named(name)

        n_b, d_b, ptr_b = bcast(0, "n"), bcast(1, "d"), bcast(2, "ptr")
        # the pointer names a record that fits: 0..M-1 with M = (length - base) div S (at least 1)
        base_v, size_v = (int(e.evaluate(C.size_bindings(e))) for e in (base, S))
        hints.declare(ptr_b, lambda max_len: range(max(1, (max_len - base_v) // size_v)))

        # pointer-dependent gathers (read the record the pointer names) --------------------
        def pgather(name: str, queries: E.Expr, rel: Callable[[E.Expr], E.Expr], stmt: str) -> C.SOp:
            src = C.imap(lambda p, t: E.if_(queries.substitute({q.name: p}), base + t * S + rel(p), -1), ix, ptr_b)
            src = src.named(f"{name}.source")
            sel = C.select(ix, src, "==").named(f"{name}.gather")
            self.ptr_gathers.append(PtrGather(name, sel, src, queries, rel(q), stmt))
            return C.aggregate(sel, tok).named(name)

        cur = pgather("cur", q < S, lambda p: p, "record position p < S reads position p of the pointed record")
        gate_blk = rec["gates"]

        def gate_rel(i: int) -> Callable[[E.Expr], E.Expr]:
            return lambda p: gate_blk.position(0, i) + 0 * p

        g = {nm: pgather(nm, q >= 0, gate_rel(i), f"every position reads gate {nm}") for i, nm in enumerate(GATES)}
        in_xt = xt.contains(q)

        def col_param(name: str, blk: Block) -> C.SOp:
            return pgather(name, in_xt, lambda p: blk.position(p // N, 0), f"X^T entry (j, i) reads {name}[j]")

        g1, be1 = col_param("g1_at", rec["g1"]), col_param("be1_at", rec["be1"])

        # structural gathers from the fetched record (layer >= 3) ---------------------------
        def rgather(name: str, blk: Block, onto: Block) -> C.SOp:
            """Per-row vector ``blk`` (r x 1) spread over ``onto`` (r x cols): (i, j) reads blk[i]."""

            def src(p: E.Expr) -> E.Expr:
                _, i, _ = onto.coords(p)
                return E.if_(onto.contains(p), blk.position(i, 0), -1)

            s = C.imap(src, ix).named(f"{name}.source")
            sel = C.select(ix, s, "==").named(f"{name}.gather")
            _, iq, _ = onto.coords(q)
            it = Intent("gather", sel, k.eq(blk.position(iq, 0)), onto.contains(q), f"entry (i, j) reads {blk.name}[i]")
            self.intents.append((f"{name}.gather", it))
            return C.aggregate(sel, cur).named(name)

        def mask(name: str, blk: Block, fn: Callable[[E.Expr], E.Expr], bound: C.SOp, intent: Any) -> C.SOp:
            coord = C.imap(lambda p: E.if_(blk.contains(p), fn(p), -1), ix).named(f"{name}.coord")
            m = C.apply("lt", coord, bound)
            m = C.apply("mul", m, C.imap(lambda p: E.if_(blk.contains(p), 1, 0), ix)).named(name)
            self.masks.append(Mask(name, m, blk, intent))
            return m

        def both(a: C.SOp, b: C.SOp, name: str) -> C.SOp:
            return C.apply("mul", a, b).named(name)

        mask_d = mask("mask_d", xt, lambda p: p // N, d_b, lambda h, i, j, s: i < s["d"])
        mask_n = mask("mask_n", xt, lambda p: p % N, n_b, lambda h, i, j, s: j < s["n"])

        # LayerNorm statistics over the true d features of every token (column of X^T) ------
        def ln_stats(x: C.SOp, name: str) -> tuple[C.SOp, C.SOp]:
            xm = C.apply("mul", x, mask_d).named(f"{name}.masked")
            kg = C.imap(lambda p: E.if_(xt.contains(p), p % N, -1), ix).named(f"{name}.key_col")
            qg = C.imap(lambda p: E.if_(xt.contains(p), p % N, -2), ix).named(f"{name}.query_col")
            sel = C.select(kg, qg, "==").named(f"{name}.colmean")
            self.intents.append(
                (
                    f"{name}.colmean",
                    Intent(
                        "colmean",
                        sel,
                        xt.contains(k) & (k % N).eq(q % N),
                        xt.contains(q),
                        "X^T entry (j, i) selects exactly the D entries of token i",
                    ),
                )
            )
            d_int = int(D)
            m1 = C.apply("div", C.apply("scale", C.aggregate(sel, xm), params=(d_int,)), d_b).named(f"{name}.mean")
            sq = C.apply("square", xm)
            m2 = C.apply("div", C.apply("scale", C.aggregate(sel, sq), params=(d_int,)), d_b).named(f"{name}.meansq")
            var = C.apply("sub", m2, C.apply("square", m1)).named(f"{name}.var")
            rstd = C.apply("reciprocal", C.apply("sqrt", C.apply("add", var, g["eps"]))).named(f"{name}.rstd")
            xhat = C.apply("mul", C.apply("sub", xm, m1), rstd).named(f"{name}.xhat")
            return xhat, xm

        def affine(xhat: C.SOp, w: C.SOp, b: C.SOp, name: str) -> C.SOp:
            return C.apply("add", C.apply("mul", xhat, w), b).named(name)

        # pre-norm input ----------------------------------------------------------------------
        xhat0, xm0 = ln_stats(tok, "ln_x")
        zt = C.apply("where", g["pre"], affine(xhat0, g1, be1, "ln1_x"), xm0).named("Z")

        # projections: QKV^T = W_qkv^T @ Z^T  (3HK x N) -------------------------------------
        wqkv = MatRef(cur, rec["wqkv"])
        proj, its = matmul_ref(wqkv, MatRef(zt, xt), name="proj")
        self._stage(proj, its)
        qkv_rows = proj.block
        bq = rgather("bqkv_at", rec["bqkv"], qkv_rows)
        mh = mask(
            "mask_heads",
            qkv_rows,
            lambda p: ((p // N) // K) % H,
            g["heads"],
            lambda h, i, j, s: (i // int(self.K)) % int(self.H) < s["heads"],
        )
        mk = mask(
            "mask_dhead",
            qkv_rows,
            lambda p: (p // N) % K,
            g["d_head"],
            lambda h, i, j, s: i % int(self.K) < s["d_head"],
        )
        qkv = C.apply("mul", C.apply("add", proj.sop, bq), both(mh, mk, "mask_qkv")).named("qkv")
        views = {t: Block.of(f"{t}T", i * H * K * N, K, N, H, channel="qkv") for i, t in enumerate(("Q", "K", "V"))}

        def view_coords(i: int) -> Callable[[E.Expr, E.Expr, E.Expr], tuple[E.Expr, E.Expr, E.Expr]]:
            return lambda h, r, c: (E.lift(0), (i * H + h) * K + r, c)

        for i, (t, vb) in enumerate(views.items()):
            self.links.append(
                Link(
                    f"{t}T_view",
                    qkv_rows,
                    vb,
                    view_coords(i),
                    f"{t}_h^T[c, i] is row (({i} H + h) K + c) of QKV^T",
                )
            )

        # scores S_h = Q_h K_h^T (queries x keys) --------------------------------------------
        qm, its = transpose_ref(MatRef(qkv, views["Q"]), name="Q")
        self._stage(qm, its)
        scores, its = matmul_ref(qm, MatRef(qkv, views["K"]), name="scores")
        self._stage(scores, its)
        sb = scores.block
        in_s = C.imap(lambda p: E.if_(sb.contains(p), 1, 0), ix)
        scaled = C.apply("mul", C.apply("mul", scores.sop, in_s), g["scale"]).named("scores_scaled")
        probs, its = softmax_ref(MatRef(scaled, sb), name="probs", valid_cols=n_b)
        self._stage(probs, its)
        self.masks.append(Mask("probs.mask", self._find(probs.sop, "probs.mask"), sb, lambda h, i, j, s: j < s["n"]))

        # O^T = V^T P^T ------------------------------------------------------------------------
        # garbage positions outside the block may hold 0/0: cut them before they travel on
        clean = C.apply("gate", in_s, probs.sop).named("probs_in_block")
        pt, its = transpose_ref(MatRef(clean, probs.block), name="PT")
        self._stage(pt, its)
        ot, its = matmul_ref(MatRef(qkv, views["V"]), pt, name="av")
        self._stage(ot, its)
        ot_flat = Block.of("OT", 0, H * K, N, channel=ot.block.channel)
        self.links.append(
            Link(
                "OT_concat",
                ot.block,
                ot_flat,
                lambda h, r, c: (r // K, r % K, c),
                "row h K + c of concat(O)^T is O_h^T[c]",
            )
        )

        # attn^T = W_o^T @ O^T, bias, residual --------------------------------------------------
        attn, its = matmul_ref(MatRef(cur, rec["wo"]), MatRef(ot.sop, ot_flat), name="wo")
        self._stage(attn, its)
        self.links.append(
            Link("attn_aligned", attn.block, xt, lambda h, r, c: (h, r, c), "attn^T and X^T share positions")
        )
        bo = rgather("bo_at", rec["bo"], xt)
        r1 = C.apply("add", C.apply("add", attn.sop, bo), C.apply("mul", g["residual"], xm0)).named("R1")
        xhat1, r1m = ln_stats(r1, "ln_r1")
        g2 = rgather("g2_at", rec["g2"], xt)
        be2 = rgather("be2_at", rec["be2"], xt)
        y1 = C.apply("where", g["post"], affine(xhat1, g1, be1, "ln1_r1"), r1m).named("Y1")
        z2 = C.apply("where", g["pre"], affine(xhat1, g2, be2, "ln2_r1"), y1).named("Z2")

        # FFN -----------------------------------------------------------------------------------
        hid, its = matmul_ref(MatRef(cur, rec["w1"]), MatRef(z2, xt), name="ffn1")
        self._stage(hid, its)
        b1 = rgather("b1_at", rec["b1"], hid.block)
        mf = mask("mask_dff", hid.block, lambda p: p // N, g["d_ff"], lambda h, i, j, s: i < s["d_ff"])
        # mask before the activation: padded and out-of-block units are 0, and act(0) = 0 (relu and gelu)
        u = C.apply("mul", C.apply("add", hid.sop, b1), mf).named("ffn.pre")
        act = C.apply("where", g["gelu"], C.apply("gelu", u), C.apply("relu", u)).named("ffn.act")
        f2, its = matmul_ref(MatRef(cur, rec["w2"]), MatRef(act, hid.block), name="ffn2")
        self._stage(f2, its)
        self.links.append(Link("ffn_aligned", f2.block, xt, lambda h, r, c: (h, r, c), "FFN^T and X^T share positions"))
        b2 = rgather("b2_at", rec["b2"], xt)
        r2 = C.apply("add", C.apply("add", f2.sop, b2), C.apply("mul", g["residual"], y1)).named("R2")
        xhat2, r2m = ln_stats(r2, "ln_r2")
        yf = C.apply("where", g["post"], affine(xhat2, g2, be2, "ln2_r2"), r2m).named("Y2")
        out = C.apply("where", g["ffn"], yf, y1)
        out = C.apply("mul", out, both(mask_d, mask_n, "mask_out")).named("Y")

        # the next sequence: X^T replaced, pointer advanced, the rest kept ------------------------
        is_x = C.imap(lambda p: E.if_(xt.contains(p), 1, 0), ix).named("is_X")
        ptr_pos = header.position(0, 2)
        is_p = C.imap(lambda p: E.if_(p.eq(ptr_pos), 1, 0), ix).named("is_ptr")
        bumped = C.apply("where", is_p, C.apply("affine", tok, params=(1, 1)), tok)
        self.program: C.SOp = C.apply("where", is_x, out, bumped).named("U")
        self.tok_record = tok_rec
        self.record = rec_rel
        self._positions = self._positions_expr()

    def _stage(self, ref: MatRef, intents: list[Intent]) -> None:
        self.stage_blocks.extend([*ref.aux, ref.block])
        self.intents.extend((f"{ref.block.name}.{it.name}", it) for it in intents)

    @staticmethod
    def _find(root: C.SOp, label: str) -> C.SOp:
        for node in C.topological([root]):
            if isinstance(node, C.SOp) and node.label == label:
                return node
        raise SimulatorError(f"no node labelled {label!r}")

    def _positions_expr(self, layers: int = 1) -> E.Expr:
        out: E.Expr = self.base + layers * self.record_size
        for b in self.stage_blocks:
            out = E.emax(out, b.end_expr())
        return out

    # -- public API ---------------------------------------------------------------------------
    @property
    def fingerprint(self) -> str:
        """The program's structural hash (depends on the capacity only)."""
        return self.program.fingerprint

    @property
    def layout(self) -> Layout:
        """Where X^T, the header and layer 0's record live in the input tokens, and U's stage blocks."""
        return Layout.of(self.xt, self.header, *self.tok_record, *self.stage_blocks, length=self._positions)

    def positions(self, layers: int = 1) -> int:
        """Sequence length for an encoding with ``layers`` records."""
        e = self._positions_expr(layers)
        return int(e.evaluate(C.size_bindings(e)))

    def _check(self, T: TransformerLayer, x: np.ndarray) -> None:
        cap = self.capacity
        if not isinstance(T, TransformerLayer):
            raise SimulatorError(f"T must be a TransformerLayer, got {type(T).__name__}")
        checks = [
            ("n (tokens)", x.shape[0], "max_len"),
            ("d_model", T.d_model, "d_model"),
            ("n_heads", T.n_heads, "n_heads"),
            ("d_head", T.d_head, "d_head"),
        ]
        if T.d_ff is not None:
            checks.append(("d_ff", T.d_ff, "d_ff"))
        for what, v, cname in checks:
            if v > cap[cname]:
                raise SimulatorError(f"{what} = {v} exceeds the capacity {cname} = {cap[cname]}")

    def _record_values(self, T: TransformerLayer) -> dict[str, np.ndarray]:
        H, K = int(self.H), int(self.K)
        d, h, k = T.d_model, T.n_heads, T.d_head
        obj = T.symbolic_params or not all(isinstance(v, float) for v in (T.scale, T.eps))
        z = (lambda *s: np.full(s, sp.Integer(0), dtype=object)) if obj else (lambda *s: np.zeros(s))
        vals = {b.name: z(*b.shape) for b in self.record}
        gates = [int(T.residual), int(T.norm == "pre"), int(T.norm == "post"), int(T.activation == "gelu")]
        gates += [int(T.w1 is not None), T.scale, T.eps, h, k, T.d_ff or 0]
        vals["gates"][0, :] = gates
        for t, (w, b) in enumerate(((T.w_q, T.b_q), (T.w_k, T.b_k), (T.w_v, T.b_v))):
            for hh in range(h):
                r0 = (t * H + hh) * K
                vals["wqkv"][r0 : r0 + k, :d] = w[hh].T
                vals["bqkv"][r0 : r0 + k, 0] = b[hh]
        for hh in range(h):
            vals["wo"][:d, hh * K : hh * K + k] = T.w_o[hh * k : (hh + 1) * k, :].T
        vals["bo"][:d, 0] = T.b_o
        if T.w1 is not None:
            f = T.w1.shape[1]
            vals["w1"][:f, :d] = T.w1.T
            vals["b1"][:f, 0] = T.b1
            vals["w2"][:d, :f] = T.w2.T
            vals["b2"][:d, 0] = T.b2
        for nm, v in (("g1", T.ln1_weight), ("be1", T.ln1_bias), ("g2", T.ln2_weight), ("be2", T.ln2_bias)):
            vals[nm][:d, 0] = v
        return vals

    def encode(self, T: TransformerLayer | Sequence[TransformerLayer], X: Any, pointer: int = 0) -> np.ndarray:
        """The 1-D sequence <T, X> (or <T1..Tm, X> for a list); float64 unless something is symbolic."""
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
            self._check(L, x)
            if L.d_model != d:
                raise SimulatorError(f"layer {li} has d_model = {L.d_model} but X has {d} features")
        if not 0 <= pointer < len(layers):
            raise SimulatorError(f"pointer {pointer} is not a layer index in 0..{len(layers) - 1}")
        recs = [self._record_values(L) for L in layers]
        symbolic = x.dtype == object or any(r["gates"].dtype == object for r in recs)
        total = self.positions(len(layers))
        seq: np.ndarray = np.full(total, sp.Integer(0), dtype=object) if symbolic else np.zeros(total)
        D, N = int(self.D), int(self.N)
        xt = np.full((D, N), sp.Integer(0), dtype=object) if symbolic else np.zeros((D, N))
        xt[:d, :n] = x.T
        seq[: D * N] = xt.reshape(-1)
        h0 = self.header.start
        seq[h0 : h0 + 3] = [n, d, pointer]
        S = int(self.record_size.evaluate(C.size_bindings(self.record_size)))
        for li, r in enumerate(recs):
            for b in self.record:
                start = self.base_value + li * S + b.start
                seq[start : start + b.size] = r[b.name].reshape(-1)
        return seq

    @property
    def base_value(self) -> int:
        return int(self.base.evaluate(C.size_bindings(self.base)))

    def decode(self, out: np.ndarray, n: int, d: int | None = None) -> np.ndarray:
        """The output sequence's X^T block as an (n, d) array (d defaults to the capacity d_model)."""
        D, N = int(self.D), int(self.N)
        d = D if d is None else d
        if not (1 <= n <= N and 1 <= d <= D):
            raise SimulatorError(f"decode: n = {n}, d = {d} must be within 1..{N}, 1..{D}")
        arr = np.asarray(out)
        if arr.ndim != 1 or arr.shape[0] < D * N:
            raise SimulatorError(f"decode needs a 1-D output sequence of length >= {D * N}, got shape {arr.shape}")
        return arr[: D * N].reshape(D, N).T[:n, :d]

    def _decoded(self, n: int, d: int) -> np.ndarray:
        """The positions ``decode(out, n, d)`` reads: X^T entries (i, j) with i < d, j < n."""
        N = int(self.N)
        return (np.arange(d)[:, None] * N + np.arange(n)[None, :]).reshape(-1)

    def _evaluate(self, seq: np.ndarray, backend: str, finite: Any = True) -> np.ndarray:
        """One pass of U; ``finite``: the output positions that must be finite (numpy backend)."""
        if backend not in ("numpy", "sympy"):
            raise SimulatorError(f"unknown backend {backend!r}; use 'numpy' or 'sympy'")
        if backend == "numpy" and seq.dtype == object:
            raise SimulatorError("T or X is symbolic: use backend='sympy'")
        try:
            return np.asarray(evaluate(self.program, seq, backend, finite=finite))
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

    def run(self, T: TransformerLayer, X: Any, backend: str = "numpy") -> np.ndarray:
        """U(<T, X>) decoded: equals T(X).

        X has shape (n, d_model) or (B, n, d_model), batch first; U's program reads one sequence,
        so a batch runs each element on its own and stacks the results to (B, n, d_model)."""
        xs, batched = self._batch(X)
        outs = []
        for x in xs:
            seq = self.encode(T, x)
            n = np.asarray(x).shape[0]
            outs.append(self.decode(self._evaluate(seq, backend, self._decoded(n, T.d_model)), n, T.d_model))
        return np.stack(outs) if batched else outs[0]

    def run_stack(self, layers: Sequence[TransformerLayer], X: Any, backend: str = "numpy") -> np.ndarray:
        """Depth by looping: run the same program m times on <T1..Tm, X>; equals Tm(...T1(X)).

        X has shape (n, d_model) or (B, n, d_model), batch first (each element runs on its own)."""
        layers = list(layers)
        xs, batched = self._batch(X)
        outs = []
        for x in xs:
            seq = self.encode(layers, x)
            n, d = np.asarray(x).shape[0], layers[0].d_model
            for i in range(len(layers)):
                # a pass's whole output is the next pass's input; the last is read at the decoded block
                last = i == len(layers) - 1
                seq = self._evaluate(seq, backend, self._decoded(n, d) if last else True)
            outs.append(self.decode(seq, n, d))
        return np.stack(outs) if batched else outs[0]

    def trace(self, T: TransformerLayer, X: Any, backend: str = "numpy") -> Trace:
        """Every stage's values (and selector matrices when small), by label."""
        return engine_trace(self.program, self.encode(T, X), backend)

    def cost(self) -> dict[str, Any]:
        """Layers, heads per layer, positions; closed forms in the capacity symbols; per MLP (0 =
        before any attention, l = after attention layer l) its depth in primitives and the
        generalized primitives it carries (name -> number of Maps)."""
        c: Cost = cost(self.program, positions=self.positions())
        syms = {s: sp.Symbol(s, positive=True, integer=True) for s in ("N", "D", "H", "K", "F")}
        env = {k: v for k, v in syms.items()}
        pos = self._positions_expr().to_sympy(env)
        return {
            "layers": c.layers,
            "heads": c.heads,
            "positions": c.positions,
            "channels": c.channels,
            "capacity": dict(self.capacity),
            "closed_form": {
                "layers": sp.Integer(c.layers),
                "heads": [sp.Integer(h) for h in c.heads],
                "positions": pos,
                "positions_per_extra_layer": self.record_size.to_sympy(env),
            },
            "generalized_primitives": c.generalized,
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
