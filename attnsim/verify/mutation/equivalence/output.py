"""Output-level equivalence: every changed instance is a fixed program with a SymPy output proof.

Every changed instance has no size symbols and a SymPy obligation proved its output equal to the
reference on symbolic inputs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attnsim.constructions.construction import Construction
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.verify.mutation.generate import Mutator


def _instance(con: Construction) -> tuple[str, tuple[tuple[str, int], ...]]:
    return (E.render(con.layout.length), tuple(sorted(con.sizes.items())))


def output_equivalent(
    hook: Mutator, built: Sequence[Any], symbolic: Sequence[tuple[str, list[Any]]]
) -> tuple[bool, str]:
    """Equivalent on the outputs: every instance the mutant changed has no size symbols (it is one
    fixed program) and a SymPy obligation proved that instance's output = the reference on symbols."""
    changed = {id(a.node) for a in hook.log}
    seen: set[int] = set()
    needed: dict[tuple[str, tuple[tuple[str, int], ...]], bool] = {}
    for con in built:
        program = getattr(con, "program", None)
        if getattr(con, "layout", None) is None or not isinstance(program, C.RASPExpr):
            continue
        hit = {id(n) for n in C.topological([program])} & changed
        if hit:
            seen |= hit
            needed[_instance(con)] = not con.sizes
    if not needed or seen != changed:
        return False, "-"
    if not all(needed.values()):
        return False, "-"
    covered: dict[tuple[str, tuple[tuple[str, int], ...]], str] = {}
    for oid, cons in symbolic:
        for con in cons:
            if getattr(con, "layout", None) is not None:  # Constructions (built also holds Intents)
                covered.setdefault(_instance(con), oid)
    missing = [k for k in needed if k not in covered]
    if missing:
        return False, f"{len(missing)} changed instance(s) without a SymPy proof"
    ids = sorted({covered[k] for k in needed})
    return True, (
        f"sympy: {', '.join(ids)} proved the mutant's output = the reference for all symbolic inputs, "
        f"and every changed instance is a fixed program (no size symbols; {len(needed)} instance(s))"
    )
