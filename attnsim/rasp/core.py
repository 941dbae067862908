"""GAHAT-RASP: the program graph.

A program is an immutable DAG of sequence operations (SOps) and selectors:

* ``tokens``, ``indices``, ``length``, constants (:class:`Full`);
* :class:`Map` / :class:`SequenceMap`: position-wise functions, either a registered value
  primitive (:class:`Prim`) or an integer index expression (:class:`IndexFn`);
* :class:`Select` (with :class:`SelectAnd`, :class:`SelectOr`, :class:`SelectNot`);
* :class:`Aggregate` (the mean of the selected values; 0 when none is selected) and
  :class:`SelectorWidth` (the number of selected keys).

Nodes compare by identity (``==`` is never overloaded); each node has a cached structural
``fingerprint``.  See ``docs/semantics.md`` for the formal semantics.

Here: the nodes, the short builders (``select``, ``aggregate``, ``imap``, ``apply``...) and the
graph walks.  The named sizes and the constants written with them are :mod:`attnsim.rasp.sizes`,
the functions a Map carries :mod:`attnsim.rasp.map_functions`; this module names them too
(``C.Size``, ``C.Prim``), so that a program is built from one import.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, TypeVar

from attnsim.rasp import expr as E
from attnsim.rasp.map_functions import Fn, IndexFn, Prim, index_fn

# ``X as X``: named here too, so that C.Size, C.size_bindings, ... keep working (see the docstring)
from attnsim.rasp.sizes import Param as Param
from attnsim.rasp.sizes import ProgramError, Ratio, _param
from attnsim.rasp.sizes import Size as Size
from attnsim.rasp.sizes import shape_text as shape_text
from attnsim.rasp.sizes import size_bindings as size_bindings
from attnsim.rasp.sizes import unbound_sizes as unbound_sizes

CATEGORICAL = "categorical"
NUMERICAL = "numerical"
COMPARISONS = ("==", "!=", "<", "<=", ">", ">=", "TRUE", "FALSE")

_ids = itertools.count()

# Mutation testing (attnsim.verify.mutation) sets this hook while it builds programs; it is None
# otherwise.  It is called with every new node (it may alter the node's fields in place, before
# anything reads them) and, from ``Block.of``, with every new Block (it returns the Block to use).
MUTATION_HOOK: contextvars.ContextVar[Callable[[Any], Any] | None] = contextvars.ContextVar(
    "attnsim_mutation_hook", default=None
)

_F = TypeVar("_F", bound=Callable[..., Any])


def built_once(fn: _F) -> _F:
    """``functools.cache`` for a function that builds programs, except while :data:`MUTATION_HOOK`
    is set: then every call builds afresh and the cache is neither read nor filled.  Otherwise a
    mutant's check would read the program a process built before the mutation (what it reads would
    depend on what ran earlier in the process), and the original's cache would hold a mutant."""
    memo = functools.cache(fn)

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if MUTATION_HOOK.get() is not None:
            return fn(*args, **kwargs)
        return memo(*args, **kwargs)

    call.cache_clear = memo.cache_clear  # type: ignore[attr-defined]
    return call  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------
# Nodes.
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False, repr=False)
class RASPExpr:
    """Base class: identity equality, readable label, cached structural fingerprint."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_uid", next(_ids))
        object.__setattr__(self, "_label", None)
        hook = MUTATION_HOOK.get()
        if hook is not None:
            hook(self)

    @property
    def label(self) -> str:
        lab = getattr(self, "_label", None)
        return lab if lab is not None else f"{type(self).__name__.lower()}_{self._uid}"  # type: ignore[attr-defined]

    def named(self, label: str) -> RASPExpr:
        """Give the node a readable label (returns the node itself; use at construction time)."""
        object.__setattr__(self, "_label", label)
        return self

    def children(self) -> tuple[RASPExpr, ...]:
        return ()

    @cached_property
    def fingerprint(self) -> str:
        """A structural hash: equal for structurally equal graphs, whatever the node identities."""
        h = hashlib.sha256()
        h.update(self._describe().encode())
        for c in self.children():
            if not isinstance(c, RASPExpr):
                raise ProgramError(f"foreign node {c!r} (type {type(c).__name__}) inside {self.label}")
            h.update(c.fingerprint.encode())
        return h.hexdigest()[:16]

    def _describe(self) -> str:
        return type(self).__name__

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.label}>"


@dataclass(frozen=True, eq=False, repr=False)
class SOp(RASPExpr):
    """A sequence operation: one value per position."""

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "_encoding", self.default_encoding())

    def default_encoding(self) -> str:
        return NUMERICAL

    @property
    def encoding(self) -> str:
        return self._encoding  # type: ignore[attr-defined]

    def named(self, label: str) -> SOp:
        super().named(label)
        return self

    def with_encoding(self, encoding: str) -> SOp:
        """Set the encoding (categorical / numerical); use at construction time."""
        if encoding not in (CATEGORICAL, NUMERICAL):
            raise ProgramError(f"encoding must be {CATEGORICAL!r} or {NUMERICAL!r}, got {encoding!r}")
        if "fingerprint" in self.__dict__:
            raise ProgramError(f"cannot change the encoding of {self.label} after it was fingerprinted")
        object.__setattr__(self, "_encoding", encoding)
        return self

    def _describe(self) -> str:
        return f"{type(self).__name__}:{self.encoding}"


@dataclass(frozen=True, eq=False, repr=False)
class Tokens(SOp):
    """The input sequence (one scalar per position)."""

    def _describe(self) -> str:
        return f"Tokens:{self.encoding}"


@dataclass(frozen=True, eq=False, repr=False)
class Indices(SOp):
    """The position 0..L-1 of each token."""

    def default_encoding(self) -> str:
        return CATEGORICAL


@dataclass(frozen=True, eq=False, repr=False)
class Length(SOp):
    """The sequence length L at every position (costs one attention layer, as in the paper)."""

    def default_encoding(self) -> str:
        return CATEGORICAL


@dataclass(frozen=True, eq=False, repr=False)
class Full(SOp):
    """A constant at every position."""

    value: Fraction | int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", Fraction(self.value))
        super().__post_init__()

    def default_encoding(self) -> str:
        return CATEGORICAL if Fraction(self.value).denominator == 1 else NUMERICAL

    def _describe(self) -> str:
        return f"Full({self.value}):{self.encoding}"


@dataclass(frozen=True, eq=False, repr=False)
class Map(SOp):
    """A position-wise function of one SOp."""

    fn: Fn = field(default_factory=lambda: Prim("identity"))
    inner: SOp = field(default_factory=lambda: Indices())

    def __post_init__(self) -> None:
        _check_fn(self.fn, 1, self)
        if not isinstance(self.inner, SOp):
            raise ProgramError(f"Map needs an SOp argument, got {self.inner!r}")
        super().__post_init__()

    @property
    def args(self) -> tuple[SOp, ...]:
        return (self.inner,)

    def default_encoding(self) -> str:
        return CATEGORICAL if isinstance(self.fn, IndexFn) else NUMERICAL

    def children(self) -> tuple[RASPExpr, ...]:
        return (self.inner,)

    def _describe(self) -> str:
        return f"Map({self.fn.fingerprint}):{self.encoding}"


@dataclass(frozen=True, eq=False, repr=False)
class SequenceMap(SOp):
    """A position-wise function of several SOps (usually two)."""

    fn: Fn = field(default_factory=lambda: Prim("add"))
    args: tuple[SOp, ...] = ()

    def __post_init__(self) -> None:
        if not self.args or not all(isinstance(a, SOp) for a in self.args):
            raise ProgramError(f"SequenceMap needs SOp arguments, got {self.args!r}")
        _check_fn(self.fn, len(self.args), self)
        super().__post_init__()

    def default_encoding(self) -> str:
        return CATEGORICAL if isinstance(self.fn, IndexFn) else NUMERICAL

    def children(self) -> tuple[RASPExpr, ...]:
        return tuple(self.args)

    def _describe(self) -> str:
        return f"SequenceMap({self.fn.fingerprint}):{self.encoding}"


def _check_fn(fn: Any, n: int, node: Any) -> None:
    if not isinstance(fn, (Prim, IndexFn)):
        raise ProgramError(f"a Map's function must be a Prim or an IndexFn, got {fn!r}")
    if fn.arity != n:
        raise ProgramError(f"function {fn.fingerprint} takes {fn.arity} arguments, given {n}")


@dataclass(frozen=True, eq=False, repr=False)
class Selector(RASPExpr):
    """A boolean query x key matrix."""

    def named(self, label: str) -> Selector:
        super().named(label)
        return self

    def __and__(self, other: Selector) -> Selector:
        return SelectAnd(self, other)

    def __or__(self, other: Selector) -> Selector:
        return SelectOr(self, other)

    def __invert__(self) -> Selector:
        return SelectNot(self)


@dataclass(frozen=True, eq=False, repr=False)
class Select(Selector):
    """S[q, k] = cmp(keys[k], queries[q])."""

    keys: SOp = field(default_factory=Indices)
    queries: SOp = field(default_factory=Indices)
    cmp: str = "=="

    def __post_init__(self) -> None:
        if self.cmp not in COMPARISONS:
            raise ProgramError(f"unknown comparison {self.cmp!r}; use one of {COMPARISONS}")
        for s in (self.keys, self.queries):
            if not isinstance(s, SOp):
                raise ProgramError(f"Select needs SOps as keys and queries, got {s!r}")
        super().__post_init__()

    def children(self) -> tuple[RASPExpr, ...]:
        return (self.keys, self.queries)

    def _describe(self) -> str:
        return f"Select({self.cmp})"


@dataclass(frozen=True, eq=False, repr=False)
class SelectAnd(Selector):
    a: Selector = field(default_factory=lambda: Select())
    b: Selector = field(default_factory=lambda: Select())

    def children(self) -> tuple[RASPExpr, ...]:
        return (self.a, self.b)


@dataclass(frozen=True, eq=False, repr=False)
class SelectOr(Selector):
    a: Selector = field(default_factory=lambda: Select())
    b: Selector = field(default_factory=lambda: Select())

    def children(self) -> tuple[RASPExpr, ...]:
        return (self.a, self.b)


@dataclass(frozen=True, eq=False, repr=False)
class SelectNot(Selector):
    a: Selector = field(default_factory=lambda: Select())

    def children(self) -> tuple[RASPExpr, ...]:
        return (self.a,)


@dataclass(frozen=True, eq=False, repr=False)
class Aggregate(SOp):
    """Average hard attention: the mean of ``values`` over the selected keys, 0 if none.

    With a ``score`` (a *value-scored* head), the mean is over the selected keys whose score is
    maximal among the selected keys: the argmax that average hard attention performs when its
    attention scores are ``score`` on the selected keys (docs/semantics.md)."""

    selector: Selector = field(default_factory=Select)
    values: SOp = field(default_factory=Indices)
    score: SOp | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.selector, Selector) or not isinstance(self.values, SOp):
            raise ProgramError(f"Aggregate(selector, values) got {self.selector!r}, {self.values!r}")
        if self.score is not None and not isinstance(self.score, SOp):
            raise ProgramError(f"Aggregate score must be an SOp, got {self.score!r}")
        super().__post_init__()

    def _describe(self) -> str:
        return "Aggregate" if self.score is None else "Aggregate[scored]"

    def children(self) -> tuple[RASPExpr, ...]:
        return (self.selector, self.values) if self.score is None else (self.selector, self.values, self.score)

    def reads(self) -> list[SOp]:
        """The SOps the head reads besides its selector: values (and score)."""
        return [self.values] if self.score is None else [self.values, self.score]


@dataclass(frozen=True, eq=False, repr=False)
class SelectorWidth(SOp):
    """The number of keys the selector selects, per query."""

    selector: Selector = field(default_factory=Select)

    def __post_init__(self) -> None:
        if not isinstance(self.selector, Selector):
            raise ProgramError(f"SelectorWidth needs a selector, got {self.selector!r}")
        super().__post_init__()

    def default_encoding(self) -> str:
        return CATEGORICAL

    def children(self) -> tuple[RASPExpr, ...]:
        return (self.selector,)


# ---------------------------------------------------------------------------------------------
# The canonical leaves and short combinators.
# ---------------------------------------------------------------------------------------------
tokens = Tokens().named("tokens")
indices = Indices().named("indices")
length = Length().named("length")


def full(value: Fraction | int | float) -> Full:
    """A constant SOp (floats are taken exactly as the rational they denote)."""
    return Full(Fraction(value))


def apply(name: str, *args: SOp, params: Sequence[Fraction | int | float | str | E.Expr | Ratio] = ()) -> SOp:
    """Apply a registered value primitive: ``apply("mul", a, b)``, ``apply("affine", x, params=(2, 1))``.

    A constant may be a size expression (``params=(k,)``): it stays symbolic in the program."""
    fn = Prim(name, tuple(_param(p) for p in params))
    if len(args) == 1:
        return Map(fn, args[0])
    return SequenceMap(fn, tuple(args))


def imap(fn: Callable[..., E.Expr | int], *args: SOp) -> SOp:
    """Apply an integer index function traced from a lambda: ``imap(lambda p: p % n, indices)``."""
    f = index_fn(fn)
    if len(args) == 1:
        return Map(f, args[0])
    return SequenceMap(f, tuple(args))


def select(keys: SOp, queries: SOp, cmp: str) -> Select:
    """Select(keys, queries, cmp)."""
    return Select(keys, queries, cmp)


def aggregate(sel: Selector, values: SOp) -> Aggregate:
    """Aggregate(selector, values): the mean over the selected keys."""
    return Aggregate(sel, values)


def argmax_aggregate(sel: Selector, score: SOp, values: SOp) -> Aggregate:
    """A value-scored head: the mean of ``values`` over the selected keys of maximal ``score``."""
    return Aggregate(sel, values, score)


def maximum(sel: Selector, values: SOp) -> Aggregate:
    """The maximum of ``values`` over the selected keys (0 if none): a head scored by the values."""
    return Aggregate(sel, values, values)


def selector_width(sel: Selector) -> SelectorWidth:
    """SelectorWidth(selector)."""
    return SelectorWidth(sel)


# ---------------------------------------------------------------------------------------------
# Graph utilities.
# ---------------------------------------------------------------------------------------------
def topological(outputs: Sequence[RASPExpr]) -> list[RASPExpr]:
    """All nodes reachable from ``outputs``, dependencies first; cycles and foreign nodes fail."""
    order: list[RASPExpr] = []
    state: dict[int, int] = {}
    for root in outputs:
        if not isinstance(root, RASPExpr):
            raise ProgramError(f"not a program node: {root!r}")
        stack: list[tuple[RASPExpr, Iterator[RASPExpr]]] = [(root, iter(root.children()))]
        if state.get(id(root)) == 2:
            continue
        state[id(root)] = 1
        while stack:
            node, it = stack[-1]
            child = next(it, None)
            if child is None:
                stack.pop()
                state[id(node)] = 2
                order.append(node)
                continue
            if not isinstance(child, RASPExpr):
                raise ProgramError(f"foreign node {child!r} (type {type(child).__name__}) inside {node.label}")
            st = state.get(id(child))
            if st == 1:
                raise ProgramError(f"cycle in the program graph through {child.label}")
            if st is None:
                state[id(child)] = 1
                stack.append((child, iter(child.children())))
    return order


def selector_leaves(sel: Selector) -> list[SOp]:
    """The SOps a selector reads (keys and queries of its Select atoms)."""
    out: list[SOp] = []
    stack: list[RASPExpr] = [sel]
    while stack:
        s = stack.pop()
        if isinstance(s, Select):
            out += [s.keys, s.queries]
        else:
            stack += list(s.children())
    return out


def index_expr(sop: SOp, pos: E.Expr | None = None) -> E.Expr | None:
    """The SOp as an integer expression of the position, if it is built only from indices,
    integer constants, ``length`` and index Maps; else None.  Used by the Z3 translation."""
    pos = pos if pos is not None else E.Var("i")
    if isinstance(sop, Indices):
        return pos
    if isinstance(sop, Length):
        return E.Var("length")
    if isinstance(sop, Full):
        v = Fraction(sop.value)
        return E.Const(int(v)) if v.denominator == 1 else None
    if isinstance(sop, (Map, SequenceMap)) and isinstance(sop.fn, IndexFn):
        subs: dict[str, E.Expr | int] = {}
        for name, a in zip(sop.fn.argnames, sop.args, strict=True):
            ea = index_expr(a, pos)
            if ea is None:
                return None
            subs[name] = ea
        return sop.fn.expr.substitute(subs)
    return None


def is_structural(sop: SOp) -> bool:
    """True when the SOp's values depend only on positions and sizes (never on tokens)."""
    return index_expr(sop) is not None
