"""The scores stage for U's shallow variant (attnsim.universal.layerproof.stages.scores): U's one spread
product S[h, i, j] = sum_{c, l, l2} Z~[i, l] Wq~[h, l, c] Wk~[h, l2, c] Z~[j, l2] (l, l2 < D + 1,
the column l = D the bias) gives the spec's logit for every capacity and true size; wrong shallow
U's fail with a counterexample; the executor's rules for it (the last term of a sum split off,
div/mod by D + 1) refuse false claims and keep the value at concrete sizes."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import sympy as sp

from attnsim import UniversalSimulator
from attnsim.proofs import decoding
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.symbolic.sums import equal_by_normal_form
from attnsim.universal.layerproof.encoder_spec import SIZE
from attnsim.universal.layerproof.executor import LayerExecutor
from attnsim.universal.layerproof.flags import flag
from attnsim.universal.layerproof.stage_proof import node_of, setup
from attnsim.universal.layerproof.stages import attention, ffn, output
from attnsim.universal.layerproof.stages.scores import prove_scores
from attnsim.universal.program import UniversalProgram

D, d = sp.Symbol("D", integer=True), SIZE["d"]
LV = sp.Symbol("l!9", integer=True)  # a listing variable, as the executor names them
A, B, CB = sp.IndexedBase("a"), sp.IndexedBase("b")[0], sp.IndexedBase("c")[0]


def test_shallow_scores_equal_the_spec_for_every_size() -> None:
    out = prove_scores(UniversalSimulator.over_symbolic_capacity("shallow"), timeout=900)
    assert out.ok is True, out.detail
    assert "pre = 0" in out.detail and "pre = 1" in out.detail, out.detail
    assert "mean of squares" in out.detail and "for all capacities" in out.detail, out.detail


def test_the_later_stages_nodes_are_in_the_shallow_build() -> None:
    """Everything after the scores is the compact build's code: the same labels and grids."""
    u = UniversalSimulator.over_symbolic_capacity("shallow")
    grids = {g.name for g in u.stage_grids}
    for stage in (attention, ffn, output):
        for goal in stage.goals(u):
            assert node_of(u, goal.label).label == goal.label and goal.grid.name in grids


def _wrong_u_fails(monkeypatch: pytest.MonkeyPatch, name: str, **change: Any) -> str:
    """Prove the stage (pre = 0) for a shallow U whose gather ``name`` takes ``change``."""
    real = UniversalProgram._gather

    def gather(self, gname, src, onto, coords, **kw):  # type: ignore[no-untyped-def]
        if gname == name:
            kw.update({k: (v(self) if callable(v) else v) for k, v in change.items()})
        return real(self, gname, src, onto, coords, **kw)

    monkeypatch.setattr(UniversalProgram, "_gather", gather)
    out = prove_scores(UniversalSimulator.over_symbolic_capacity("shallow"), timeout=600, cases=[{"pre": 0}])
    assert out.ok is False, out.detail
    assert out.detail.startswith("scores (pre = 0): attn.logit at attn.products: counterexample at"), out.detail
    assert "h! = " in out.detail and "i! = " in out.detail and "j! = " in out.detail, out.detail
    return out.detail


def test_the_bias_row_read_at_d_minus_1_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wq~ reads the bias from row D - 1 on (l < D - 1 is W): right while d < D (row D - 1 meets a
    padded X column), wrong at d = D: the counterexample is at every true size at its capacity (the
    sampled point of the last entry)."""
    detail = _wrong_u_fails(monkeypatch, "spread.wq", when=lambda u: lambda cs: cs["l"] < u.D - 1)
    assert "d = 3" in detail and "D = 3" in detail and "h! = 2, i! = 2, j! = 2" in detail, detail


def test_wk_reading_the_query_bias_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wk~'s bias row reads in_proj_bias part t = 0 (q's bias) instead of t = 1."""
    _wrong_u_fails(
        monkeypatch,
        "spread.wk",
        otherwise=lambda u: (u._rec["bqkv"], lambda cs: {"t": E.Const(0), "h": cs["h"], "c": cs["c"]}),
    )


# -- the rules -------------------------------------------------------------------------------------
def _executor() -> LayerExecutor:
    con, caps = setup(UniversalSimulator.over_symbolic_capacity("shallow"))
    return LayerExecutor(con, 60.0, capacity=caps)


def _at(e: Any, sizes: dict[sp.Symbol, int]) -> Any:
    """``e`` at concrete sizes, its sums expanded, each operand entry a fixed distinct rational."""
    e = sp.sympify(e).xreplace({s: sp.Integer(v) for s, v in sizes.items()})
    e = e.replace(lambda x: isinstance(x, sp.Sum), lambda x: x.doit())
    return e.xreplace({x: sp.Rational(3 + 7 * k, 5 + k) for k, x in enumerate(sorted(e.atoms(sp.Indexed), key=str))})


def _same_at_small_sizes(a: Any, b: Any) -> bool:
    return all(
        sp.expand(_at(a, {D: dv, d: tv}) - _at(b, {D: dv, d: tv})) == 0
        for dv, tv in itertools.product(range(1, 5), range(1, 5))
        if tv <= dv
    )


def test_the_last_term_is_split_off_and_the_rest_truncated() -> None:
    """sum_{l <= D} ([l < D] [l < d] a[l] + [l >= D] b + [l = D] c) = sum_{l < d} a[l] + b + c."""
    ex = _executor()
    s = sp.Sum(flag(LV < D) * flag(LV < d) * A[LV] + flag(LV >= D) * B + flag(sp.Eq(LV, D)) * CB, (LV, 0, D))
    got = ex.truncate(s)
    assert any("last term" in st for st in ex.steps), ex.steps
    assert equal_by_normal_form(got, sp.Sum(A[LV], (LV, 0, d - 1)) + B + CB)[0], got
    assert _same_at_small_sizes(got, s)
    # false claims: the last term dropped, counted twice, the first part not truncated to d
    for wrong in (
        sp.Sum(A[LV], (LV, 0, d - 1)) + CB,
        sp.Sum(A[LV], (LV, 0, d - 1)) + 2 * B + CB,
        sp.Sum(A[LV], (LV, 0, d)) + B + CB,
    ):
        assert not equal_by_normal_form(got, wrong)[0], wrong


def test_a_condition_on_another_bound_is_not_decided() -> None:
    """[l < D - 1] is not [l < D]: on the first part (l <= D - 1) it stays a condition, so reading the
    bias from row D - 1 on is never equated with reading it at row D only."""
    ex = _executor()
    body = flag(LV < D - 1) * flag(LV < d) * A[LV] + flag(LV >= D - 1) * flag(LV < D) * flag(LV < d) * B
    s = sp.Sum(body + flag(sp.Eq(LV, D)) * CB, (LV, 0, D))
    got = ex.truncate(s)
    assert _same_at_small_sizes(got, s)
    assert not equal_by_normal_form(got, sp.Sum(A[LV], (LV, 0, d - 1)) + CB)[0], got


def test_no_split_when_the_variable_is_bound_again_inside() -> None:
    """A comparison of an inner sum's own l with D is not about the outer l: no split."""
    ex = _executor()
    inner = sp.Sum(flag(LV < D) * A[LV], (LV, 0, D))
    w = sp.Symbol("l!8", integer=True)
    s = sp.Sum(flag(w < d) * inner, (w, 0, D - 1))
    assert ex._split_last(inner * flag(w < d), LV, 0, D) is None
    assert _same_at_small_sizes(ex.truncate(s), s)


def test_div_and_mod_by_d_plus_1_need_the_remainder_below_it() -> None:
    """(a (D + 1) + b) div (D + 1) = a and mod = b for 0 <= b < D + 1, and only then."""
    a, b, dd = E.Var("a"), E.Var("b"), C.Size("D")
    goal = ((a * (dd + 1) + b) // (dd + 1)).eq(a) & ((a * (dd + 1) + b) % (dd + 1)).eq(b)
    good = decoding.prove(goal, coords={"a": C.Size("K"), "b": dd + 1})
    assert good.ok is True and "decode-position" in good.detail, good.detail
    bad = decoding.prove(goal, coords={"a": C.Size("K"), "b": dd + 2})
    assert bad.ok is False and "counterexample" in bad.detail, bad.detail
    # a divisor whose quotient by polynomial division is not an integer polynomial (D a / (K D + 1)
    # in D: a / K) is not rewritten; a false quotient is not proven
    kk = C.Size("K")
    assert decoding.prove(((a * dd) // (kk * dd + 1)).eq(a), coords={"a": kk}).ok is not True


def test_a_gather_with_a_condition_is_its_two_cases() -> None:
    """Wq~ at (h, i, j, c, l, l2) of the spread grid: [l < D] Wq[h, l, c] + [l >= D] bq[h, c]; each
    branch read under its own premise (l < D narrows l's extent to D), none of it kept after."""
    u = UniversalSimulator.over_symbolic_capacity("shallow")
    con, caps = setup(u)
    grid = next(g for g in u.stage_grids if g.name == "scores.spread")
    vs = {a: E.Var(f"{a}!") for a in grid.axes}
    ex = LayerExecutor(con, 120.0, sources=u.map.sources(), options={"pre": 0}, capacity=caps, step_cap=60.0)
    ex.coords.update({v.name: grid.dim(a) for a, v in vs.items()})
    extents = dict(ex.coords)
    got = ex.value(node_of(u, "spread.wq"), grid.position(*vs.values()))
    lv = sp.Symbol("l!", integer=True)
    weight, bias = sp.IndexedBase("in_proj_weight"), sp.IndexedBase("in_proj_bias")
    below = got.xreplace({sp.Lt(lv, D): sp.true, sp.Ge(lv, D): sp.false})
    at_d = got.xreplace({lv: D})
    assert below.has(weight) and not below.has(bias), below
    assert at_d.has(bias) and not at_d.has(weight), at_d
    assert ex.assumed == [] and ex.coords == extents
    assert any("a gather on the cases" in st for st in ex.steps), ex.steps
