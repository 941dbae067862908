"""Which values of a run are streamed, kept, or summed together (static plans over the program).

:func:`streamable_nodes`: the values every reader reads at its own positions or by groups in key
order (streamed, ``Lazy``, when long); :func:`position_only_nodes`: the index maps that depend
only on positions and sizes (kept across runs in a memo); :func:`key_group_batches`: the
equality sums over long key sides that read the same streamed values and can be summed in one
pass over the pieces (each piece of their shared sources computed once, not once per sum).
"""

from __future__ import annotations

from collections.abc import Sequence

from attnsim.rasp import core as C
from attnsim.rasp.expr import constant_from
from attnsim.rasp.selector_plans import plan_selector, selector_leaves


def streamable_nodes(order: Sequence[C.RASPExpr], outputs: Sequence[C.SOp]) -> dict[int, bool]:
    """Per node: every reader reads it at its own positions (a Map's argument, an equality head's
    queries and query conditions) or by groups in key order (the key side and key conditions of
    an equality head that is no gather; the values of one without a score), and it is no output:
    such a value can be streamed (``Lazy``)."""
    ok: dict[int, bool] = {}

    def mark(x: C.SOp, good: bool) -> None:
        ok[id(x)] = ok.get(id(x), True) and good

    for node in order:
        if isinstance(node, (C.Map, C.SequenceMap)):
            for a in node.args:
                mark(a, True)
        elif isinstance(node, (C.Aggregate, C.SelectorWidth)):
            leaves = selector_leaves(node.selector)
            plan = plan_selector(node.selector) if isinstance(node, C.Aggregate) else None
            if plan is None or plan.eq is None or plan.empty or not isinstance(node, C.Aggregate):
                for x in [*leaves, *(node.reads() if isinstance(node, C.Aggregate) else [])]:
                    mark(x, False)
                continue
            ksop, qsop = plan.eq
            gather = isinstance(ksop, C.Indices)
            summed = not gather and node.score is None
            # the key side of a value-scored head is read piece by piece too (``_scored_stream``)
            roles: list[tuple[C.SOp, bool]] = [(qsop, True), (ksop, True), (node.values, summed)]
            roles += [(s, True) for _, s, _ in plan.query_atoms] + [(s, not gather) for s, _, _ in plan.key_atoms]
            if node.score is not None:
                roles.append((node.score, False))
            for x, good in roles:
                mark(x, good)
            covered = {id(x) for x, _ in roles}
            for x in leaves:
                if id(x) not in covered:
                    mark(x, False)
    for o in outputs:
        mark(o, False)
    return ok


def position_only_nodes(order: Sequence[C.RASPExpr]) -> dict[int, bool]:
    """Per node: its value depends only on positions and sizes (``indices``, or an index map
    whose every argument is such a value), so it is the same on every run at one length."""
    out: dict[int, bool] = {}
    for node in order:
        if isinstance(node, C.Indices):
            out[id(node)] = True
        elif isinstance(node, (C.Map, C.SequenceMap)) and isinstance(node.fn, C.IndexFn):
            out[id(node)] = all(out.get(id(a), False) for a in node.args)
    return out


def summed_reads(node: C.RASPExpr) -> list[C.SOp] | None:
    """The values an equality sum without a score reads by groups (its values, key side and key
    conditions); None for any other node (a gather, a scored head, the general path)."""
    if not isinstance(node, C.Aggregate) or node.score is not None:
        return None
    plan = plan_selector(node.selector)
    if plan is None or plan.eq is None or plan.empty or isinstance(plan.eq[0], C.Indices):
        return None
    return [node.values, plan.eq[0], *(s for s, _, _ in plan.key_atoms)]


def is_gather(node: C.RASPExpr) -> bool:
    """An aggregate whose selector is a gather (keys = indices, ==) without a score."""
    if not isinstance(node, C.Aggregate) or node.score is not None:
        return False
    plan = plan_selector(node.selector)
    return plan is not None and plan.eq is not None and not plan.empty and isinstance(plan.eq[0], C.Indices)


def node_reads(node: C.RASPExpr) -> list[C.SOp]:
    """The values a node reads (a map's arguments; an aggregate's values, score, selector leaves)."""
    if isinstance(node, (C.Map, C.SequenceMap)):
        return list(node.args)
    if isinstance(node, C.Aggregate):
        return [*node.reads(), *selector_leaves(node.selector)]
    return []


def constant_nodes(order: Sequence[C.RASPExpr]) -> dict[int, bool]:
    """Per node: the same value at every position whatever the input, bar the tokens it gathers
    from one fixed position: constants, index maps over positions that are constant from
    position 0 (``E.constant_from``), gathers at such a position (U's flags read from the
    header) and maps of such values."""
    out: dict[int, bool] = {}
    for node in order:
        if isinstance(node, C.Full):
            out[id(node)] = True
        elif isinstance(node, (C.Map, C.SequenceMap)) and isinstance(node.fn, C.IndexFn):
            fn = node.fn
            over = len(node.args) == 1 and isinstance(node.args[0], C.Indices)
            out[id(node)] = (over and constant_from(fn.expr, fn.argnames[0], dict(fn.bindings)) == 0) or all(
                out.get(id(a), False) for a in node.args
            )
        elif isinstance(node, (C.Map, C.SequenceMap)):
            out[id(node)] = all(out.get(id(a), False) for a in node.args)
        elif is_gather(node):
            plan = plan_selector(node.selector)  # type: ignore[attr-defined]
            assert plan is not None and plan.eq is not None
            out[id(node)] = not plan.key_atoms and not plan.query_atoms and out.get(id(plan.eq[1]), False)
    return out


def key_group_batches(order: Sequence[C.RASPExpr]) -> dict[int, list[C.Aggregate]]:
    """Per equality sum A (no score, no gather): the later ones B summed in the same pass.  B
    can join A when its values share a computed source with A's (a map or an aggregate, not the
    tokens nor a position-only index map) and every value B reads exists at A's turn: computed
    before A, or computable then from such values by maps, gathers and sums batched before A
    (their groups exist then: ``early``).  B joins the batch it can join that already sums B's
    values, else the one whose first sum shares the most sources with B (the first on a tie: a
    flag read from the header is a shared source too, so any shared source is not enough), or
    starts a batch of its own."""
    index = {id(n): i for i, n in enumerate(order)}
    pos_only = position_only_nodes(order)
    const = constant_nodes(order)

    def sources(x: C.SOp) -> set[int]:
        """What a pass over ``x``'s pieces computes: the maps under it and the aggregates they
        read (lookups of groups summed before, not computed again); not the tokens, index maps
        over positions (``indices`` among them) nor values the same at every position (constants,
        the header's flags)."""
        out, stack = set(), [x]
        while stack:
            y = stack.pop()
            if id(y) in out or pos_only.get(id(y), False) or const.get(id(y), False) or isinstance(y, C.Tokens):
                continue
            out.add(id(y))
            if isinstance(y, (C.Map, C.SequenceMap)):
                stack += list(y.args)
        return out

    sums = [(n, r) for n in order if (r := summed_reads(n)) is not None]
    srcs = {id(n): sources(r[0]) for n, r in sums}
    batches: dict[int, list[C.Aggregate]] = {}
    leaders: list[C.RASPExpr] = []  # each batch's first sum
    summed: dict[int, set[int]] = {}  # per batch, the values its sums read
    grouped: dict[int, int] = {}  # a batched sum: the turn of its batch's first sum (its groups exist from then)

    def early(x: C.SOp, at: int, ok: dict[int, bool]) -> bool:
        if id(x) not in ok:
            movable = isinstance(x, (C.Indices, C.Full, C.Map, C.SequenceMap)) or is_gather(x)
            movable = movable or grouped.get(id(x), at) < at
            ok[id(x)] = index[id(x)] < at or (movable and all(early(y, at, ok) for y in node_reads(x)))
        return ok[id(x)]

    for b, reads in sums:
        best, score = None, (False, 0)
        for a in leaders:
            n = len(srcs[id(a)] & srcs[id(b)])
            sc = (id(reads[0]) in summed[id(a)], n)
            if n > 0 and sc > score and all(early(x, index[id(a)], {}) for x in reads):
                best, score = a, sc
        if best is None:
            leaders.append(b)
            summed[id(b)] = {id(reads[0])}
        else:
            batches.setdefault(id(best), []).append(b)  # type: ignore[arg-type]
            summed[id(best)].add(id(reads[0]))
            grouped[id(b)] = index[id(best)]
    return batches
