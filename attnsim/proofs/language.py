"""The language's own obligations.

* ``rasp/z3-parametric/*``: the div/mod decoding lemmas that every layout relies on, for all
  sizes (Z3 with quotient/remainder variables); the decoding prover
  (:mod:`attnsim.proofs.decoding`) assumes instances of these and only these;
* ``rasp/exact/fastpath-*``: the numeric executor's planned heads (gather, block mean, key/query
  masks, selector width) equal the reference interpreter's exact values rounded once to float64,
  exhaustively on small cases.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

import numpy as np

from attnsim.proofs import z3sel
from attnsim.proofs.decoding import prover
from attnsim.proofs.decoding.index_lemmas import LEMMAS
from attnsim.proofs.decoding.query import Decode
from attnsim.proofs.obligation import Obligation, Outcome
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.engine import evaluate
from attnsim.rasp.layout import Block

PAPER = "Definition (GAHAT-RASP semantics)"


def _lemma_check(goal: E.Expr, assume: tuple[E.Expr, ...]) -> Callable[[float], Outcome]:
    return lambda timeout: z3sel.prove(goal, assume, timeout=timeout)


def _reflect_check(timeout: float) -> Outcome:
    """reflected(reflected(p)) = p on [0, n^2): decode p = a n + b (0 <= a, b < n), then div/mod rewrite."""
    p, nn = E.Var("p"), C.Size("n", 1)

    def refl(x: E.Expr) -> E.Expr:
        return (x % nn) * nn + x // nn

    square = Block.of("square", 0, nn, nn)
    return prover.prove(
        refl(refl(p)).eq(p),
        decode=[Decode("p", (square,), cover=True, ranges=(p >= 0, p < nn * nn))],
        timeout=timeout,
    )


def _fastpath_cases() -> list[tuple[str, Callable[[], C.SOp]]]:
    t, i = C.tokens, C.indices
    return [
        ("gather", lambda: C.aggregate(C.select(i, C.imap(lambda p: p * 2 % 5 - 1, i), "=="), t)),
        (
            "block-mean",
            lambda: C.aggregate(C.select(C.imap(lambda p: p // 2, i), C.imap(lambda p: p // 3, i), "=="), t),
        ),
        ("key-query-masks", lambda: C.aggregate(C.select(i, C.full(3), "<") & C.select(C.full(1), i, "<="), t)),
        (
            "masked-gather",
            lambda: C.aggregate(C.select(i, C.imap(lambda p: 4 - p, i), "==") & C.select(i, C.full(2), ">="), t),
        ),
        ("value-equality", lambda: C.aggregate(C.select(t, C.apply("neg", t), "=="), t)),
        ("empty", lambda: C.aggregate(C.select(i, C.full(0), "<"), t)),
        (
            "width-block",
            lambda: C.selector_width(C.select(C.imap(lambda p: p % 3, i), C.imap(lambda p: p % 2, i), "==")),
        ),
        ("width-masks", lambda: C.selector_width(C.select(i, C.full(2), ">") & C.select(C.full(0), i, "<"))),
    ]


def _fastpath_check(make: Callable[[], C.SOp], max_len: int = 6) -> Callable[[float], Outcome]:
    def check(timeout: float) -> Outcome:
        prog = make()
        count = 0
        for L in range(1, max_len + 1):
            for toks in itertools.product((-1, 0, 2), repeat=min(L, 4)):
                seq = np.array(list(toks) + [0] * (L - len(toks)), dtype=object)
                fast = evaluate(prog, seq.astype(np.float64))  # the numeric executor
                dense = [float(x) for x in evaluate(prog, seq, "exact")]  # the reference interpreter
                if fast.tolist() != dense:  # means of small integers: one rounding, bit-exact
                    return Outcome.bad(f"L={L} tokens={list(seq)}: fast {fast.tolist()} != dense {dense}")
                count += 1
        return Outcome.good(f"{count} inputs (L <= {max_len}) equal the rounded exact values bit for bit")

    return check


def obligations() -> Iterable[Obligation]:
    for lm in LEMMAS.values():
        yield Obligation(lm.id, "rasp", PAPER, "z3-parametric", _lemma_check(lm.goal, lm.assumptions), lm.statement)
    yield Obligation(
        "rasp/z3-parametric/reflect-involution",
        "rasp",
        PAPER,
        "z3-parametric",
        _reflect_check,
        "reflected(p) = (p mod n) n + p div n is an involution on [0, n^2)",
    )
    for name, make in _fastpath_cases():
        yield Obligation(
            f"rasp/exact/fastpath-{name}",
            "rasp",
            PAPER,
            "exact",
            _fastpath_check(make),
            f"planned head '{name}' equals the dense semantics (rounded once) on every input up to length 6",
        )
