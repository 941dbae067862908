"""Graph-level equivalence: no changed node is reachable from any program or intent built (dead code)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attnsim.rasp import core as C
from attnsim.verify.mutation.generate import Mutator


def unreachable(hook: Mutator, built: Sequence[Any]) -> tuple[bool, str]:
    """Dead code: no changed node is reachable from the program (or an intent) of any Construction
    built for the obligations and the example, so no output of the construction can change."""
    if not hook.log or not all(isinstance(a.node, C.RASPExpr) for a in hook.log):
        return False, "-"
    changed = {id(a.node) for a in hook.log}
    n = 0
    for con in built:
        program = getattr(con, "program", None)
        if not isinstance(program, C.RASPExpr):
            continue
        n += 1
        roots = [program, *(it.selector for it in getattr(con, "intents", ()))]
        if any(id(x) in changed for x in C.topological(roots)):
            return False, "-"
    if n == 0:
        return False, "-"
    return (
        True,
        (
            f"graph: the {len(changed)} changed node(s) are unreachable from the programs and intents "
            f"of all {n} Constructions built (dead code here)"
        ),
    )
