"""One build path (issue 26 item 1): an integer call of a factory is its symbolic build, bound.

Backs every all-sizes row of paper_map.md (Lemma transpose, matmul, Lemma 3 softmax, ReLU, MaxMin,
the Faddeev-LeVerrier steps, linear attention, Linformer, parity): the all-sizes proof reads the
symbolic build, so the program a user runs with integers must be that build, bound.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim import lemmas
from attnsim.cli.main import main
from attnsim.constructions.construction import Construction, ConstructionError, size_args
from attnsim.constructions.det_n import steps as faddeev_steps
from attnsim.constructions.efficient import program as efficient
from attnsim.constructions.forms import program as forms
from attnsim.constructions.parity import program as kparity
from attnsim.proofs import registry
from attnsim.rasp.core import Size

# factory, its size parameters, one integer instance
FACTORIES: list[tuple[Callable[..., Construction], tuple[str, ...], tuple[int, ...]]] = [
    (lemmas.transpose, ("rows", "cols", "heads"), (3, 5, 2)),
    (lemmas.matmul, ("rows", "inner", "cols", "heads"), (2, 3, 4, 2)),
    (lemmas.softmax, ("rows", "cols", "heads"), (2, 80, 2)),
    (lemmas.masked_softmax, ("rows", "cols", "heads"), (2, 3, 2)),
    (lemmas.relu, ("length", "rows"), (4, 3)),
    (lemmas.maxmin, ("length", "rows"), (6, 2)),
    (forms.gathered_transpose, ("rows", "cols"), (2, 3)),
    (forms.gathered_permute, ("d0", "d1", "d2"), (2, 3, 4)),
    (forms.broadcast_gather, ("depth", "rows", "cols"), (2, 3, 4)),
    (forms.consumer_matmul, ("rows", "inner", "cols", "extra"), (2, 3, 4, 2)),
    (forms.two_axis_sum, ("depth", "rows", "width", "cols"), (2, 3, 4, 2)),
    (faddeev_steps.trace_step, ("n",), (4,)),
    (faddeev_steps.iteration_step, ("n", "k"), (4, 2)),
    (efficient.linear_attention, ("n", "d", "dv"), (3, 2, 2)),
    (efficient.linformer, ("n", "d", "dv", "k"), (3, 2, 2, 2)),
    (kparity.parity, ("length",), (6,)),
]

# the module: the facade re-exports the function
softmax_module = importlib.import_module("attnsim.constructions.softmax.program")
NAMES = st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=6)


def _fingerprints(con: Construction) -> tuple[str, ...]:
    return (con.program.fingerprint, *(it.selector.fingerprint for it in con.intents))


@pytest.mark.parametrize(("factory", "params", "ints"), FACTORIES, ids=lambda x: getattr(x, "__name__", ""))
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_bind_by_any_symbol_names_is_the_integer_call(
    factory: Callable[..., Construction], params: tuple[str, ...], ints: tuple[int, ...], data: Any
) -> None:
    names = data.draw(st.lists(NAMES, min_size=len(params), max_size=len(params), unique=True))
    symbolic = factory(**{p: Size(n) for p, n in zip(params, names, strict=True)})
    bound = symbolic.bind(**dict(zip(names, ints, strict=True)))
    direct = factory(*ints)
    assert _fingerprints(bound) == _fingerprints(direct)
    assert bound.out_shape == direct.out_shape and bound.paper_cost == direct.paper_cost


def test_a_bug_in_the_integer_path_only_fails_verify(monkeypatch: pytest.MonkeyPatch) -> None:
    """softmax wrong for cols >= 70 when called with integers (here: the stable form instead) is caught by
    softmax/exact/one-build-lemma, and `verify --only softmax/exact/one-build` exits 1."""
    real = softmax_module.softmax

    @functools.wraps(real)
    def integer_path_bug(rows: Any, cols: Any, heads: Any = None, *, stable: bool = False) -> Construction:
        if isinstance(cols, int) and cols >= 70:
            return real(rows, cols, heads, stable=not stable)
        return real(rows, cols, heads, stable=stable)

    monkeypatch.setattr(softmax_module, "softmax", integer_path_bug)
    out = registry.by_id("softmax/exact/one-build-lemma").check(60.0)
    assert out.ok is False and "softmax(rows=" in out.detail and "cols=71" in out.detail
    assert "integer call is not the bound symbolic build" in out.detail
    assert main(["verify", "--only", "softmax/exact/one-build", "-j", "1"]) == 1


def test_an_int_never_reaches_a_factory_body() -> None:
    """A factory body that was not decorated with @sized cannot take an integer path: size_args refuses."""
    with pytest.raises(ConstructionError, match="must be decorated with @sized"):
        size_args(rows=3)
    assert set(size_args(rows=Size("rows"), heads=None)) == {"rows", "heads"}


def test_an_integer_path_that_drops_the_input_check_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """Review finding: the comparison covers more than the program: an integer call whose input check
    (or spec, domain, reference) differs from the proved build's fails, naming it."""
    real = softmax_module.softmax

    @functools.wraps(real)
    def no_check(rows: Any, cols: Any, heads: Any = None, *, stable: bool = False) -> Construction:
        con = real(rows, cols, heads, stable=stable)
        return dataclasses.replace(con, check_inputs=None) if isinstance(cols, int) else con

    monkeypatch.setattr(softmax_module, "softmax", no_check)
    out = registry.by_id("softmax/exact/one-build-lemma").check(60.0)
    assert out.ok is False and "check none" in out.detail


def test_the_public_name_users_call_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 26 review: the check calls the factory by the name users call (``attnsim.lemmas.softmax``,
    the facade's re-export), not only through its defining module: a bug behind the public name alone
    fails softmax/exact/one-build-lemma, naming that name."""
    real = softmax_module.softmax

    @functools.wraps(real)
    def public_bug(rows: Any, cols: Any, heads: Any = None, *, stable: bool = False) -> Construction:
        return real(rows, cols, heads, stable=not stable if isinstance(cols, int) and cols >= 70 else stable)

    monkeypatch.setattr(lemmas, "softmax", public_bug)
    out = registry.by_id("softmax/exact/one-build-lemma").check(60.0)
    assert out.ok is False and "attnsim.lemmas.softmax(rows=" in out.detail and "cols=71" in out.detail


def test_a_size_named_self_binds() -> None:
    """Found by hypothesis: a size symbol named ``self`` (any identifier may name a size) collided
    with ``bind``'s own parameter; ``self`` is positional-only now."""
    from attnsim.constructions.maxmin.program import maxmin
    from attnsim.rasp import core as C

    symbolic = maxmin(C.Size("a"), rows=C.Size("self"))
    assert _fingerprints(symbolic.bind(a=6, self=2)) == _fingerprints(maxmin(6, rows=2))
