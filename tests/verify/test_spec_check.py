"""Every specification checked on its own (issue 26, part 2): the all-sizes proofs (Lemma transpose,
matmul, Lemma 3 softmax, ReLU, MaxMin, the Faddeev-LeVerrier steps, linear attention, Linformer,
k-PARITY, Theorem 6's encoder layer) trust their specs; these obligations compare each spec with
an independent textbook NumPy formula, and a spec made wrong (beyond a size constant too) fails."""

from __future__ import annotations

import dataclasses
import importlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnsim
from attnsim.cli.main import main
from attnsim.constructions.det_n.spec import ITERATION
from attnsim.constructions.softmax import reference as softmax_reference
from attnsim.constructions.softmax.spec import SOFTMAX
from attnsim.proofs import registry
from attnsim.symbolic.spec_language import Spec
from attnsim.verify import spec_check as SC
from attnsim.verify.spec_cases import CASES, SpecCase

PACKAGE = Path(attnsim.__file__).parent


def _case(attr: str) -> SpecCase:
    return next(c for c in CASES if c.spec_attr == attr)


def _spec_module(attr: str) -> ModuleType:
    """The folder's spec module declaring ``attr`` (where a test replaces it)."""
    return importlib.import_module(_case(attr).spec_module)


def _spec_modules() -> list[ModuleType]:
    """Every folder's ``spec.py`` (the constructions' and U's)."""
    paths = [*sorted(PACKAGE.glob("constructions/*/spec.py")), PACKAGE / "universal" / "spec.py"]
    return [importlib.import_module(".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts)) for p in paths]


def test_every_spec_has_its_independent_check() -> None:
    """No specification of any folder's spec.py is left unchecked; every check is registered."""
    declared = {(m.__name__, name) for m in _spec_modules() for name, v in vars(m).items() if isinstance(v, Spec)}
    assert declared == {(c.spec_module, c.spec_attr) for c in CASES}
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    registered = {o.id: o for o in registry.all_obligations()}
    for c in CASES:
        assert registered[c.id].method == "numeric" and registered[c.id].construction == c.construction


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_spec_equals_its_textbook_formula(case: SpecCase) -> None:
    out = SC.spec_check(case)(10.0)
    assert out.ok is True, out.detail
    res = SC.compare(case)
    assert res.assignments >= 5 and res.entries > 0
    for s, top in case.large.items():  # each size reached its large value (where the spec allows it)
        assert res.largest[s] >= top - 1, (s, res.largest)


def _times_when(base: Spec, size: str, bound: int, factor: Callable[[Any], Any]) -> Spec:
    """``base`` times ``factor(size)`` where size > bound (through the spec's own branch, alg.if_less)."""

    def entry(alg: Any, ops: Mapping[str, Any], h: Any, i: Any, j: Any, sz: Mapping[str, Any]) -> Any:
        right = base.entry(alg, ops, h, i, j, sz)
        return alg.if_less(bound, sz[size], lambda: right * factor(sz[size]), lambda: right)

    return dataclasses.replace(base, entry=entry)


def test_a_wrong_matmul_factor_beyond_70_fails_naming_the_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lemma (matmul): the spec times (k+1)/k when inner > 70 (what a program written with the same
    factor would be proved equal to) fails, at an inner beyond 70, naming spec, size and entry."""
    matmul_spec = _spec_module("MATMUL")
    wrong = _times_when(matmul_spec.MATMUL, "inner", 70, lambda k: (k + 1) / k)
    monkeypatch.setattr(matmul_spec, "MATMUL", wrong)
    case = _case("MATMUL")
    assert 70 in SC.spec_constants(case, [{"rows": 2, "inner": 2, "cols": 2, "heads": 1}])
    out = SC.spec_check(case)(10.0)
    assert out.ok is False
    assert "spec matmul is not the textbook formula" in out.detail and "inner=" in out.detail
    inner = int(out.detail.split("inner=")[1].split(",")[0])
    assert inner > 70


def test_a_wrong_factor_beyond_any_random_size_is_found_at_its_constant(monkeypatch: pytest.MonkeyPatch) -> None:
    """A factor wrong only beyond 300 (no random size reaches it): found at the constant + 1."""
    matmul_spec = _spec_module("MATMUL")
    monkeypatch.setattr(matmul_spec, "MATMUL", _times_when(matmul_spec.MATMUL, "inner", 300, lambda k: (k + 1) / k))
    out = SC.spec_check(_case("MATMUL"))(10.0)
    assert out.ok is False and "inner=301" in out.detail


def test_verify_exits_1_naming_the_spec_obligation(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`attnsim verify` on the spec obligation: exit 1, the row failed with the mismatch (the pool's
    workers are forked: they see the replaced spec)."""
    matmul_spec = _spec_module("MATMUL")
    monkeypatch.setattr(matmul_spec, "MATMUL", _times_when(matmul_spec.MATMUL, "inner", 70, lambda k: (k + 1) / k))
    assert main(["verify", "--only", "matmul/numeric/spec-independent", "--json", "-j", "1"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert [(r["id"], r["status"]) for r in rows] == [("matmul/numeric/spec-independent", "failed")]
    assert "inner=" in rows[0]["detail"]


def _maxmin_swapped(alg: Any, ops: Mapping[str, Any], h: Any, i: Any, j: Any, sz: Mapping[str, Any]) -> Any:
    return alg.if_even(
        j,
        lambda: alg.min(ops["A"][h, i, j], ops["A"][h, i, j + 1]),
        lambda: alg.max(ops["A"][h, i, j - 1], ops["A"][h, i, j]),
    )


def _softmax_over_one_less(alg: Any, ops: Mapping[str, Any], h: Any, i: Any, j: Any, sz: Mapping[str, Any]) -> Any:
    den = alg.sum(lambda m: alg.exp(ops["A"][h, i, m]), sz["cols"] - 1)
    return alg.if_less(1, sz["cols"], lambda: alg.exp(ops["A"][h, i, j]) / den, lambda: 1)


_ITERATION = ITERATION.entry  # the right entry, read before any test replaces the spec


def _iteration_over_k(alg: Any, ops: Mapping[str, Any], h: Any, i: Any, j: Any, sz: Mapping[str, Any]) -> Any:
    right = _ITERATION(alg, ops, h, i, j, sz)
    return right * (sz["k"] + 1) / sz["k"]  # divided by k instead of k + 1


WRONG: dict[str, tuple[str, Any]] = {
    "maxmin-swapped": ("MAXMIN", _maxmin_swapped),
    "softmax-over-cols-1": ("SOFTMAX", _softmax_over_one_less),
    "iteration-over-k": ("ITERATION", _iteration_over_k),
    "relu-at-1": ("RELU", lambda alg, ops, h, i, j, sz: alg.max(ops["A"][h, i, j], 1)),
    "transpose-heads-ignored": ("TRANSPOSE", lambda alg, ops, h, i, j, sz: ops["A"][0, j, i]),
    "parity-mod-3": (
        "PARITY",
        lambda alg, ops, h, i, j, sz: alg.mod(alg.sum(lambda m: ops["x"][0, 0, m], sz["length"]), 3),
    ),
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_each_wrong_spec_fails(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutations of several specs, each caught by its independent check."""
    attr, entry = WRONG[name]
    module = _spec_module(attr)
    monkeypatch.setattr(module, attr, dataclasses.replace(getattr(module, attr), entry=entry))
    out = SC.spec_check(_case(attr))(10.0)
    assert out.ok is False and "is not the textbook formula" in out.detail


def test_an_encoder_layer_wrong_beyond_d_12_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """Theorem 6's spec (ENCODER_LAYER) scaled by 1.001 when d_model > 12: found at d = 13."""
    layer_spec = _spec_module("ENCODER_LAYER")
    monkeypatch.setattr(layer_spec, "ENCODER_LAYER", _times_when(layer_spec.ENCODER_LAYER, "d", 12, lambda d: 1.001))
    case = _case("ENCODER_LAYER")
    assert 12 in SC.spec_constants(case, [dict.fromkeys(case.spec.sizes, 2)])
    out = SC.spec_check(case)(10.0)
    assert out.ok is False and "d=" in out.detail


def test_traced_sizes_record_the_constants_they_are_compared_with() -> None:
    seen: set[int] = set()
    n = SC.TracedSize(5, seen)
    assert (n - 1 > 70) is False and (2 * n <= 9) is False and n % 2 == 1 and n == n
    assert seen == {70, 9, 1} and isinstance(n + 1, SC.TracedSize)
    assert list(range(n)) == [0, 1, 2, 3, 4] and np.zeros(n).shape == (5,)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(1, 3), st.integers(0, 2**31 - 1))
def test_softmax_spec_and_reference_agree_on_random_rows(rows: int, cols: int, heads: int, seed: int) -> None:
    """Lemma 3 (softmax): hypothesis over small shapes (the obligation covers the large ones)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(0, 3, size=(heads, rows, cols))
    got = SOFTMAX.at(rows=rows, cols=cols, heads=heads).evaluate({"A": a}, int)
    assert np.allclose(got, softmax_reference.softmax({"A": a}, {}), rtol=1e-9, atol=1e-12)


def test_the_size_plan_covers_constants_and_large_values() -> None:
    case = _case("MAXMIN")
    plan = SC.size_plan(case, {70}, np.random.default_rng(0))
    assert all(sz["n"] % 2 == 0 for sz in plan)  # only where the spec is stated (even widths)
    assert {70} <= {sz["n"] for sz in plan} and {69, 71} <= {sz["rows"] for sz in plan}
    assert max(sz["n"] for sz in plan) == case.large["n"]
