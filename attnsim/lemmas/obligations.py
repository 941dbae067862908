"""The lemma obligations that `attnsim verify` runs (sizes chosen per the lemma issue)."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable

from attnsim.lemmas import forms
from attnsim.lemmas.checks import intent_obligations, layout_obligation, standard_obligations
from attnsim.lemmas.construction import Construction
from attnsim.lemmas.matmul import PAPER_REF as MATMUL_REF
from attnsim.lemmas.matmul import matmul
from attnsim.lemmas.transpose import PAPER_REF as TRANSPOSE_REF
from attnsim.lemmas.transpose import transpose
from attnsim.proofs.obligation import Obligation
from attnsim.proofs.registry import ConstructionEntry
from attnsim.rasp import core as C
from attnsim.symbolic.program_equals_spec import all_sizes_obligations


def transpose_obligations() -> Iterable[Obligation]:
    ref = TRANSPOSE_REF
    rows, cols, heads = C.Size("rows"), C.Size("cols"), C.Size("heads")
    yield from all_sizes_obligations(
        "transpose",
        ref,
        [lambda: transpose(rows, cols), lambda: transpose(rows, cols, heads=heads)],
        statement="program == spec out[h, i, j] = A[h, j, i], for every rows, cols (and heads), every entry",
    )
    yield from intent_obligations("transpose", ref, lambda: transpose(2, 3, heads=2))
    yield layout_obligation("transpose", ref, lambda: transpose(2, 3, heads=2))
    for r, c in itertools.product((1, 2, 3), repeat=2):
        yield from standard_obligations("transpose", ref, functools.partial(transpose, r, c), numeric_tol=0.0)
    yield from standard_obligations(
        "transpose", ref, lambda: transpose(64, 64), sympy_sizes=False, exact=False, numeric_tol=0.0
    )
    # multi-head instance: a head-index error (h -> h+1, a swapped head term) changes the output here
    yield from standard_obligations("transpose", ref, lambda: transpose(2, 3, heads=2), numeric_tol=0.0)


def matmul_obligations() -> Iterable[Obligation]:
    ref = MATMUL_REF
    rows, inner, cols, heads = C.Size("rows"), C.Size("inner"), C.Size("cols"), C.Size("heads")
    yield from all_sizes_obligations(
        "matmul",
        ref,
        [lambda: matmul(rows, inner, cols), lambda: matmul(rows, inner, cols, heads=heads)],
        statement="program == spec out[h, i, j] = sum_{l < inner} A[h, i, l] B[h, l, j], every size and entry",
    )
    yield from intent_obligations("matmul", ref, lambda: matmul(2, 3, 2, heads=2))
    yield layout_obligation("matmul", ref, lambda: matmul(2, 3, 2, heads=2))
    for r, k, c in itertools.product((1, 2, 3), repeat=3):
        yield from standard_obligations("matmul", ref, functools.partial(matmul, r, k, c))
    yield from standard_obligations("matmul", ref, lambda: matmul(4, 4, 4), exact=False, numeric_tol=None)
    yield from standard_obligations("matmul", ref, lambda: matmul(64, 64, 64), sympy_sizes=False, exact=False)
    # multi-head instance with rows mod cols != 0: head-index errors in the A or B source change the output
    yield from standard_obligations("matmul", ref, lambda: matmul(3, 2, 2, heads=2))


# -- the generalized forms U is built from (attnsim.lemmas.forms) ----------------------------------
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


#: The constructions this module declares (registered by :mod:`attnsim.catalog`).
CONSTRUCTIONS = (
    ConstructionEntry("transpose", TRANSPOSE_REF, lambda: transpose(2, 3)),
    ConstructionEntry("matmul", MATMUL_REF, lambda: matmul(2, 3, 2)),
    ConstructionEntry("gathered-transpose", forms.TRANSPOSE_REF, lambda: forms.gathered_transpose(2, 3)),
    ConstructionEntry("gathered-permute", forms.TRANSPOSE_REF, lambda: forms.gathered_permute(2, 3, 4)),
    ConstructionEntry("broadcast-gather", forms.TRANSPOSE_REF, lambda: forms.broadcast_gather(2, 3, 4)),
    ConstructionEntry("consumer-matmul", forms.MATMUL_REF, lambda: forms.consumer_matmul(2, 3, 4, 2)),
    ConstructionEntry("two-axis-sum", forms.MATMUL_REF, lambda: forms.two_axis_sum(2, 3, 4, 2)),
)
