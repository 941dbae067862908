"""Stage ``ffn`` (attnsim.universal.layerproof.stages.ffn, Theorem 6: attention layer 6 of U and its MLP): U's
Y1 (the residual sum R, LayerNorm 1 when post-norm) and FFN 1 pre-activation (LayerNorm 2 folded in when
pre-norm) equal the encoder layer's specification over the attention stage's proven head outputs,
for every capacity; wrong U's fail with a counterexample naming the stage and the node; the
executor's and the normal form's new rules refuse false claims."""

from __future__ import annotations

from typing import Any

import pytest
import sympy as sp

from attnsim import UniversalSimulator
from attnsim.proofs.obligation import Outcome
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.symbolic.if_then_else import Ite
from attnsim.universal.layerproof.encoder_spec import SIZE
from attnsim.universal.layerproof.flags import flag
from attnsim.universal.program import UniversalProgram


def _prove(u: UniversalSimulator, label: str, cases: list[dict[str, int]] | None = None) -> Outcome:
    from attnsim.universal.layerproof.stages import attention, ffn

    cuts = {c.label: c for c in attention.goals(u)}
    (goal,) = [g for g in ffn.goals(u) if g.label == label]
    return ffn.prove(u, goal, cuts, 900, cases)


# -- the stage proven -------------------------------------------------------------------------------
@pytest.mark.parametrize("label", ["ffn2.Y1", "out.Y1"])
def test_y1_equals_the_spec_for_every_size(label: str) -> None:
    out = _prove(UniversalSimulator.over_symbolic_capacity(), label)
    assert out.ok is True, out.detail
    assert f"U's {label} == its statement" in out.detail and "with i < n" in out.detail, out.detail
    assert "for all capacities" in out.detail and "the proven stages attention" in out.detail, out.detail
    for case in ("residual = 0, post = 0", "residual = 1, post = 0", "residual = 1, post = 1"):
        assert case in out.detail, out.detail
    assert "mean of squares" in out.detail, out.detail  # post: LayerNorm 1's variance of R
    # on the padding rows: one value Y1~ (ffn2.Y1's there), read over the head outputs' O~
    assert f"U's {label} == Y1~(i, e), the value of ffn2.Y1 there (the arguments' only) [e < d]" in out.detail


def test_a_pre_activation_equals_the_spec_for_every_size() -> None:
    """ffn2.u.pre in its six option cases (residual; pre-, post- or no norm): U's FFN 1 input with
    LayerNorm 2 folded in when pre-norm is the spec's u1 = linear1(z2); the activation of it is the
    act stage's (test_act.py)."""
    out = _prove(UniversalSimulator.over_symbolic_capacity(), "ffn2.u.pre")
    assert out.ok is True, out.detail
    assert "U's ffn2.u.pre == its statement" in out.detail and "mean of squares" in out.detail, out.detail
    assert out.detail.count("post = ") == 12, out.detail  # the true rows, then the padding rows
    assert "premise: pre and post are not both 1" in out.detail, out.detail
    assert "U's ffn2.u.pre == U1~(i, f), the value of ffn2.u.pre there (the arguments' only) [f < f]" in out.detail
    for case in (
        "residual = 0, pre = 0, post = 0",
        "residual = 1, pre = 1, post = 0",
        "residual = 1, pre = 0, post = 1",
    ):
        assert case in out.detail, out.detail


# -- wrong U's fail with a counterexample naming the stage and the node ------------------------------
def test_a_layer_norm_1_mean_over_d_plus_1_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """mu1 = sum R / (d + 1): its variance is then not shown >= 0 for every size, so U's value is
    sampled at a point where its divisor is > 0, and differs there."""
    real = C.apply

    def apply(name, *args, **kw):  # type: ignore[no-untyped-def]
        if name == "div" and getattr(args[0], "label", "") == "ffn2.R_sum":
            args = (args[0], real("affine", args[1], params=(1, 1)))
        return real(name, *args, **kw)

    monkeypatch.setattr(C, "apply", apply)
    out = _prove(UniversalSimulator.over_symbolic_capacity(), "ffn2.Y1", [{"residual": 1, "post": 1}])
    assert out.ok is False, out.detail
    assert out.detail.startswith("ffn (residual = 1, post = 1): ffn2.Y1 at ffn2.products: counterexample"), out.detail
    assert "divisors not shown > 0" in out.detail, out.detail


def _wrong_residual(monkeypatch: pytest.MonkeyPatch, src: str, coords: Any) -> None:
    """U whose residual term at attn.heads (the X of R = sum_h O_h + [h = 0] (b_o + X)) reads ``src``."""
    real = UniversalProgram._gather

    def gather(self, name, grid, onto, cs, **kw):  # type: ignore[no-untyped-def]
        if name == "attn.x":
            return real(self, name, self.map.x if src == "X" else self._rec[src], onto, coords, **kw)
        return real(self, name, grid, onto, cs, **kw)

    monkeypatch.setattr(UniversalProgram, "_gather", gather)


@pytest.mark.parametrize(
    "src, coords",
    [
        ("X", lambda cs: {"i": cs["i"], "l": E.Const(0)}),  # X[i, 0]: the wrong feature
        ("bo", lambda cs: {"e": cs["e"]}),  # b_o again in place of X: X omitted, b_o added twice
    ],
)
def test_a_residual_adding_the_wrong_term_fails(monkeypatch: pytest.MonkeyPatch, src: str, coords: Any) -> None:
    _wrong_residual(monkeypatch, src, coords)
    out = _prove(UniversalSimulator.over_symbolic_capacity(), "ffn2.Y1", [{"residual": 1, "post": 0}])
    assert out.ok is False, out.detail
    assert out.detail.startswith("ffn (residual = 1, post = 0): ffn2.Y1 at ffn2.products: counterexample"), out.detail


def test_ffn_1_reading_layer_norm_1s_gain_when_pre_norm_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pre-norm, FFN 1's input is LayerNorm 2 (y1): U reading LayerNorm 1's gain there is refuted."""
    real = UniversalProgram._gather

    def gather(self, name, grid, onto, cs, **kw):  # type: ignore[no-untyped-def]
        if name == "ffn1.g2":
            grid = self._rec["g1"]
        return real(self, name, grid, onto, cs, **kw)

    monkeypatch.setattr(UniversalProgram, "_gather", gather)
    out = _prove(UniversalSimulator.over_symbolic_capacity(), "ffn2.u.pre", [{"residual": 1, "pre": 1, "post": 0}])
    assert out.ok is False, out.detail
    assert out.detail.startswith(
        "ffn (residual = 1, pre = 1, post = 0): ffn2.u.pre at ffn2.products: counterexample"
    ), out.detail


# -- the statement is the spec's --------------------------------------------------------------------
def test_the_statement_over_the_opaque_heads_is_the_spec_up_to_bound_names() -> None:
    """The ffn goals are stated over the attention stage's cut O, which states the spec's own
    intermediate head(h, i, e): unfolded, the statement is the spec's y1 (up to bound names); a
    statement reading O transposed or one head short is not."""
    from attnsim.symbolic.alpha_equivalence import alpha_equal
    from attnsim.universal.layerproof.cut import statement_over_cuts
    from attnsim.universal.layerproof.encoder_spec import spec_parts
    from attnsim.universal.layerproof.stages import attention, ffn

    u = UniversalSimulator.over_symbolic_capacity()
    cuts = {c.label: c for c in attention.goals(u)}
    assert {c.part for c in cuts.values()} == {"head"} and {c.name for c in cuts.values()} == {ffn.HEAD}
    i, e = sp.Symbol("i!", integer=True), sp.Symbol("e!", integer=True)

    def unfolded(y1: Any) -> Any:
        for c in cuts.values():
            y1 = c.unfold(y1)
        return y1

    (goal,) = [g for g in ffn.goals(u) if g.label == "ffn2.Y1"]
    stmt, why = statement_over_cuts(goal, {"head": ffn.HEAD}, cuts)
    assert stmt is not None, why
    spec = goal.statement({"i": i, "e": e})
    assert alpha_equal(unfolded(stmt({"i": i, "e": e})), spec)
    opq = sp.Function(ffn.HEAD)
    hv = sp.Symbol("y!h", integer=True)
    attn = spec_parts()["attn"](i, e)
    right = sp.Sum(opq(hv, i, e), (hv, 0, SIZE["hh"] - 1))
    assert alpha_equal(unfolded(right + sp.IndexedBase("out_proj_bias")[0, 0, e]), attn)  # the control
    for wrong in (
        sp.Sum(opq(hv, e, i), (hv, 0, SIZE["hh"] - 1)),  # O read transposed
        sp.Sum(opq(hv, i, e), (hv, 0, SIZE["hh"] - 2)),  # the last head left out
    ):
        assert not alpha_equal(unfolded(wrong + sp.IndexedBase("out_proj_bias")[0, 0, e]), attn)


# -- the new rules refuse false claims ---------------------------------------------------------------
def test_alpha_equivalence_renames_bound_variables_only() -> None:
    from attnsim.symbolic.alpha_equivalence import alpha_equal

    a, b, c, n = (sp.Symbol(x, integer=True) for x in ("a", "b", "c", "n"))
    X = sp.IndexedBase("X")
    assert alpha_equal(sp.Sum(X[a, c], (a, 0, n)), sp.Sum(X[b, c], (b, 0, n)))
    assert alpha_equal(sp.Sum(sp.Sum(X[a, b], (b, 0, n)), (a, 0, n)), sp.Sum(sp.Sum(X[b, a], (a, 0, n)), (b, 0, n)))
    assert not alpha_equal(sp.Sum(X[a, c], (a, 0, n)), sp.Sum(X[a, b], (a, 0, n)))  # a free variable differs
    assert not alpha_equal(sp.Sum(sp.Sum(X[a, b], (b, 0, n)), (a, 0, n)), sp.Sum(sp.Sum(X[b, b], (b, 0, n)), (a, 0, n)))
    assert not alpha_equal(sp.Sum(X[a, c], (a, 0, n)), sp.Sum(X[a, c], (a, 1, n)))


def test_r_is_split_its_delta_summed_out_and_its_heads_truncated_only_where_it_holds() -> None:
    """U's R = sum_{h<H} ([h < hh] O(h) + [h = 0] c): the split, the Kronecker delta and the
    truncation of the output stage's retruncate (LayerExecutor.retruncate, attnsim.symbolic.sumsplit)
    give c + sum_{h<hh} O(h), and nothing where a step does not hold."""
    from attnsim.universal.layerproof.executor import LayerExecutor
    from attnsim.universal.layerproof.stage_proof import setup

    u = UniversalSimulator.over_symbolic_capacity()
    con, caps = setup(u)
    ex = LayerExecutor(con, 60, sources=u.map.sources(), options={}, capacity=caps)
    H = caps["hh"]
    v, e = sp.Symbol("v!", integer=True), sp.Symbol("e!", integer=True)
    opq, c = sp.Function("O"), sp.IndexedBase("c")
    hh = SIZE["hh"]
    run = lambda body, hi=H - 1: ex.retruncate(sp.Sum(body, (v, 0, hi)))

    assert run(flag(sp.Lt(v, hh)) * opq(v) + flag(sp.Eq(v, 0)) * c[e]) == c[e] + sp.Sum(opq(v), (v, 0, hh - 1))
    # the delta's point outside the range, or not shown inside it: the term keeps its sum
    for body in (flag(sp.Eq(v, H)) * c[v], flag(sp.Eq(v, e)) * c[v]):  # e < H is not known
        assert run(body) == sp.Sum(body, (v, 0, H - 1)), body
    # truncation only to the true size whose capacity is the range
    assert run(flag(sp.Lt(v, SIZE["d"])) * opq(v)) == sp.Sum(flag(sp.Lt(v, SIZE["d"])) * opq(v), (v, 0, H - 1))
    assert run(flag(sp.Lt(v, hh)) * opq(v), hi=H - 2) == sp.Sum(flag(sp.Lt(v, hh)) * opq(v), (v, 0, H - 2))
    got = run(flag(sp.Lt(v, hh)) * opq(v) + opq(v))  # the unguarded term keeps the full range
    assert got == sp.Sum(opq(v), (v, 0, hh - 1)) + sp.Sum(opq(v), (v, 0, H - 1)), got


def test_a_flag_of_a_conjunction_is_split_only_for_a_conjunction() -> None:
    """U's indicator [h = 0 and h2 = 0] read as [h = 0] [h2 = 0] (flagform.split_conjunctions), so
    each delta can be summed out; a disjunction stays one flag."""
    from attnsim.universal.layerproof.flags import split_conjunctions

    a, b = sp.Symbol("a", integer=True), sp.Symbol("b", integer=True)
    both = Ite(sp.And(sp.Eq(a, 0), sp.Eq(b, 0)), 1, 0)
    assert split_conjunctions(both) == flag(sp.Eq(a, 0)) * flag(sp.Eq(b, 0))
    either = Ite(sp.Or(sp.Eq(a, 0), sp.Eq(b, 0)), 1, 0)
    assert split_conjunctions(either) == either
    two = Ite(sp.And(sp.Eq(a, 0), sp.Eq(b, 0)), 2, 0)  # not a 0/1 flag
    assert split_conjunctions(two) == two


def test_powers_of_sums_and_flags_in_the_normal_form() -> None:
    from attnsim.symbolic.sums import equal_by_normal_form

    v, w, h, n, m = (sp.Symbol(x, integer=True) for x in ("v", "w", "h", "n", "m"))
    opq = sp.Function("O")
    square = sp.Sum(sp.Sum(opq(h, v), (h, 0, m)) ** 2, (v, 0, n))
    pairs = sp.Sum(opq(h, v) * opq(w, v), (v, 0, n), (h, 0, m), (w, 0, m))
    assert equal_by_normal_form(square, pairs)[0]
    assert not equal_by_normal_form(square, sp.Sum(opq(h, v) ** 2, (v, 0, n), (h, 0, m)))[0]  # not the diagonal
    g = flag(sp.Lt(v, n))
    assert equal_by_normal_form(g**2 * opq(h, v), g * opq(h, v))[0]
    two = Ite(sp.Lt(v, n), 2, 0)  # not a 0/1 flag
    assert not equal_by_normal_form(two**2 * opq(h, v), two * opq(h, v))[0]


def test_a_row_variance_is_a_mean_of_squares_only_when_it_is() -> None:
    """LayerNorm 1's variance of R = sum_h O_h + X held as several sums (the heads over (e, h), X
    over e), U's E[R^2] over (e, h, h2): >= 0 by row_variance_nonnegative, and not for a wrong one."""
    from attnsim.symbolic.positivity import Signs
    from attnsim.symbolic.sumsplit import row_variance_nonnegative

    e, h = sp.Symbol("e", integer=True), sp.Symbol("h", integer=True)
    d, hh = SIZE["d"], SIZE["hh"]
    opq, X = sp.Function("O"), sp.IndexedBase("X")
    h2 = sp.Symbol("h2", integer=True)
    s1 = sp.Sum(opq(h, e), (e, 0, d - 1), (h, 0, hh - 1)) + sp.Sum(X[e], (e, 0, d - 1))
    s2 = (
        sp.Sum(opq(h, e) * opq(h2, e), (e, 0, d - 1), (h, 0, hh - 1), (h2, 0, hh - 1))
        + sp.Sum(2 * opq(h, e) * X[e], (e, 0, d - 1), (h, 0, hh - 1))
        + sp.Sum(X[e] ** 2, (e, 0, d - 1))
    )
    signs = Signs(dict.fromkeys(("d", "hh"), 1), {})
    assert row_variance_nonnegative(s2 / d - s1**2 / d**2, signs)
    assert not row_variance_nonnegative(s2 / d - s1**2 / (d + 1) ** 2, signs)  # the mean over d + 1
    assert not row_variance_nonnegative(s2 / d - s1**2 / d**2, Signs({}, {}))  # the count not shown > 0
    assert not row_variance_nonnegative((s2 - sp.Sum(X[e] ** 2, (e, 0, d - 1))) / d - s1**2 / d**2, signs)


def test_an_activation_moves_out_only_flags_every_term_carries() -> None:
    from attnsim.universal.layerproof.activation import activation

    x, y = sp.Symbol("x", real=True), sp.Symbol("y", real=True)
    g, k = flag(sp.Lt(sp.Symbol("f!", integer=True), SIZE["f"])), flag(sp.Lt(sp.Symbol("i!", integer=True), SIZE["n"]))
    assert activation("relu", g * x + g * y) == g * (x + y + sp.Abs(x + y)) / 2
    assert activation("relu", g * x + y) == (g * x + y + sp.Abs(g * x + y)) / 2  # y unguarded: g stays inside
    assert activation("gelu", g * k * x) == g * k * x * (1 + sp.erf(x / sp.sqrt(2))) / 2
    tanh = g * x * (1 + sp.tanh(sp.sqrt(2) / sp.sqrt(sp.pi) * (x + sp.Rational(44715, 10**6) * x**3))) / 2
    assert activation("gelu_tanh", g * x) == tanh
    with pytest.raises(ValueError, match=r"^exp is not an activation \(relu, gelu, gelu_tanh\)$"):
        activation("exp", x)
