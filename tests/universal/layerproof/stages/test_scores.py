"""U's attention stages for all capacities and sizes (attnsim.universal.layerproof): the logits U feeds
its softmax equal the encoder layer's specification; a wrong U fails with a counterexample."""

from __future__ import annotations

import pytest

from attnsim import UniversalSimulator
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.universal.layerproof.stages.scores import prove_scores
from attnsim.universal.program import UniversalProgram


def test_scores_equal_the_spec_for_every_size() -> None:
    out = prove_scores(UniversalSimulator.over_symbolic_capacity(), timeout=300)
    assert out.ok is True, out.detail
    assert (
        "pre = 0" in out.detail
        and "pre = 1" in out.detail
        and "mean of squares" in out.detail
        and "for all capacities" in out.detail
    )


def test_a_mask_read_transposed_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    real = UniversalProgram._gather

    def gather(self, name, src, onto, coords, **kw):  # type: ignore[no-untyped-def]
        if name == "mask.add":
            coords = lambda cs: {"i": cs["j"], "j": cs["i"]}  # additive[j, i]
        return real(self, name, src, onto, coords, **kw)

    monkeypatch.setattr(UniversalProgram, "_gather", gather)
    out = prove_scores(UniversalSimulator.over_symbolic_capacity(), timeout=300, cases=[{"pre": 0}])
    assert out.ok is False and out.detail.startswith("scores (pre = 0): attn.logit at attn.products: counterexample"), (
        out.detail
    )


def test_a_bias_read_from_the_wrong_part_of_the_record_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    real = UniversalProgram._projection

    def projection(self, prod1, t, t_at, tok_axis, onto, name):  # type: ignore[no-untyped-def]
        if name == "Q":  # Q's sum with K's bias (in_proj_bias row hh k + h k + c)
            s = self._sum(
                name,
                prod1,
                ("l",),
                onto,
                lambda cs: {"t": E.Const(t_at), "h": cs["h"], "i": cs[tok_axis], "c": cs["c"]},
            )
            b = self._gather(
                f"{name}.bias", self._rec["bqkv"], onto, lambda cs: {"t": E.Const(1), "h": cs["h"], "c": cs["c"]}
            )
            return C.apply("add", s, b).named(f"{name}.biased")
        return real(self, prod1, t, t_at, tok_axis, onto, name)

    monkeypatch.setattr(UniversalProgram, "_projection", projection)
    out = prove_scores(UniversalSimulator.over_symbolic_capacity(), timeout=300, cases=[{"pre": 0}])
    assert out.ok is False and "counterexample" in out.detail, out.detail


def test_a_layer_norm_mean_over_d_plus_1_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def rows_mean(self, name, onto, row, values):  # type: ignore[no-untyped-def]
        from attnsim.rasp.layout import GridRef

        s = self._sum(name, GridRef(values, self.map.x), ("l",), onto, lambda cs: {"i": row(cs)})
        return C.apply("div", s, C.apply("affine", self._d_b, params=(1, 1))).named(f"{name}.per_d")

    monkeypatch.setattr(UniversalProgram, "_rows_mean", rows_mean)
    out = prove_scores(UniversalSimulator.over_symbolic_capacity(), timeout=300, cases=[{"pre": 1}])
    assert out.ok is not True, out.detail
    assert out.detail.startswith("scores (pre = 1)"), out.detail


def test_the_logit_holds_one_padding_value_that_does_not_read_e() -> None:
    """At a padding row i >= n (X's row and the masks' row are 0 in the encoding) the logit at
    (h, i, j, e) is one value s~(h, i, j): what the attention stage reads there."""
    from attnsim.universal.layerproof.padding import prove_padding
    from attnsim.universal.layerproof.stages.scores import goals

    u = UniversalSimulator.over_symbolic_capacity()
    (goal,) = goals(u)
    out = prove_padding(u, goal, goal, [{"pre": 0}, {"pre": 1}], 300)
    assert out.ok is True, out.detail
    assert "at every padding row i >= n of attn.products" in out.detail, out.detail
    assert "U's attn.logit == s~(h, i, j), the value of attn.logit there (the arguments' only)" in out.detail
