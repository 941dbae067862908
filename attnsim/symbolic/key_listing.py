"""Key listings through intents: every key a selector selects is listed, through its proven intent.

A sum or max head lists its keys by a hint (see :mod:`attnsim.symbolic.execute`); that every
selected key is listed is proven, for a selector with a declared intent I (the construction's
``intents``: a lemma's, or U's), as: S <-> I
for every query of I's region and every key, for all sizes, on the executor's own layout (the
decoding prover, :func:`attnsim.proofs.intents.check_intent`, once per selector and run); the query in
I's region; and ``not I(q, K) or K listed`` with K decoded only through the blocks I names.  The
first two give S(q, K) -> I(q, K).  The plain route, K decoded through every block of the
layout, is one large query per head: for the Linformer lemma it was 8.2 of its 8.9 s; through
intents its all-sizes proof takes 1.3 s (the 22 lemma and application all-sizes proofs 15.9 -> 5.0 s).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attnsim.proofs import z3sel
from attnsim.proofs.decoding import prover, selectors
from attnsim.proofs.decoding.query import Decode
from attnsim.proofs.intents import Intent, check_intent
from attnsim.proofs.obligation import Outcome
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.symbolic.execute import ExecutionFailed, Executor


@dataclass
class IntentListing(Executor):
    """The executor with key listings through intents: what a lemma's all-sizes proof runs, and a
    base of :class:`~attnsim.universal.layerproof.executor.LayerExecutor`."""

    # (id(selector), id(layout)) -> the proof that the selector is its intent on that layout
    intent_proofs: dict[tuple[int, int], Outcome] = field(default_factory=dict)
    step_cap: float = 20.0  # seconds for one Z3 call (a safety net: each query has its rlimit)

    def intent_of(self, sel: C.Selector) -> Intent | None:
        """The intent the construction declares for ``sel`` (the very selector object), if any."""
        return next((it for it in self.con.intents if it.selector is sel), None)

    def selector_is_its_intent(self, it: Intent) -> Outcome:
        """``S(q, k) <-> intent(q, k)`` for every query of the intent's region and every key, for
        all sizes, on this executor's layout (the decoding prover, :func:`check_intent`); proven once
        per selector and shared by the executors of one run (``intent_proofs``)."""
        key = (id(it.selector), id(self.con.layout))
        got = self.intent_proofs.get(key)
        if got is None:
            got = check_intent(it, self.con.layout, timeout=min(self.net(), self.step_cap))
            if got.ok is True:
                self.intent_proofs[key] = got
        return got

    def every_selected_key_listed(self, sel: C.Selector, pos: E.Expr, s_expr: E.Expr, inside: E.Expr) -> None:
        """Every key ``sel`` selects for ``pos`` is listed, through the selector's intent I.

        Proven here: (1) S <-> I for all queries q with ``queries(q)`` and every key, for all sizes,
        on this layout (:meth:`selector_is_its_intent`); (2) ``queries(pos)``; (3) ``not I(pos, K) or
        K is listed``, K decoded only through the blocks I names (I is false outside them, the
        "outside" case proves it).  (1)-(2) give S(pos, K) -> I(pos, K), so (3) is the claim for S.
        A selector without an intent, or whose intent needs assumptions or larger size minimums
        than this executor's domain, is checked as before (K decoded through every block)."""
        it = self.intent_of(sel)
        if (
            it is None
            or it.assumptions
            or not it.parametric
            or any(low > self.minimum.get(name, 1) for name, low in it.minimum)
        ):
            super().every_selected_key_listed(sel, pos, s_expr, inside)
            return
        proof = self.selector_is_its_intent(it)
        if proof.ok is not True:
            raise ExecutionFailed(
                proof.retold(f"{sel.label}: the selector is not shown to be its intent: {proof.detail}")
            )
        self.steps.append(f"{sel.label}: the selector is its intent {it.name} (decoding prover, all sizes)")
        ln = self.con.layout.length
        at = {z3sel.Q.name: pos, "length": ln}
        self.prove(it.queries.substitute(at), f"{sel.label}: query {E.render(pos)} is in its intent's query region")
        blocks = selectors.key_blocks(it.intent, self.con.layout)
        goal = E.Not(it.intent.substitute(at)) | inside
        what = (
            f"{sel.label}: every selected key is listed (its intent, K decoded in {', '.join(b.name for b in blocks)})"
        )
        out = prover.prove(
            goal,
            self.premises,
            decode=[Decode(z3sel.K.name, blocks, ranges=(z3sel.K >= 0, z3sel.K < ln))],
            coords=dict(self.coords),
            minimum=self.minimum,
            timeout=min(self.net(), self.step_cap),
        )
        if out.ok is not True:
            raise ExecutionFailed(out.retold(f"{what}: {out.detail}"))
        self.lemmas |= set(out.lemmas)
        self.steps.append(what)


__all__ = ["IntentListing"]
