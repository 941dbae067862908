"""The numeric executor: :class:`Plan` reads a program at a length L once (index maps planned by
:func:`~attnsim.numeric.index_plan.plan_index`, selectors split by
:func:`~attnsim.numeric.heads.plan_head`); :class:`Execution` runs it on tokens, computing a node
when a reader needs it (``where`` on a constant flag computes only its taken branch) and dropping
a value after its last reader.  :class:`StructuralMemo` keeps a program's plans across runs;
a run without one plans anew.  Design and figures: docs/engine-performance.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from attnsim.numeric.heads import Groups, HeadPlan, condition, gather, groups, plan_head
from attnsim.numeric.index_plan import plan_index
from attnsim.numeric.values import Val
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.arith import BackendError
from attnsim.rasp.interpreter import Interpreter
from attnsim.rasp.numeric import NumpyArith
from attnsim.rasp.sizes import size_bindings

POSITION = "p!"  # the position in a planned index expression (no size may be named so)


@dataclass
class RunStats:
    """Counts over the runs it is given to: SOp nodes computed, the positions of their values
    (``head_positions``: a head's, every position for tokens, constants and widths) and of the
    planned index values read (``memo_positions``)."""

    runs: int = 0
    nodes: int = 0
    head_positions: int = 0
    memo_positions: int = 0


@dataclass(frozen=True)
class MemoSummary:
    """What a :class:`StructuralMemo` holds: planned index values kept, their bytes, its budget,
    plans refused (over the budget: planned on every run), reads (hits) and plans made (misses)."""

    kept: int
    bytes: int
    budget_bytes: int
    refused: int
    hits: int
    misses: int


class Plan:
    """A program at one length: its nodes in order, the planned index values, the selectors'
    parts and how many readers each node has."""

    def __init__(self, outputs: Sequence[C.SOp], L: int) -> None:
        self.L = L
        self.order = C.topological(outputs)
        self.index: dict[int, Val] = {}
        self.heads: dict[int, HeadPlan] = {}
        self.sharing: dict[int, tuple[int, ...]] = {}  # a grouped head: what its groups depend on
        self.sharers: dict[tuple[int, ...], int] = {}  # how many heads read those groups
        self.readers: dict[int, int] = {}
        for node in self.order:
            if isinstance(node, C.SOp) and not isinstance(node, (C.Tokens, C.Full)):
                e = C.index_expr(node, E.Var(POSITION))
                if e is not None:
                    env = {**size_bindings(e, bound_only=True), "length": L}
                    self.index[id(node)] = plan_index(e, POSITION, env, L)
            if isinstance(node, (C.Aggregate, C.SelectorWidth)):
                hp = self.heads[id(node)] = plan_head(node.selector)
                if not hp.dense and not (hp.gather and isinstance(node, C.Aggregate)):  # shared by key side
                    score = node.score if isinstance(node, C.Aggregate) else None
                    values = node.values if isinstance(node, C.Aggregate) else None
                    sig = (*(id(k) for k, _ in hp.eqs), -1, *map(id, hp.keys), -1, id(values), id(score))
                    self.sharing[id(node)] = sig
                    self.sharers[sig] = self.sharers.get(sig, 0) + 1
            for r in self.reads(node):
                self.readers[id(r)] = self.readers.get(id(r), 0) + 1

    def reads(self, node: C.RASPExpr) -> list[C.SOp]:
        """The values a node reads (none for a planned one)."""
        if id(node) in self.index:
            return []
        if isinstance(node, (C.Map, C.SequenceMap)):
            return list(node.args)
        if isinstance(node, (C.Aggregate, C.SelectorWidth)):
            leaves = [x for x in C.selector_leaves(node.selector) if not isinstance(x, C.Full)]
            return [*(node.reads() if isinstance(node, C.Aggregate) else []), *leaves]
        return []


@dataclass
class StructuralMemo:
    """A program's plans (per length), kept across its runs within ``budget_bytes`` of planned
    index values; a plan over the budget is made again on every run."""

    budget_bytes: int = 256 << 20
    plans: dict[tuple[tuple[int, ...], int], Plan] = field(default_factory=dict)
    refused: set[tuple[tuple[int, ...], int]] = field(default_factory=set)
    used_bytes: int = 0
    hits: int = 0
    misses: int = 0

    def plan(self, outputs: Sequence[C.SOp], L: int) -> Plan:
        key = (tuple(id(o) for o in outputs), L)
        got = self.plans.get(key)
        if got is not None and all(a is b for a, b in zip(got.order[-len(outputs) :], outputs, strict=False)):
            self.hits += len(got.index)
            return got
        plan = Plan(outputs, L)
        self.misses += len(plan.index)
        nbytes = sum(v.data.nbytes for v in plan.index.values() if v.data is not None)
        if key not in self.refused and self.used_bytes + nbytes <= self.budget_bytes:
            self.plans[key] = plan
            self.used_bytes += nbytes
        else:
            self.refused.add(key)
        return plan

    def summary(self) -> MemoSummary:
        kept = sum(len(p.index) for p in self.plans.values())
        return MemoSummary(kept, self.used_bytes, self.budget_bytes, len(self.refused), self.hits, self.misses)


class Execution:
    """One run of a plan on ``tokens``: values by node id, computed on demand (module docstring)."""

    def __init__(
        self,
        plan: Plan,
        tokens: Val,
        stats: RunStats,
        keep: bool = False,
        progress: Callable[[int, int], None] | None = None,
        arith: NumpyArith | None = None,
    ) -> None:
        self.plan, self.tokens, self.L, self.stats, self.keep = plan, tokens, plan.L, stats, keep
        self.arith = arith if arith is not None else NumpyArith()
        self.vals: dict[int, Val] = {}
        self.groups: dict[tuple[int, ...], tuple[Groups, int]] = {}  # shared groups, readers left
        self.refs, self.progress, self.done = dict(plan.readers), progress, 0

    def run(self, outputs: Sequence[C.SOp]) -> list[Val]:
        for o in outputs:
            self.refs[id(o)] = self.refs.get(id(o), 0) + 1
        out = [self.demand(o) for o in outputs]
        self.tick(len(self.plan.order))
        return out

    def tick(self, upto: int) -> None:
        while self.progress is not None and self.done < upto:
            self.done += 1
            self.progress(self.done, len(self.plan.order))

    def demand(self, root: C.SOp) -> Val:
        """The value of ``root``, computing what it reads first (iteratively, deepest first)."""
        stack = [root]
        while stack:
            node = stack[-1]
            if id(node) in self.vals:
                stack.pop()
                continue
            need = [x for x in self.reading(node) if id(x) not in self.vals]
            if need:
                stack.extend(need)
                continue
            stack.pop()
            self.vals[id(node)] = self.compute(node)
            self.stats.nodes += 1
            self.tick(self.done + 1)
            self.release(node)
        return self.vals[id(root)]

    def reading(self, node: C.SOp) -> list[C.SOp]:
        """What computing ``node`` reads now: for ``where`` on a computed constant flag, the flag and
        its taken branch only."""
        reads = self.plan.reads(node)
        if isinstance(node, C.SequenceMap) and isinstance(node.fn, C.Prim) and node.fn.name == "where":
            flag = self.vals.get(id(reads[0]))
            if flag is None:
                return reads[:1]
            if flag.m == 0:
                return [reads[0], reads[1] if flag.tail != 0 else reads[2]]
        return reads

    def release(self, node: C.SOp) -> None:
        """One reader fewer for what ``node`` read; a value without readers is dropped, and a value
        never computed whose readers are all gone (a branch not taken) releases what it reads."""
        taken = {id(x) for x in self.reading(node)}
        stack = [(x, id(x) in taken) for x in self.plan.reads(node)]
        while stack:
            x, read = stack.pop()
            self.refs[id(x)] -= 1
            if self.refs[id(x)] == 0 and not self.keep:
                if id(x) in self.vals:
                    del self.vals[id(x)]
                elif not read:
                    stack += [(y, False) for y in self.plan.reads(x)]

    # -- nodes ----------------------------------------------------------------------------
    def get(self, node: C.SOp) -> Val:
        return self.vals[id(node)]

    def compute(self, node: C.SOp) -> Val:
        if id(node) in self.plan.index:
            v = self.plan.index[id(node)]
            self.stats.memo_positions += v.m
            return v
        if isinstance(node, C.Tokens):
            v = self.tokens
        elif isinstance(node, C.Full):
            f = Fraction(node.value)
            v = Val.const(np.int64(int(f)) if f.denominator == 1 else np.float64(f))
        elif isinstance(node, (C.Map, C.SequenceMap)):
            try:
                v = self.apply(node)
            except BackendError as exc:
                raise BackendError(f"{node.label}: {exc}") from None
        elif isinstance(node, (C.Aggregate, C.SelectorWidth)):
            v = self.head(node)
        else:
            raise C.ProgramError(f"unknown node type {type(node).__name__}")
        self.stats.head_positions += v.m if isinstance(node, (C.Map, C.SequenceMap, C.Aggregate)) else self.L
        return v

    def apply(self, node: C.Map | C.SequenceMap) -> Val:
        fn = node.fn
        if isinstance(fn, C.Prim) and fn.name == "where" and self.get(node.args[0]).m == 0:
            taken = node.args[1] if self.get(node.args[0]).tail != 0 else node.args[2]
            return _floats(self.get(taken))  # a constant flag: the taken branch itself
        args = [self.get(a) for a in node.args]
        if isinstance(fn, C.IndexFn):
            ints = [a if a.kind in "iub" else _integers(a) for a in args]
            env = dict(fn.bindings)

            def index(*xs: Any) -> Any:
                got = fn.expr.evaluate({**env, **dict(zip(fn.argnames, xs, strict=True))})
                return np.asarray(got, dtype=np.int64)

            return ints[0].map(index, *ints[1:])
        prim = fn.primitive

        def run(*xs: Any) -> Any:
            with np.errstate(all="ignore"):
                return np.asarray(self.arith.apply(prim, fn.params, list(xs)), dtype=np.float64)

        return args[0].map(run, *args[1:])

    def head(self, node: C.Aggregate | C.SelectorWidth) -> Val:
        plan = self.plan.heads[id(node)]
        if plan.dense:
            return self.dense(node)
        values = _floats(self.get(node.values)) if isinstance(node, C.Aggregate) else None
        score = None if not isinstance(node, C.Aggregate) or node.score is None else self.get(node.score)
        kmask = _all([condition(s, self.get) for s in plan.keys])
        qmask = _all([condition(s, self.get) for s in plan.queries])
        if plan.gather and values is not None:
            return gather(self.get(plan.eqs[0][1]), values, kmask, qmask, self.L)
        sig = self.plan.sharing[id(node)]
        g, left = self.groups.get(sig, (None, self.plan.sharers[sig]))
        if g is None:
            try:
                keys = [self.get(k) for k, _ in plan.eqs]
                g = groups(keys, kmask, values, None if score is None else _floats(score), self.L)
            except OverflowError:
                return self.dense(node)
        self.groups[sig] = (g, left - 1)
        if left == 1 and not self.keep:
            del self.groups[sig]
        return g.look([self.get(q) for _, q in plan.eqs], qmask)

    def dense(self, node: C.Aggregate | C.SelectorWidth) -> Val:
        """A selector of no planned shape: the reference interpreter's rows, over every position."""
        ref = Interpreter(self.arith, self.tokens.upto(self.L))
        for x in [*self.plan.reads(node), *C.selector_leaves(node.selector)]:
            ref.values[id(x)] = ref.sop(x) if isinstance(x, C.Full) else self.get(x).upto(self.L)
        return Val.flat(ref.sop(node))


def _all(conds: list[Val]) -> Val | None:
    out = conds[0] if conds else None
    for c in conds[1:]:
        out = out.map(np.logical_and, c)  # type: ignore[union-attr]
    return out


def _floats(v: Val) -> Val:
    return v if v.kind == "f" else v.map(lambda x: np.asarray(x, dtype=np.float64))


def _integers(v: Val) -> Val:
    """A float value that an index function reads, as int64 (every value must be an integer)."""
    for x in (v.head, np.asarray(v.tail)):
        if not bool(np.all(np.isfinite(x))) or bool(np.any(np.rint(x) != x)):
            raise BackendError("an index function got non-integer values")
    return v.map(lambda x: np.asarray(x, dtype=np.int64))


def run(
    outputs: Sequence[C.SOp],
    tokens: Val,
    L: int,
    *,
    memo: StructuralMemo | None = None,
    stats: RunStats | None = None,
    keep: bool = False,
    progress: Callable[[int, int], None] | None = None,
    arith: NumpyArith | None = None,
) -> tuple[list[Val], Execution]:
    """Run ``outputs`` on ``tokens`` (L positions) in ``arith`` (float64; a subclass may give a
    primitive another meaning): their values, and the execution (every value it computed when
    ``keep``)."""
    plan = memo.plan(outputs, L) if memo is not None else Plan(outputs, L)
    ex = Execution(plan, tokens, stats if stats is not None else RunStats(), keep, progress, arith)
    out = ex.run(outputs)
    ex.stats.runs += 1
    return out, ex


__all__ = ["Execution", "MemoSummary", "Plan", "RunStats", "StructuralMemo", "run"]
