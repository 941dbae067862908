"""Every interpreter of the program graph handles the value-scored head (or refuses it clearly):
binding, mutation, taint, the Z3 unrolling (docs/semantics.md, "Value-scored heads")."""

from __future__ import annotations

import numpy as np
import z3

from attnsim.constructions.z3prog import prove_for_all_inputs
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.bind import bind_program
from attnsim.rasp.engine import evaluate
from attnsim.verify.mutation import taint
from attnsim.verify.mutation.generate import Mutant, Mutator, node_mutations


def _blocks(width: C.Size | int) -> C.Selector:
    g = C.imap(lambda p: p // width, C.indices)
    return C.select(g, g, "==")


def test_bind_carries_the_score() -> None:
    n = C.Size("n")
    sel = _blocks(n)
    mx = C.maximum(sel, C.tokens)
    am = C.argmax_aggregate(sel, C.apply("neg", C.tokens), C.indices)
    prog = C.apply("add", mx, am)
    bound = bind_program(prog, {"n": 3})
    heads = [x for x in C.topological([bound]) if isinstance(x, C.Aggregate)]
    assert len(heads) == 2 and all(h.score is not None for h in heads)
    bmx = next(h for h in heads if h.score is h.values)  # the max head stays a max head
    assert bmx.values is not None
    x = np.array([1.0, 5, 5, -2, -3, -1])
    direct = C.apply(
        "add", C.maximum(_blocks(3), C.tokens), C.argmax_aggregate(_blocks(3), C.apply("neg", C.tokens), C.indices)
    )
    assert (
        list(evaluate(bound, x)) == list(evaluate(direct, x)) == [5 + 0] * 3 + [-1 + 4] * 3
    )  # block max + argmin position


def test_mutation_drops_the_score_and_keeps_it_otherwise() -> None:
    head = C.maximum(_blocks(3), C.tokens)
    ops = [op for _, _, op, _ in node_mutations(head)]
    assert ops == ["score:drop"]
    assert node_mutations(C.aggregate(_blocks(3), C.tokens)) == []
    hook = Mutator(Mutant("t", ("f", 1, 0, "Aggregate"), "score:drop", "d"))
    hook._apply(head)
    assert head.score is None and hook.log[0].before is head.values
    x = np.array([1.0, 5, 6, 0, 0, 3])
    assert list(evaluate(head, x)) == [4, 4, 4, 1, 1, 1]  # now the plain mean


def test_taint_follows_the_score() -> None:
    """A change of the score alone (values unchanged) may change which keys win: the head is tainted."""
    score = C.apply("neg", C.tokens)
    head = C.argmax_aggregate(_blocks(3), score, C.indices)
    sp = taint.Spread(taint.Positions(6, {}))
    sp.run(head, {id(score): E.Var(taint.POS.name).eq(1)}, {})
    t = sp.taint(head)
    assert t is not None and list(t) == [True, True, True, False, False, False]


def test_z3_unrolling_proves_a_prefix_max_and_an_argmax() -> None:
    prefix = C.select(C.indices, C.indices, "<=")  # key k <= query q
    mx = C.maximum(prefix, C.tokens)

    def prefix_max(xs: list[z3.ArithRef]) -> list[z3.ArithRef]:
        out, m = [], xs[0]
        for x in xs:
            m = z3.If(x > m, x, m)
            out.append(z3.ToReal(m))
        return out

    assert prove_for_all_inputs(mx, 4, prefix_max).ok is True
    assert prove_for_all_inputs(mx, 4, lambda xs: [z3.ToReal(x) for x in xs]).ok is False
    # argmax: the mean position of the prefix's maximal tokens, on 0/1 tokens: for a prefix with a 1,
    # the mean index of its ones; else the mean of 0..q
    am = C.argmax_aggregate(prefix, C.tokens, C.indices)

    def spec(xs: list[z3.ArithRef]) -> list[z3.ArithRef]:
        out = []
        for q in range(len(xs)):
            ones = z3.Sum([z3.If(xs[k] == 1, 1, 0) for k in range(q + 1)])
            at = z3.Sum([z3.If(xs[k] == 1, k, 0) for k in range(q + 1)])
            out.append(z3.If(ones == 0, z3.RealVal(q) / 2, z3.ToReal(at) / z3.ToReal(ones)))
        return out

    binary = lambda x: z3.Or(x == 0, x == 1)
    assert prove_for_all_inputs(am, 4, spec, binary).ok is True
