"""Selector intents and layouts, proven with Z3 for all sizes: the solver kit's checks on a program.

An :class:`~attnsim.rasp.intent.Intent` states which keys a selector should pick, in matrix coordinates;
:func:`check_intent` proves the selector picks exactly those (decoding prover, for all sizes, or
every size up to a bound); :func:`prove_layout` proves a layout's blocks injective, disjoint and
inside the sequence.  Every construction's obligations call these.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from attnsim.proofs import solver_work, z3sel
from attnsim.proofs.decoding import prover, selectors
from attnsim.proofs.decoding.index_lemmas import LEMMAS
from attnsim.proofs.decoding.query import Decode
from attnsim.proofs.obligation import Outcome
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.intent import Intent
from attnsim.rasp.layout import Layout


def z3_method(*exprs: E.Expr) -> str:
    """``z3-parametric`` when the claim mentions a size symbol, else ``z3-instance`` (a fixed instance)."""
    return "z3-parametric" if any(isinstance(n, C.Size) for e in exprs for n in E.nodes(e)) else "z3-instance"


def check_intent(intent: Intent, layout: Layout, *, timeout: float = 10.0, bound: int | None = None) -> Outcome:
    """Prove one intent: for all sizes by decoding positions (``bound`` None), else every size <= bound.

    A failure names the sizes, the query and key positions and the matrix entries they hold.
    """
    try:
        s_expr = z3sel.selector_expr(intent.selector).substitute({"length": layout.length})
    except z3sel.NotStructural as exc:
        return Outcome.bad(str(exc))
    explain = selectors.selector_explainer(s_expr, intent.intent, layout, layout.length, intent.queries)

    def plain_z3(seconds: float, size_bound: int | None) -> Outcome:
        return z3sel.prove_selector(
            intent.selector,
            intent.intent,
            queries=intent.queries,
            length=layout.length,
            assumptions=intent.assumptions,
            minimum=dict(intent.minimum),
            bound=size_bound,
            timeout=seconds,
            explain=explain,
        )

    if bound is not None:
        return plain_z3(timeout, bound)
    clock = solver_work.Stopwatch()
    out = prover.prove_intent(
        s_expr,
        intent.intent,
        queries=intent.queries,
        layout=layout,
        assumptions=intent.assumptions,
        minimum=dict(intent.minimum),
        timeout=timeout,
    )
    if out is not None and (out.ok is not None or out.premises is None or out.premises.status != "sat"):
        return out  # decided, or its premises not shown satisfiable: no fallback after that
    left = timeout - clock.elapsed()
    if left <= 0.05:
        return out or Outcome(None, "timeout", cause="timeout")
    plain = plain_z3(left, None)
    if plain.ok is None and out is not None:
        return replace(out, cause=out.cause or plain.cause).retold(f"{out.detail}; plain Z3: {plain.detail}", ok=None)
    return plain


def _overlap(a: Any, b: Any, describe: Any) -> Callable[[dict[str, int]], str] | None:
    """An overlap's counterexample with the entries the two blocks hold at the shared position."""
    if describe is None:
        return None

    def explain(vals: dict[str, int]) -> str:
        sizes = {k: v for k, v in vals.items() if k not in ("p1", "p2")}
        shown = ", ".join(f"{k}={v}" for k, v in sorted(sizes.items()))
        p = vals["p1"]
        what = [f"{describe(blk.name, p, sizes) or blk.name}" for blk in (a, b)]
        return f"at {shown}, position {p} holds both {what[0]} and {what[1]}"

    return explain


def prove_layout(
    layout: Layout,
    timeout: float = 10.0,
    minimum: dict[str, int] | None = None,
    describe: Callable[[str, int, Mapping[str, int]], str | None] | None = None,
) -> Outcome:
    """Injective, disjoint, in range: for all values of the size symbols (each >= its ``minimum``, 1 by default).

    Positions are decoded into block coordinates (:mod:`attnsim.proofs.decoding`), so each claim
    is a small Z3 query over coordinates and sizes.  ``describe(block, position, sizes)`` names the
    entry a block holds at a position (an input map's :meth:`describe`): an overlap's
    counterexample then names the two entries that share a token.
    """
    p1, p2 = E.Var("p1"), E.Var("p2")
    blocks = list(layout)
    clock = solver_work.Stopwatch()
    proven = Outcome(True)  # the facts of every sub-proof so far (scope, lemmas), joined

    def left() -> float:
        return max(0.05, timeout - clock.elapsed())

    def run(goal: E.Expr, *decodes: Decode, explain: Any = None) -> Outcome:
        nonlocal proven
        res = prover.prove(goal, decode=list(decodes), minimum=minimum, timeout=left(), explain=explain)
        proven = proven.joined(res, ok=True)
        return res

    for a_ix, a in enumerate(blocks):
        one = Decode("p1", (a,), cover=True)
        res = run((p1 >= 0) & (p1 < layout.length), one)
        if res.ok is not True:
            return res.retold(f"block {a.name} leaves the sequence: {res.detail}")
        # injective: equal positions of in-range coordinates have equal coordinates
        c1, c2 = (tuple(E.Var(f"{n}{s}") for n in ("h", "i", "j")) for s in (1, 2))
        ext = {f"{n}{s}": x for s in (1, 2) for n, x in zip(("h", "i", "j"), (a.stack, a.rows, a.cols), strict=True)}
        same = a.position(c1[1], c1[2], c1[0]).eq(a.position(c2[1], c2[2], c2[0]))
        goal = E.Not(same) | (c1[0].eq(c2[0]) & c1[1].eq(c2[1]) & c1[2].eq(c2[2]))
        res = prover.prove(goal, coords=ext, minimum=minimum, timeout=left())
        proven = proven.joined(res, ok=True)
        if res.ok is not True:
            return res.retold(f"block {a.name} not injective: {res.detail}")
        for b in blocks[a_ix + 1 :]:
            if b.channel != a.channel:
                continue
            res = run(E.Not(p1.eq(p2)), one, Decode("p2", (b,), cover=True), explain=_overlap(a, b, describe))
            if res.ok is not True:
                return res.retold(f"blocks {a.name} and {b.name} overlap: {res.detail}")
    lemmas = ", ".join(LEMMAS[n].id for n in proven.lemmas)
    return proven.retold(
        f"{len(blocks)} blocks injective, disjoint and in range for all sizes (decoded coordinates; lemmas: {lemmas})"
    )

