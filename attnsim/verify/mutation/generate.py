"""Generating mutants: the mutations each node admits, and the hook that records or applies them.

A mutant is applied while the program is built (through :data:`attnsim.rasp.core.MUTATION_HOOK`,
so the Intents, Layout and program built together all see the same change):

* ``off-by-one``: a constant ``c`` of an index map becomes ``c+1`` or ``c-1``; a variable ``v``
  (an argument or a size) becomes ``v+1``;
* ``comparison``: a Select's ``==`` becomes ``!=``, ``<`` becomes ``<=`` or ``>``...; an index
  map's comparison likewise; a Select's keys and queries are swapped;
* ``dropped conjunct``: ``a & b`` becomes ``a`` or ``b`` (same for ``|``);
* ``swapped operands`` of a SequenceMap whose function is not known to be commutative;
* ``wrong constant``: ``full(c)`` becomes ``full(c+1)``, a primitive constant ``k`` becomes ``k+1``;
* ``dropped score``: a value-scored head (``C.maximum``, ``C.argmax_aggregate``) becomes the plain
  mean over its selected keys;
* ``wrong block offset``: the program and intents address a block at ``offset+1`` while the data
  are still encoded (and the result decoded) at ``offset``.

Sites are enumerated by building the construction's registered example once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.layout import Block
from attnsim.verify.mutation.sites import Site, _caller_site, _where

COMMUTATIVE = frozenset({"add", "mul", "max", "min"})
SELECT_FLIPS: dict[str, tuple[str, ...]] = {
    "==": ("!=",),
    "!=": ("==",),
    "<": ("<=", ">"),
    "<=": ("<", ">="),
    ">": (">=", "<"),
    ">=": (">", "<="),
    "TRUE": ("FALSE",),
    "FALSE": ("TRUE",),
}
EXPR_FLIPS: dict[str, tuple[str, ...]] = {k: v for k, v in SELECT_FLIPS.items() if k not in ("TRUE", "FALSE")}


class MutationError(ValueError):
    """Mutation testing was asked for something it cannot do (unknown construction...)."""


@dataclass(frozen=True)
class Mutant:
    """One change at one site: ``op`` applied to the node (or index sub-expression at ``path``)."""

    construction: str
    site: Site
    op: str
    description: str
    path: tuple[int, ...] | None = None
    sig: str = ""
    restate_intent: bool = False  # the bug is also written into the intents of the changed selectors


# -- index-expression sub-sites ---------------------------------------------------------------
def _sig(e: E.Expr) -> str:
    if isinstance(e, E.Const):
        return "Const"
    if isinstance(e, E.Var):
        return f"Var:{e.name}"
    if isinstance(e, E.BinOp):
        return f"BinOp:{e.op}"
    return type(e).__name__


def _short(e: E.Expr, limit: int = 48) -> str:
    s = E.render(e)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def expr_mutations(e: E.Expr) -> list[tuple[tuple[int, ...], str, str, str]]:
    """(path, signature, op, description) for every off-by-one and comparison flip in ``e``."""
    out: list[tuple[tuple[int, ...], str, str, str]] = []

    def walk(x: E.Expr, path: tuple[int, ...], parent: E.Expr | None) -> None:
        ctx = f" in {_short(parent)}" if parent is not None else ""
        if isinstance(x, E.Const):
            out.append((path, "Const", "+1", f"{x.value} -> {x.value + 1}{ctx}"))
            out.append((path, "Const", "-1", f"{x.value} -> {x.value - 1}{ctx}"))
        elif isinstance(x, E.Var):
            out.append((path, _sig(x), "+1", f"{x.name} -> {x.name}+1{ctx}"))
        elif isinstance(x, E.BinOp) and x.op in EXPR_FLIPS:
            for new in EXPR_FLIPS[x.op]:
                out.append((path, _sig(x), f"cmp:{new}", f"{x.op} -> {new} in {_short(x)}"))
        for i, c in enumerate(x.children()):
            walk(c, (*path, i), x)

    walk(e, (), None)
    return out


def _at(e: E.Expr, path: tuple[int, ...]) -> E.Expr | None:
    for i in path:
        kids = e.children()
        if i >= len(kids):
            return None
        e = kids[i]
    return e


def _rebuild(e: E.Expr, kids: list[E.Expr]) -> E.Expr:
    if isinstance(e, E.Not):
        return E.Not(kids[0])
    if isinstance(e, E.If):
        return E.If(kids[0], kids[1], kids[2])
    assert isinstance(e, E.BinOp)
    return E.BinOp(e.op, kids[0], kids[1])


def mutate_expr(e: E.Expr, path: tuple[int, ...], op: str) -> E.Expr:
    """``e`` with the sub-expression at ``path`` changed by ``op`` (+1, -1, cmp:<new>)."""
    if path:
        kids = list(e.children())
        kids[path[0]] = mutate_expr(kids[path[0]], path[1:], op)
        return _rebuild(e, kids)
    if op == "+1":
        return E.BinOp("+", e, E.Const(1)) if isinstance(e, E.Var) else E.Const(e.value + 1)  # type: ignore[attr-defined]
    if op == "-1":
        return E.Const(e.value - 1)  # type: ignore[attr-defined]
    if op.startswith("cmp:") and isinstance(e, E.BinOp):
        return E.BinOp(op[4:], e.a, e.b)
    raise MutationError(f"cannot apply {op!r} to {E.render(e)}")


# -- the mutations of one node ----------------------------------------------------------------
def _fn_name(fn: Any) -> str:
    return fn.name if isinstance(fn, C.Prim) else "imap"


def node_mutations(obj: Any) -> list[tuple[tuple[int, ...] | None, str, str, str]]:  # noqa: C901, PLR0912
    """(path, signature, op, description) of every mutation the node (or Block) admits."""
    out: list[tuple[tuple[int, ...] | None, str, str, str]] = []
    if isinstance(obj, (C.Map, C.SequenceMap)):
        fn, args = obj.fn, obj.args
        if isinstance(fn, C.IndexFn):
            for path, sig, op, desc in expr_mutations(fn.expr):
                out.append((path, sig, f"expr:{op}", f"imap: {desc}"))
        else:
            for i, p in enumerate(fn.consts):
                shown = E.render(p) if isinstance(p, E.Expr) else p.render() if isinstance(p, C.Ratio) else str(p)
                out.append((None, "", f"param:{i}", f"{fn.name} constant #{i} {shown} -> {shown} + 1"))
        if len(args) >= 2 and not (isinstance(fn, C.Prim) and fn.name in COMMUTATIVE):
            for i in range(len(args)):
                for j in range(i + 1, len(args)):
                    out.append((None, "", f"swap:{i},{j}", f"{_fn_name(fn)}: operands {i} and {j} swapped"))
    elif isinstance(obj, C.Select):
        for new in SELECT_FLIPS[obj.cmp]:
            out.append((None, "", f"cmp:{new}", f"select: {obj.cmp} -> {new}"))
        out.append((None, "", "kq-swap", "select: keys and queries swapped"))
    elif isinstance(obj, (C.SelectAnd, C.SelectOr)):
        sym = "&" if isinstance(obj, C.SelectAnd) else "|"
        out.append((None, "", "drop:a", f"a {sym} b -> b (left operand dropped)"))
        out.append((None, "", "drop:b", f"a {sym} b -> a (right operand dropped)"))
    elif isinstance(obj, C.Full):
        out.append((None, "", "full:+1", f"full({obj.value}) -> full({obj.value + 1})"))
    elif isinstance(obj, C.Aggregate) and obj.score is not None:
        out.append((None, "", "score:drop", "value-scored head -> plain mean (score dropped)"))
    elif isinstance(obj, Block):
        out.append((None, "", "offset:+1", f"block {obj.name}: program offset {E.render(obj.offset)} -> +1"))
    return out


@dataclass(frozen=True, eq=False)
class MisplacedBlock(Block):
    """A block that the program addresses at ``offset`` while its data live at ``data_offset``."""

    data_offset: E.Expr = field(default_factory=lambda: E.Const(0))

    @property
    def start(self) -> int:
        return int(self.data_offset.evaluate(C.size_bindings(self.data_offset)))


@dataclass
class Applied:
    """One node changed by a mutant, with what it was (for the equivalence proof)."""

    node: Any
    op: str
    before: Any


class Recorder:
    """Hook in record mode: every site and its mutations, in creation order."""

    def __init__(self, construction: str) -> None:
        self.construction = construction
        self.mutants: list[Mutant] = []
        self.seen: set[Site] = set()

    def __call__(self, obj: Any) -> Any:
        kinds = (C.Map, C.SequenceMap, C.Select, C.SelectAnd, C.SelectOr, C.Full, C.Aggregate, Block)
        if isinstance(obj, kinds) and not (isinstance(obj, C.Aggregate) and obj.score is None):
            site = _caller_site(type(obj).__name__)
            if site is not None and site not in self.seen:
                self.seen.add(site)
                for path, sig, op, desc in node_mutations(obj):
                    full_desc = f"{_where(site)} {desc}"
                    self.mutants.append(Mutant(self.construction, site, op, full_desc, path, sig))
        return obj


class Mutator:
    """Hook in mutate mode: change every node created at the mutant's site."""

    def __init__(self, mutant: Mutant) -> None:
        self.m = mutant
        self.applied = 0
        self.log: list[Applied] = []

    def __call__(self, obj: Any) -> Any:
        kind = type(obj).__name__
        if kind != self.m.site[3] or _caller_site(kind) != self.m.site:
            return obj
        return self._apply(obj)

    def _note(self, node: Any, before: Any) -> None:
        self.applied += 1
        self.log.append(Applied(node, self.m.op, before))

    def _apply(self, obj: Any) -> Any:  # noqa: C901, PLR0912
        op = self.m.op
        st = object.__setattr__
        if op.startswith("expr:"):
            fn = obj.fn
            if not isinstance(fn, C.IndexFn) or self.m.path is None:
                return obj
            target = _at(fn.expr, self.m.path)
            if target is None or _sig(target) != self.m.sig:
                return obj
            st(obj, "fn", C.IndexFn(mutate_expr(fn.expr, self.m.path, op[5:]), fn.argnames))
            self._note(obj, fn)
        elif op.startswith("param:"):
            fn, i = obj.fn, int(op[6:])
            if isinstance(fn, C.Prim) and i < len(fn.consts):
                ps = list(fn.consts)
                p = ps[i]
                ps[i] = C.Ratio(p.num + p.den, p.den) if isinstance(p, C.Ratio) else p + 1
                st(obj, "fn", C.Prim(fn.name, tuple(ps)))
                self._note(obj, fn)
        elif op.startswith("swap:"):
            i, j = (int(x) for x in op[5:].split(","))
            if isinstance(obj, C.SequenceMap) and j < len(obj.args):
                args = list(obj.args)
                args[i], args[j] = args[j], args[i]
                self._note(obj, obj.args)
                st(obj, "args", tuple(args))
        elif op.startswith("cmp:") and isinstance(obj, C.Select):
            self._note(obj, (obj.keys, obj.queries, obj.cmp))
            st(obj, "cmp", op[4:])
        elif op == "kq-swap" and isinstance(obj, C.Select):
            keys, queries = obj.keys, obj.queries
            self._note(obj, (keys, queries, obj.cmp))
            st(obj, "keys", queries)
            st(obj, "queries", keys)
        elif op.startswith("drop:") and isinstance(obj, (C.SelectAnd, C.SelectOr)):
            self._note(obj, (obj.a, obj.b))
            if op == "drop:a":
                st(obj, "a", obj.b)
            else:
                st(obj, "b", obj.a)
        elif op == "full:+1" and isinstance(obj, C.Full):
            self._note(obj, obj.value)
            st(obj, "value", Fraction(obj.value) + 1)
        elif op == "score:drop" and isinstance(obj, C.Aggregate) and obj.score is not None:
            self._note(obj, obj.score)
            st(obj, "score", None)
        elif op == "offset:+1" and isinstance(obj, Block):
            new = MisplacedBlock(
                obj.name, obj.offset + 1, obj.rows, obj.cols, obj.stack, obj.channel, data_offset=obj.offset
            )
            self._note(new, obj)
            return new
        return obj


# -- enumerating ------------------------------------------------------------------------------
def mutants_of(name: str, example: Callable[[], object]) -> list[Mutant]:
    """Every mutant of a construction: build its example once with the recording hook."""
    rec = Recorder(name)
    token = C.MUTATION_HOOK.set(rec)
    try:
        example()
    finally:
        C.MUTATION_HOOK.reset(token)
    counts: dict[str, int] = {}
    for m in rec.mutants:
        counts[m.description] = counts.get(m.description, 0) + 1
    seen: dict[str, int] = {}
    out = []
    for m in rec.mutants:  # make equal descriptions distinct: "... [#2 of 3]"
        if counts[m.description] > 1:
            seen[m.description] = seen.get(m.description, 0) + 1
            m = replace(m, description=f"{m.description} [#{seen[m.description]} of {counts[m.description]}]")
        out.append(m)
    if getattr(_without_hook(example), "specification", None) is not None:
        # a bug written consistently into a selector and its intent: only the spec proof can catch it
        out += [
            replace(m, restate_intent=True, description=f"{m.description} + its intent restated to match")
            for m in out
            if m.site[3] == "Select" or (m.op.startswith("expr:") and m.site[3] in ("Map", "SequenceMap"))
        ]
    return out


def _without_hook(fn: Callable[[], Any]) -> Any:
    token = C.MUTATION_HOOK.set(None)
    try:
        return fn()
    finally:
        C.MUTATION_HOOK.reset(token)
