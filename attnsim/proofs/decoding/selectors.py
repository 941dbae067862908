"""Selector intents read against a layout: which blocks an intent names, and a counterexample in
matrix coordinates.

:func:`query_block` and :func:`key_blocks` find the blocks whose membership tests a selector's
query condition and intent use (the prover decodes the query and key positions through them:
:func:`~attnsim.proofs.decoding.prover.prove_intent`); :func:`describe_position` and
:func:`selector_explainer` word a counterexample (sizes, q, k) as 'A[h, i, j]' coordinates and what
the intent wanted.  Nothing here decides a claim: it picks the case split and words a refutation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from attnsim.rasp import expr as E
from attnsim.rasp.layout import Block, Layout

Q, K = E.Var("q!"), E.Var("k!")  # the same variables as z3sel.Q, z3sel.K


# -- selectors --------------------------------------------------------------------------------
def _renderings(e: E.Expr) -> set[str]:
    """The rendering of every sub-expression of ``e`` (each shared sub-tree once)."""
    out: set[str] = set()
    seen: set[int] = set()
    for n in E.nodes(e):
        if id(n) not in seen:
            seen.add(id(n))
            out.add(E.render(n))
    return out


def key_blocks(intent: E.Expr, layout: Layout, var: E.Var = K) -> tuple[Block, ...]:
    """The layout blocks whose membership test of ``var`` occurs in the intent (the intent's
    sub-expressions rendered once, not once per block)."""
    out: list[Block] = []
    seen: set[str] = set()
    mentioned = _renderings(intent)
    for b in layout:
        fp = E.render(b.contains(var))
        if fp not in seen and fp in mentioned:
            out.append(b)
            seen.add(fp)
    return tuple(out)


def query_block(queries: E.Expr, layout: Layout, var: E.Var = Q) -> Block | None:
    """The layout block that the query condition (or one of its conjuncts) restricts ``var`` to."""
    conj = _conjuncts(queries)
    fps = {E.render(c) for c in conj}
    for b in layout:
        if E.render(b.contains(var)) in fps:
            return b
    return None


def _conjuncts(e: E.Expr) -> list[E.Expr]:
    """e and, if it is a conjunction, every conjunction inside it (sub-trees of the and-tree)."""
    if isinstance(e, E.BinOp) and e.op == "and":
        return [e, *_conjuncts(e.a), *_conjuncts(e.b)]
    return [e]


def describe_position(layout: Layout, p: int, sizes: Mapping[str, int], prefer: Sequence[Block] = ()) -> str:
    """'A[h, i, j]' (or 'A[i, j]') for the block holding position p at these sizes.

    Blocks in ``prefer`` are named alone when one of them holds p; otherwise every block of the
    layout that holds p is listed.
    """

    def hits(blocks: Sequence[Block]) -> list[str]:
        out: list[str] = []
        for b in blocks:
            try:
                off = int(b.offset.evaluate(sizes))
                hh, rr, cc = (int(x.evaluate(sizes)) for x in (b.stack, b.rows, b.cols))
            except E.ExprError:
                continue
            rel = p - off
            if 0 <= rel < hh * rr * cc:
                h, i, j = rel // cc // rr, rel // cc % rr, rel % cc
                name = f"{b.name}[{h}, {i}, {j}]" if not b.is_single else f"{b.name}[{i}, {j}]"
                if name not in out:
                    out.append(name)
        return out

    found = hits(prefer) or hits(list(layout))
    return " / ".join(found) if found else "outside every block"


def selector_explainer(
    sel_expr: E.Expr, intent: E.Expr, layout: Layout, length: E.Expr, queries: E.Expr | None = None
) -> Callable[[dict[str, int]], str]:
    """Turn a counterexample (sizes, q, k) into matrix coordinates and what the intent wanted."""
    pref = key_blocks(intent, layout)
    qb = query_block(queries, layout) if queries is not None else None
    qpref = (qb,) if qb is not None else ()

    def explain(vals: dict[str, int]) -> str:
        sizes = {n: v for n, v in vals.items() if n not in (Q.name, K.name)}
        q, k = vals.get(Q.name), vals.get(K.name)
        if q is None or k is None:
            return ""
        try:
            n = int(length.evaluate(sizes))
            env = {**sizes, Q.name: q, K.name: k}
            s_val, i_val = int(sel_expr.evaluate(env)), int(intent.evaluate(env))
            ks_all = np.arange(max(n, 0))
            want = np.broadcast_to(np.asarray(intent.evaluate({**sizes, Q.name: q, K.name: ks_all})), ks_all.shape)
            got = np.broadcast_to(np.asarray(sel_expr.evaluate({**sizes, Q.name: q, K.name: ks_all})), ks_all.shape)
        except (E.ExprError, ZeroDivisionError):
            return ""

        def keys(mask: np.ndarray) -> str:
            idx = ks_all[mask != 0]
            txt = [f"k={int(x)} = {describe_position(layout, int(x), sizes, pref)}" for x in idx[:3]]
            return (", ".join(txt) + (f" and {len(idx) - 3} more" if len(idx) > 3 else "")) if txt else "no key"

        qs = describe_position(layout, q, sizes, qpref)
        ks = describe_position(layout, k, sizes, pref)
        size_txt = ", ".join(f"{a}={b}" for a, b in sorted(sizes.items()))
        verb = "selects" if s_val else "does not select"
        ivb = "the intent excludes it" if s_val and not i_val else "the intent requires it"
        return (
            f"at {size_txt}: query q={q} = {qs} {verb} key k={k} = {ks} but {ivb}; "
            f"the selector selects {keys(got)}; the intent says {keys(want)}"
        )

    return explain


__all__ = ["K", "Q", "describe_position", "key_blocks", "query_block", "selector_explainer"]
