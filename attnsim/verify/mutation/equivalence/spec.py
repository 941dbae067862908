"""Spec-level equivalence, for a moved scratch block only.

An ``all-sizes`` obligation proved the mutated build equal to its independent spec for every size,
every instance built is that build bound, and the moved block holds no operand and no output, so
encoding and decoding are unchanged."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.layout import Block
from attnsim.verify.mutation.generate import Mutator


def spec_equivalent(hook: Mutator, built: Sequence[Any], symbolic: Sequence[tuple[str, list[Any]]]) -> tuple[bool, str]:  # noqa: C901
    """Equivalent by the specification, for a mutant that only moves intermediate blocks (``offset:+1``
    of a block holding neither an operand nor the output of any Construction built: encoding and
    decoding are unchanged, the program addresses its own scratch channel one position further).
    An ``all-sizes`` obligation proved the mutated build, over unbound sizes, equal to its independent
    spec for every size, and every instance built is that build bound (same program and layout): the
    mutant computes the spec, as the original does by the same obligation."""
    if not hook.log or not all(a.op == "offset:+1" and isinstance(a.before, Block) for a in hook.log):
        return False, "-"
    moved = {a.before.name for a in hook.log}
    cons = [
        c
        for c in built
        if getattr(c, "layout", None) is not None and isinstance(getattr(c, "program", None), C.RASPExpr)
    ]
    if not cons or any(moved & {*c.inputs, c.output} for c in cons):
        return False, "-"
    proven = [
        (oid, c)
        for oid, cs in symbolic
        if "/all-sizes/" in oid
        for c in cs
        if getattr(c, "layout", None) is not None and c.free_sizes
    ]
    if not proven:
        return False, "-"

    def same(a: Any, b: Any) -> bool:
        def key(lay: Any) -> list[str]:
            dims = [(x.name, x.channel, x.offset, x.rows, x.cols, x.stack) for x in lay.blocks]
            return [E.render(lay.length), *(f"{n}@{ch}:" + ",".join(E.render(e) for e in es) for n, ch, *es in dims)]

        return bool(a.program.fingerprint == b.program.fingerprint and key(a.layout) == key(b.layout))

    def binds_to(sym: Any, inst: Any) -> bool:  # the same build, or that build bound at the instance's sizes
        if inst.free_sizes:
            return bool(inst.free_sizes == sym.free_sizes) and same(sym, inst)
        if set(inst.sizes) != set(sym.free_sizes):
            return False
        try:
            return same(sym.bind(**inst.sizes), inst)
        except Exception:
            return False

    for c in cons:
        if not any(binds_to(sym, c) for _, sym in proven):
            return False, f"instance {c.name} {c.sizes} is no binding of an all-sizes-proven build"
    ids = sorted({oid for oid, _ in proven})
    return True, (
        f"spec: {', '.join(ids)} proved the mutated build = its independent spec for all sizes; all "
        f"{len(cons)} Constructions built are that build bound; the moved block(s) {', '.join(sorted(moved))} "
        "hold no operand and no output (encoding and decoding unchanged)"
    )
