"""Stage ``output`` (attnsim.universal.layerproof.stages.output), Theorem 6 of the paper (one pass of U is the
encoder layer): U's Y (FFN 2, the residual, LayerNorm 2 with its variance through W2 W2^T, the
padding masks) equals the spec's output over the ffn stage's proven Y1 and FFN 1 activations, for
every capacity and true size; wrong U's fail with a counterexample naming the stage and the node;
the executor's new rules (flag merging, sums of deltas, term splits, copies of a squared sum, a row
variance, re-truncation, the padding rows read as the ffn stage's proven padding values, a statement
over cuts) refuse false claims."""

from __future__ import annotations

from typing import Any

import pytest
import sympy as sp

from attnsim import UniversalSimulator
from attnsim.proofs.obligation import Outcome
from attnsim.rasp import core as C
from attnsim.symbolic.if_then_else import Ite
from attnsim.universal.layerproof.encoder_spec import SIZE
from attnsim.universal.layerproof.flags import flag
from attnsim.universal.program import UniversalProgram

POST = [{"ffn": 1, "residual": 0, "post": 1}]


def _prove(u: UniversalSimulator, cases: list[dict[str, int]] | None = None) -> Outcome:
    from attnsim.universal.layerproof.stages import act, ffn, output

    cuts = {c.label: c for c in [*ffn.goals(u), *act.goals(u)]}
    (goal,) = output.goals(u)
    return output.prove(u, goal, cuts, 600, cases)


def test_y_equals_the_spec_for_every_size() -> None:
    out = _prove(UniversalSimulator.over_symbolic_capacity())
    assert out.ok is True, out.detail
    assert "for all capacities" in out.detail and "at every entry (i, e) of out" in out.detail, out.detail
    assert "U's Y == its statement" in out.detail, out.detail
    cases = (
        "cases ffn = 0; ffn = 1, residual = 0, post = 0; ffn = 1, residual = 1, post = 0; "
        "ffn = 1, residual = 0, post = 1 (a variance shown a mean of squares"
    )
    assert cases in out.detail and "ffn = 1, residual = 1, post = 1 (a variance" in out.detail, out.detail
    assert "the proven stages act, ffn" in out.detail, out.detail
    assert "stated over the cuts Y1 = y1, act = act (the spec's own out" in out.detail, out.detail
    # the padding rows read the ffn stage's proven padding values, in the post-norm cases: no premise
    read = "padding rows (cases ffn = 1, residual = 0, post = 1; ffn = 1, residual = 1, post = 1): read as the "
    assert read + "proven padding values U1~, Y1~, act~" in out.detail, out.detail  # the cuts' (act's reads U1~)
    assert "premise: " not in out.detail.replace("premises: the proven stages", ""), out.detail


def test_without_the_padding_values_a_post_norm_row_is_not_proven() -> None:
    """Cuts not proven on the padding rows (no ``padded``): LayerNorm 2's variance at a padding row
    reads one unknown per node and entry (pad[...]): not shown >= 0, and no counterexample (U's value
    is right wherever its divisors are > 0)."""
    import dataclasses

    from attnsim.universal.layerproof.stage_proof import StageProofOptions, prove_stage
    from attnsim.universal.layerproof.stages import act, ffn, output

    u = UniversalSimulator.over_symbolic_capacity()
    cuts = {c.label: dataclasses.replace(c, padded="") for c in [*ffn.goals(u), *act.goals(u)]}
    (goal,) = output.goals(u)
    options = StageProofOptions(flags=True, step_cap=120.0, past_divisors_search=True)
    out = prove_stage(u, goal, POST, 600, cuts=cuts, spec_over=output.OVER, options=options)
    assert out.ok is None and "not shown > 0" in out.detail and "pad[" in out.detail, out.detail


# -- the statement over cuts ---------------------------------------------------------------------
def test_spec_over_refuses_a_function_that_is_no_cuts() -> None:
    from attnsim.universal.layerproof.cut import statement_over_cuts
    from attnsim.universal.layerproof.stage_proof import prove_stage
    from attnsim.universal.layerproof.stages import act, ffn, output

    u = UniversalSimulator.over_symbolic_capacity()
    cuts = {c.label: c for c in [*ffn.goals(u), *act.goals(u)]}
    (goal,) = output.goals(u)
    stmt, why = statement_over_cuts(goal, output.OVER, cuts)
    assert stmt is not None and why == "", why
    for over, message in (
        ({"y1": "Z", "act": "act"}, "spec_over refused: Z (given for the spec's y1) is not a proven cut's name"),
        ({"y1": "act"}, "spec_over refused: the cut ffn2.u.act named act states act, not the spec's y1"),
        ({"z2": "Y1"}, "states y1, not the spec's z2"),
        ({"bogus": "Y1"}, "states y1, not the spec's bogus"),
    ):
        out = prove_stage(u, goal, [{"ffn": 0}], 60, cuts=cuts, spec_over=over)
        assert out.ok is None and message in out.detail, out.detail
    # without the cut read, its name is not a cut's; a statement that is no spec intermediate
    only_act = {k: c for k, c in cuts.items() if c.name == "act"}
    assert (
        "Y1 (given for the spec's y1) is not a proven cut's name" in statement_over_cuts(goal, output.OVER, only_act)[1]
    )
    import dataclasses

    bare = dataclasses.replace(goal, part="")
    assert "names no intermediate of the spec" in statement_over_cuts(bare, output.OVER, cuts)[1]


def test_the_statement_over_cuts_is_the_spec_with_those_parts_given() -> None:
    """given_parts substitutes exactly the given intermediates: with the definitions given back, the
    layer's output is the same expression (checked over y1 and act with LayerNorm 2 off: small)."""
    from attnsim.symbolic.spec_symbolic import SymbolicAlg
    from attnsim.symbolic.sums import equal_by_normal_form
    from attnsim.universal.layerproof.encoder_spec import fix
    from attnsim.universal.spec import ENCODER_LAYER, encoder_layer_parts, given_parts

    ops = {name: sp.IndexedBase(name) for name in ENCODER_LAYER.operands}
    i, e = sp.symbols("i e", integer=True)
    given = {"y1": sp.Function("Y1"), "act": sp.Function("act")}
    over = str(given_parts(ops, SIZE, given)["out"](i, e))
    assert "Y1(i, e)" in over and "act(i, " in over, over
    assert not any(x in over for x in ("in_proj_weight", "norm1_weight", "linear1_weight", "X[")), over
    with pytest.raises(ValueError, match="not parts of ENCODER_LAYER"):
        given_parts(ops, SIZE, {"y3": given["y1"]})
    given = {"y1": sp.Function("Y1"), "act": sp.Function("act")}
    full = encoder_layer_parts(SymbolicAlg(), ops, SIZE, given)
    back = encoder_layer_parts(SymbolicAlg(), ops, SIZE, {**given, "y2_in": full["y2_in"]})
    at = lambda parts: fix(parts["out"](i, e), {"post": 0})  # LayerNorm 2 off: a small comparison
    assert equal_by_normal_form(at(back), at(full))[0]
    other = encoder_layer_parts(SymbolicAlg(), ops, SIZE, {**given, "y2_in": lambda r, t: full["y2_in"](r, 0)})
    assert not equal_by_normal_form(at(other), at(full))[0]


# -- wrong U's fail with a counterexample naming the stage and the node ---------------------------
def test_layer_norm_2s_mean_over_the_capacity_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """mu2 = sum / D instead of / d: the variance is then not shown a mean of squares (it is not
    one); U's value is executed past that divisor and differs where the divisors are > 0."""
    real = C.apply
    cap = C.Size("D")

    def apply(name: str, *args: C.SOp, params: Any = ()) -> C.SOp:
        if name == "div" and args[0].label == "out.R2_sum":
            args = (args[0], C.imap(lambda p: cap, C.indices))
        return real(name, *args, params=params)

    monkeypatch.setattr(C, "apply", apply)
    out = _prove(UniversalSimulator.over_symbolic_capacity(), POST)
    assert out.ok is False, out.detail
    assert out.detail.startswith("output (ffn = 1, residual = 0, post = 1): Y at out: counterexample at "), out.detail
    assert "the divisors not shown > 0 are > 0 there" in out.detail, out.detail


def test_layer_norm_2_scaled_by_norm1_weight_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    real = UniversalProgram._gather

    def gather(self, name, src, onto, coords, **kw):  # type: ignore[no-untyped-def]
        if name == "out.g2":
            src = self._rec["g1"]
        return real(self, name, src, onto, coords, **kw)

    monkeypatch.setattr(UniversalProgram, "_gather", gather)
    out = _prove(UniversalSimulator.over_symbolic_capacity(), POST)
    assert out.ok is False, out.detail
    assert out.detail.startswith("output (ffn = 1, residual = 0, post = 1): Y at out: counterexample at "), out.detail


def test_rows_up_to_n_kept_fails_at_a_padding_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """mask.rows as i < n + 1: row i = n is written (with what U holds there), the spec's is 0."""
    real = UniversalProgram._below

    def below(self, name, grid, coord, bound, intent):  # type: ignore[no-untyped-def]
        if name == "mask.rows":
            bound = C.apply("affine", bound, params=(1, 1))
        return real(self, name, grid, coord, bound, intent)

    monkeypatch.setattr(UniversalProgram, "_below", below)
    out = _prove(UniversalSimulator.over_symbolic_capacity(), [{"ffn": 0}])
    assert out.ok is False and out.detail.startswith("output (ffn = 0): Y at out: counterexample at "), out.detail
    assert "n = 1," in out.detail and "i! = 1" in out.detail and "the spec 0" in out.detail, out.detail


# -- the new rules refuse false claims -------------------------------------------------------------
X, A, W = sp.IndexedBase("x"), sp.Function("a"), sp.IndexedBase("w")
v, g, g2 = (sp.Symbol(s, integer=True) for s in ("v!", "g!", "g2!"))
n, d, f = SIZE["n"], SIZE["d"], SIZE["f"]
F, D = sp.Symbol("F", integer=True), sp.Symbol("D", integer=True)


def test_flags_of_one_condition_merge_and_others_do_not() -> None:
    from attnsim.symbolic.sums import equal_by_normal_form
    from attnsim.universal.layerproof.flags import merge_flags

    e_ = sp.Symbol("e!", integer=True)
    assert merge_flags(flag(sp.Lt(e_, d)) ** 2 * flag(sp.Gt(d, e_)) * X[0, 0, e_]) == flag(sp.Lt(e_, d)) * X[0, 0, e_]
    two = flag(sp.Lt(e_, d)) * flag(sp.Lt(e_, n))
    assert merge_flags(two) == two
    assert merge_flags(flag(sp.Ge(d, e_))) == flag(sp.Le(e_, d))
    assert equal_by_normal_form(flag(sp.Lt(e_, d)) ** 3 * X[0, 0, 0], flag(sp.Lt(e_, d)) * X[0, 0, 0])[0]
    assert not equal_by_normal_form(flag(sp.Lt(e_, d)) * X[0, 0, 0], X[0, 0, 0])[0]
    assert not equal_by_normal_form(Ite(sp.Lt(e_, d), 2, 0) ** 2, Ite(sp.Lt(e_, d), 2, 0))[0]  # not a 0/1 flag


def test_a_squared_sum_is_copied_not_squared_termwise() -> None:
    from attnsim.symbolic.sums import equal_by_normal_form

    inner = sp.Sum(A(g) * W[0, v, g], (g, 0, f - 1))
    lhs = sp.Sum(inner**2, (v, 0, d - 1))
    copies = sp.Sum(A(g) * A(g2) * W[0, v, g] * W[0, v, g2], (g, 0, f - 1), (g2, 0, f - 1), (v, 0, d - 1))
    assert equal_by_normal_form(lhs, copies)[0]
    assert not equal_by_normal_form(lhs, sp.Sum((A(g) * W[0, v, g]) ** 2, (g, 0, f - 1), (v, 0, d - 1)))[0]


def _signs() -> Any:
    from attnsim.symbolic.positivity import Signs

    return Signs(dict.fromkeys(("n", "d", "f", "F", "D"), 1), {})


def test_a_delta_is_summed_out_only_inside_the_range() -> None:
    from attnsim.symbolic.sumsplit import split_terms, sum_deltas, within_range

    s = sp.Sum(flag(sp.Eq(g, 0)) * X[0, 0, v] + A(g), (g, 0, F - 1))
    split = split_terms(s)
    assert split == sp.Sum(flag(sp.Eq(g, 0)) * X[0, 0, v], (g, 0, F - 1)) + sp.Sum(A(g), (g, 0, F - 1))
    assert sum_deltas(split, _signs()) == X[0, 0, v] + sp.Sum(A(g), (g, 0, F - 1))
    assert within_range(sp.Integer(0), 0, F - 1, _signs()) and not within_range(F, 0, F - 1, _signs())
    kept = [
        sp.Sum(flag(sp.Eq(g, F)) * X[0, 0, g], (g, 0, F - 1)),  # c = F is past the range
        sp.Sum(flag(sp.Eq(g, 1)) * X[0, 0, g], (g, 0, F - 1)),  # F may be 1
        sp.Sum(flag(sp.Eq(g, v)) * X[0, 0, g], (g, 0, F - 1), (v, 0, d - 1)),  # c bound by the sum
        sp.Sum(flag(sp.Eq(g, sp.Rational(1, 2))) * X[0, 0, g], (g, 0, F - 1)),  # not an integer
        sp.Sum(flag(sp.Eq(g, 0)) * X[0, 0, g] + A(g), (g, 0, F - 1)),  # a sum of terms: split first
    ]
    for k in kept:
        assert sum_deltas(k, _signs()) == k, k


def test_a_row_variance_is_nonnegative_only_as_a_mean_of_squares() -> None:
    """var = (1/d) sum_e (b_e^2 + 2 b_e F_e) + (1/d) sum_{g, g2} a_g a_g2 (W W^T)[g, g2] - (S / d)^2 with
    F_e = sum_g a_g w[e, g], S = sum_e (b_e + F_e): the variance of b + F over the row."""
    from attnsim.symbolic.sumsplit import row_variance_nonnegative

    b = X[0, 0, v]
    fe = A(g) * W[0, v, g]
    gram = sp.Sum(A(g) * A(g2) * sp.Sum(W[0, v, g] * W[0, v, g2], (v, 0, d - 1)), (g, 0, f - 1), (g2, 0, f - 1))
    sq = sp.Sum(b**2, (v, 0, d - 1)) + 2 * sp.Sum(b * fe, (v, 0, d - 1), (g, 0, f - 1)) + gram
    total = sp.Sum(b, (v, 0, d - 1)) + sp.Sum(fe, (v, 0, d - 1), (g, 0, f - 1))
    steps: list[str] = []
    assert row_variance_nonnegative(sq / d - total**2 / d**2, _signs(), steps)
    assert steps and "mean of squares" in steps[0]
    assert not row_variance_nonnegative(sq / d - total**2 / D**2, _signs())  # the mean over D
    assert not row_variance_nonnegative((sq - gram) / d - total**2 / d**2, _signs())  # no F_e^2 term
    assert not row_variance_nonnegative(sq / d - total**2 / d**2 - 1, _signs())


def test_a_sum_at_its_capacity_is_retruncated_only_where_every_term_is_guarded() -> None:
    from attnsim.universal.layerproof.executor import LayerExecutor
    from attnsim.universal.layerproof.stage_proof import setup

    u = UniversalSimulator.over_symbolic_capacity()
    con, caps = setup(u)
    ex = LayerExecutor(con, 60, sources=u.map.sources(), options={"ffn": 1}, capacity=caps)
    guarded = sp.Sum(flag(sp.Eq(g, 0)) * X[0, 0, 0] + flag(sp.Lt(g, f)) * A(g), (g, 0, F - 1))
    assert ex.retruncate(guarded) == X[0, 0, 0] + sp.Sum(A(g), (g, 0, f - 1))
    bare = sp.Sum(flag(sp.Eq(g, 0)) * X[0, 0, 0] + A(g), (g, 0, F - 1))
    assert ex.retruncate(bare) == X[0, 0, 0] + sp.Sum(A(g), (g, 0, F - 1))  # a term without its guard stays
    small = sp.Sum(A(g), (g, 0, f - 1))
    assert ex.retruncate(small) == small


def test_a_padding_rows_variance_is_nonnegative_only_with_one_padding_value() -> None:
    """LayerNorm 2's variance at a row i that may be padding: its act values are the cut's inside
    the region (i < n) and, outside, the proven padding value act~ (one value: a mean of squares),
    or one unknown per node and entry without it (pad[...]: not shown >= 0)."""
    from attnsim.universal.layerproof.cut import reads_padding
    from attnsim.universal.layerproof.encoder_spec import EPS
    from attnsim.universal.layerproof.executor import LayerExecutor
    from attnsim.universal.layerproof.stage_proof import setup

    assert reads_padding(sp.Function("act~")(1, 2) + 1) and not reads_padding(sp.Function("act")(1, 2))

    u = UniversalSimulator.over_symbolic_capacity()
    con, caps = setup(u)
    i = sp.Symbol("i!", integer=True)
    act = sp.Function("act")

    def variance(outside: Any) -> Any:  # outside(node, g, e, g2): a node's value at a padding row
        a = lambda node, g_, e_, g2_: Ite(sp.Lt(i, n), act(i, g_), outside(node, g_, e_, g2_))
        fe = a("ffn2", g, v, 0) * W[0, v, g]
        gram = sp.Sum(
            a("gram", g, 0, g2) * a("gram2", g2, 0, g) * sp.Sum(W[0, v, g] * W[0, v, g2], (v, 0, d - 1)),
            (g, 0, f - 1),
            (g2, 0, f - 1),
        )
        total = sp.Sum(fe, (v, 0, d - 1), (g, 0, f - 1))
        return EPS + gram / d - total**2 / d**2

    ex = LayerExecutor(con, 60, sources=u.map.sources(), options={"ffn": 1}, capacity=caps)
    assert ex.positive(variance(lambda node, g_, e_, g2_: sp.Function("act~")(i, g_)))
    assert ex.padding_used
    pads = lambda node, g_, e_, g2_: sp.Function(f"pad[{node}]")(i, e_, g_, g2_)
    assert not ex.positive(variance(pads))


def test_a_cut_with_padding_values_is_read_as_one_value_per_name() -> None:
    """A cut proven on the padding rows reads [g] Ite(i < n, name, name~) at a row not decided and
    [g] name~ at a row the executor takes past n; without it, one unknown per node (pad[label])."""
    import dataclasses

    from attnsim.rasp import expr as E
    from attnsim.universal.layerproof.executor import LayerExecutor
    from attnsim.universal.layerproof.stage_proof import setup
    from attnsim.universal.layerproof.stages import act, ffn

    u = UniversalSimulator.over_symbolic_capacity()
    con, caps = setup(u)
    cut = next(c for c in [*ffn.goals(u), *act.goals(u)] if c.label == "gram.u2.act")
    pos = cut.grid.position(*(E.Var(f"{a}!") for a in cut.grid.axes))
    coords = {f"{a}!": cut.grid.dim(a) for a in cut.grid.axes}
    i, f2 = sp.Symbol("i!", integer=True), sp.Symbol("f2!", integer=True)
    want = flag(sp.Lt(f2, f)) * Ite(sp.Lt(i, n), sp.Function("act")(i, f2), sp.Function("act~")(i, f2))
    for above, expect in (({}, want), ({"i!": "n"}, flag(sp.Lt(f2, f)) * sp.Function("act~")(i, f2))):
        ex = LayerExecutor(con, 60, sources=u.map.sources(), capacity=caps, above=above)
        ex.coords.update(coords)
        assert ex.cut_value(cut, pos) == expect
    ex = LayerExecutor(con, 60, sources=u.map.sources(), capacity=caps)
    ex.coords.update(coords)
    got = ex.cut_value(dataclasses.replace(cut, padded=""), pos)
    assert "pad[gram.u2.act]" in str(got) and "act~" not in str(got), got


# -- the padding values are proven (prove_padding), and a wrong U there fails ---------------
ONE_PRE_CASE = [{"residual": 0, "pre": 0, "post": 1}]


def _prove_padding(u: UniversalSimulator, label: str, rep_label: str, cases: list[dict[str, int]]) -> Outcome:
    import dataclasses

    from attnsim.universal.layerproof.padding import prove_padding
    from attnsim.universal.layerproof.stages import attention, ffn

    cuts = {c.label: c for c in attention.goals(u)}
    goals = {c.label: c for c in ffn.goals(u)}
    goal, rep = goals[label], goals[rep_label]
    if rep.padded != goal.padded:
        rep = dataclasses.replace(rep, padded=goal.padded)  # a claim that the two share one value
    return prove_padding(u, goal, rep, cases, 600, cuts=cuts)


def test_the_pre_activations_share_one_padding_value() -> None:
    out = _prove_padding(UniversalSimulator.over_symbolic_capacity(), "gram.u2.pre", "ffn2.u.pre", ONE_PRE_CASE)
    assert out.ok is True, out.detail
    assert "at every padding row i >= n of ln2.gram_terms" in out.detail, out.detail
    assert "U's gram.u2.pre == U1~(i, f2), the value of ffn2.u.pre there (the arguments' only) [f2 < f]" in out.detail


def test_a_node_claimed_to_share_another_nodes_padding_value_fails() -> None:
    """Y1 (i, e < D) cannot share the pre-activations' value (i, f < F): refused on the extents; and
    gram.u.pre claimed at the arguments (i, f2) of its grid (its own f stays free) is another value
    than ffn2.u.pre's at (i, f2)."""
    import dataclasses

    from attnsim.universal.layerproof.padding import prove_padding
    from attnsim.universal.layerproof.stages import attention, ffn

    out = _prove_padding(
        UniversalSimulator.over_symbolic_capacity(), "out.Y1", "ffn2.u.pre", [{"residual": 0, "post": 0}]
    )
    assert out.ok is False and "ffn2.u.pre's axis f and out.Y1's axis e differ in extent" in out.detail, out.detail
    u = UniversalSimulator.over_symbolic_capacity()
    goals = {c.label: c for c in ffn.goals(u)}
    wrong = dataclasses.replace(goals["gram.u.pre"], args=("i", "f2"), guard=(("f2", "f"),))
    cuts = {c.label: c for c in attention.goals(u)}
    out = prove_padding(u, wrong, goals["ffn2.u.pre"], ONE_PRE_CASE, 600, cuts=cuts)
    assert out.ok is False and "not the value of ffn2.u.pre there" in out.detail, out.detail


def test_an_activation_wrong_only_at_the_padding_rows_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """gram.u2's bias b1 multiplied by the row mask [i < n]: the same U on the true rows, another
    pre-activation than ffn2.u.pre's on a padding row (... + 0, not ... + b1)."""
    real = UniversalProgram._gather

    def gather(self, name, src, onto, coords, **kw):  # type: ignore[no-untyped-def]
        out = real(self, name, src, onto, coords, **kw)
        if name == "gram.u2.b1":
            rows = self._below("wrong.rows", onto, lambda cs: cs["i"], self._n_b, lambda c, s: c["i"] < s["n"])
            out = C.apply("mul", out, rows)
        return out

    monkeypatch.setattr(UniversalProgram, "_gather", gather)
    out = _prove_padding(UniversalSimulator.over_symbolic_capacity(), "gram.u2.pre", "ffn2.u.pre", ONE_PRE_CASE)
    assert out.ok is False and "not the value of ffn2.u.pre there" in out.detail, out.detail


def test_a_padding_value_that_reads_another_coordinate_fails() -> None:
    """The logit's padding value is one value per (h, i, j) (proven: it does not read e); claimed as
    a value per (h, i, e) it reads the key j: refused."""
    import dataclasses

    from attnsim.universal.layerproof.padding import prove_padding
    from attnsim.universal.layerproof.stages import scores

    u = UniversalSimulator.over_symbolic_capacity()
    (goal,) = scores.goals(u)
    wrong = dataclasses.replace(goal, args=("h", "i", "e"))
    out = prove_padding(u, wrong, wrong, [{"pre": 0}], 600)
    assert out.ok is False and "attn.logit's value there reads j!" in out.detail, out.detail


def test_an_index_conditional_keeps_the_conjuncts_z3_does_not_prove() -> None:
    """decide_conditions drops the conjuncts proven at the position and gives 0 for a refuted one;
    one that depends on the entry (e = 0 at a free e) stays a condition."""
    from attnsim.rasp import expr as E
    from attnsim.universal.layerproof.executor import LayerExecutor
    from attnsim.universal.layerproof.stage_proof import setup

    u = UniversalSimulator.over_symbolic_capacity()
    con, caps = setup(u)
    ex = LayerExecutor(con, 120, sources=u.map.sources(), options={"ffn": 1}, capacity=caps)
    ex.step_cap = 120.0
    i, e = E.Var("i!"), E.Var("e!")
    ex.coords.update({"i!": u.N, "e!": u.D})
    inside = (i >= 0) & (i < u.N)
    assert E.render(ex.decide_conditions(E.if_(inside & e.eq(0), 1, 0))) == E.render(E.if_(e.eq(0), 1, 0))
    assert E.render(ex.decide_conditions(E.if_(inside & (i >= u.N), 1, 0))) == E.render(E.if_(E.Const(0), 1, 0))
    kept = E.if_((e < 1) & e.eq(0), 1, 0)  # neither conjunct decided at a free e
    assert E.render(ex.decide_conditions(kept)) == E.render(kept)
