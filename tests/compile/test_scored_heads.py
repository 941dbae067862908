"""Compiled value-scored heads (max and argmax): exact AHAT weights == the engine, and the softmax
version within the derived bound (T - 1) e^{-beta g} R (attnsim.compile.soft.range_bound)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim import TransformerLayer, UniversalSimulator
from attnsim.compile import CompiledTransformer, CompileError, soft
from attnsim.compile.compiler import compile_program
from attnsim.rasp import core as C
from attnsim.rasp.engine import evaluate
from attnsim.rasp.schedule import cost

VOCAB = range(-3, 4)


def _programs() -> dict[str, C.SOp]:
    g = C.imap(lambda p: p // 3, C.indices)
    blocks = C.select(g, g, "==")
    prefix = C.select(C.indices, C.indices, "<=")
    return {
        "block-max": C.maximum(blocks, C.tokens),
        "prefix-max": C.maximum(prefix, C.tokens),
        "prefix-argmax-position": C.argmax_aggregate(prefix, C.tokens, C.indices),  # mean position of the max
        "block-argmin-then-plain": C.aggregate(blocks, C.argmax_aggregate(blocks, C.apply("neg", C.tokens), C.indices)),
        "strict-prefix-max": C.maximum(C.select(C.indices, C.indices, "<"), C.tokens),  # empty at q = 0: 0
    }


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=1, max_size=7), st.sampled_from(sorted(_programs())))
def test_compiled_scored_heads_equal_the_engine(xs: list[int], name: str) -> None:
    prog = _programs()[name]
    ct = compile_program(prog, max_len=7, vocab=VOCAB)
    assert ct.n_layers == cost(prog).layers
    want = evaluate(prog, xs, "exact")
    assert list(ct.forward(xs, exact=True)) == list(want)
    assert np.max(np.abs(ct.forward(xs, exact=False) - np.array(want, dtype=float))) <= 1e-12


def test_a_score_without_a_finite_domain_is_refused() -> None:
    prog = C.maximum(C.select(C.indices, C.indices, "<="), C.apply("exp", C.tokens))
    with pytest.raises(CompileError, match=r"value-scored head .* finite"):
        compile_program(prog, max_len=4)


def test_softmax_version_within_the_derived_bound() -> None:
    """For every head and beta: measured |soft - hard| <= (T - 1) e^{-beta g} R, and the bound is
    reached within a factor (it is not vacuous: at beta = 1 some head errs by > 1e-3)."""
    rng = np.random.default_rng(0)
    worst_ratio = 0.0
    for name, prog in _programs().items():
        ct = compile_program(prog, max_len=7, vocab=VOCAB)
        for _ in range(5):
            xs = rng.integers(-3, 4, size=7)
            for row in soft.range_check(ct, xs, [1, 2, 4, 8, 16, 32]):
                assert row["error"] <= row["bound"] + 1e-12, (name, row)
                if row["bound"] > 0:
                    worst_ratio = max(worst_ratio, row["error"] / row["bound"])
    assert worst_ratio > 1e-3


def test_range_bound_formula() -> None:
    assert soft.range_bound(1.0, 1, 5.0, 0.0) == 0.0  # one key: softmax is hard
    assert soft.range_bound(0.5, 9, 2.0, 4.0) == pytest.approx(8 * np.exp(-2.0) * 2.0)


def test_compiled_u_checks_its_declared_logit_domain(tmp_path: Path) -> None:
    """Issue 30 item 2: U's program declares |attn.logit| <= LOGIT_BOUND; its compiled form refuses,
    in one line naming the head and the value, an input whose logits leave that range (U.run is
    right there), also after save/load; a wider domains= compiles a model that runs it.  Without
    the check (the mutation: the bound dropped) the compiled forward is silently wrong."""
    U = UniversalSimulator(max_len=3, d_model=2, n_heads=1, d_head=2, d_ff=2)
    T = TransformerLayer.random(d_model=2, n_heads=1, d_head=2, d_ff=2, seed=0)
    X = np.random.default_rng(1).normal(size=(2, 2))
    ct = compile_program(U.program, max_len=U.positions())
    big = T.with_options(scale=1e5)  # logits up to ~2.4e4
    seq = U.encode(big, X)
    assert np.max(np.abs(U.run(big, X) - big(X))) <= 1e-15  # measured 1.4e-17
    msg = r"^head attn\.max\.allowed\|scored:attn\.max: score attn\.logit = -23878\.2 at position 0 is outside "
    with pytest.raises(CompileError, match=msg + r"\[-10000, 10000\], where the compiled max is exact; .*wider$"):
        ct.forward(seq)
    with pytest.raises(CompileError, match=msg):
        CompiledTransformer.load(ct.save(tmp_path / "u.npz")).forward(seq)
    for lyr in ct.layers:  # the mutation: no check
        for h in lyr.heads:
            h.bound = None
    with np.errstate(all="ignore"):
        unchecked = U.decode(ct.forward(seq, exact=False), 2, 2)
    assert not np.max(np.abs(unchecked - big(X))) <= 1e-3  # measured: NaN on the second row
    wide = compile_program(U.program, max_len=U.positions(), domains=U.compile_domains(1e7))
    assert np.max(np.abs(U.decode(wide.forward(seq), 2, 2) - big(X))) <= 1e-15  # measured 1.4e-17
