"""The generalized forms U is built from: their obligations (registered by :mod:`attnsim.catalog`)."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable

from attnsim.constructions.checks import (
    intent_obligations,
    layout_obligation,
    standard_obligations,
)
from attnsim.constructions.construction import Construction
from attnsim.constructions.forms import program as forms
from attnsim.proofs.obligation import Obligation
from attnsim.rasp import core as C
from attnsim.symbolic.program_equals_spec import all_sizes_obligations

# -- the generalized forms U is built from (attnsim.constructions.forms.program) ----------------------------------
_FORMS: dict[str, tuple[Callable[..., Construction], tuple[str, ...], str, list[tuple[int, ...]]]] = {
    # name: (factory, size names, statement, instances: every size in {1, 2} plus distinct sizes)
    "gathered-transpose": (
        forms.gathered_transpose,
        ("rows", "cols"),
        "program (one gather_onto) == spec out[i, j] = A[j, i], every rows, cols and entry",
        [*itertools.product((1, 2, 3), repeat=2)],
    ),
    "gathered-permute": (
        forms.gathered_permute,
        ("d0", "d1", "d2"),
        "program (one gather_onto) == spec out[a, b, c] = A[c, a, b], every d0, d1, d2 and entry",
        [*itertools.product((1, 2), repeat=3), (2, 3, 4), (4, 2, 3)],
    ),
    "broadcast-gather": (
        forms.broadcast_gather,
        ("depth", "rows", "cols"),
        "program (one gather_onto, a constant coordinate) == spec out[i, j] = A[0, j], every size and entry",
        [*itertools.product((1, 2), repeat=3), (3, 2, 4)],
    ),
    "consumer-matmul": (
        forms.consumer_matmul,
        ("rows", "inner", "cols", "extra"),
        "program (two gather_onto, contract at the consumer) == spec out[i, j, m] = sum_{l < inner} A[i, l] "
        "B[l, j], every m < extra, every size and entry",
        [*itertools.product((1, 2), repeat=4), (2, 3, 4, 2), (3, 2, 2, 3)],
    ),
    "two-axis-sum": (
        forms.two_axis_sum,
        ("depth", "rows", "width", "cols"),
        "program (contract over two axes) == spec out[i, j] = sum_{e < depth} sum_{w < width} A[e, i, w], "
        "every j < cols, every size and entry",
        [*itertools.product((1, 2), repeat=4), (2, 3, 4, 2), (3, 2, 2, 3)],
    ),
}


def _symbolic(make: Callable[..., Construction], names: tuple[str, ...]) -> Construction:
    return make(*map(C.Size, names))


def forms_obligations() -> Iterable[Obligation]:
    for cid, (make, names, statement, instances) in _FORMS.items():
        ref = make(*instances[-1]).paper_ref
        yield from all_sizes_obligations(cid, ref, [functools.partial(_symbolic, make, names)], statement)
        yield from intent_obligations(cid, ref, functools.partial(make, *instances[-1]))
        yield layout_obligation(cid, ref, functools.partial(make, *instances[-1]))
        for sizes in instances:
            yield from standard_obligations(cid, ref, functools.partial(make, *sizes), numeric_tol=1e-15)


__all__ = ["forms_obligations"]
