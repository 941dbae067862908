"""Stage ``attention`` (attnsim.symbolic.stages.attention): U's row max and softmax read over the
scores stage's proven logits, for every capacity."""

from __future__ import annotations

import pytest

from attnsim import UniversalSimulator
from attnsim.rasp import core as C
from attnsim.rasp import expr as E


def _symbolic_u() -> UniversalSimulator:
    return UniversalSimulator(C.Size("N"), C.Size("D"), C.Size("H"), C.Size("K"), C.Size("F"))


def _exp_at_entry(u: UniversalSimulator) -> object:
    """U's attn.exp at a symbolic attention product (h, i, j, e), its logits cut as s(h, i, j)."""
    import sympy as sp

    from attnsim.symbolic import layer
    from attnsim.symbolic.maxover import MaxOver
    from attnsim.symbolic.stages import scores

    con, caps = layer.setup(u)
    (logit,) = scores.goals(u)
    pv = logit.grid
    h, i, j, e = (E.Var(f"{a}!") for a in ("h", "i", "j", "e"))
    ex = layer.LayerExecutor(
        con,
        300,
        sources=u.map.sources(),
        options={"pre": 0},
        capacity=caps,
        below={"h!": "hh", "i!": "n", "j!": "n", "e!": "d"},
        cuts={"attn.logit": logit},
    )
    ex.coords.update({h.name: u.H, i.name: u.N, j.name: u.N, e.name: u.D})
    got = ex.value(layer.node_of(u, "attn.exp"), pv.position(h, i, j, e))
    (m,) = sp.sympify(got).atoms(MaxOver)
    return got, m


def test_the_row_max_runs_over_the_allowed_keys_of_the_row() -> None:
    import sympy as sp

    from attnsim.symbolic.ite import Ite

    got, m = _exp_at_entry(_symbolic_u())
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
    _, m = _exp_at_entry(_symbolic_u())
    assert "oo" not in str(m.function) and "blocked" not in str(m.function), m  # no allowed-key guard
