"""Integer index expressions: the arithmetic inside index Maps.

An index function such as reflected(p) = (p mod n)*n + p div n is written once as an
:class:`Expr` tree over integer variables (a position ``p``, named sizes such as ``n``) and
then evaluated three ways: on NumPy int64 arrays (what runs), as a Z3 term (what is proven)
and as a SymPy expression (what is printed in closed-form costs).  ``div`` and ``mod`` are
floor division and its non-negative remainder; every divisor must be positive, which is what
the Z3 translation assumes when it introduces quotient/remainder variables.

The Z3 translation is :class:`attnsim.rasp.z3_translation.Z3Translator`, in its own module: it is a step
of the trusted base (docs/trusted-base.md), counted on its own.

``==`` is deliberately *not* overloaded (nodes compare by identity); use :meth:`Expr.eq`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

_ARITH = ("+", "-", "*", "div", "mod", "min", "max")
_CMP = ("==", "!=", "<", "<=", ">", ">=")
_BOOL = ("and", "or")


class ExprError(ValueError):
    """An index expression was built or evaluated on something it is not defined for."""


def _no_value(e: Expr) -> int:
    raise ExprError(f"{render(e)} has no Python value: a Python branch or int() on an index expression is an error")


VALUE_OF: Callable[[Expr], int] = _no_value
"""``int(e)`` / ``bool(e)``: set by :mod:`attnsim.rasp.core` (a value only when every size is bound)."""


def lift(x: Expr | int | bool) -> Expr:
    """Turn a Python int into a constant expression; expressions pass through."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, bool):
        return Const(int(x))
    if isinstance(x, (int, np.integer)):
        return Const(int(x))
    raise ExprError(f"cannot use {x!r} of type {type(x).__name__} in an index expression")


@dataclass(frozen=True, eq=False, repr=False)
class Expr:
    """Base of integer/boolean expression nodes (compare by identity, fingerprint by structure)."""

    def __add__(self, o: Expr | int) -> Expr:
        return BinOp("+", self, lift(o))

    def __radd__(self, o: Expr | int) -> Expr:
        return BinOp("+", lift(o), self)

    def __sub__(self, o: Expr | int) -> Expr:
        return BinOp("-", self, lift(o))

    def __rsub__(self, o: Expr | int) -> Expr:
        return BinOp("-", lift(o), self)

    def __mul__(self, o: Expr | int) -> Expr:
        return BinOp("*", self, lift(o))

    def __rmul__(self, o: Expr | int) -> Expr:
        return BinOp("*", lift(o), self)

    def __floordiv__(self, o: Expr | int) -> Expr:
        return BinOp("div", self, lift(o))

    def __rfloordiv__(self, o: Expr | int) -> Expr:
        return BinOp("div", lift(o), self)

    def __mod__(self, o: Expr | int) -> Expr:
        return BinOp("mod", self, lift(o))

    def __rmod__(self, o: Expr | int) -> Expr:
        return BinOp("mod", lift(o), self)

    def __neg__(self) -> Expr:
        return BinOp("-", Const(0), self)

    def __lt__(self, o: Expr | int) -> Expr:
        return BinOp("<", self, lift(o))

    def __le__(self, o: Expr | int) -> Expr:
        return BinOp("<=", self, lift(o))

    def __gt__(self, o: Expr | int) -> Expr:
        return BinOp(">", self, lift(o))

    def __ge__(self, o: Expr | int) -> Expr:
        return BinOp(">=", self, lift(o))

    def __and__(self, o: Expr | int) -> Expr:
        return BinOp("and", self, lift(o))

    def __or__(self, o: Expr | int) -> Expr:
        return BinOp("or", self, lift(o))

    def __invert__(self) -> Expr:
        return Not(self)

    def __bool__(self) -> bool:
        """Only an expression over bound sizes has a truth value; an unbound size raises."""
        return VALUE_OF(self) != 0

    def __int__(self) -> int:
        return VALUE_OF(self)

    def __index__(self) -> int:
        return VALUE_OF(self)

    def eq(self, o: Expr | int) -> Expr:
        """Equality as an expression (``==`` keeps Python's identity meaning)."""
        return BinOp("==", self, lift(o))

    def ne(self, o: Expr | int) -> Expr:
        """Disequality as an expression."""
        return BinOp("!=", self, lift(o))

    # -- structure ---------------------------------------------------------------------
    def children(self) -> tuple[Expr, ...]:
        return ()

    def variables(self) -> frozenset[str]:
        """Names of the free variables."""
        out: set[str] = set()
        stack: list[Expr] = [self]
        while stack:
            e = stack.pop()
            if isinstance(e, Var):
                out.add(e.name)
            stack.extend(e.children())
        return frozenset(out)

    @property
    def fingerprint(self) -> str:
        return render(self)

    def __repr__(self) -> str:
        return render(self)

    def __hash__(self) -> int:
        return id(self)

    # -- evaluation --------------------------------------------------------------------
    def evaluate(self, env: Mapping[str, Any]) -> Any:
        """Evaluate on ints or NumPy int64 arrays (broadcasting); booleans come back as 0/1."""
        return _eval(self, env)

    def to_sympy(self, env: Mapping[str, Any]) -> Any:
        """Translate to SymPy (floor, Mod, Piecewise); variables map through ``env``."""
        return _to_sympy(self, env)

    def substitute(self, mapping: Mapping[str, Expr | int]) -> Expr:
        """Replace variables by expressions."""
        return _subst(self, {k: lift(v) for k, v in mapping.items()})


@dataclass(frozen=True, eq=False, repr=False)
class Var(Expr):
    """An integer variable: a position or a named size parameter."""

    name: str

    def __hash__(self) -> int:
        return id(self)


@dataclass(frozen=True, eq=False, repr=False)
class Const(Expr):
    """An integer constant."""

    value: int

    def __hash__(self) -> int:
        return id(self)


@dataclass(frozen=True, eq=False, repr=False)
class BinOp(Expr):
    """Arithmetic (+ - * div mod min max), comparison or boolean connective."""

    op: str
    a: Expr
    b: Expr

    def __post_init__(self) -> None:
        if self.op not in _ARITH + _CMP + _BOOL:
            raise ExprError(f"unknown operator {self.op!r}")

    def children(self) -> tuple[Expr, ...]:
        return (self.a, self.b)

    def __hash__(self) -> int:
        return id(self)


@dataclass(frozen=True, eq=False, repr=False)
class Not(Expr):
    """Boolean negation."""

    a: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.a,)

    def __hash__(self) -> int:
        return id(self)


@dataclass(frozen=True, eq=False, repr=False)
class If(Expr):
    """if cond then a else b."""

    cond: Expr
    a: Expr
    b: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.cond, self.a, self.b)

    def __hash__(self) -> int:
        return id(self)


def is_truth_valued(e: Expr) -> bool:
    """The expression's value is always 0 or 1 (a comparison, a connective, a negation)."""
    return isinstance(e, Not) or (isinstance(e, BinOp) and e.op in (*_CMP, *_BOOL))


def if_(cond: Expr, a: Expr | int, b: Expr | int) -> Expr:
    """Conditional expression."""
    return If(cond, lift(a), lift(b))


def emin(a: Expr | int, b: Expr | int) -> Expr:
    """Minimum of two integer expressions."""
    return BinOp("min", lift(a), lift(b))


def emax(a: Expr | int, b: Expr | int) -> Expr:
    """Maximum of two integer expressions."""
    return BinOp("max", lift(a), lift(b))


def var(name: str) -> Var:
    """A named integer variable."""
    return Var(name)


def sizes(*names: str) -> tuple[Var, ...]:
    """Several size variables at once: ``r, c = sizes("rows", "cols")``."""
    return tuple(Var(n) for n in names)


# ---------------------------------------------------------------------------------------
def render(e: Expr) -> str:
    """A readable, canonical rendering (also the structural fingerprint)."""
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Const):
        return str(e.value)
    if isinstance(e, Not):
        return f"not({render(e.a)})"
    if isinstance(e, If):
        return f"(if {render(e.cond)} then {render(e.a)} else {render(e.b)})"
    if isinstance(e, BinOp):
        if e.op in ("min", "max"):
            return f"{e.op}({render(e.a)}, {render(e.b)})"
        return f"({render(e.a)} {e.op} {render(e.b)})"
    raise ExprError(f"not an expression: {e!r}")


def _check_divisor(d: Any) -> None:
    if np.any(np.asarray(d) <= 0):
        raise ExprError("div/mod by a non-positive number; divisors in index expressions must be >= 1")


def _eval(e: Expr, env: Mapping[str, Any]) -> Any:  # noqa: C901, PLR0912
    if isinstance(e, Var):
        try:
            return env[e.name]
        except KeyError:
            raise ExprError(f"unbound variable {e.name!r} in {render(e)}") from None
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Not):
        return 1 - _truth(_eval(e.a, env))
    if isinstance(e, If):
        c = _truth(_eval(e.cond, env))
        a, b = _eval(e.a, env), _eval(e.b, env)
        if isinstance(c, np.ndarray) or isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return np.where(np.asarray(c) != 0, a, b)
        return a if c else b
    assert isinstance(e, BinOp)
    a, b = _eval(e.a, env), _eval(e.b, env)
    op = e.op
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "div":
        _check_divisor(b)
        return a // b
    if op == "mod":
        _check_divisor(b)
        return a % b
    if op == "min":
        return np.minimum(a, b) if _arr(a, b) else min(a, b)
    if op == "max":
        return np.maximum(a, b) if _arr(a, b) else max(a, b)
    if op in _BOOL:
        ta, tb = _truth(a), _truth(b)
        return ta * tb if op == "and" else np.maximum(ta, tb) if _arr(ta, tb) else max(ta, tb)
    res = COMPARATORS[op](a, b)
    return res.astype(np.int64) if isinstance(res, np.ndarray) else int(res)


COMPARATORS: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
"""The six comparisons, elementwise on ints, NumPy arrays, Fractions and Z3 terms alike."""


def _arr(*xs: Any) -> bool:
    return any(isinstance(x, np.ndarray) for x in xs)


def _truth(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return (x != 0).astype(np.int64)
    return int(x != 0)


def _to_sympy(e: Expr, env: Mapping[str, Any]) -> Any:
    import sympy as sp

    if isinstance(e, Var):
        return env[e.name] if e.name in env else sp.Symbol(e.name, integer=True)
    if isinstance(e, Const):
        return sp.Integer(e.value)
    if isinstance(e, Not):
        return sp.Not(_to_sympy(e.a, env))
    if isinstance(e, If):
        return sp.Piecewise((_to_sympy(e.a, env), _to_sympy(e.cond, env)), (_to_sympy(e.b, env), True))
    assert isinstance(e, BinOp)
    a, b = _to_sympy(e.a, env), _to_sympy(e.b, env)
    table: dict[str, Callable[[], Any]] = {
        "+": lambda: a + b,
        "-": lambda: a - b,
        "*": lambda: a * b,
        "div": lambda: sp.floor(a / b),
        "mod": lambda: sp.Mod(a, b),
        "min": lambda: sp.Min(a, b),
        "max": lambda: sp.Max(a, b),
        "==": lambda: sp.Eq(a, b),
        "!=": lambda: sp.Ne(a, b),
        "<": lambda: sp.Lt(a, b),
        "<=": lambda: sp.Le(a, b),
        ">": lambda: sp.Gt(a, b),
        ">=": lambda: sp.Ge(a, b),
        "and": lambda: sp.And(a, b),
        "or": lambda: sp.Or(a, b),
    }
    return table[e.op]()


def _subst(e: Expr, m: Mapping[str, Expr]) -> Expr:
    if isinstance(e, Var):
        return m.get(e.name, e)
    if isinstance(e, Const):
        return e
    if isinstance(e, Not):
        return Not(_subst(e.a, m))
    if isinstance(e, If):
        return If(_subst(e.cond, m), _subst(e.a, m), _subst(e.b, m))
    assert isinstance(e, BinOp)
    return BinOp(e.op, _subst(e.a, m), _subst(e.b, m))


def map_tree(e: Expr, fn: Callable[[Expr], Expr | None]) -> Expr:
    """Rebuild ``e`` bottom-up, letting ``fn`` replace any node (used by mutation testing)."""
    if isinstance(e, Not):
        new: Expr = Not(map_tree(e.a, fn))
    elif isinstance(e, If):
        new = If(map_tree(e.cond, fn), map_tree(e.a, fn), map_tree(e.b, fn))
    elif isinstance(e, BinOp):
        new = BinOp(e.op, map_tree(e.a, fn), map_tree(e.b, fn))
    else:
        new = e
    out = fn(new)
    return new if out is None else out


def nodes(e: Expr) -> list[Expr]:
    """All sub-expressions, pre-order."""
    out: list[Expr] = []
    stack = [e]
    while stack:
        x = stack.pop()
        out.append(x)
        stack.extend(reversed(x.children()))
    return out
