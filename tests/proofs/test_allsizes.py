"""All-sizes obligations (issue 4 item 1): proved only when intents, layout, lemmas and algebra all are.

Backs ``transpose/all-sizes/lemma`` (Lemma (transpose)) and ``matmul/all-sizes/lemma``
(Lemma (matmul)): for every size, output (h, i, j) is A[h, j, i], resp. Sum_l A[h, i, l] B[h, l, j].
"""

from __future__ import annotations

import dataclasses

import sympy as sp

from attnsim.lemmas.matmul import matmul
from attnsim.lemmas.transpose import transpose
from attnsim.proofs.allsizes import (
    all_sizes_check,
    all_sizes_obligation,
    both,
    count_mean,
    scope_summary,
    single_gather,
)
from attnsim.proofs.obligation import Outcome, Result
from attnsim.proofs.registry import by_id
from attnsim.proofs.runner import run_inline
from attnsim.rasp import core as C

K = sp.Symbol("k", integer=True, positive=True)
L = sp.Symbol("l", integer=True)
X = sp.IndexedBase("X")


def test_registered_all_sizes_proved() -> None:
    for oid in ("transpose/all-sizes/lemma", "matmul/all-sizes/lemma"):
        r = run_inline(by_id(oid), 20)
        assert r.status == "proved", r.detail
        assert "program == spec" in r.detail and "rasp/z3-parametric/decode-position" in r.detail


def test_count_mean_algebra() -> None:
    assert count_mean(X[L], L, K)(5).ok is True
    assert count_mean(sp.exp(X[L]), L, K, "softmax denominator")(5).ok is True
    wrong = count_mean(X[L], L, K, "sum", factor=K - 1)(5)
    assert wrong.ok is False and "sum" in wrong.detail


def test_single_gather_algebra() -> None:
    assert single_gather()(5).ok is True
    two = single_gather(weight=lambda m, p: sp.KroneckerDelta(m, p) + sp.KroneckerDelta(m, p + 1))(5)
    assert two.ok is False  # a key set of two entries averages them: not the gather


def test_wrong_algebra_fails_the_lemma() -> None:
    check = all_sizes_check(lambda: transpose(2, 3), count_mean(X[L], L, K, factor=2 * K))
    out = check(20)
    assert out.ok is False and out.detail.startswith("algebra")


def test_broken_intent_fails_the_lemma() -> None:
    """A construction whose selector misses its intent: the all-sizes claim fails with coordinates."""

    def broken() -> object:
        con = transpose(2, 3, heads=2)
        it = con.intents[0]
        bad_sel = C.select(C.indices, C.imap(lambda p: p, C.indices), "==")  # reads A at its own position
        con.intents = [dataclasses.replace(it, selector=bad_sel)]
        return con

    out = all_sizes_check(broken, single_gather())(20)
    assert out.ok is False and "counterexample" in out.detail and "A[" in out.detail


def test_bounded_intent_is_no_all_sizes_claim() -> None:
    def bounded() -> object:
        con = matmul(2, 2, 2)
        con.intents = [dataclasses.replace(i, parametric=False) for i in con.intents]
        return con

    out = all_sizes_check(bounded, count_mean(X[L], L, K))(20)
    assert out.ok is False and "z3-bounded" in out.detail


def test_unknown_part_is_unknown() -> None:
    out = all_sizes_check(lambda: transpose(1, 2), lambda t: Outcome.unknown("z3 unknown"))(20)
    assert out.ok is None


def test_obligation_shape() -> None:
    ob = all_sizes_obligation("t", "Lemma (t)", lambda: transpose(1, 1), both(single_gather()))
    assert ob.id == "t/all-sizes/lemma" and ob.method == "all-sizes"


def test_scope_summary() -> None:
    def res(cid: str, method: str, status: str, bound: int | None = None, tag: str = "x") -> Result:
        return Result(f"{cid}/{method}/{tag}", cid, "ref", method, bound, status, 0.1, "")

    rows = {
        name: (scope, why)
        for name, scope, why in scope_summary(
            [
                res("a", "all-sizes", "proved"),
                res("a", "numeric", "passed"),
                res("b", "z3-bounded", "proved", 8),
                res("b", "sympy", "proved", tag="n3"),
                res("c", "sympy", "proved", tag="cols3-rows2"),
                res("d", "numeric", "passed"),
                res("e", "all-sizes", "unknown"),
            ]
        )
    }
    assert rows["a"][0] == "all sizes"
    assert rows["b"][0] == "bounded (sizes <= 8)"
    assert rows["c"][0] == "bounded (sizes <= 3)"
    assert rows["d"][0] == "sampled"
    assert rows["e"][0] == "NOT VERIFIED"
