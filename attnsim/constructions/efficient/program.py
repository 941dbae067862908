"""Application (attention variants): linear attention and Linformer, composed from our lemmas.

* :func:`linear_attention` (Katharopoulos et al. 2020, "Transformers are RNNs"), non-causal, with
  the feature map phi = elu + 1:  out_i = phi(q_i)^T (sum_j phi(k_j) v_j^T) / phi(q_i)^T (sum_j phi(k_j)).
  Program: phi in the MLP; transpose_ref(phi(K)) and, in parallel, z = phi(K)^T 1 as column sums
  (``column_sums_ref``: one head, n x mean over a column; no ones vector in the layout);
  matmul_ref gives S = phi(K)^T V; matmul_ref gives phi(Q) S and phi(Q) z; one gather head brings
  the denominator of row i to every entry (i, j); the MLP divides.
  The reference is the *quadratic* form (phi(Q) phi(K)^T) V / rowsum(phi(Q) phi(K)^T), so the SymPy
  proof also checks the re-association that makes the attention linear.
* :func:`linformer` (Wang et al. 2020): out = softmax(Q (E K)^T / sqrt(d)) (F V) with projections E, F
  (k x n).  Program: matmul_ref for E K and F V (in parallel), transpose_ref, matmul_ref for the
  scores, division by sqrt(d) in the MLP, softmax_ref, matmul_ref with F V.

Both use exp (elu's negative branch, softmax): exact only in SymPy, no Fraction backend.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import sympy as sp

from attnsim.constructions.construction import Construction, ConstructionError, size_args, sized
from attnsim.constructions.efficient.spec import LINEAR_ATTENTION, LINFORMER
from attnsim.constructions.matmul.program import matmul_ref
from attnsim.constructions.softmax.program import softmax_ref
from attnsim.constructions.transpose.program import transpose_ref
from attnsim.proofs.registry import ConstructionEntry
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.intent import Enumeration, Intent, K, Q
from attnsim.rasp.layout import Block, Layout, MatRef
from attnsim.symbolic.sympy_work import cancelled

LINEAR_REF = "Application (linear attention; Katharopoulos et al. 2020)"
LINFORMER_REF = "Application (Linformer; Wang et al. 2020)"


def _elu1(a: np.ndarray, backend: str) -> np.ndarray:
    if backend == "numpy":
        return np.where(a > 0, a + 1.0, np.exp(np.minimum(a, 0.0)))
    return np.vectorize(
        lambda x: (
            sp.Piecewise((x + 1, x > 0), (sp.exp(x), True))
            if not sp.sympify(x).is_number
            else (x + 1 if x > 0 else sp.exp(x))
        ),
        otypes=[object],
    )(a)


def _mat(a: np.ndarray) -> Any:
    return sp.Matrix(a.tolist())


def column_sums_ref(a: MatRef, name: str) -> tuple[MatRef, list[Intent]]:
    """Composable form: z_j = sum_i A[i, j], as a (cols x 1) column at positions 0..cols-1 of a new
    channel: rows x mean over the keys of column j (one head; no ones vector to multiply by)."""
    blk = a.block
    out = Block.of(name, 0, blk.cols, 1, channel=name)
    col = C.imap(lambda p: E.if_(blk.contains(p), blk.coords(p)[2], -1), C.indices).named(f"{name}.col")
    sel = C.select(col, C.indices, "==").named(f"{name}.sum")
    mean = C.aggregate(sel, a.sop).named(f"{name}.mean")
    z = C.apply("scale", mean, params=(blk.rows,)).named(name)  # rows x mean, rows a size expression
    _, _, jk = blk.coords(K)
    _, iq, _ = out.coords(Q)
    intent = Intent(
        "sum",
        sel,
        blk.contains(K) & jk.eq(iq),
        out.contains(Q),
        f"entry j of {name} selects exactly the keys of column j of {blk.name}",
        keys=Enumeration(
            key=lambda q, lv: blk.position(lv, out.coords(q)[1]), witness=lambda k: blk.coords(k)[1], count=blk.rows
        ),
    )
    return MatRef(z, out), [intent]


@sized(n="n", d="d", dv="dv")
def linear_attention(n: int | C.Size, d: int | C.Size, dv: int | C.Size) -> Construction:
    """Non-causal linear attention with phi = elu + 1 for Q, K (n x d) and V (n x dv) (ints or Sizes)."""
    sym = size_args(n=n, d=d, dv=dv)
    nn, dd, vv = sym["n"], sym["d"], sym["dv"]
    q_blk = Block.of("Q", 0, nn, dd)
    k_blk = Block.of("K", q_blk.end_expr(), nn, dd)
    v_blk = Block.of("V", k_blk.end_expr(), nn, vv)
    phi = C.apply("elu1", C.tokens).named("la.phi")
    kt, i1 = transpose_ref(MatRef(phi, k_blk), name="la.phiKt")
    s, i2 = matmul_ref(kt, MatRef(C.tokens, v_blk), name="la.kv")
    z, i3 = column_sums_ref(MatRef(phi, k_blk), name="la.ksum")
    num, i4 = matmul_ref(MatRef(phi, q_blk), s, name="la.num")
    den, i5 = matmul_ref(MatRef(phi, q_blk), z, name="la.den")
    out_blk = Block.of("out", 0, nn, vv, channel="la.out")
    src = C.imap(lambda p: den.block.position(out_blk.coords(p)[1], 0), C.indices).named("la.den_src")
    sel = C.select(C.indices, src, "==").named("la.den_gather")
    den_at = C.aggregate(sel, den.sop).named("la.den_at")
    y = C.apply("div", num.sop, den_at).named("la.out")
    q, k = Q, K
    _, iq, _ = out_blk.coords(q)
    _, ik, jk = den.block.coords(k)
    gather = Intent(
        "den_gather",
        sel,
        den.block.contains(k) & ik.eq(iq) & jk.eq(0),
        out_blk.contains(q),
        "entry (i, j) of the output selects exactly the denominator phi(q_i)^T z of row i",
    )
    intents = [
        _renamed(it, p) for p, its in (("kt", i1), ("kv", i2), ("ksum", i3), ("num", i4), ("den", i5)) for it in its
    ] + [gather]
    blocks = [
        q_blk,
        k_blk,
        v_blk,
        kt.block,
        *s.aux,
        s.block,
        z.block,
        *num.aux,
        num.block,
        *den.aux,
        den.block,
        out_blk,
    ]

    def reference(qm: np.ndarray, km: np.ndarray, vm: np.ndarray, backend: str = "numpy") -> Any:
        fq, fk = _elu1(qm, backend), _elu1(km, backend)
        if backend == "numpy":
            a = fq @ fk.T
            return (a @ vm) / a.sum(axis=1, keepdims=True)
        a = _mat(fq) * _mat(fk).T
        av = a * _mat(vm)
        rows, cols = vm.shape[0], vm.shape[1]
        return np.array([[av[i, j] / sum(a.row(i)) for j in range(cols)] for i in range(rows)], dtype=object)

    return Construction(
        "linear_attention",
        LINEAR_REF,
        y,
        Layout.of(*blocks),
        ("Q", "K", "V"),
        reference,
        intents=intents,
        paper_cost={"layers": None, "heads": None, "note": "claimed reconstructible in RASP, no construction given"},
        exact=False,
        check_inputs=_finite,
        specification=LINEAR_ATTENTION.at(n=nn, d=dd, dv=vv),
    )


@sized(n="n", d="d", dv="dv", k="kp")
def linformer(n: int | C.Size, d: int | C.Size, dv: int | C.Size, k: int | C.Size, scale: bool = True) -> Construction:
    """Linformer attention softmax(Q (E K)^T / sqrt(d)) (F V) for Q, K (n x d), V (n x dv), E, F (k x n)."""
    # "kp": the projected length (the paper's k), kept apart from the name of Linformer's argument
    sym = size_args({"kp": "k"}, n=n, d=d, dv=dv, kp=k)
    nn, dd, vv, kk = sym["n"], sym["d"], sym["dv"], sym["kp"]
    q_blk = Block.of("Q", 0, nn, dd)
    k_blk = Block.of("K", q_blk.end_expr(), nn, dd)
    v_blk = Block.of("V", k_blk.end_expr(), nn, vv)
    e_blk = Block.of("E", v_blk.end_expr(), kk, nn)
    f_blk = Block.of("F", e_blk.end_expr(), kk, nn)
    t = C.tokens
    ek, i1 = matmul_ref(MatRef(t, e_blk), MatRef(t, k_blk), name="lf.EK")
    fv, i2 = matmul_ref(MatRef(t, f_blk), MatRef(t, v_blk), name="lf.FV")
    ekt, i3 = transpose_ref(ek, name="lf.EKt")
    sc, i4 = matmul_ref(MatRef(t, q_blk), ekt, name="lf.scores")
    if scale:
        d_const = C.imap(lambda p: dd + 0 * p, C.indices).named("lf.d")  # the size d as a value (no Python int)
        scaled = C.apply("div", sc.sop, C.apply("sqrt", d_const).named("lf.sqrt_d")).named("lf.scaled")
    else:
        scaled = sc.sop
    pr, i5 = softmax_ref(MatRef(scaled, sc.block), name="lf.softmax")
    out, i6 = matmul_ref(pr, fv, name="out")
    intents = [
        _renamed(it, p)
        for p, its in (("EK", i1), ("FV", i2), ("EKt", i3), ("scores", i4), ("softmax", i5), ("out", i6))
        for it in its
    ]
    blocks = [
        q_blk,
        k_blk,
        v_blk,
        e_blk,
        f_blk,
        *ek.aux,
        ek.block,
        *fv.aux,
        fv.block,
        ekt.block,
        *sc.aux,
        sc.block,
        pr.block,
        *out.aux,
        out.block,
    ]

    def reference(qm: Any, km: Any, vm: Any, em: Any, fm: Any, backend: str = "numpy") -> Any:
        width, rows, proj = qm.shape[1], qm.shape[0], em.shape[0]
        if backend == "numpy":
            s = qm @ (em @ km).T / (np.sqrt(width) if scale else 1.0)
            w = np.exp(s)
            return (w / w.sum(axis=1, keepdims=True)) @ (fm @ vm)
        s = _mat(qm) * (_mat(em) * _mat(km)).T / (sp.sqrt(width) if scale else 1)
        w = s.applyfunc(sp.exp)
        p = sp.Matrix(rows, proj, lambda i, j: w[i, j] / sum(w.row(i)))
        return np.array((p * (_mat(fm) * _mat(vm))).tolist(), dtype=object)

    return Construction(
        "linformer",
        LINFORMER_REF,
        out.sop,
        Layout.of(*blocks),
        ("Q", "K", "V", "E", "F"),
        reference,
        intents=intents,
        paper_cost={"layers": None, "heads": None, "note": "claimed reconstructible in RASP, no construction given"},
        exact=False,
        check_inputs=_finite,
        specification=LINFORMER.at(n=nn, d=dd, dv=vv, kp=kk) if scale else None,
    )


def _renamed(it: Intent, prefix: str) -> Intent:
    return dataclasses.replace(it, name=f"{prefix}-{it.name}")


def _finite(*ops: np.ndarray, backend: str = "numpy") -> None:
    if backend == "numpy":
        for a in ops:
            if not np.all(np.isfinite(np.asarray(a, dtype=np.float64))):
                raise ConstructionError("operands contain NaN or inf")


def atomized(e: Any) -> Any:
    """A rational canonical form with every exp / Piecewise atom (exp arguments expanded) replaced
    by a positive symbol, and an atom that SymPy folded into the reciprocal of another
    (1/exp(x) = exp(-x), 1/Piecewise(...) = Piecewise(1/...)) by the symbol's reciprocal.  Result 0
    means the expression vanishes for every positive value of the atoms, hence identically when
    every such atom is positive -- true here: exp > 0 and elu + 1 > 0 (the only Piecewise these
    programs make).  A sufficient, sound test; a non-zero result is not a disproof."""
    e = sp.sympify(e)
    e = e.replace(lambda a: isinstance(a, sp.exp), lambda a: sp.exp(sp.expand(a.args[0])))
    atoms = sorted(e.atoms(sp.exp, sp.Piecewise), key=sp.default_sort_key)
    rep: dict[Any, Any] = {}
    for i, a in enumerate(atoms):
        inv = 1 / a
        if isinstance(inv, sp.exp):
            inv = sp.exp(sp.expand(inv.args[0]))
        rep[a] = 1 / rep[inv] if inv in rep else sp.Symbol(f"_a{i}", positive=True)
    return cancelled(e.xreplace(rep), "a program - reference difference")


#: The constructions this module declares (registered by :mod:`attnsim.catalog`).
CONSTRUCTIONS = (
    ConstructionEntry("linear_attention", LINEAR_REF, lambda: linear_attention(3, 2, 2)),
    ConstructionEntry("linformer", LINFORMER_REF, lambda: linformer(3, 2, 2, 2)),
)


__all__ = ["atomized", "linear_attention", "linformer"]
