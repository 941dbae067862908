"""Named sizes: the integer symbols a program is built over, and the constants written with them.

A :class:`Size` is an index-expression variable (so Z3 proves a selector for every value) that is
bound to a value before a program runs; :class:`Ratio` and :data:`Param` are the constants a
primitive may carry (``scale(k)``, ``1/c``).  Also here: the sizes mentioned in an expression,
``int(e)`` of an expression over bound sizes (installed as :data:`attnsim.rasp.expr.VALUE_OF`), and
the rendering with bound sizes written as values that fingerprints use.

Apart from the program graph (:mod:`attnsim.rasp.core`, which names all of these too) because they
are the layer under it: the functions a Map carries (:mod:`attnsim.rasp.map_functions`) and the
nodes both read them.  :class:`ProgramError` sits here, at the bottom, since a size is the first
thing that can be malformed.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from attnsim.rasp import expr as E


class ProgramError(ValueError):
    """A program is malformed (foreign node, cycle, bad arity, unknown comparison...)."""


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
