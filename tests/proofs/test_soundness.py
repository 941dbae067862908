"""Soundness of the checkers (issue 4, item 5): deliberately wrong constructions must come out
``failed`` under every method (SymPy, exact, numeric, Z3 intents, Z3 layout), and a Z3
``unknown`` must make `attnsim verify` exit non-zero.  Backs Lemma (transpose), Lemma (matmul)
and Proposition 1 by showing that their obligations can fail."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim.cli.main import main
from attnsim.constructions.checks import exact_check, intent_obligations, numeric_check, sympy_check
from attnsim.constructions.construction import Construction
from attnsim.constructions.matmul.program import matmul
from attnsim.constructions.transpose.program import transpose
from attnsim.proofs import decoding, registry, z3sel
from attnsim.proofs.obligation import Obligation, Outcome, status_of
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.verify.runner import run_all, run_inline


def _reshape_not_transpose(r: int, c: int) -> Construction:
    """Reads A[h, i, j] in flat order into the result: a reshape, right only for vectors."""
    con = transpose(r, c)
    return replace(con, program=C.aggregate(C.select(C.indices, C.indices, "=="), C.tokens))


def _matmul_without_k() -> Construction:
    """matmul(2, 3, 2) that forgets the factor k: the mean of the products instead of their sum."""
    con = matmul(2, 3, 2)
    mean = con.program.inner  # type: ignore[attr-defined]
    return replace(con, program=C.apply("scale", mean, params=(1,)))


@pytest.mark.parametrize("check", [sympy_check, exact_check, lambda mk: numeric_check(mk, tol=1e-12)])
@pytest.mark.parametrize("make", [lambda: _reshape_not_transpose(2, 3), _matmul_without_k])
def test_value_checkers_fail_on_wrong_programs(check, make) -> None:  # type: ignore[no-untyped-def]
    out = check(make)(5.0)
    assert out.ok is False, out.detail
    assert out.detail


def test_value_checkers_pass_where_the_wrong_program_happens_to_be_right() -> None:
    """The reshape is a transpose for a 1 x c matrix: the checkers answer per instance."""
    assert sympy_check(lambda: _reshape_not_transpose(1, 3))(5.0).ok is True
    assert exact_check(lambda: _reshape_not_transpose(1, 3))(5.0).ok is True


def test_sympy_failure_names_the_entry_and_difference() -> None:
    """Issue 4 item 2: a failed SymPy obligation reports the first differing entry, simplified."""
    out = sympy_check(lambda: _reshape_not_transpose(2, 2))(5.0)
    assert out.ok is False and out.detail == "entry (0, 1): program - reference = A_0_1 - A_1_0"


@settings(max_examples=15, deadline=None)
@given(st.floats(1e-9, 1e-3))
def test_numeric_checker_fails_beyond_its_tolerance(eps: float) -> None:
    con = transpose(2, 3)

    def make() -> Construction:
        return replace(con, reference_fn=lambda a, backend="numpy": a.T * (1 + eps))

    assert numeric_check(make, tol=1e-12)(5.0).ok is False
    assert numeric_check(make, tol=1e-2)(5.0).ok is True


def _wrong_intent() -> Construction:
    """transpose(2, 3, heads=2) whose stated intent is the identity, not the transpose."""
    con = transpose(2, 3, heads=2)
    it = con.intents[0]
    a, out = con.layout["A"], con.layout["out"]
    hq, iq, jq = out.coords(z3sel.Q)
    hk, ik, jk = a.coords(z3sel.K)
    wrong = a.contains(z3sel.K) & hk.eq(hq) & ik.eq(iq) & jk.eq(jq)
    return replace(con, intents=[replace(it, intent=wrong)])


def _wrong_selector() -> Construction:
    """transpose(2, 3, heads=2) whose selector reads the key one position too far."""
    con = transpose(2, 3, heads=2)
    it = con.intents[0]
    sel = it.selector
    assert isinstance(sel, C.Select)
    bad = C.select(C.indices, C.imap(lambda p: p + 1, sel.queries), "==")
    return replace(con, intents=[replace(it, selector=bad)])


@pytest.mark.parametrize("make", [_wrong_intent, _wrong_selector])
@pytest.mark.parametrize("parametric", [True, False])
def test_z3_intent_obligation_fails_with_counterexample(make, parametric: bool) -> None:  # type: ignore[no-untyped-def]
    def mk() -> Construction:
        con = make()
        return replace(con, intents=[replace(i, parametric=parametric) for i in con.intents])

    (ob,) = intent_obligations("wrong", "test", mk, bound=4)
    res = run_inline(ob, timeout=20)
    assert res.status == "failed", res.detail
    assert "counterexample" in res.detail and "q=" in res.detail


# -- unknown is never success -------------------------------------------------------------------------
def _hard_z3(timeout: float) -> Outcome:
    """x^3 + y^3 = z^3 has no positive solution; Z3 cannot show it within 10 ms."""
    x, y, z = E.Var("x"), E.Var("y"), E.Var("z")
    return z3sel.prove(E.Not((x * x * x + y * y * y).eq(z * z * z)), (x >= 1, y >= 1, z >= 1), timeout=0.01)


def test_z3_unknown_is_reported_unknown() -> None:
    """A hard nonlinear goal with a tiny timeout is unknown (x^3 + y^3 != z^3 needs Fermat), for
    both provers, and an unknown obligation is reported unknown, never proved."""
    out = _hard_z3(1.0)
    assert out.ok is None and "unknown" in out.detail
    x, y, z = (C.Size(s, 1) for s in ("x", "y", "z"))
    assert decoding.prove(E.Not((x * x * x + y * y * y).eq(z * z * z)), timeout=0.01).ok is None
    assert status_of("z3-parametric", out) == "unknown"
    assert [r.status for r in run_all([_ob()], jobs=2, timeout=5)] == ["unknown"]


def _ob() -> Obligation:
    return Obligation("hard/z3-parametric/fermat3", "hard", "test", "z3-parametric", _hard_z3, "no cube sum")


def test_verify_exits_nonzero_on_z3_unknown(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    good = Obligation("hard/exact/ok", "hard", "test", "exact", lambda t: Outcome.good("fine"))
    monkeypatch.setattr(registry, "select", lambda prefix=None, include_deep=False: [good, _ob()])
    code = main(["verify", "--json", "-j", "1"])
    data = json.loads(capsys.readouterr().out)
    assert code != 0
    assert [d["status"] for d in data] == ["passed", "unknown"]
    monkeypatch.setattr(registry, "select", lambda prefix=None, include_deep=False: [good])
    assert main(["verify", "--json", "-j", "1"]) == 0


def test_interval_bounds_are_sound_for_negative_size_minimums() -> None:
    """Proposition 1's decoding prover: with a size o >= -5, o * i >= 0 is false (o = -1, i = 1) and
    must not be 'proved' by interval bounds that assume sizes are non-negative."""
    from attnsim.proofs import decoding

    o, n, i = C.Size("o"), C.Size("n"), E.Var("i")
    out = decoding.prove(o * i >= 0, [], coords={"i": n}, minimum={"o": -5})
    assert out.ok is False and "counterexample" in out.detail
    assert decoding.prove(o * i >= 0, [], coords={"i": n}, minimum={"o": 0}).ok is True
    assert decoding.prove(o * i >= -5 * (n - 1), [], coords={"i": n}, minimum={"o": -5}).ok is True
