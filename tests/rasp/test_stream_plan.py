"""rasp/stream_plan.py: which equality sums share one pass over their pieces (issue 29).

A batch's values must be the sums one by one (tests/rasp/test_engine_fast_paths.py); here, which
sums are batched: a pass computes the maps under its sums' values once per piece, so sums that
share only a flag read from the header gain nothing from one pass, and U's sums over one grid
should each be one pass.
"""

from __future__ import annotations

from unittest.mock import patch

import numpy as np

from attnsim.rasp import core as C
from attnsim.rasp import engine, evaluate, stream_plan
from attnsim.rasp.structural_memo import RunStats
from attnsim.universal.universal import UniversalSimulator

from .test_streamed_values import plain, streamed


def _flag_only_sums() -> tuple[C.SOp, C.SOp, C.SOp, C.SOp]:
    """Two sums whose values share nothing but a flag: the token at position 0."""
    ix = C.indices
    flag = C.aggregate(C.select(ix, C.imap(lambda p: 0, ix), "=="), C.tokens).named("flag")
    u = C.apply("exp", C.aggregate(C.select(ix, C.imap(lambda p: (p * 5) % 13, ix), "=="), C.tokens))
    w = C.apply("exp", C.aggregate(C.select(ix, C.imap(lambda p: (p * 7) % 11, ix), "=="), C.tokens))
    s1 = C.aggregate(C.select(C.imap(lambda p: p % 3, ix), C.imap(lambda p: p % 4, ix), "=="), C.apply("mul", u, flag))
    s2 = C.aggregate(C.select(C.imap(lambda p: p % 5, ix), C.imap(lambda p: p // 3, ix), "=="), C.apply("mul", w, flag))
    return flag, s1, s2, C.apply("add", s1, s2)


def test_a_flag_read_from_one_position_is_the_same_everywhere() -> None:
    flag, s1, _, prog = _flag_only_sums()
    const = stream_plan.constant_nodes(C.topological([prog]))
    assert const[id(flag)] and not const.get(id(s1), False)


def test_sums_sharing_only_a_flag_are_not_batched() -> None:
    """Batching them would save nothing (the flag is one value) and hold both passes' pieces at
    once; the values are the same either way."""
    _, _, _, prog = _flag_only_sums()
    assert stream_plan.key_group_batches(C.topological([prog])) == {}
    toks = list(np.linspace(-1.0, 1.0, 30))
    with streamed(2, 3):
        np.testing.assert_allclose(evaluate(prog, toks), plain(prog, toks), rtol=1e-13, atol=1e-13)


def _u_batches() -> dict[str, list[str]]:
    U = UniversalSimulator(8, 8, 2, 4, 8, variant="compact")
    order = C.topological([U.program])
    label = {id(n): n.label for n in order}
    return {label[k]: [b.label for b in v] for k, v in stream_plan.key_group_batches(order).items()}


def test_u_sums_each_grid_of_ffn_terms_in_one_pass() -> None:
    """Theorem 6's U (compact): the nine sums of FFN 1's products (rgw, gw, bw for FFN 2's grid
    and for both sides of LayerNorm 2's Gram terms) are one pass over the (i, f, h, e) products,
    though gw's values are ready at the projections' turn; FFN 2's sum and LayerNorm 2's two
    statistics are one pass over the (i, e, f) products, though the statistics read R, whose
    groups are summed in an earlier batch."""
    got = _u_batches()
    ffn1 = [f"{g}.{t}.mean" for g in ("ffn2.u", "gram.u", "gram.u2") for t in ("rgw", "gw", "bw")]
    assert sorted(["ffn2.u.rgw.mean", *got["ffn2.u.rgw.mean"]]) == sorted(ffn1)
    assert got["out.ffn.mean"] == ["out.R2_sum.mean", "out.R2_sq.mean"]
    assert got["Q.mean"] == ["K.mean", "V.mean"]


def _exp_of_a_gather() -> C.SOp:
    """A streamed value over a gather: what two sums can share."""
    ix = C.indices
    return C.apply("exp", C.aggregate(C.select(ix, C.imap(lambda p: (p * 5) % 13, ix), "=="), C.tokens))


def _piece_positions(prog: C.SOp, plan: object = stream_plan.key_group_batches) -> int:
    """``RunStats.piece_positions`` of one streamed run (pieces of 4) on 30 tokens, with this batch plan."""
    stats = RunStats()
    with streamed(2, 4), patch.object(engine, "key_group_batches", plan):
        evaluate(prog, list(np.linspace(-1.0, 1.0, 30)), stats=stats)
    return stats.piece_positions


def test_piece_positions_count_work_done_again() -> None:
    """``RunStats.piece_positions`` counts a streamed value each time it is computed: the two
    sums of one value compute it (and the values under it) twice one by one, once in a batch."""
    ix, v = C.indices, _exp_of_a_gather()
    s1 = C.aggregate(C.select(C.imap(lambda p: p % 3, ix), C.imap(lambda p: p % 4, ix), "=="), v)
    s2 = C.aggregate(C.select(C.imap(lambda p: p % 5, ix), C.imap(lambda p: p // 3, ix), "=="), v)
    prog = C.apply("add", s1, s2)
    batched, alone = _piece_positions(prog), _piece_positions(prog, lambda order: {})
    # v, the gather under it and that gather's index map (30 positions each) once more
    assert batched > 0 and alone - batched == 3 * 30


def test_a_taken_branch_is_not_counted_as_work() -> None:
    """``where`` on a constant flag passes its branch's pieces on: ``piece_positions`` counts the
    branch's computation once, not again for the ``where``."""
    ix, v = C.indices, _exp_of_a_gather()
    sel = C.select(C.imap(lambda p: p % 3, ix), C.imap(lambda p: p % 4, ix), "==")
    counts = [_piece_positions(C.aggregate(sel, values)) for values in (v, C.apply("where", C.full(1), v, C.full(0)))]
    assert counts[0] == counts[1] > 0
