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
"""

from __future__ import annotations

import contextvars
import hashlib
import inspect
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any

from attnsim.rasp import expr as E
from attnsim.rasp import primitives as P

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


class ProgramError(ValueError):
    """A program is malformed (foreign node, cycle, bad arity, unknown comparison...)."""


# ---------------------------------------------------------------------------------------------
# Sizes: named integer symbols bound to a value when a program is built.
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False, repr=False)
class Size(E.Var):
    """A named size parameter; ``Size("r")`` is unbound, ``Size("r", 3)`` is bound to 3.

    Inside index expressions it is a variable (so Z3 can prove a selector for every value).  A
    program is built over unbound sizes and bound with :func:`bind_program` before it runs; an
    unbound size has no Python value, so ``bool``/``int`` of an expression containing one raise
    (a Python branch on a size is an error: branch in the graph with ``E.if_``).
    """

    value: int | None = None

    def __post_init__(self) -> None:
        if self.value is not None and (
            not isinstance(self.value, int) or isinstance(self.value, bool) or self.value < 0
        ):
            raise ProgramError(f"size {self.name!r} must be a non-negative int, got {self.value!r}")
        if self.name in RESERVED_NAMES or "!" in self.name:
            raise ProgramError(
                f"size name {self.name!r} is reserved (the query/key positions of selector proofs are "
                f"{', '.join(sorted(RESERVED_NAMES))}; '!' marks internal variables): choose another name"
            )

    @property
    def bound(self) -> bool:
        return self.value is not None

    def bind(self, value: int) -> Size:
        """The same size bound to ``value``."""
        return Size(self.name, value)

    def __hash__(self) -> int:
        return id(self)


RESERVED_NAMES = frozenset({"q!", "k!"})  # z3sel.Q and z3sel.K: a size of that name would be the same variable


def size_bindings(e: E.Expr, bound_only: bool = False) -> dict[str, int]:
    """The Size values mentioned in an expression (a name bound twice to different values fails).

    An unbound size raises :class:`ProgramError` (its value is asked for where only a bound
    program may be: bind it first), or is skipped with ``bound_only``."""
    out: dict[str, int] = {}
    for n in E.nodes(e):
        if isinstance(n, Size):
            if n.value is None:
                if bound_only:
                    continue
                raise ProgramError(f"size {n.name!r} is unbound here: bind the program's sizes first")
            if out.get(n.name, n.value) != n.value:
                raise ProgramError(f"size {n.name!r} bound to both {out[n.name]} and {n.value}")
            out[n.name] = n.value
    return out


def unbound_sizes(e: E.Expr) -> frozenset[str]:
    """Names of the unbound sizes in an expression."""
    return frozenset(n.name for n in E.nodes(e) if isinstance(n, Size) and n.value is None)


def _expr_value(e: E.Expr) -> int:
    """``int(e)``/``bool(e)`` of an index expression: its value when every size in it is bound."""
    free = [n for n in E.nodes(e) if isinstance(n, E.Var) and not (isinstance(n, Size) and n.value is not None)]
    if free:
        raise E.ExprError(
            f"{E.render(e)} has no Python value ({', '.join(sorted({v.name for v in free}))} unbound): "
            "a Python branch or int() on a size is an error; branch inside the graph with if_()"
        )
    return int(e.evaluate(size_bindings(e)))


E.VALUE_OF = _expr_value


@dataclass(frozen=True)
class Ratio:
    """A rational size expression num / den (a primitive constant such as 1/c)."""

    num: E.Expr
    den: E.Expr

    def render(self) -> str:
        return f"{E.render(self.num)}/{E.render(self.den)}"


Param = Fraction | E.Expr | Ratio


def _param(p: Any) -> Param:
    if isinstance(p, (E.Expr, Ratio)):
        return p
    return Fraction(p)


def param_value(p: Param) -> Fraction:
    """A primitive constant's value (size expressions need their sizes bound)."""
    if isinstance(p, E.Expr):
        return Fraction(_expr_value(p))
    if isinstance(p, Ratio):
        return Fraction(_expr_value(p.num), _expr_value(p.den))
    return p


def shape_text(e: E.Expr) -> str:
    """``e`` rendered with every bound size written as its value: the fingerprint of a bound
    program does not depend on what its size symbols were called (``transpose(3, 5)`` and
    ``transpose(Size("r"), Size("c")).bind(r=3, c=5)`` are one program); unbound sizes keep their
    names (they are the program's parameters)."""
    return E.render(_values_inline(e))


def _values_inline(e: E.Expr) -> E.Expr:
    """``e`` with each bound Size node (and only those: not an unbound size or a variable of the
    same name) replaced by its value."""
    if isinstance(e, Size):
        return E.Const(e.value) if e.value is not None else e
    if isinstance(e, (E.Var, E.Const)):
        return e
    if isinstance(e, E.Not):
        return E.Not(_values_inline(e.a))
    if isinstance(e, E.If):
        return E.If(_values_inline(e.cond), _values_inline(e.a), _values_inline(e.b))
    assert isinstance(e, E.BinOp)
    return E.BinOp(e.op, _values_inline(e.a), _values_inline(e.b))


def _param_render(p: Param) -> str:
    if isinstance(p, E.Expr):
        return f"<{shape_text(p)}>"
    if isinstance(p, Ratio):
        return f"<{shape_text(p.num)}/{shape_text(p.den)}>"
    return str(p)


# ---------------------------------------------------------------------------------------------
# Functions carried by Map / SequenceMap.
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False, repr=False)
class Prim:
    """A registered value primitive with constant parameters (e.g. affine(a, b)).

    ``consts`` may hold size expressions (``scale(k)`` of a sum = k x mean, or a :class:`Ratio`);
    ``params`` are their values, which need the sizes bound.
    """

    name: str
    consts: tuple[Param, ...] = ()

    def __post_init__(self) -> None:
        prim = P.get(self.name)
        if len(self.consts) != prim.n_params:
            raise ProgramError(f"primitive {self.name!r} takes {prim.n_params} constants, got {len(self.consts)}")
        object.__setattr__(self, "consts", tuple(_param(p) for p in self.consts))

    @property
    def params(self) -> tuple[Fraction, ...]:
        return tuple(param_value(p) for p in self.consts)

    @property
    def primitive(self) -> P.Primitive:
        return P.get(self.name)

    @property
    def arity(self) -> int:
        return self.primitive.arity

    @property
    def realization(self) -> str:
        return self.primitive.realization

    @property
    def fingerprint(self) -> str:
        ps = ",".join(_param_render(p) for p in self.consts)
        return f"{self.name}[{ps}]" if ps else self.name

    def __repr__(self) -> str:
        return self.fingerprint


@dataclass(frozen=True, eq=False, repr=False)
class IndexFn:
    """An integer function written as an index expression over argument variables x0, x1, ...

    Size parameters inside ``expr`` are :class:`Size` variables; ``bindings`` records their
    values.  Integer index maps realize as a finite lookup on their (finite) input domain.
    """

    expr: E.Expr
    argnames: tuple[str, ...]

    @cached_property
    def bindings(self) -> dict[str, int]:
        """Values of the bound sizes (an unbound one stays a variable: evaluating it fails)."""
        return size_bindings(self.expr, bound_only=True)

    @property
    def arity(self) -> int:
        return len(self.argnames)

    @property
    def realization(self) -> str:
        return "finite-lookup"

    @property
    def fingerprint(self) -> str:
        return f"λ{','.join(self.argnames)}.{shape_text(self.expr)}"

    def evaluate(self, *args: Any) -> Any:
        env: dict[str, Any] = dict(self.bindings)
        env.update(zip(self.argnames, args, strict=True))
        return self.expr.evaluate(env)

    def __repr__(self) -> str:
        return self.fingerprint


Fn = Prim | IndexFn


def index_fn(fn: Callable[..., E.Expr | int]) -> IndexFn:
    """Trace a Python lambda over integer expressions into an :class:`IndexFn`."""
    n = len(inspect.signature(fn).parameters)
    names = tuple(f"x{i}" for i in range(n))
    out = E.lift(fn(*(E.Var(a) for a in names)))
    return IndexFn(out, names)


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
