"""The lemmas of integer index arithmetic an instance of which a decoding proof may use.

:data:`LEMMAS` are the only facts the rewriting (:mod:`attnsim.proofs.decoding.rewriting`) assumes:
each rewrite it makes is an instance of one of them, named in the proof's outcome.  Each is
registered as the obligation ``rasp/z3-parametric/<name>`` by :mod:`attnsim.proofs.language` and
proven once by plain Z3 (:func:`lemma_outcome`).  Kept apart from the rewriting so that the
statements a decoding proof rests on read on one page.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnsim.proofs import z3sel
from attnsim.proofs.obligation import Outcome
from attnsim.rasp import core as C
from attnsim.rasp import expr as E


# -- the lemmas an instance of which a proof may use -------------------------------------------
@dataclass(frozen=True)
class Lemma:
    """A universally quantified fact over integers (sizes >= 1), proven once by Z3."""

    name: str
    statement: str
    goal: E.Expr
    assumptions: tuple[E.Expr, ...] = ()

    @property
    def id(self) -> str:
        return f"rasp/z3-parametric/{self.name}"


def _make_lemmas() -> dict[str, Lemma]:
    p, a, b, x, y, o = (E.Var(s) for s in ("p", "a", "b", "x", "y", "o"))
    nn, mm = C.Size("n", 1), C.Size("m", 1)
    hh, rr, cc = C.Size("H", 1), C.Size("R", 1), C.Size("C", 1)
    rel = p - o
    h, i, j = rel // cc // rr, rel // cc % rr, rel % cc
    return {
        lm.name: lm
        for lm in (
            Lemma(
                "divmod-recompose",
                "p = (p div n) n + p mod n and 0 <= p mod n < n, for n >= 1",
                ((p // nn) * nn + p % nn).eq(p) & (p % nn >= 0) & (p % nn < nn),
            ),
            Lemma(
                "divmod-unique",
                "a n + x = b n + y with 0 <= x, y < n implies a = b and x = y",
                a.eq(b) & x.eq(y),
                ((a * nn + x).eq(b * nn + y), x >= 0, x < nn, y >= 0, y < nn),
            ),
            Lemma(
                "decode-position",
                "for 0 <= j < n: (i n + j) div n = i and (i n + j) mod n = j",
                ((a * nn + x) // nn).eq(a) & ((a * nn + x) % nn).eq(x),
                (x >= 0, x < nn),
            ),
            Lemma(
                "block-position",
                "for 0 <= h < H, 0 <= i < R, 0 <= j < C: o <= o + (h R + i) C + j < o + H R C",
                (o + (a * rr + b) * cc + x >= o) & (o + (a * rr + b) * cc + x < o + hh * rr * cc),
                (a >= 0, a < hh, b >= 0, b < rr, x >= 0, x < cc),
            ),
            Lemma(
                "div-characterization",
                "for n >= 1: p div n = a if and only if a n <= p < a n + n",
                (p // nn).eq(a).eq((a * nn <= p) & (p < a * nn + nn)),
            ),
            Lemma(
                "row-bound",
                "0 <= p < m n implies 0 <= p div n < m",
                (p // nn >= 0) & (p // nn < mm),
                (p >= 0, p < mm * nn),
            ),
            Lemma(
                "block-decode",
                "o <= p < o + H R C implies p = o + (h R + i) C + j for the coordinates "
                "h = (p-o) div C div R < H, i = (p-o) div C mod R < R, j = (p-o) mod C < C, all >= 0",
                (h >= 0) & (h < hh) & (i >= 0) & (i < rr) & (j >= 0) & (j < cc) & p.eq(o + (h * rr + i) * cc + j),
                (p >= o, p < o + hh * rr * cc),
            ),
        )
    }


LEMMAS: dict[str, Lemma] = _make_lemmas()


def lemma_outcome(name: str, timeout: float = 10.0) -> Outcome:
    """Prove one lemma of :data:`LEMMAS` with plain Z3."""

    lm = LEMMAS[name]
    return z3sel.prove(lm.goal, lm.assumptions, timeout=timeout)


__all__ = ["LEMMAS", "Lemma", "lemma_outcome"]
