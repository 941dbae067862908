"""Equivalence by unread changes (issue 4, item 3): a mutant whose changed values never reach the
output block is proven equivalent by taint propagation (attnsim.verify.mutation.taint); a change that an
attention head reads, or that reaches a divisor, is never called equivalent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim.constructions.checks import exact_check
from attnsim.constructions.construction import Construction, sized
from attnsim.proofs import z3sel
from attnsim.proofs.obligation import Obligation
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.layout import Block, Layout
from attnsim.verify.mutation import taint
from attnsim.verify.mutation.equivalence.unread import unread_changes
from attnsim.verify.mutation.generate import Mutant, Mutator, mutants_of
from attnsim.verify.mutation.run import _collect_constructions, run_mutant


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


def _mutant(make: Callable[[], Construction], text: str) -> Mutant:
    return next(m for m in mutants_of("scratch", make) if text in m.description and "test_taint.py" in m.description)


def _obs(make: Callable[[], Construction]) -> list[Obligation]:
    return [Obligation("scratch/exact/0", "scratch", "test", "exact", exact_check(make))]


def _unread(make: Callable[[], Construction], m: Mutant) -> tuple[bool, str]:
    """Build under the mutant (no obligations run) and ask the taint prover alone."""
    hook = Mutator(m)
    token = C.MUTATION_HOOK.set(hook)
    built: list[Any] = []
    try:
        _collect_constructions(built)
        make()
    finally:
        C.MUTATION_HOOK.reset(token)
        _collect_constructions(None)
    return unread_changes(hook, built, timeout=5.0)


def test_a_change_outside_every_read_is_proven_equivalent_for_all_sizes() -> None:
    """[p < n] -> [p < n + 1] writes tokens[n] into v on B; the mean reads A only: equivalent."""
    make = _scratch
    m = _mutant(make, "n -> n+1 in (n > x0)")
    r = run_mutant(m, _obs(make), make, timeout=10)
    assert not r.killed and r.equivalent, r.detail
    assert r.proof is not None and "z3, for all sizes" in r.proof
    assert "2 attention reads" in r.proof  # one per Construction built (the obligation's, the example's)


@pytest.mark.usefixtures("wall_clock_racing")
def test_the_all_sizes_attempt_is_budgeted_in_solver_work_not_the_wall_clock() -> None:
    """The unread prover's all-sizes attempts have a budget of Z3 units: with the wall clock racing
    (a very busy machine) the proof is still for all sizes, not BOUNDED."""
    make = _scratch
    r = run_mutant(_mutant(make, "n -> n+1 in (n > x0)"), _obs(make), make, timeout=10)
    assert r.equivalent and r.proof is not None and "z3, for all sizes" in r.proof, r.detail


def test_a_change_read_by_a_head_is_not_equivalent() -> None:
    """The same change with a mean over every key reaches the output: the prover refuses."""
    make = lambda: _scratch(read_all=True)
    ok, why = _unread(make, _mutant(make, "n -> n+1 in (n > x0)"))
    assert not ok and "the output block A may change" in why
    assert run_mutant(_mutant(make, "n -> n+1 in (n > x0)"), _obs(make), make, timeout=10).killed


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
    """Taint rules in both domains: v differs at p = n only; the mean over A is clean."""
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

    sym = taint.Spread(taint.Formulas(E.Const(2 * n), empty))
    sym.run(out, {id(flag_new): t0}, {})
    assert sym.emptied == 1 and sym.taint(mean) is None
    t_out = sym.taint(out)
    hits = [p for p in range(2 * n) if bool(t_out.substitute({taint.POS.name: p}).evaluate({}))]
    assert hits == [n]
    enum = taint.Spread(taint.Positions(2 * n, {}))
    enum.run(out, {id(flag_new): t0}, {})
    assert enum.emptied == 1 and enum.taint(mean) is None
    assert np.flatnonzero(enum.taint(out)).tolist() == [n]


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["==", "!=", "<", "<=", ">", ">="]),
    st.integers(-3, 3),
    st.integers(1, 4),
    st.integers(-5, 5),
    st.lists(st.booleans(), min_size=12, max_size=12),
)
def test_enumerated_reads_match_the_dense_selector(cmp: str, a: int, m: int, b: int, tainted: list[bool]) -> None:
    """The O(L log L) read of a Select (which queries select a tainted key) = the dense q x k matrix."""
    keys = C.imap(lambda p: a * p + b, C.indices)
    queries = C.imap(lambda p: p % m, C.indices)
    sel = C.select(keys, queries, cmp)
    dom = taint.Positions(12, {})
    tv = np.array(tainted)
    fast = dom._reads_any(sel, np.flatnonzero(tv)) if tv.any() else np.zeros(12, dtype=bool)
    dense = dom.lift_d(z3sel.selector_expr(sel))[2]
    assert fast is not None
    assert fast.tolist() == (dense & tv[None, :]).any(axis=1).tolist()


@sized(n="n")
def _scratch_sized(n: int | C.Size) -> Construction:
    """:func:`_scratch` from a sized factory: an integer call is its symbolic build, bound, so the
    mutant's changed nodes sit in a build whose sizes are unbound (no positions to enumerate)."""
    assert isinstance(n, C.Size)
    a, b = Block.of("A", 0, 1, n), Block.of("B", n, 1, n)
    flag = C.imap(lambda p: E.if_(p < n, 1, 0), C.indices)
    v = C.apply("mul", C.tokens, flag)
    mean = C.aggregate(C.select(C.imap(lambda p: p < n, C.indices), C.full(1), "=="), v)
    out = C.apply("add", C.tokens, C.apply("scale", mean, params=(1,)))

    def ref(x: np.ndarray, y: np.ndarray, backend: str = "numpy") -> Any:
        return x + x.mean()

    return Construction("scratch", "test", out, Layout.of(a, b), ("A", "B"), ref, output="A")


def test_a_sized_factorys_survivor_is_judged_not_a_worker_error() -> None:
    """Issue 26 review: a survivor of a sized factory (its change sits in the unbound symbolic build)
    is judged by Z3 for all sizes, where the unread prover used to raise "size 'n' is unbound"."""
    make = lambda: _scratch_sized(3)
    muts = [m for m in mutants_of("scratch", make) if "n -> n+1 in (n > x0)" in m.description]
    flag_change, key_change = muts  # v's flag (unread on B) and the mean's keys (read: reaches A)
    ok, why = _unread(make, flag_change)
    assert ok and "z3, for all sizes" in why, why
    ok, why = _unread(make, key_change)
    assert not ok, why
    r = run_mutant(flag_change, _obs(make), make, timeout=10)
    assert not r.killed and r.equivalent and r.cause == "", r.detail
