"""Stage ``act`` (attnsim.universal.layerproof.stages.act, Theorem 6 / Corollary 6.1: U's FFN 1
activation): U's ReLU, erf-GELU and tanh-GELU of the ffn stage's proven pre-activation equal the
spec's act for every capacity; a U whose gates select the wrong activation fails with a
counterexample naming the stage and the node."""

from __future__ import annotations

import pytest

from attnsim import UniversalSimulator
from attnsim.proofs.obligation import Outcome
from attnsim.rasp import core as C
from attnsim.universal.layerproof.stages import act, ffn


def _prove(u: UniversalSimulator, label: str, cases: list[dict[str, int]] | None = None) -> Outcome:
    cuts = {c.label: c for c in ffn.goals(u)}
    (goal,) = [g for g in act.goals(u) if g.label == label]
    return act.prove(u, goal, cuts, 900, cases)


@pytest.mark.parametrize("variant", ["compact", "shallow"])
@pytest.mark.parametrize("label", ["ffn2.u.act", "gram.u.act", "gram.u2.act"])
def test_an_activation_equals_the_spec_for_every_size(variant: str, label: str) -> None:
    out = _prove(UniversalSimulator.over_symbolic_capacity(variant), label)
    assert out.ok is True, out.detail
    assert f"U's {label} == its statement" in out.detail and "stated over the cuts U1 = u1" in out.detail, out.detail
    for case in ("gelu = 0, gelu_tanh = 0", "gelu = 1, gelu_tanh = 0", "gelu = 0, gelu_tanh = 1"):
        assert out.detail.count(case) == 2, out.detail  # the true rows, then the padding rows
    assert "premise: gelu and gelu_tanh are not both 1" in out.detail, out.detail
    assert "the value of ffn2.u.act there (the arguments' only)" in out.detail, out.detail


def test_a_tanh_gelu_branch_computing_erf_gelu_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """U whose gelu_tanh gate selects erf-GELU (the defect of issue 30, inside U) is refuted in the
    gelu_tanh case, with a counterexample naming the stage and the node."""
    real = C.apply
    monkeypatch.setattr(C, "apply", lambda name, *a, **kw: real("gelu" if name == "gelu_tanh" else name, *a, **kw))
    out = _prove(UniversalSimulator.over_symbolic_capacity(), "ffn2.u.act", [{"gelu": 0, "gelu_tanh": 1}])
    assert out.ok is False, out.detail
    assert out.detail.startswith("act (gelu = 0, gelu_tanh = 1): ffn2.u.act at ffn2.products: counterexample"), (
        out.detail
    )


def test_a_relu_branch_computing_erf_gelu_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    real = C.apply
    monkeypatch.setattr(C, "apply", lambda name, *a, **kw: real("gelu" if name == "relu" else name, *a, **kw))
    out = _prove(UniversalSimulator.over_symbolic_capacity(), "gram.u2.act")
    assert out.ok is False, out.detail
    assert out.detail.startswith("act (gelu = 0, gelu_tanh = 0): gram.u2.act at ln2.gram_terms: counterexample"), (
        out.detail
    )
