"""The steps of det(n) / inverse(n) by Faddeev-LeVerrier, each proven program == spec for every n.

``faddeev_ref`` chains, in a Python loop over k, the composable forms below; each kind of step is
built here on its own, over unbound sizes (n, and an ``offset`` >= 0 and ``pad`` >= 0 that place
the operands anywhere in a longer sequence, as composition needs), with an independent
specification (``spec.py``):

* ``trace``: tr A = n x mean over the diagonal keys (``trace_ref``);
* ``frobenius``: <X, Y> = rows cols x mean over the block (``frobenius_ref``; Y = 2X + 1 here);
* ``first-step``: M_2 = A - tr(A) I (``trace_ref`` + ``plus_identity``);
* ``general-step``: M' = A M + c I, c an operand (``matmul_ref`` + ``plus_identity``);
* ``coefficient-step``: tr(A M) read as <A^T, M> (``transpose_ref`` on M's positions + ``frobenius_ref``).

The induction over k: det(n)'s loop calls ``faddeev_iteration_ref`` at each k = 1 .. n - 1, the
very form ``iteration_step`` proves for every n and every k (base: ``trace`` gives c_{n-1};
step: (M_k, c_{n-k}) -> c_{n-k-1}).  NOT machine-checked for every n: that the loop wires the
steps (each reads the previous one's output block; det = (-1)^n c_0, A^-1 = -M_n / c_0), which
holds by the loop's code and is checked by det/inverse's own sympy and exact obligations at the
listed n; and the Faddeev-LeVerrier identity that makes the chain compute det and A^-1, which is
cited (Faddeev and Sominsky 1949; Householder, *The Theory of Matrices in Numerical Analysis*,
1964, Sec. 6.7), not proven.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from attnsim.constructions.construction import Construction, size_args, sized
from attnsim.constructions.det3.program import scalar_block
from attnsim.constructions.det_n import spec as specs
from attnsim.constructions.det_n.program import faddeev_iteration_ref, frobenius_ref, plus_identity, trace_ref
from attnsim.constructions.matmul.program import matmul_ref
from attnsim.constructions.transpose.program import transpose_ref
from attnsim.proofs.obligation import Obligation
from attnsim.rasp import core as C
from attnsim.rasp.intent import Intent
from attnsim.rasp.intent import K as K_POS
from attnsim.rasp.intent import Q as Q_POS
from attnsim.rasp.layout import Block, Layout, MatRef
from attnsim.symbolic.program_equals_spec import all_sizes_obligations

STEPS_ID = "faddeev-steps"
STEPS_REF = "det(n) / inverse(n) by Faddeev-LeVerrier (beyond the paper): its steps"
OFFSET, PAD = C.Size("offset"), C.Size("pad")
N, K, ROWS, COLS = C.Size("n"), C.Size("k"), C.Size("rows"), C.Size("cols")  # the default: unbound


def _padded(*blocks: Block) -> Layout:
    """The blocks inside a longer sequence: ``pad`` >= 0 positions after them."""
    return Layout.of(*blocks, length=Layout.of(*blocks).length + PAD)


def _anywhere(intents: Sequence[Intent]) -> list[Intent]:
    """Intents (and so the proofs) for every offset >= 0 and pad >= 0; other sizes are >= 1."""
    return [dataclasses.replace(it, minimum=(("offset", 0), ("pad", 0), *it.minimum)) for it in intents]


def _step(program: C.SOp, blocks: Sequence[Block], inputs: tuple[str, ...], ref: Any, intents: Any, spec: Any) -> Any:
    return Construction(
        STEPS_ID,
        STEPS_REF,
        program,
        _padded(*blocks),
        inputs,
        ref,
        intents=_anywhere(intents),
        specification=spec,
        exact=True,
    )


@sized(n="n")
def trace_step(n: int | C.Size = N) -> Construction:
    """tr(A) of an n x n A at any offset (``trace_ref``), read at position 0."""
    sym = size_args(n=n)
    a_blk = Block.of("A", OFFSET, sym["n"], sym["n"])
    res, intents = trace_ref(MatRef(C.tokens, a_blk), name="out")
    ref = lambda a, backend="numpy": a.trace()
    return _step(res.sop, (a_blk, res.block), ("A",), ref, intents, specs.TRACE.at(n=sym["n"]))


@sized(rows="rows", cols="cols")
def frobenius_step(rows: int | C.Size = ROWS, cols: int | C.Size = COLS) -> Construction:
    """<A, 2A + 1> = Sum_ij A_ij (2 A_ij + 1) (``frobenius_ref``; y = 2A + 1 so that x != y)."""
    sym = size_args(rows=rows, cols=cols)
    a_blk = Block.of("A", OFFSET, sym["rows"], sym["cols"])
    y = MatRef(C.apply("affine", C.tokens, params=(2, 1)), dataclasses.replace(a_blk, name="Y", channel="Y"))
    res, intents = frobenius_ref(MatRef(C.tokens, a_blk), y, name="out")
    spec = specs.FROBENIUS.at(rows=sym["rows"], cols=sym["cols"])
    ref = lambda a, backend="numpy": (a * (2 * a + 1)).sum()
    return _step(res.sop, (a_blk, res.block), ("A",), ref, intents, spec)


@sized(n="n")
def first_step(n: int | C.Size = N) -> Construction:
    """M_2 = A + c_{n-1} I with c_{n-1} = -tr(A) (``trace_ref`` + ``plus_identity``, as in ``faddeev_ref``)."""
    sym = size_args(n=n)
    a_blk = Block.of("A", OFFSET, sym["n"], sym["n"])
    a = MatRef(C.tokens, a_blk)
    tr, intents = trace_ref(a, name="tr")
    m2 = plus_identity(a, C.apply("scale", tr.sop, params=(-1,)), "out")
    ref = lambda a, backend="numpy": a - np.trace(a) * np.eye(len(a))
    return _step(m2.sop, (a_blk, m2.block), ("A",), ref, intents, specs.FIRST_STEP.at(n=sym["n"]))


@sized(n="n")
def general_step(n: int | C.Size = N) -> Construction:
    """M' = A M + c I for n x n A, M and an operand c: the step k >= 2 (``matmul_ref`` + ``plus_identity``).

    c is broadcast by one gather head (in ``faddeev_ref`` it is c_{n-k}, computed by the previous
    coefficient step); the product reuses the matmul lemma's composable form as is."""
    sym = size_args(n=n)
    size = sym["n"]
    a_blk = Block.of("A", OFFSET, size, size)
    m_blk = Block.of("M", a_blk.end_expr(), size, size)
    c_blk = Block.of("c", m_blk.end_expr(), 1, 1)
    prod, intents = matmul_ref(MatRef(C.tokens, a_blk), MatRef(C.tokens, m_blk), name="P")
    c_sel = C.select(C.indices, C.imap(lambda p: c_blk.position(0, 0), C.indices).named("c.source"), "==")
    c_all = C.aggregate(c_sel.named("c.broadcast"), C.tokens).named("c.everywhere")
    out = plus_identity(prod, c_all, "out")
    intents = [
        *intents,
        Intent("broadcast_c", c_sel, K_POS.eq(c_blk.position(0, 0)), out.block.contains(Q_POS), "c everywhere"),
    ]

    def reference(a: Any, m: Any, c: Any, backend: str = "numpy") -> Any:
        return a @ m + c.reshape(-1)[0] * np.eye(len(a))

    blocks = (a_blk, m_blk, c_blk, *prod.aux, prod.block, out.block)
    spec = specs.GENERAL_STEP.at(n=size)
    return _step(out.sop, blocks, ("A", "M", "c"), reference, intents, spec)


@sized(n="n")
def coefficient_step(n: int | C.Size = N) -> Construction:
    """tr(A M) read as <A^T, M>: ``transpose_ref`` placed on M's positions, then ``frobenius_ref``."""
    sym = size_args(n=n)
    size = sym["n"]
    a_blk = Block.of("A", OFFSET, size, size)
    m_blk = Block.of("M", a_blk.end_expr(), size, size)
    at, intents = transpose_ref(MatRef(C.tokens, a_blk), offset=m_blk.offset, name="At")
    f, more = frobenius_ref(at, MatRef(C.tokens, m_blk), name="out")
    ref = lambda a, m, backend="numpy": np.trace(a @ m)
    blocks = (a_blk, m_blk, at.block, f.block)
    spec = specs.COEFFICIENT_STEP.at(n=size)
    return _step(f.sop, blocks, ("A", "M"), ref, [*intents, *more], spec)


@sized(n="n", k="k")
def iteration_step(n: int | C.Size = N, k: int | C.Size = K) -> Construction:
    """One whole iteration k of ``faddeev_ref``, k symbolic, built by the very function det(n)'s loop
    calls (``faddeev_iteration_ref``): M_{k+1} = A M_k + c I, then c' = -<A^T, M_{k+1}> / (k + 1)."""
    sym = size_args(n=n, k=k)
    size = sym["n"]
    a_blk = Block.of("A", OFFSET, size, size)
    m_blk = Block.of("M", a_blk.end_expr(), size, size)
    c_blk = Block.of("c", m_blk.end_expr(), 1, 1)
    a = MatRef(C.tokens, a_blk)
    c_sel = C.select(C.indices, C.imap(lambda p: c_blk.position(0, 0), C.indices).named("c.source"), "==")
    c_all = C.aggregate(c_sel.named("c.broadcast"), C.tokens).named("c.everywhere")
    intents: list[Intent] = [
        Intent("broadcast_c", c_sel, K_POS.eq(c_blk.position(0, 0)), Q_POS >= 0, "c everywhere")
    ]
    aux: list[Block] = []
    _, c_next = faddeev_iteration_ref(a, MatRef(C.tokens, m_blk), c_all, sym["k"], "it", "out", {}, intents, aux)

    def reference(a: Any, m: Any, c: Any, backend: str = "numpy", sizes: dict[str, int] | None = None) -> Any:
        kk = (sizes or {})["k"]  # the bound step index (Construction.reference passes the sizes)
        return -np.trace(a @ (a @ m + c.reshape(-1)[0] * np.eye(len(a)))) / (kk + 1)

    blocks = (a_blk, m_blk, c_blk, *aux, scalar_block("out"))
    spec = specs.ITERATION.at(n=size, k=sym["k"])
    return _step(c_next, blocks, ("A", "M", "c"), reference, intents, spec)


STEPS: dict[str, tuple[Callable[[], Construction], str]] = {
    "trace": (trace_step, "program == spec tr A = sum_l A[l, l], for every n, offset and padding"),
    "frobenius": (frobenius_step, "program == spec <A, 2A + 1>, for every rows, cols, offset and padding"),
    "first-step": (first_step, "program == spec M_2 = A - tr(A) I, for every n, offset and padding"),
    "general-step": (general_step, "program == spec M' = A M + c I (c an operand), for every n, offset, padding"),
    "coefficient-step": (coefficient_step, "program == spec <A^T, M> = tr(A M), for every n, offset and padding"),
    "iteration": (
        iteration_step,
        "program == spec c' = -tr(A (A M + c I)) / (k + 1) for every n and every step index k (one symbolic-k "
        "iteration of the loop, whose constant is the same size expression det(n) binds at each k)",
    ),
}


def faddeev_step_obligations() -> Iterable[Obligation]:
    """One ``all-sizes`` obligation per kind of step (see the module docstring for what is not proven)."""
    for detail, (factory, statement) in STEPS.items():
        yield from all_sizes_obligations(STEPS_ID, STEPS_REF, [factory], statement=statement, detail=detail)


__all__ = [
    "STEPS_ID",
    "coefficient_step",
    "faddeev_step_obligations",
    "first_step",
    "frobenius_step",
    "general_step",
    "iteration_step",
    "trace_step",
]
