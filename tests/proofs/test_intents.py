"""check_intent: no plain-Z3 fallback after an undecided vacuity check (issue 26, item 4).

Backs the z3-parametric selector-intent obligations of paper_map.md (Lemma 1's gathers and
every construction's intents)."""

from __future__ import annotations

from attnsim.proofs import z3sel
from attnsim.proofs.intents import Intent, check_intent
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.layout import Block, Layout


def _transpose_gather(assumptions: tuple[E.Expr, ...]) -> tuple[Intent, Layout]:
    """A transpose gather whose selector reads A[h, i, j] instead of A[h, j, i] when rows <= 3."""
    r, c, h = C.Size("rows", 2), C.Size("cols", 3), C.Size("heads", 2)
    a = Block.of("A", 0, r, c, h)
    out = Block.of("out", 0, c, r, h, channel="out")

    def source(p: E.Expr) -> E.Expr:
        hp, ip, jp = out.coords(p)
        return E.If(r <= 3, a.position(ip, jp, hp), a.position(jp, ip, hp))

    sel = C.select(C.indices, C.imap(source, C.indices), "==")
    hq, iq, jq = out.coords(z3sel.Q)
    hk, ik, jk = a.coords(z3sel.K)
    want = a.contains(z3sel.K) & hk.eq(hq) & ik.eq(jq) & jk.eq(iq)
    it = Intent("gather", sel, want, out.contains(z3sel.Q), "out[h, i, j] reads A[h, j, i]", assumptions=assumptions)
    return it, Layout.of(a, out)


def test_a_wrong_selector_under_an_unsatisfiable_nonlinear_premise_is_not_proved() -> None:
    """rows^3 = 2 cols^3 admits no sizes, undecidably for Z3: the outcome is unknown (it was
    "proved": the decoding prover said unknown and the plain-Z3 fallback read its own unknown
    vacuity check as non-vacuous)."""
    r, c = C.Size("rows", 2), C.Size("cols", 3)
    it, lay = _transpose_gather(((r * r * r).eq(2 * c * c * c),))
    out = check_intent(it, lay, timeout=10)
    assert out.ok is None, out.detail
    assert out.premises is not None and out.premises.status == "unknown"


def test_the_same_wrong_selector_without_the_premise_is_refuted() -> None:
    """The mutation the test above rests on is a real bug: with satisfiable premises it fails."""
    it, lay = _transpose_gather(())
    out = check_intent(it, lay, timeout=10)
    assert out.ok is False and "counterexample" in out.detail
    assert out.premises is not None and out.premises.status == "sat"
