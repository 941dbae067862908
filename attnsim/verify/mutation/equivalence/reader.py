"""Reader-level equivalence: a changed index map read only by selectors that are all unchanged.

Each reader is proven to select the same (q, k) as it does on the original map, or, for a head with
an intent, to still meet that intent (which the original meets by its obligation)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any, cast

from attnsim.proofs.intents import check_intent
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.verify.mutation.equivalence.node import _arg_key, domain_of
from attnsim.verify.mutation.equivalence.selector import prove_same_selector
from attnsim.verify.mutation.equivalence.z3_proofs import _scope
from attnsim.verify.mutation.generate import Mutator, _short, _without_hook


def _reselect(sel: C.Select, original: Callable[[C.SOp], C.SOp]) -> C.Select:
    return C.Select(original(sel.keys), original(sel.queries), sel.cmp)


def consumers_equivalent(hook: Mutator, built: Sequence[Any], timeout: float) -> tuple[bool, str]:  # noqa: C901
    """A changed index map read only by selectors: every such selector, rebuilt on the original
    map, selects the same (q, k) at every position of its instance, for all sizes of the domain
    (e.g. a mask whose 'else' value changes from 0 to -1 while the selector tests mask == 1)."""
    maps = (C.Map, C.SequenceMap)
    if not hook.log or not all(a.op.startswith("expr:") and isinstance(a.node, maps) for a in hook.log):
        return False, "-"
    before = {id(a.node): a.before for a in hook.log}
    cases: dict[str, tuple[C.Select, C.Select, E.Expr, dict[str, int], tuple[E.Expr, ...], Any, Any]] = {}
    covered: set[int] = set()
    for con in built:
        layout, program = getattr(con, "layout", None), getattr(con, "program", None)
        if layout is None or not isinstance(program, C.RASPExpr):
            continue
        minimum, assume = domain_of(con)
        nodes = C.topological([program])
        if id(program) in before:
            return False, "-"  # the changed map is the output itself
        for n in nodes:
            hit = [c for c in n.children() if id(c) in before]
            if not hit:
                continue
            if not isinstance(n, C.Select):
                return False, "-"
            covered |= {id(c) for c in hit}

            def original(x: C.SOp) -> C.SOp:
                if id(x) not in before:
                    return x
                return cast(C.SOp, _without_hook(lambda: dataclasses.replace(cast(Any, x), fn=before[id(x)])))

            orig = cast(C.Select, _without_hook(functools.partial(_reselect, n, original)))
            # a head with an intent: its queries outside the intent's region are unspecified (no intent
            # reads them: every key region is a block, every block an intent's query region)
            its = [it for it in getattr(con, "intents", ()) if it.selector is n]
            region = tuple(it.queries for it in its[:1])
            key = f"{_arg_key(n.keys)}|{_arg_key(n.queries)}|{n.cmp}|{E.render(layout.length)}"
            key += f"|{sorted(minimum.items())}|{','.join(E.render(r) for r in region)}"
            cases.setdefault(key, (n, orig, layout.length, minimum, assume + region, its[0] if its else None, layout))
    if not cases or covered != set(before):
        return False, "-"
    proofs = []

    for new_sel, orig, length, minimum, assume, intent, layout in cases.values():
        if intent is not None:  # the changed head still meets its intent, which the original meets (its obligation)
            res = check_intent(intent, layout, timeout=timeout, bound=None if intent.parametric else 8)
            if res.ok is True:
                kind = _scope(res) if intent.parametric else "BOUNDED: every size <= 8"
                proofs.append(
                    f"z3 ({kind}): the changed head still meets its intent {intent.name!r} (as the original does, "
                    f"by that intent's obligation), so it selects the same keys at every query of the intent's region"
                )
                continue
        ok, why = prove_same_selector(new_sel, orig, timeout, length, _short(length, 40), minimum, assume)
        if not ok:
            return False, f"selector reading the changed map: {why}"
        proofs.append(why + (" (q within the head's intent query region)" if intent is not None else ""))
    return True, (
        "every reader of the changed map is a selector, proven unchanged: "
        + "; ".join(dict.fromkeys(proofs))
        + f" [{len(cases)} distinct selectors]"
    )
