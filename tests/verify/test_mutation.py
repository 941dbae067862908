"""Mutation testing (issue 4, item 3): mutants of the Lemma (transpose) and Lemma (matmul)
constructions are derived automatically and killed by their obligations; equivalent mutants
come with a proof; survivors make `attnsim verify --mutants` exit non-zero."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim.cli.main import main
from attnsim.constructions.checks import exact_check, sympy_check
from attnsim.constructions.construction import Construction
from attnsim.constructions.matmul.program import matmul
from attnsim.constructions.transpose.program import transpose
from attnsim.proofs import registry, z3sel
from attnsim.proofs.obligation import Obligation, Outcome
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.layout import Block, Layout
from attnsim.verify.mutation.equivalence.node import domain_of
from attnsim.verify.mutation.equivalence.selector import prove_same_selector
from attnsim.verify.mutation.generate import expr_mutations, mutants_of, mutate_expr
from attnsim.verify.mutation.plan import Job, plan
from attnsim.verify.mutation.pool import run_jobs
from attnsim.verify.mutation.run import order_obligations, run_mutant


def _exact_obs(name: str, makers: list[Callable[[], Construction]]) -> list[Obligation]:
    return [Obligation(f"{name}/exact/{i}", name, "test", "exact", exact_check(mk)) for i, mk in enumerate(makers)]


# -- enumeration -------------------------------------------------------------------------------------
def test_transpose_sites_cover_every_operator_kind() -> None:
    ms = mutants_of("transpose", lambda: transpose(2, 3))
    ops = {m.op.split(":")[0] for m in ms}
    assert {"offset", "expr", "cmp", "kq-swap"} <= ops
    assert len({m.description for m in ms}) == len(ms), "descriptions must be distinct"
    assert all(m.description.startswith("transpose/program.py:") for m in ms)


def test_matmul_sites_include_the_constant_k() -> None:
    ms = mutants_of("matmul", lambda: matmul(2, 3, 2))
    assert any(m.op == "param:0" and "scale" in m.description for m in ms)
    assert sum(m.op == "offset:+1" for m in ms) == 4  # A, B, products, out


def test_hook_is_inactive_outside_a_run() -> None:
    before = transpose(2, 3).program.fingerprint
    mutants_of("transpose", lambda: transpose(2, 3))
    assert C.MUTATION_HOOK.get() is None
    assert transpose(2, 3).program.fingerprint == before


@settings(max_examples=40, deadline=None)
@given(st.integers(-50, 50), st.integers(-50, 50))
def test_mutate_expr_changes_exactly_the_addressed_leaf(c: int, x: int) -> None:
    e = E.Var("x0") * 3 + E.Const(c)
    sites = {desc: (path, op) for path, _, op, desc in expr_mutations(e)}
    path, op = sites[f"{c} -> {c + 1} in {E.render(e)}"]
    assert mutate_expr(e, path, op).evaluate({"x0": x}) == 3 * x + c + 1
    path, op = sites["x0 -> x0+1 in (x0 * 3)"]
    assert mutate_expr(e, path, op).evaluate({"x0": x}) == 3 * (x + 1) + c


def test_obligations_run_cheapest_first() -> None:
    names = [o.id for o in order_obligations(registry.select("matmul/"))]
    assert names[0].startswith("matmul/exact/")
    assert names[-1] == "matmul/numeric/cols64-inner64-rows64"
    z3 = [i for i, n in enumerate(names) if "/z3-" in n]
    sympy = [i for i, n in enumerate(names) if "/sympy/" in n and "4" not in n]
    assert max(sympy) < min(z3)


# -- killing ----------------------------------------------------------------------------------------
def test_transpose_mutants_are_killed() -> None:
    """Every mutant outside the heads arithmetic dies on small exact instances (inline, no fork)."""
    ms = mutants_of("transpose", lambda: transpose(2, 3))
    obs = _exact_obs("transpose", [lambda r=r, c=c: transpose(r, c) for r, c in [(1, 1), (2, 1), (1, 2), (2, 3)]])
    obs += _exact_obs("transpose-h", [lambda: transpose(2, 3, heads=2)])
    results = [run_mutant(m, obs, lambda: transpose(2, 3), timeout=5) for m in ms]
    assert all(r.killed for r in results), [r.mutant.description for r in results if not r.killed]
    assert all(r.by is not None and r.applied > 0 for r in results)


def test_a_mutant_never_reads_a_program_the_process_built_before() -> None:
    """The Coq evaluator obligation compares Coq's run of the exported term with the engine's, both
    of the mutant: it holds on a program mutant in a process that exported the original first (a
    cached original export once made it "kill" here, but not in a fresh Dask worker)."""
    from attnsim.constructions.kernel import default_programs
    from attnsim.universal.checks import SMALL, u_at

    default_programs()  # the process has exported the original programs, and built a U
    u = u_at(*SMALL)
    (job,) = plan("transpose/", max_mutants=3)
    swap = next(m for m in job.mutants if "keys and queries swapped" in m.description)
    evaluator = [o for o in job.obligations if "coq-evaluator" in o.id]
    r = run_mutant(swap, evaluator, job.example, timeout=30)
    assert not r.killed and r.by is None, r.detail
    assert u_at(*SMALL) is u  # the original's cache kept the original
    assert default_programs() is default_programs()


def test_matmul_mutants_selected_kinds_are_killed() -> None:
    # (the program never reads the offset of block "out", only its intent does: Z3 kills that one)
    ms = [
        m
        for m in mutants_of("matmul", lambda: matmul(2, 3, 2))
        if not m.op.startswith("expr:") and "block out:" not in m.description
    ]
    assert len(ms) >= 10
    obs = _exact_obs("matmul", [lambda: matmul(1, 1, 1), lambda: matmul(2, 3, 2), lambda: matmul(3, 2, 2, heads=2)])
    for m in ms:
        r = run_mutant(m, obs, lambda: matmul(2, 3, 2), timeout=5)
        assert r.killed, m.description


def test_engine_runs_forked_workers_and_confirms_killers() -> None:
    """run_jobs: forked workers, and a kill counts only if the killer passes on the original."""
    ms = [
        m
        for m in mutants_of("transpose", lambda: transpose(2, 3))
        if m.op in ("cmp:!=", "kq-swap") and not m.restate_intent
    ]
    obs = _exact_obs("transpose", [lambda: transpose(2, 3)])
    job = Job("transpose", lambda: transpose(2, 3), obs, ms, len(ms))
    res = run_jobs([job], workers=2, timeout=5)
    assert [r.killed for r in res] == [True, True]
    assert {r.by for r in res} == {"transpose/exact/0"}


# -- equivalence and survivors ------------------------------------------------------------------------
_IDENT_BLOCK = Block.of("A", 0, 1, C.Size("n", 3))  # built once, outside the factory: not a mutation site


def _identity() -> Construction:
    """out = A through a symmetric selector: swapping its keys and queries changes nothing."""
    blk = _IDENT_BLOCK
    sel = C.select(C.indices, C.indices, "==")
    prog = C.aggregate(sel, C.tokens)
    return Construction("ident", "test", prog, Layout.of(blk), ("A",), lambda a, backend="numpy": a, output="A")


def test_equivalent_mutant_has_a_z3_proof() -> None:
    ms = mutants_of("ident", _identity)
    swap = next(m for m in ms if m.op == "kq-swap")
    flip = next(m for m in ms if m.op == "cmp:!=")
    obs = _exact_obs("ident", [_identity])
    r = run_mutant(swap, obs, _identity, timeout=5)
    assert not r.killed and r.equivalent and r.proof is not None and r.proof.startswith("z3:")
    assert run_mutant(flip, obs, _identity, timeout=5).killed


def test_redundant_modulus_is_proven_equivalent() -> None:
    """(p mod (r+1)c) mod c = p mod c: Z3 proves the off-by-one in r harmless, for all sizes."""
    r, c = C.Size("r", 2), C.Size("c", 3)

    def make() -> Construction:
        blk = Block.of("A", 0, r, c)
        src = C.imap(lambda p: (p % (r * c)) % c, C.indices)
        prog = C.aggregate(C.select(C.indices, src, "=="), C.tokens)

        def ref(a: np.ndarray, backend: str = "numpy") -> Any:
            return np.tile(a[0:1, :], (a.shape[0], 1))

        return Construction("redundant", "test", prog, Layout.of(blk), ("A",), ref, output="A")

    ms = mutants_of("redundant", make)
    m = next(m for m in ms if m.description.startswith("test_mutation.py") and "r -> r+1" in m.description)
    r_ = run_mutant(m, _exact_obs("redundant", [make]), make, timeout=10)
    assert r_.equivalent and not r_.killed, r_.detail


def _square_of_difference(sized: bool) -> Construction:
    """out[j] = (A[j] - A[0])^2: swapping the operands of ``sub`` cannot change it."""
    blk = Block.of("A", 0, 1, C.Size("n", 3) if sized else 3)
    first = C.aggregate(C.select(C.indices, C.full(0), "=="), C.tokens)
    prog = C.apply("square", C.apply("sub", C.tokens, first))

    def ref(a: np.ndarray, backend: str = "numpy") -> Any:
        return (a - a[0, 0]) ** 2

    return Construction("sq", "test", prog, Layout.of(blk), ("A",), ref, output="A")


@pytest.mark.parametrize("sized", [False, True])
def test_output_level_equivalence_needs_a_fixed_program(sized: bool) -> None:
    """Without size symbols a SymPy proof of the output is a proof for the only instance; with
    them it covers the checked sizes only, so the mutant is listed as a survivor."""
    make = lambda: _square_of_difference(sized)
    swap = next(m for m in mutants_of("sq", make) if m.op == "swap:0,1")
    obs = [Obligation("sq/sympy/3", "sq", "test", "sympy", sympy_check(make))]
    r = run_mutant(swap, obs, make, timeout=10)
    assert not r.killed
    assert r.equivalent is (not sized)
    if not sized:
        assert r.proof is not None and r.proof.startswith("sympy: sq/sympy/3")


def _install(
    monkeypatch: pytest.MonkeyPatch, name: str, make: Callable[[], Construction], obs: list[Obligation]
) -> None:
    monkeypatch.setattr(registry, "constructions", lambda: {name: ("test", make)})
    monkeypatch.setattr(registry, "select", lambda prefix=None, include_deep=False: list(obs))


def test_cli_json_keys_and_exit_code(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _install(monkeypatch, "ident", _identity, _exact_obs("ident", [_identity]))
    code = main(["verify", "--mutants", "--json", "-j", "1"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert all(set(d) == {"construction", "mutant", "killed", "by", "equivalent", "proof", "claim_only"} for d in data)
    assert any(d["equivalent"] and d["proof"] for d in data) and any(d["killed"] and d["by"] for d in data)


def test_cli_survivor_exits_nonzero(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Obligations that only check the 1x1 case let mutants survive: the run must fail and list them."""
    _install(monkeypatch, "transpose", lambda: transpose(2, 3), _exact_obs("transpose", [lambda: transpose(1, 1)]))
    code = main(["verify", "--mutants", "-j", "2", "--timeout", "2", "--max-mutants", "6"])
    out = capsys.readouterr().out
    assert code == 1
    assert "SURVIVED" in out


# -- equivalence proofs that need the construction's domain, tokens or the selector that reads a map --
def test_maxmin_swap_is_equivalent_only_given_the_even_width() -> None:
    """MaxMin's partner map is an involution when the row length is even (the factory's domain,
    the intent's assumption): keys and queries swapped is proven equivalent under it, never without."""
    from attnsim.constructions.maxmin.program import maxmin

    def make() -> Construction:
        return maxmin(4, rows=2)

    swap = next(m for m in mutants_of("maxmin", make) if m.op == "kq-swap")
    r = run_mutant(swap, _exact_obs("maxmin", [make]), make, timeout=10)
    assert r.equivalent and not r.killed
    assert r.proof is not None and "given ((n mod 2) == 0)" in r.proof
    con = make()
    _, assume = domain_of(con)
    assert [E.render(a) for a in assume] == ["((n mod 2) == 0)"]
    sel = next(i.selector for i in con.intents)
    swapped = C.Select(sel.queries, sel.keys, sel.cmp)
    ok, why = prove_same_selector(swapped, sel, 30.0, con.layout.length, "length")
    assert not ok and "counterexample" in why  # odd widths break it: the assumption is what proves it


def test_token_selector_swap_is_a_bounded_proof_and_a_flip_is_killed() -> None:
    """Match2's x_k + x_q = 0 (mod p) is symmetric: the swap is proven for all integer tokens, and
    labelled BOUNDED in p (Z3 cannot decide mod by a symbolic p); a flipped comparison is killed."""
    from attnsim.constructions.match2.program import match2

    def make() -> Construction:
        return match2(3, 3)

    sel = make().program.selector  # type: ignore[attr-defined]
    swapped = C.Select(sel.queries, sel.keys, sel.cmp)
    ok, why = prove_same_selector(swapped, sel, 2.0, make().layout.length, "length")
    assert ok and "BOUNDED" in why and "all integer token values" in why
    broken = C.Select(sel.keys, C.imap(lambda x: x % C.Size("p", 3), C.tokens), sel.cmp)  # x_k = x_q (mod p)
    ok, why = prove_same_selector(broken, sel, 2.0, make().layout.length, "length")
    assert not ok


@pytest.mark.usefixtures("wall_clock_racing")
def test_the_bounded_equivalence_is_decided_by_solver_work_not_the_wall_clock() -> None:
    """The bounded per-size fallback is budgeted in Z3 units: with the wall clock racing (a very busy
    machine) it proves what it proves on an idle one."""
    from attnsim.constructions.match2.program import match2

    sel: Any = match2(3, 3).program.selector  # type: ignore[attr-defined]
    swapped = C.Select(sel.queries, sel.keys, sel.cmp)
    ok, why = prove_same_selector(swapped, sel, 2.0, match2(3, 3).layout.length, "length")
    assert ok and "BOUNDED" in why, why


def test_a_check_on_a_mutant_is_stopped_by_its_cpu_seconds_not_the_wall_clock() -> None:
    """The mutant runner's alarm counts this process's CPU seconds: a check that waits off the CPU
    past its timeout is not stopped (on a busy machine every check waits); one that computes past it is."""
    import time

    from attnsim.verify.mutation.run import _run_check

    def waits(t: float) -> Outcome:
        time.sleep(1.0)
        return Outcome.good("done")

    def computes(t: float) -> Outcome:
        c0 = time.process_time()
        while time.process_time() - c0 < 3.0:
            pass
        return Outcome.good("done")

    assert _run_check(Obligation("t/exact/waits", "t", "x", "exact", waits), 0.2).ok is True
    out = _run_check(Obligation("t/exact/computes", "t", "x", "exact", computes), 0.2)
    assert out.ok is None and out.detail.startswith("timeout after 0.2 s"), out.detail


def test_the_pool_gives_a_mutant_its_budget_in_cpu_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    """A mutant whose killing check waits off the CPU longer than the mutant's budget is still killed:
    the budget is the child's CPU seconds, not the wall clock."""
    import time

    from attnsim.verify.mutation import pool

    def kills_late(t: float) -> Outcome:
        time.sleep(2.0)
        return Outcome.bad("differs")

    ms = [m for m in mutants_of("transpose", lambda: transpose(2, 3)) if m.op == "cmp:!=" and not m.restate_intent]
    obs = [Obligation("transpose/exact/late", "transpose", "x", "exact", kills_late)]
    job = Job("transpose", lambda: transpose(2, 3), obs, ms[:1], 1)
    monkeypatch.setattr(pool, "mutant_budget", lambda job, timeout: 1.0)
    (r,) = pool.run_jobs([job], workers=1, timeout=5, confirm=False)
    assert r.killed and r.by == "transpose/exact/late", r.detail


def test_a_map_read_only_by_a_selector_is_proven_through_the_selector() -> None:
    """k-PARITY's mask with 'else' value -1 instead of 0 is unchanged for the selector mask == 1:
    equivalent via the selector; an 'if' value 2 instead of 1 is killed."""
    from attnsim.constructions.parity.program import sparse_parity

    def make() -> Construction:
        return sparse_parity(7, (0, 3, 5))

    obs = registry.select("sparse_parity/exact/all-inputs-L7")  # every binary input of length 7
    assert obs
    by_desc = {m.description: m for m in mutants_of("sp", make) if "in (if" in m.description}
    else_m = next(m for d, m in by_desc.items() if "0 -> -1 in (if" in d)
    r = run_mutant(else_m, obs, make, timeout=10)
    assert r.equivalent and r.proof is not None and "every reader of the changed map is a selector" in r.proof
    then_m = next(m for d, m in by_desc.items() if "1 -> 2 in (if" in d)
    assert run_mutant(then_m, obs, make, timeout=10).killed


def test_trailing_slash_selects_one_construction() -> None:
    """``--only softmax/`` mutates softmax alone (not softmax-masked)."""
    assert [j.name for j in plan("softmax/", 1)] == ["softmax"]
    assert {"softmax", "softmax-masked"} <= {j.name for j in plan("softmax", 1)}


# -- claims versus programs (the proofs issue, item 10) ----------------------------------------------
def test_a_bug_in_selector_and_intent_together_is_killed_by_the_spec_proof() -> None:
    """Lemma (transpose): a selector mutant whose intent is restated to match passes its intent
    obligation, so only the all-sizes spec proof can kill it, and it does."""
    ms = [m for m in mutants_of("transpose", lambda: transpose(2, 3)) if m.restate_intent]
    assert ms, "joint selector + intent mutants are generated for a construction with a spec"
    joint = next(m for m in ms if m.op.startswith("expr:") and "+1" in m.op)
    intent_ob = registry.by_id("transpose/z3-parametric/gather")
    spec_ob = registry.by_id("transpose/all-sizes/lemma")
    alone = run_mutant(joint, [intent_ob], lambda: transpose(2, 3), 20)
    assert not alone.killed, "the restated intent matches the mutated selector"
    both = run_mutant(joint, [intent_ob, spec_ob], lambda: transpose(2, 3), 20)
    assert both.killed and both.by == "transpose/all-sizes/lemma", both.detail


def _claim_site_construction() -> Construction:
    """A copy of A whose intent is stated over a block built on its own line (used by no program)."""
    n = C.Size("n", 3)
    blk = Block.of("A", 0, 1, n)
    claim = Block.of("A", 0, 1, n)  # only the intent reads this one
    sel = C.select(C.indices, C.imap(lambda p: p, C.indices), "==")
    from attnsim.proofs.intents import Intent

    it = Intent("copy", sel, claim.contains(z3sel.K) & z3sel.K.eq(z3sel.Q), blk.contains(z3sel.Q), "copy")
    out = Block.of("out", 0, 1, n, channel="out")
    return Construction(
        "claimdemo",
        "test",
        C.aggregate(sel, C.tokens),
        Layout.of(blk, out),
        ("A",),
        lambda a, backend="numpy": a,
        intents=[it],
    )


def test_an_intent_only_change_is_not_a_killed_program_mutant() -> None:
    """A mutant that moves only the block an intent is stated over is refuted, but not counted as killed."""
    from attnsim.proofs.intents import check_intent

    def intent_check(timeout: float) -> Any:
        con = _claim_site_construction()
        return check_intent(con.intents[0], con.layout, timeout=timeout)

    ob = Obligation("claimdemo/z3-parametric/copy", "claimdemo", "test", "z3-parametric", intent_check)
    import inspect

    src, first = inspect.getsourcelines(_claim_site_construction)
    line = first + next(i for i, text in enumerate(src) if "only the intent reads" in text)
    ms = [m for m in mutants_of("claimdemo", _claim_site_construction) if m.op == "offset:+1"]
    claim_m = next(m for m in ms if m.site[1] == line)
    r = run_mutant(claim_m, [ob], _claim_site_construction, 20)
    assert r.claim_only and not r.killed and not r.survived, r.detail
    assert r.by == "claimdemo/z3-parametric/copy" and r.detail.startswith("claim only")


def test_a_moved_scratch_block_is_equivalent_by_the_spec_only_with_an_all_sizes_proof() -> None:
    """consumer-matmul's product grid P moved by one (program and intents agree, P holds no operand and
    no output): equivalent only because an all-sizes obligation proved the mutated build = spec and
    every instance is that build bound; with exact checks alone it survives."""
    from attnsim.constructions.forms import program as forms
    from attnsim.symbolic.program_equals_spec import spec_obligation

    make = lambda: forms.consumer_matmul(2, 3, 4, 2)
    symbolic = lambda: forms.consumer_matmul(*map(C.Size, ("rows", "inner", "cols", "extra")))
    moved = next(
        m for m in mutants_of("consumer-matmul", make) if m.op == "offset:+1" and "block P:" in m.description
    )
    exact = _exact_obs("consumer-matmul", [make])
    alone = run_mutant(moved, exact, make, timeout=20)
    assert not alone.killed and not alone.equivalent
    spec = spec_obligation("consumer-matmul", "test", [symbolic], "program == spec")
    r = run_mutant(moved, [*exact, spec], make, timeout=20)
    assert not r.killed and r.equivalent and r.proof is not None and r.proof.startswith("spec: consumer-matmul/all")
    out = next(
        m for m in mutants_of("consumer-matmul", make) if m.op == "offset:+1" and "block out:" in m.description
    )
    assert run_mutant(out, [*exact, spec], make, timeout=20).killed  # the output block moved: decoded elsewhere


def test_a_survivor_says_why_it_is_undecided_in_a_typed_cause() -> None:
    """Issue 26 review: a mutant that survived on an unknown obligation, or whose worker died, carries a
    typed cause (what --resume reads to rerun it), not only a phrase of its detail."""
    import os

    from attnsim.proofs.obligation import Outcome

    flip = next(m for m in mutants_of("ident", _identity) if m.op == "cmp:!=")

    def builds(out: Outcome) -> Callable[[float], Outcome]:
        return lambda t: (_identity(), out)[1]

    undecided = Obligation("ident/exact/u", "ident", "x", "exact", builds(Outcome.unknown("z3: unknown")))
    dies = Obligation("ident/exact/d", "ident", "x", "exact", lambda t: os._exit(3))  # type: ignore[arg-type,return-value]
    fine = Obligation("ident/exact/f", "ident", "x", "exact", builds(Outcome.good()))
    got = [
        run_jobs([Job("ident", _identity, [ob], [flip], 1)], workers=1, timeout=5, confirm=False)[0]
        for ob in (undecided, dies, fine)
    ]
    assert [r.cause for r in got] == ["unknown", "worker lost", ""], [r.detail for r in got]
    assert not any(r.killed for r in got)
