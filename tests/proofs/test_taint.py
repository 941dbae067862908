"""Equivalence by unread changes (issue 4, item 3): a mutant whose changed values never reach the
output block is proven equivalent by taint propagation (attnsim.proofs.taint); a change that an
attention head reads, or that reaches a divisor, is never called equivalent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np
import pytest

from attnsim.lemmas.base import Construction, exact_check
from attnsim.proofs import mutants as M
from attnsim.proofs import taint, z3sel
from attnsim.proofs.obligation import Obligation
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.layout import Block, Layout


def _scratch(read_all: bool = False, divide: bool = False) -> Construction:
    """out[j] = A[j] + mean(A) on block A; B (after A) is scratch space.

    ``v = tokens * [p < n]`` is 0 on B; the mean reads the keys of A only (or every key with
    ``read_all``, which with v = 0 on B gives sum(A) / 2n); ``divide`` adds A / (1 + [p < n])."""
    n = C.Size("n", 3)
    a, b = Block.of("A", 0, 1, n), Block.of("B", n, 1, n)
    flag = C.imap(lambda p: E.if_(p < n, 1, 0), C.indices)
    v = C.apply("mul", C.tokens, flag)
    keys = C.imap(lambda p: p < (2 * n if read_all else n), C.indices)
    mean = C.aggregate(C.select(keys, C.full(1), "=="), v)
    out = C.apply("add", C.tokens, C.apply("scale", mean, params=(2,) if read_all else (1,)))
    if divide:
        out = C.apply("add", out, C.apply("div", C.tokens, C.apply("add", flag, C.full(1))))

    def ref(x: np.ndarray, y: np.ndarray, backend: str = "numpy") -> Any:
        extra = x / 2 if divide else 0 * x
        return x + x.mean() + extra

    return Construction("scratch", "test", out, Layout.of(a, b), ("A", "B"), ref, output="A")


def _mutant(make: Callable[[], Construction], text: str) -> M.Mutant:
    return next(m for m in M.mutants_of("scratch", make) if text in m.description and "test_taint.py" in m.description)


def _obs(make: Callable[[], Construction]) -> list[Obligation]:
    return [Obligation("scratch/exact/0", "scratch", "test", "exact", exact_check(make))]


def _unread(make: Callable[[], Construction], m: M.Mutant) -> tuple[bool, str]:
    """Build under the mutant (no obligations run) and ask the taint prover alone."""
    hook = M.Mutator(m)
    token = C.MUTATION_HOOK.set(hook)
    built: list[Any] = []
    try:
        M._collect_constructions(built)
        make()
    finally:
        C.MUTATION_HOOK.reset(token)
        M._collect_constructions(None)
    return M.unread_changes(hook, built, timeout=5.0)


def test_a_change_outside_every_read_is_proven_equivalent_for_all_sizes() -> None:
    """[p < n] -> [p < n + 1] writes tokens[n] into v on B; the mean reads A only: equivalent."""
    make = _scratch
    m = _mutant(make, "n -> n+1 in (n > x0)")
    r = M.run_mutant(m, _obs(make), make, timeout=10)
    assert not r.killed and r.equivalent, r.detail
    assert r.proof is not None and "for all sizes" in r.proof
    assert "2 attention reads" in r.proof  # one per Construction built (the obligation's, the example's)


def test_a_change_read_by_a_head_is_not_equivalent() -> None:
    """The same change with a mean over every key reaches the output: the prover refuses."""
    make = lambda: _scratch(read_all=True)
    ok, why = _unread(make, _mutant(make, "n -> n+1 in (n > x0)"))
    assert not ok and "could not show the output block A unchanged" in why
    assert M.run_mutant(_mutant(make, "n -> n+1 in (n > x0)"), _obs(make), make, timeout=10).killed


def test_a_change_reaching_a_divisor_is_never_called_unread() -> None:
    """A changed value reaching div's divisor might raise (exact backend) where the original does not."""
    make = lambda: _scratch(divide=True)
    ok, why = _unread(make, _mutant(make, "n -> n+1 in (n > x0)"))
    assert not ok and "operand 1 of div" in why


def test_a_change_inside_the_output_block_is_not_equivalent() -> None:
    """[p < n] -> [p > n] zeroes v on A, which the mean reads: refused."""
    make = _scratch
    ok, _ = _unread(make, _mutant(make, "> -> < in (n > x0)"))
    assert not ok


@pytest.mark.parametrize("width", [2, 5])
def test_spread_marks_exactly_the_changed_position(width: int) -> None:
    """Taint rules on concrete sizes: v differs at p = n only; a mean over A is clean."""
    n = width
    flag_old = cast(C.Map, C.imap(lambda p: p < n, C.indices))
    flag_new = cast(C.Map, C.imap(lambda p: p <= n, C.indices))
    v = C.apply("mul", C.tokens, flag_new)
    mean = C.aggregate(C.select(C.imap(lambda p: p < n, C.indices), C.full(1), "=="), v)
    out = C.apply("add", v, mean)
    assert isinstance(flag_old.fn, C.IndexFn)
    t0 = taint.changed_map(flag_new, flag_old.fn, flag_old.args, lambda d: True)

    def empty(f: E.Expr) -> bool:
        return z3sel.prove(E.Not(f), (taint.POS >= 0, taint.POS < 2 * n), timeout=5).ok is True

    sp = taint.Spread(E.Const(2 * n), empty)
    sp.run(out, {id(flag_new): t0}, {})
    assert sp.emptied == 1 and sp.sop.get(id(mean)) is None
    t_out = sp.at(out, taint.POS)
    assert t_out is not None
    hits = [p for p in range(2 * n) if bool(t_out.substitute({taint.POS.name: p}).evaluate({}))]
    assert hits == [n]
