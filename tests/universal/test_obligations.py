"""U's float64 obligations past capacity 32 (issue 27): three bugs that only show there each fail them.

Backs Corollary 6.1 / Theorem 6 rows of paper_map.md (``simulator/numeric/cap64-*``, ``cap128-*``,
``simulator/shallow/numeric/cap34-*``, ``d33-*``).  Every bug is injected by monkeypatching U's
builder or its encoding, and each passes every capacity <= 32 run by construction."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from attnsim.catalog import load
from attnsim.proofs import registry
from attnsim.proofs.obligation import Result
from attnsim.rasp import core as C
from attnsim.universal import checks, record
from attnsim.universal.obligations import WIDE_CASES
from attnsim.universal.program import UniversalProgram
from attnsim.verify.runner import run_inline


@pytest.fixture(autouse=True)
def _fresh_u() -> Iterator[None]:
    """U is built once per capacity and cached: rebuild it under (and after) each injected bug."""
    checks._built.cache_clear()
    yield
    checks._built.cache_clear()


def _wide_results() -> list[Result]:
    load()
    tags = {c.tag for c in WIDE_CASES}
    ids = [o.id for o in registry.select("simulator") if "numeric/" in o.id and o.id.rsplit("/", 1)[1] in tags]
    assert len(ids) == len(WIDE_CASES) == 4
    return [run_inline(registry.by_id(i), 60.0) for i in ids]


def _capacity(u: UniversalProgram, size: str) -> int:
    """The capacity size ``size`` (N, D, ...) the program is built for; 0 when symbolic (the bug
    stays out of the Z3 builds)."""
    v = getattr(u, size)
    return v.value if isinstance(v, C.Size) and v.value is not None else 0


def test_the_wide_runs_pass_on_the_real_u() -> None:
    assert all(r.status == "passed" for r in _wide_results())


def test_a_logit_scale_squared_only_when_d_model_exceeds_32_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    orig = UniversalProgram._common

    def squared(self: UniversalProgram) -> None:
        orig(self)
        if _capacity(self, "D") > 32:
            self._g["scale"] = C.apply("mul", self._g["scale"], self._g["scale"])

    monkeypatch.setattr(UniversalProgram, "_common", squared)
    failed = [r.id for r in _wide_results() if r.status == "failed"]
    assert failed and all(c in " ".join(failed) for c in ("cap64", "cap128", "d33")), failed


def test_a_key_mask_coordinate_off_by_one_only_past_capacity_32_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    orig = UniversalProgram._gather

    def shifted(self: UniversalProgram, name: str, src: Any, onto: Any, coords: Any, **kw: Any) -> C.SOp:
        if name == "mask.blocked" and _capacity(self, "N") > 32:
            inner = coords
            coords = lambda cs: {**inner(cs), "j": inner(cs)["j"] + 1}
        return orig(self, name, src, onto, coords, **kw)

    monkeypatch.setattr(UniversalProgram, "_gather", shifted)
    failed = [r.id for r in _wide_results() if r.status == "failed"]
    assert all(c in " ".join(failed) for c in ("cap64", "cap128", "cap34")), failed


def test_ts_attention_scale_wrong_only_when_d_head_exceeds_8_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    orig = record.spec_operands

    def capped(T: Any, *args: Any, **kw: Any) -> Any:
        ops, sz = orig(T, *args, **kw)
        if sz["k"] > 8:  # as if d_head were capped at 8: 1 / sqrt(8) instead of T's scale
            ops["scale"] = np.full_like(ops["scale"], 1 / np.sqrt(8))
        return ops, sz

    monkeypatch.setattr(record, "spec_operands", capped)
    results = _wide_results()
    assert all(r.status == "failed" for r in results), [(r.id, r.status) for r in results]


# -- Theorem 6 in the default run: the layer is the conjunction of its goal obligations --------------
def test_the_layer_rests_on_its_layout_and_every_stage_goal_and_is_a_second_route() -> None:
    """simulator/{,shallow/}all-sizes/layer requires U's layout and each stage goal (one obligation
    each), and each goal requires the layout and the goals it reads; all are a second route to
    Theorem 6 (``deep_where`` coqc: the default run's where Coq is missing, issue 27)."""
    from attnsim.universal.layerproof.stages.chain import ORDER

    default = {o.id: o for o in registry.all_obligations(include_deep=True)}
    for tag in ("", "shallow/"):
        layer = default[f"simulator/{tag}all-sizes/layer"]
        goals = [
            f"simulator-stages/{tag}all-sizes/{s}/{g}" for s, g in checks.stage_goals(tag.rstrip("/") or "compact")
        ]
        assert len(goals) == 15 and set(layer.requires) == {f"simulator-stages/{tag}all-sizes/layout", *goals}
        act = default[f"simulator-stages/{tag}all-sizes/act/gram.u2.act"]
        pre = [g for g in goals if "/ffn/" in g]
        assert set(act.requires) == {f"simulator-stages/{tag}all-sizes/layout", *pre}
        assert list(dict.fromkeys(g.split("/")[-2] for g in goals)) == [s.name for s in ORDER]  # in order
        route = [
            layer,
            act,
            default[f"simulator-frame/{tag}all-sizes/stack"],
            default[f"simulator-frame/{tag}all-sizes/frame"],
        ]
        assert all(o.deep_where == ("coqc",) and not o.deep for o in route)
        assert not default[f"simulator-frame/{tag}all-sizes/base-case"].deep_where  # Coq does not see encode


def test_the_second_route_is_deep_only_where_coq_proves_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """With coqc installed the default run proves Theorem 6 and stacks in the kernel and our prover's
    route runs under --deep; without it, the default run takes our prover's route (issue 27: Theorem
    6 for all sizes in the default run, on either machine)."""
    import shutil

    layer = "simulator/all-sizes/layer"
    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: "/usr/bin/coqc" if name == "coqc" else real(name))
    assert layer not in {o.id for o in registry.all_obligations(include_deep=False)}
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "coqc" else real(name))
    default = {o.id for o in registry.all_obligations(include_deep=False)}
    assert layer in default and "simulator-stages/shallow/all-sizes/layout" in default


def test_the_layer_conjunction_fails_for_a_chain_that_is_not_the_whole_layer() -> None:
    """The conjunction's own check can fail: a stage missing, or a stage before one it reads."""
    from attnsim.universal.layerproof.stages.chain import ORDER

    assert checks.layer_check("compact")(10).ok is True
    short = checks.layer_check("compact", ORDER[:-1])(10)
    assert short.ok is False and "not the whole layer" in short.detail, short.detail
    swapped = checks.layer_check("compact", (ORDER[1], ORDER[0], *ORDER[2:]))(10)
    assert swapped.ok is False and "stage attention reads scores, not proven earlier" in swapped.detail, swapped.detail


# -- the reference's default attention scale past d_head 8 --------------------------------------
def _head_width_results() -> list[Result]:
    """The default run's reference-vs-torch obligations at d_head 9, 16 and 64."""
    load()
    ids = [o.id for o in registry.all_obligations(include_deep=False) if "/torch-head_width_k" in o.id]
    assert sorted(ids) == [f"simulator/numeric/torch-head_width_k{k}" for k in (16, 64, 9)]
    return [run_inline(registry.by_id(i), 60.0) for i in ids]


def test_the_reference_default_scale_matches_torch_past_d_head_8() -> None:
    """Corollary 6.1: the reference T's default scale is torch's 1/sqrt(d_head) at d_head 9, 16, 64
    (measured: 8.9e-16, 8.9e-16, 1.7e-15 from torch's float64 output), in the default verify run."""
    results = _head_width_results()
    assert all(r.status == "passed" for r in results), [(r.id, r.status, r.detail) for r in results]


def test_a_default_scale_wrong_only_when_d_head_exceeds_8_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bug these obligations are for: 1/sqrt(min(d_head, 8)) as the default scale passes every
    fixture and capacity-32 run (d_head <= 8) and the wide runs (an explicit scale); here it fails
    all three (off by 0.023, 0.19 and 1.2)."""
    from attnsim.universal import layer as reference
    from attnsim.universal.layer_arithmetic import inverse_sqrt

    monkeypatch.setattr(reference, "inverse_sqrt", lambda k, exact: inverse_sqrt(min(k, 8), exact=exact))
    results = _head_width_results()
    assert all(r.status == "failed" for r in results), [(r.id, r.status, r.detail) for r in results]
