"""The language's own obligations.

* ``rasp/z3-parametric/*``: the div/mod decoding lemmas that every layout relies on, for all
  sizes (Z3 with quotient/remainder variables);
* ``rasp/exact/fastpath-*``: the engine's fast paths (gather, block mean, key/query masks,
  selector width) equal the dense semantics, exhaustively on small cases, in exact arithmetic.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

import numpy as np

from attnsim.proofs import z3sel
from attnsim.proofs.obligation import Obligation, Outcome
from attnsim.proofs.registry import provider
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.engine import evaluate

PAPER = "Definition (GAHAT-RASP semantics)"


def _lemmas() -> list[tuple[str, str, E.Expr, tuple[E.Expr, ...]]]:
    p, a, b, x, y = (E.Var(s) for s in ("p", "a", "b", "x", "y"))
    nn, mm = C.Size("n", 1), C.Size("m", 1)
    return [
        (
            "divmod-recompose",
            "p = (p div n) n + p mod n and 0 <= p mod n < n, for n >= 1",
            ((p // nn) * nn + p % nn).eq(p) & (p % nn >= 0) & (p % nn < nn),
            (),
        ),
        (
            "divmod-unique",
            "a n + x = b n + y with 0 <= x, y < n implies a = b and x = y",
            a.eq(b) & x.eq(y),
            ((a * nn + x).eq(b * nn + y), x >= 0, x < nn, y >= 0, y < nn),
        ),
        (
            "decode-position",
            "for 0 <= j < n: (i n + j) div n = i and (i n + j) mod n = j",
            ((a * nn + x) // nn).eq(a) & ((a * nn + x) % nn).eq(x),
            (x >= 0, x < nn),
        ),
        ("row-bound", "0 <= p < m n implies 0 <= p div n < m", (p // nn >= 0) & (p // nn < mm), (p >= 0, p < mm * nn)),
        (
            "reflect-involution",
            "reflected(p) = (p mod n) n + p div n is an involution on [0, n^2)",
            (((p % nn) * nn + p // nn) % nn * nn + ((p % nn) * nn + p // nn) // nn).eq(p),
            (p >= 0, p < nn * nn),
        ),
    ]


def _lemma_check(goal: E.Expr, assume: tuple[E.Expr, ...]) -> Callable[[float], Outcome]:
    return lambda timeout: z3sel.prove(goal, assume, timeout=timeout)


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
                fast = evaluate(prog, seq, "exact")
                dense = evaluate(prog, seq, "exact", dense_only=True)
                if not all(a == b for a, b in zip(fast, dense, strict=True)):
                    return Outcome.bad(f"L={L} tokens={list(seq)}: fast {list(fast)} != dense {list(dense)}")
                count += 1
        return Outcome.good(f"{count} inputs (L <= {max_len}) equal with ==")

    return check


@provider
def obligations() -> Iterable[Obligation]:
    for name, statement, goal, assume in _lemmas():
        yield Obligation(
            f"rasp/z3-parametric/{name}", "rasp", PAPER, "z3-parametric", _lemma_check(goal, assume), statement
        )
    for name, make in _fastpath_cases():
        yield Obligation(
            f"rasp/exact/fastpath-{name}",
            "rasp",
            PAPER,
            "exact",
            _fastpath_check(make),
            f"fast path '{name}' equals the dense semantics on every input up to length 6",
        )
