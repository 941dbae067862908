"""The last pass: the realized residual layout (:mod:`.residual`) assembled into explicit matrices.

Per attention layer, one :class:`~attnsim.compile.weights.Head` per head built by lowering (W_Q,
W_K from its score columns, W_V, W_O from its values) and one MLP stage per depth (the ReLU units
of every item at that depth, shared when two items read the same unit, and the function nodes);
the position and token embeddings; the read-out of the output's form; and the notes
``summary()`` prints.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from attnsim.compile.lowering import Lowering
from attnsim.compile.model import CompiledTransformer
from attnsim.compile.residual import BOS, IDX, ONE, TOK, FnItem, Form, HeadB, Realized, ReluItem, form_key
from attnsim.compile.weights import FnNode, Head, Layer, ReluStage, ScoreBound, Stage, as_number, obj

PROGRESS_ROWS = 1 << 14  # position rows between two progress calls


def assemble(low: Lowering, out: Realized) -> CompiledTransformer:
    """The compiled model of ``low.program``, whose output ``out`` lowering realized."""
    d = len(low.dims)
    n_layers = max([0, *low.layer.values()])

    def vec(f: Form) -> np.ndarray:
        v = obj((d,))
        for k, c in f.items():
            v[k] = as_number(c)
        return v

    pos = obj((low.N + 1, d))
    pos[0, BOS] = 1
    for p in range(low.N):
        pos[p + 1, ONE] = 1
        pos[p + 1, IDX] = p
        for dim, col in low.emb.items():
            pos[p + 1, dim] = as_number(col[p])
        if low.progress is not None and (p + 1) % PROGRESS_ROWS == 0:
            low.progress("positions", p + 1, low.N)
    if low.progress is not None:
        low.progress("positions", low.N, low.N)
    tok = obj((d,))
    tok[TOK] = 1
    layers = [Layer(_heads(low, li, vec), _mlp_stages(low, li, d, vec)) for li in range(n_layers + 1)]
    vocab = low.vocab.points if low.vocab is not None else None
    notes = _notes(low)
    ct = CompiledTransformer(low.dims, low.N, pos, tok, layers, vec(out.form), vocab, notes, low.name(low.program))
    ct.program = low.program
    return ct


def _heads(low: Lowering, li: int, vec: Any) -> list[Head]:
    """The heads of attention layer ``li``."""
    heads = []
    for (lyr, _), hb in low.heads.items():
        if lyr == li:
            heads.append(_head(hb, len(low.dims), vec))
    return heads


def _head(hb: HeadB, d: int, vec: Any) -> Head:
    wq, wk = obj((d, len(hb.cols))), obj((d, len(hb.cols)))
    for j, (qf, kf) in enumerate(hb.cols):
        wq[:, j], wk[:, j] = vec(qf), vec(kf)
    wv, wo = obj((d, len(hb.values))), obj((len(hb.values), d))
    for j, (vf, od) in enumerate(hb.values):
        wv[:, j] = vec(vf)
        wo[j, od] = 1
    gap = hb.margin / 2 if hb.kind == "aggregate" else hb.margin  # scored: its margin is its gap
    bound = None
    if hb.bound is not None:
        bform, lo, hi, label = hb.bound
        bound = ScoreBound(vec(bform), lo, hi, label)
    return Head(hb.name, hb.kind, wq, wk, wv, wo, hb.margin, gap, hb.forms, bound)


def _mlp_stages(low: Lowering, li: int, d: int, vec: Any) -> list[Stage]:
    """The MLP of attention layer ``li``: one stage per depth, its ReLU units and function nodes."""
    stages = []
    depths = sorted({it.depth for it in low.items if it.layer == li})
    for dp in depths:
        relus = [it for it in low.items if isinstance(it, ReluItem) and it.layer == li and it.depth == dp]
        fns = [it for it in low.items if isinstance(it, FnItem) and it.layer == li and it.depth == dp]
        stage_relu = _relu_stage(relus, d, vec) if relus else None
        fnodes = []
        for fi in fns:
            w_in = obj((d, len(fi.args)))
            for j, f in enumerate(fi.args):
                w_in[:, j] = vec(f)
            fnodes.append(FnNode(fi.prim, fi.params, w_in, fi.out, fi.note))
        stages.append(Stage(stage_relu, fnodes))
    return stages


def _relu_stage(relus: list[ReluItem], d: int, vec: Any) -> ReluStage:
    """One hidden bank for the items' ReLU units (a unit two items read is one column)."""
    ukeys: dict[Any, int] = {}
    cols: list[Form] = []
    entries: list[tuple[int, int, Fraction]] = []
    for it in relus:
        local = []
        for u in it.units:
            k = form_key(u)
            if k not in ukeys:
                ukeys[k] = len(cols)
                cols.append(u)
            local.append(ukeys[k])
        for od, cs in it.outs:
            entries += [(local[ui], od, c) for ui, c in cs]
    w1, w2 = obj((d, len(cols))), obj((len(cols), d))
    for j, u in enumerate(cols):
        w1[:, j] = vec(u)
    for h, od, c in entries:
        w2[h, od] = as_number(Fraction(w2[h, od]) + c)
    return ReluStage(w1, w2, [it.note for it in relus])


def _notes(low: Lowering) -> dict[str, Any]:
    """How nodes were realized, and the lookup tables' sizes (from the items' typed fields)."""
    notes: dict[str, Any] = {k: v for k, v in low.notes.items() if v}
    lookups = [it for it in low.items if isinstance(it, ReluItem) and it.lookup_points is not None]
    sizes = [it.lookup_points for it in lookups if it.lookup_points is not None]
    hidden = sum(len(it.units) for it in lookups)
    notes["lookup tables"] = (
        f"{len(sizes)} in MLPs (largest {max(sizes, default=0)} points, {hidden} hidden units before sharing), "
        f"{len(low.emb)} as position-embedding columns ({low.N} rows each)"
    )
    return notes
