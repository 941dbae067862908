"""Compile a GAHAT-RASP program to explicit transformer weights (no approximation): the driver.

Three passes over one intermediate form (:mod:`attnsim.compile.residual` says what each writes),
as Tracr's ``compiler/compiling.py`` runs its passes:

1. **schedule** (:func:`attnsim.rasp.schedule.layer_of`): each node's attention layer;
2. **lower** (:class:`attnsim.compile.lowering.Lowering`): every SOp held as a *linear form* over
   the residual dimensions, adding dimensions, MLP items and heads as it goes: affine maps fold
   into the forms that read them; functions on finite point sets are exact piecewise-linear
   lookups (:mod:`.lookups`); index maps and primitives are folded, looked up, exact ReLU units or
   explicit function nodes (:mod:`.maps`); selectors are attention scores with a margin and
   aggregates, widths and value-scored aggregates are heads (:mod:`.heads`);
3. **assemble** (:func:`attnsim.compile.assemble.assemble`): the matrices of every head and MLP
   stage, the embeddings and the read-out.

Residual layout: ``bos``, ``one`` (1 on tokens, 0 on BOS), ``tokens``, ``indices``, then one
dimension per non-linear SOp and per derived feature.

Before any of it, the compile's peak memory is estimated (:mod:`.memory`: positions x program
nodes, plus the entries of code and predicate tables) and a compile that would not fit in the
memory the machine has free is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from attnsim import resources
from attnsim.compile import memory
from attnsim.compile.assemble import assemble
from attnsim.compile.lowering import Lowering
from attnsim.compile.model import CompiledTransformer, CompileError
from attnsim.rasp import core as C
from attnsim.rasp import domain as D

Progress = Callable[[str, int, int], None]
"""``progress(phase, done, total)``: phase "lowering" counts program nodes, "positions" the rows of
the position embedding."""


def compile_program(
    program: C.SOp,
    max_len: int,
    vocab: Iterable[Any] | None = None,
    domains: dict[str, Iterable[Any]] | None = None,
    progress: Progress | None = None,
) -> CompiledTransformer:
    """Compile ``program`` for sequences of length <= ``max_len`` (see the module docstring).

    ``vocab``: the finite token set (categorical programs); ``domains``: finite value sets the
    caller asserts for labelled SOps; ``progress`` is called as the work advances.  Raises
    :class:`CompileError` naming the node that cannot be compiled exactly, or, before any work,
    giving the estimated memory when it exceeds the memory available.
    """
    try:
        low = Lowering(program, max_len, vocab, domains)  # checks the arguments; schedules the program
        vocab_size = len(low.vocab.points) if low.vocab is not None and low.vocab.points is not None else None
        refuse_past_memory(low.name(program), memory.estimate(program, max_len, vocab_size))
        low.progress = progress
        return assemble(low, low.realize(program))
    except (D.DomainError, C.ProgramError) as exc:
        raise CompileError(str(exc)) from None


def refuse_past_memory(what: str, est: memory.Estimate) -> None:
    """Raise :class:`CompileError` (one line, with the estimate) when ``est`` exceeds the memory
    available (:func:`memory.available_memory`; unknown or overridden: never refused, see
    :mod:`attnsim.resources`)."""
    why = resources.refused(est.bytes, memory.available_memory())
    if why is not None:
        raise CompileError(
            f"compiling {what} is estimated at {est.describe()}, {why}; or compile at smaller sizes "
            "or a shorter max_len"
        )
