"""Stage ``attention`` (attnsim.universal.layerproof.stages.attention): U's row max, softmax and head outputs
read over the scores stage's proven logits, for every capacity; wrong U's fail with a
counterexample; the executor's rules for key listings, flags and softmax denominators refuse false
claims."""

from __future__ import annotations

from typing import Any

import pytest

from attnsim import UniversalSimulator
from attnsim.proofs import z3sel
from attnsim.proofs.obligation import Outcome
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.universal.program import UniversalProgram


def _exp_at_entry(u: UniversalSimulator) -> object:
    """U's attn.exp at a symbolic attention product (h, i, j, e), its logits cut as s(h, i, j)."""
    import sympy as sp

    from attnsim.symbolic.maxover import MaxOver
    from attnsim.universal.layerproof.executor import LayerExecutor
    from attnsim.universal.layerproof.stage_proof import node_of, setup
    from attnsim.universal.layerproof.stages import scores

    con, caps = setup(u)
    (logit,) = scores.goals(u)
    pv = logit.grid
    h, i, j, e = (E.Var(f"{a}!") for a in ("h", "i", "j", "e"))
    ex = LayerExecutor(
        con,
        300,
        sources=u.map.sources(),
        options={"pre": 0},
        capacity=caps,
        below={"h!": "hh", "i!": "n", "j!": "n", "e!": "d"},
        cuts={"attn.logit": logit},
    )
    ex.coords.update({h.name: u.H, i.name: u.N, j.name: u.N, e.name: u.D})
    got = ex.value(node_of(u, "attn.exp"), pv.position(h, i, j, e))
    (m,) = sp.sympify(got).atoms(MaxOver)
    return got, m


def test_the_row_max_runs_over_the_allowed_keys_of_the_row() -> None:
    import sympy as sp

    from attnsim.symbolic.if_then_else import Ite

    got, m = _exp_at_entry(UniversalSimulator.over_symbolic_capacity())
    # the max over j' < N of Ite(allowed(h, i, j'), s(h, i, j'), -oo): the row's allowed keys only
    assert isinstance(m.function, Ite) and m.function.args[2] == sp.S.NegativeInfinity, m
    assert str(m.limits[0][2]) == "N - 1", m
    assert "blocked" in str(m.function.args[0]) and "s(h!, i!, μ0)" in str(m.function.args[1]), m
    # exp(s - max) times the 0/1 flags of allowed (j < n, not blocked): a where() on a data flag
    assert str(got).startswith("exp(s(h!, i!, j!) - MaxOver(") and str(got).count("blocked") == 2, got


def test_a_max_over_every_key_of_the_row_is_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    """A max over the whole row (blocked keys included) is executed as such (no guard): equal in exact
    reals once it cancels, so only the execution tells it apart (the numeric masked-key test catches it).
    Keys j >= n are read outside the scores stage's region: an unknown value (pad_s)."""
    real = C.maximum
    monkeypatch.setattr(C, "maximum", lambda sel, v: real(sel.a if isinstance(sel, C.SelectAnd) else sel, v))
    _, m = _exp_at_entry(UniversalSimulator.over_symbolic_capacity())
    assert "oo" not in str(m.function) and "blocked" not in str(m.function), m  # no allowed-key guard


# -- the stage proven: every head output, both pre cases ---------------------------------------
def _prove(u: UniversalSimulator, label: str) -> Outcome:
    from attnsim.universal.layerproof.stages import attention, scores

    cuts = {c.label: c for c in scores.goals(u)}
    (goal,) = [g for g in attention.goals(u) if g.label == label]
    return attention.prove(u, goal, cuts, 600)


@pytest.mark.parametrize("label", ["attn.o", "ffn1.o", "ln1.o", "ln1.o2"])
def test_a_head_output_equals_the_spec_for_every_size(label: str) -> None:
    from attnsim.universal.layerproof.stages import attention

    out = _prove(UniversalSimulator.over_symbolic_capacity(), label)
    assert out.ok is True, out.detail
    assert f"U's {label} == its statement" in out.detail and "with i < n" in out.detail, out.detail
    assert "for all capacities" in out.detail and "cases pre = 0; pre = 1" in out.detail, out.detail
    assert "mean of squares" in out.detail, out.detail  # pre = 1: V's LayerNorm of a padded key row
    # the premises are stated: the scores stage and an unblocked key in every row
    assert "the proven stages scores" in out.detail and "every query row i < n has a key j < n" in out.detail
    # and on the padding rows: every head-output node holds O~ (attn.o's value there), no premise
    ax = "h2" if label == "ln1.o2" else "h"
    pad = f"at every padding row i >= n of {dict((lb, g) for lb, g, _ in attention.HEADS)[label]}"
    assert pad in out.detail and f"U's {label} == O~({ax}, i, e), the value of attn.o there" in out.detail


# -- wrong U's fail with a counterexample naming the stage and the entry ---------------------------
def _wrong_sum(monkeypatch: pytest.MonkeyPatch, name: str, change: dict[str, E.Expr]) -> None:
    """U with the sum ``name`` grouped at other coordinates (``change`` overrides its group)."""
    real = UniversalProgram._sum

    def _sum(self, nm, prod, over, onto, group):  # type: ignore[no-untyped-def]
        if nm == name:
            right = group
            group = lambda cs: {**right(cs), **change}
        return real(self, nm, prod, over, onto, group)

    monkeypatch.setattr(UniversalProgram, "_sum", _sum)


COUNTEREXAMPLE = "attention (pre = 0): attn.o at attn.heads: counterexample at "


def test_a_head_output_divided_by_head_0s_denominator_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    _wrong_sum(monkeypatch, "attn.o.den", {"h": E.Const(0)})
    out = _prove(UniversalSimulator.over_symbolic_capacity(), "attn.o")
    assert out.ok is False and out.detail.startswith(COUNTEREXAMPLE), out.detail
    assert "h! = 1, i! = 1" in out.detail and "blocked = 0" in out.detail, out.detail


def test_a_numerator_read_at_feature_0_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    _wrong_sum(monkeypatch, "attn.o.num", {"e": E.Const(0)})
    out = _prove(UniversalSimulator.over_symbolic_capacity(), "attn.o")
    assert out.ok is False and out.detail.startswith(COUNTEREXAMPLE), out.detail


def test_keys_up_to_n_allowed_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """mask.keys as j < n + 1 (j <= n): the key j = n < N enters the softmax; the sums are not
    truncated to j < n (the denominator is still > 0: a row's unblocked key passes j < n + 1)."""
    real = UniversalProgram._below

    def below(self, name, grid, coord, bound, intent):  # type: ignore[no-untyped-def]
        if name == "mask.keys":
            bound = C.apply("affine", bound, params=(1, 1))
        return real(self, name, grid, coord, bound, intent)

    monkeypatch.setattr(UniversalProgram, "_below", below)
    out = _prove(UniversalSimulator.over_symbolic_capacity(), "attn.o")
    assert out.ok is False and out.detail.startswith(COUNTEREXAMPLE), out.detail
    assert "pad[attn.logit]" in out.detail, out.detail  # the logit of key j = n: outside the scores stage


# -- the executor's new rules refuse false claims ------------------------------------------------
def _head_executor(
    u: UniversalSimulator, witnesses: tuple[Any, ...] = (), proofs: dict[Any, Any] | None = None
) -> tuple[Any, E.Expr]:
    """An executor at a symbolic entry (i, e, h) of attn.heads with i < n, and that entry (``proofs``:
    decided Z3 answers shared with other executors, keyed by the whole query, as a stage's cases share them)."""
    from attnsim.universal.layerproof.executor import LayerExecutor
    from attnsim.universal.layerproof.stage_proof import setup

    con, caps = setup(u)
    grid = next(g for g in u.stage_grids if g.name == "attn.heads")
    vs = {a: E.Var(f"{a}!") for a in grid.axes}
    ex = LayerExecutor(
        con,
        120,
        sources=u.map.sources(),
        options={"pre": 0},
        capacity=caps,
        below={"i!": "n"},
        witnesses=witnesses,
        proofs={} if proofs is None else proofs,
    )
    # one Z3 call may take the whole budget: a refutation cut at the executor's default 20 s step
    # cap on a loaded CI machine reads 'unknown', and these tests ask for a refutation (ok False)
    ex.step_cap = 120.0
    ex.coords.update({vs[a].name: grid.dim(a) for a in grid.axes})
    return ex, grid.position(*(vs[a] for a in grid.axes))


def test_a_key_listing_is_refused_through_a_wrong_intent_or_a_short_hint() -> None:
    """attn.o.den's selector picks (h, i, j, 0) for every j < N.  Listing only j = 0 is refused both
    with an intent that says so (not the selector's: the decoding prover refutes S <-> I) and with
    the true intent (a selected key j = 1 is not listed)."""
    import dataclasses

    import sympy as sp

    from attnsim.symbolic.execute import Enumeration, ExecutionFailed

    u = UniversalSimulator.over_symbolic_capacity()
    (it,) = [it for name, it in u.intents if name == "attn.o.den.sum"]
    products = next(g for g in u.stage_grids if g.name == "attn.products")
    first = Enumeration(key=it.keys.key, witness=it.keys.witness, count=(E.Const(1),))  # j = 0 only
    narrow = dataclasses.replace(it, intent=it.intent & products.coords(z3sel.K)["j"].eq(0), keys=first)

    shared: dict[Any, Any] = {}  # the query every case asks (a selected key is listed) is decided once
    ex, pos = _head_executor(u, proofs=shared)
    listed = ex.over_keys(it.selector, pos, lambda key: sp.Integer(1))
    assert isinstance(listed, sp.Sum) and listed.function == 1
    ((var, lo, hi),) = listed.limits  # one summation variable, named by the computation, over j < N
    assert str(var).startswith("l!") and (lo, hi) == (0, sp.Symbol("N", integer=True) - 1)
    for wrong, why in (
        (narrow, "not shown to be its intent"),
        (dataclasses.replace(it, keys=first), "every selected key is listed"),
    ):
        ex, pos = _head_executor(u, proofs=shared)
        ex.con.intents = [wrong if x is it else x for x in ex.con.intents]
        with pytest.raises(ExecutionFailed) as err:
            ex.over_keys(it.selector, pos, lambda key: sp.Integer(1))
        assert err.value.outcome.ok is False and why in err.value.outcome.detail, err.value.outcome.detail


def test_a_softmax_denominator_is_positive_only_under_the_premise_and_a_passing_key() -> None:
    import sympy as sp

    from attnsim.universal.layerproof.encoder_spec import SIZE
    from attnsim.universal.layerproof.flags import flag
    from attnsim.universal.layerproof.stages.attention import UNBLOCKED

    u = UniversalSimulator.over_symbolic_capacity()
    ex, _ = _head_executor(u, (UNBLOCKED,))
    bare, _ = _head_executor(u)
    blocked = sp.IndexedBase("blocked")
    i, r, v = (sp.Symbol(x, integer=True) for x in ("i!", "e!", "v!"))
    n, N = SIZE["n"], sp.Symbol("N", integer=True)
    term = sp.exp(sp.Function("x")(v))
    ok = lambda c: flag(sp.Ne(blocked[0, c, v], 1))

    assert ex.positive(sp.Sum(ok(i) * term, (v, 0, n - 1)))
    assert ex.positive(sp.Sum(ok(i) * term, (v, 0, N - 1)))  # a range containing [0, n)
    assert ex.positive(sp.Sum(ok(i) * flag(sp.Lt(v, n + 1)) * term, (v, 0, N - 1)))  # implied at a key < n
    refused = [
        sp.Sum(ok(r) * term, (v, 0, n - 1)),  # a row not taken below n
        sp.Sum(flag(sp.Ne(blocked[0, v, i], 1)) * term, (v, 0, n - 1)),  # the key as the row
        sp.Sum(flag(sp.Eq(blocked[0, i, v], 1)) * term, (v, 0, n - 1)),  # the blocked keys
        sp.Sum(ok(i) * term, (v, 1, n - 1)),  # key 0 left out
        sp.Sum(ok(i) * term, (v, 0, n - 2)),  # key n - 1 left out
        sp.Sum(ok(i) * flag(sp.Lt(v, n - 1)) * term, (v, 0, n - 1)),  # the witness may be n - 1
        sp.Sum(ok(i) * sp.IndexedBase("X")[0, i, v], (v, 0, n - 1)),  # a term of any sign
    ]
    for s in refused:
        assert not ex.positive(s), s
    assert not bare.positive(sp.Sum(ok(i) * term, (v, 0, n - 1)))  # without the premise


def test_flags_are_turned_into_factors_only_where_sound() -> None:
    import sympy as sp

    from attnsim.symbolic.if_then_else import Ite
    from attnsim.universal.layerproof.encoder_spec import EPS, SIZE
    from attnsim.universal.layerproof.flags import absorb_flags, flag
    from attnsim.universal.layerproof.stages.attention import UNBLOCKED

    ex, _ = _head_executor(UniversalSimulator.over_symbolic_capacity(), (UNBLOCKED,))
    blocked, X = sp.IndexedBase("blocked"), sp.IndexedBase("X")
    i, j, v, h = (sp.Symbol(x, integer=True) for x in ("i!", "j!", "v!", "h!"))
    n, N, d, hh = SIZE["n"], sp.Symbol("N", integer=True), SIZE["d"], SIZE["hh"]
    s, pad = sp.Function("s"), sp.Function("pad")
    # the spec's Ite(blocked, 0, 1 / D): a factor [not blocked] only when D is shown > 0
    den = lambda c: sp.Sum(flag(c(blocked[0, i, v])) * sp.exp(s(v) - s(j)), (v, 0, n - 1))
    spec = lambda c: Ite(sp.Eq(blocked[0, i, j], 1), 0, 1 / den(c))
    assert ex.as_flags_where_finite(spec(lambda b: sp.Ne(b, 1))) == flag(sp.Ne(blocked[0, i, j], 1)) / den(
        lambda b: sp.Ne(b, 1)
    )
    assert ex.as_flags_where_finite(spec(lambda b: sp.Eq(b, 1))) == spec(lambda b: sp.Eq(b, 1))  # D may be 0
    # [c] x = [c] x|c: a flag decides its own condition in its product, never a bound variable's
    c = sp.Lt(h, hh)
    assert absorb_flags(flag(c) * sp.exp(Ite(c, s(h), pad(h)))) == flag(c) * sp.exp(s(h))
    under = flag(sp.Lt(v, n)) * sp.Sum(Ite(sp.Lt(v, n), s(v), pad(v)), (v, 0, N - 1))
    assert absorb_flags(under) == under
    # a variance whose every term carries a guard flag g is g (mean of squares) >= 0; not otherwise
    g = flag(sp.Lt(j, n))
    mean, meansq = sp.Sum(X[0, j, v], (v, 0, d - 1)) / d, sp.Sum(X[0, j, v] ** 2, (v, 0, d - 1)) / d
    assert ex.positive(EPS + g * meansq - g**2 * mean**2)
    assert not ex.positive(EPS + g * meansq - mean**2)
