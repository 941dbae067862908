"""Index expressions compiled once into straight-line NumPy code.

:meth:`attnsim.rasp.expr.Expr.evaluate` interprets a tree node by node, recursively, on every
call; U's index maps are trees of a few hundred nodes in which the same grid decoding
(``(p - offset) div d mod e``) recurs many times, evaluated over millions of positions.  Here an
expression is turned once into a list of steps over NumPy arrays:

* structurally equal sub-expressions become one step (common sub-expressions are computed once);
* sub-expressions over bound sizes only are folded to Python ints at compile time;
* comparisons and connectives stay boolean arrays (no 0/1 int64 round trip), converted to 0/1
  integers only where an integer is needed;
* each intermediate array is dropped after its last use.

The compiled function gives the same values as ``evaluate`` (int64 arithmetic, floor ``div``,
non-negative ``mod``, booleans as 0/1) and the same errors (an unbound variable, a divisor <= 0
met at run time: both branches of an ``if`` are evaluated, as the interpreter does);
tests/rasp/test_compiled_expr.py checks this on random expressions.
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnsim.rasp.expr import COMPARATORS, BinOp, Const, Expr, ExprError, If, Not, Var

_BOOL_OPS = ("and", "or")


def _checked(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``fn`` (floor division or modulo) raising the interpreter's error on a divisor <= 0."""

    def run(a: Any, b: Any) -> Any:
        if np.any(np.asarray(b) <= 0):
            raise ExprError("div/mod by a non-positive number; divisors in index expressions must be >= 1")
        return fn(a, b)

    return run


def _minimum(a: Any, b: Any) -> Any:
    return np.minimum(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else min(a, b)


def _maximum(a: Any, b: Any) -> Any:
    return np.maximum(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else max(a, b)


def _where(c: Any, a: Any, b: Any) -> Any:
    if isinstance(c, np.ndarray) or isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.where(c, a, b)
    return a if c else b


def _not(a: Any) -> Any:
    return np.logical_not(a) if isinstance(a, np.ndarray) else not a


def _to_int(a: Any) -> Any:
    return a.astype(np.int64) if isinstance(a, np.ndarray) else int(a)


def _to_bool(a: Any) -> Any:
    return a != 0


_INT_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "div": operator.floordiv,
    "mod": operator.mod,
    "min": _minimum,
    "max": _maximum,
}


Interval = tuple[int, int] | None  # [lo, hi] of a slot's values; None: unknown


def _corners(fn: Callable[[int, int], int], a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    vals = [fn(x, y) for x in a for y in b]
    return min(vals), max(vals)


def _interval(text: str, ins: list[Interval]) -> Interval:
    """The range of a step's values given its arguments' ranges (sound: every value lies in it)."""
    if text in ("int", "bool", "not", "and", "or", *COMPARATORS):
        return (0, 1)
    if text.startswith("rem:"):  # a - (a div d) * d for a constant d >= 1
        return (0, int(text[4:]) - 1)
    if any(i is None for i in ins):
        return None
    iv = [i for i in ins if i is not None]
    if text == "if":
        return (min(iv[1][0], iv[2][0]), max(iv[1][1], iv[2][1]))
    a, b = iv[0], iv[1]
    if text == "+":
        return (a[0] + b[0], a[1] + b[1])
    if text == "-":
        return (a[0] - b[1], a[1] - b[0])
    if text == "*":
        return _corners(operator.mul, a, b)
    if text in ("min", "max"):
        f = min if text == "min" else max
        return (f(a[0], b[0]), f(a[1], b[1]))
    if b[0] < 1:
        return None  # the step raises (a divisor <= 0) or its range is not bounded here
    if text == "div":
        return _corners(operator.floordiv, a, b)
    return (0, b[1] - 1)  # mod


_INT32 = (int(np.iinfo(np.int32).min), int(np.iinfo(np.int32).max))


@dataclass(frozen=True)
class Step:
    """``slots[out] = fn(*slots[args])``, then the slots in ``drop`` are released."""

    out: int
    fn: Callable[..., Any]
    args: tuple[int, ...]
    drop: tuple[int, ...]
    text: str  # the operation, for messages and tests
    interval: str  # the rule for the range of its values (``_interval``)


@dataclass(frozen=True)
class CompiledExpr:
    """An expression as straight-line steps over slots: argument slots first, then constants,
    then one slot per distinct sub-expression."""

    argnames: tuple[str, ...]
    constants: tuple[tuple[int, int], ...]  # (slot, value)
    steps: tuple[Step, ...]
    result: int
    result_is_bool: bool
    slots: int
    unbound: str | None  # a variable neither an argument nor bound: evaluating raises
    narrow_cache: dict[tuple[tuple[int, int], ...], bool] = field(default_factory=dict, compare=False)

    def fits_int32(self, bounds: Sequence[tuple[int, int]]) -> bool:
        """Every intermediate value lies in int32 when argument i lies in ``bounds[i]``
        (interval arithmetic over the steps): then int32 arrays give the int64 results."""
        ranges: list[Interval] = [None] * self.slots
        ranges[: len(bounds)] = list(bounds)
        for i, v in self.constants:
            ranges[i] = (v, v)
        for r in ranges[: len(bounds)] + [(v, v) for _, v in self.constants]:
            if r is None or r[0] < _INT32[0] or r[1] > _INT32[1]:
                return False
        for st in self.steps:
            r = _interval(st.interval, [ranges[a] for a in st.args])
            if r is None or r[0] < _INT32[0] or r[1] > _INT32[1]:
                return False
            ranges[st.out] = r
        return True

    def __call__(self, *args: Any) -> Any:
        """The expression's value on ints or int64 arrays (broadcasting), booleans as 0/1.

        With array arguments whose ranges keep every intermediate value in int32 (checked by
        interval arithmetic, :meth:`fits_int32`), the steps run on int32 arrays (exact, so the
        same values, faster) and the result comes back as int64."""
        if len(args) != len(self.argnames):
            raise ExprError(f"expected {len(self.argnames)} argument(s) {self.argnames}, got {len(args)}")
        if self.unbound is not None:
            raise ExprError(f"unbound variable {self.unbound!r}")
        narrow = False
        if args and all(isinstance(a, np.ndarray) and a.dtype.kind in "iu" and a.size for a in args):
            bounds = tuple((int(a.min()), int(a.max())) for a in args)
            narrow = self._narrow(bounds)
            if narrow:
                args = tuple(a.astype(np.int32) for a in args)
        slots: list[Any] = [None] * self.slots
        slots[: len(args)] = args
        for i, v in self.constants:
            slots[i] = v
        for st in self.steps:
            slots[st.out] = st.fn(*[slots[a] for a in st.args])
            for d in st.drop:
                slots[d] = None
        out = slots[self.result]
        if self.result_is_bool:
            return _to_int(out)
        return out.astype(np.int64) if narrow and isinstance(out, np.ndarray) else out

    def _narrow(self, bounds: tuple[tuple[int, int], ...]) -> bool:
        hit = self.narrow_cache.get(bounds)
        if hit is None:
            hit = self.fits_int32(bounds)
            if len(self.narrow_cache) > 256:
                self.narrow_cache.clear()
            self.narrow_cache[bounds] = hit
        return hit

    @property
    def operations(self) -> int:
        """Steps per call: what the compile saves against the tree's node count."""
        return len(self.steps)


class _Compiler:
    """Builds a :class:`CompiledExpr`: one slot per distinct (structural) sub-expression."""

    def __init__(self, argnames: Sequence[str], bindings: Mapping[str, int]) -> None:
        self.argnames = tuple(argnames)
        self.bindings = dict(bindings)
        self.nslots = len(self.argnames)
        self.consts: dict[int, int] = {}  # value -> slot
        self.const_of: dict[int, int] = {}  # slot -> value
        self.by_key: dict[tuple[Any, ...], int] = {}
        self.kind: dict[int, bool] = {i: False for i in range(self.nslots)}  # slot -> holds a bool
        self.ops: list[tuple[int, Callable[..., Any], tuple[int, ...], str, str]] = []
        self.memo: dict[int, int] = {}  # id(Expr node) -> slot
        self.unbound: str | None = None

    # -- slots ---------------------------------------------------------------------------
    def const(self, v: int) -> int:
        v = int(v)
        if v not in self.consts:
            s = self.nslots
            self.nslots += 1
            self.consts[v] = s
            self.const_of[s] = v
            self.kind[s] = False
        return self.consts[v]

    def op(self, text: str, fn: Callable[..., Any], args: tuple[int, ...], is_bool: bool, rule: str = "") -> int:
        """A step (folded when every argument is a constant and the step succeeds); ``rule``
        names its interval rule when it differs from ``text``."""
        key = (text, *args)
        if key in self.by_key:
            return self.by_key[key]
        if all(a in self.const_of for a in args):
            try:
                v = fn(*[self.const_of[a] for a in args])
            except (ExprError, ZeroDivisionError):
                v = None  # kept as a step: the error is raised when the expression is evaluated
            if v is not None:
                s = self.const(int(v))
                self.by_key[key] = s
                return s
        s = self.nslots
        self.nslots += 1
        self.kind[s] = is_bool
        self.ops.append((s, fn, args, text, rule or text))
        self.by_key[key] = s
        return s

    def as_int(self, s: int) -> int:
        return self.op("int", _to_int, (s,), False) if self.kind[s] else s

    def as_bool(self, s: int) -> int:
        return s if self.kind[s] else self.op("bool", _to_bool, (s,), True)

    # -- expressions -----------------------------------------------------------------------
    def node(self, e: Expr) -> int:
        s = self.memo.get(id(e))
        if s is None:
            s = self._node(e)
            self.memo[id(e)] = s
        return s

    def _node(self, e: Expr) -> int:
        if isinstance(e, Var):
            if e.name in self.argnames:
                return self.argnames.index(e.name)
            if e.name in self.bindings:
                return self.const(self.bindings[e.name])
            self.unbound = self.unbound or e.name
            return self.const(0)
        if isinstance(e, Const):
            return self.const(e.value)
        if isinstance(e, Not):
            return self.op("not", _not, (self.as_bool(self.node(e.a)),), True)
        if isinstance(e, If):
            c = self.as_bool(self.node(e.cond))
            a, b = self.as_int(self.node(e.a)), self.as_int(self.node(e.b))
            ca, cb = self.const_of.get(a), self.const_of.get(b)
            if (ca, cb) == (1, 0):  # if c then 1 else 0: the truth value itself
                return self.as_int(c)
            if (ca, cb) == (0, 1):
                return self.as_int(self.op("not", _not, (c,), True))
            return self.op("if", _where, (c, a, b), False)
        if not isinstance(e, BinOp):
            raise ExprError(f"not an expression: {e!r}")
        if e.op in _BOOL_OPS:
            a, b = self.as_bool(self.node(e.a)), self.as_bool(self.node(e.b))
            return self.op(e.op, operator.and_ if e.op == "and" else operator.or_, (a, b), True)
        a, b = self.as_int(self.node(e.a)), self.as_int(self.node(e.b))
        if e.op in COMPARATORS:
            return self.op(e.op, COMPARATORS[e.op], (a, b), True)
        fn = _INT_OPS[e.op]
        positive = b in self.const_of and self.const_of[b] >= 1
        if e.op == "mod" and positive:
            # a mod d = a - (a div d) * d for d >= 1: NumPy divides by a scalar much faster
            # than it takes a remainder, and the quotient is often a step of its own already
            return self._rem(a, self.op("div", operator.floordiv, (a, b), False), b)
        if e.op in ("div", "mod") and not positive:
            fn = _checked(fn)
        return self.op(e.op, fn, (a, b), False)

    def _rem(self, a: int, q: int, d: int) -> int:
        """a - q * d, with q = a div d (d a positive constant): the remainder, in [0, d)."""
        qd = self.op("*", operator.mul, (q, d), False)
        return self.op("-", operator.sub, (a, qd), False, f"rem:{self.const_of[d]}")

    def build(self, e: Expr) -> CompiledExpr:
        res = self.node(e)
        last: dict[int, int] = {}
        for i, (_, _, args, _, _) in enumerate(self.ops):
            for a in args:
                last[a] = i
        fixed = set(range(len(self.argnames))) | set(self.const_of) | {res}
        steps = []
        for i, (out, fn, args, text, rule) in enumerate(self.ops):
            drop = tuple(sorted({a for a in args if last.get(a) == i and a not in fixed}))
            steps.append(Step(out, fn, args, drop, text, rule))
        return CompiledExpr(
            self.argnames,
            tuple((s, v) for s, v in self.const_of.items()),
            tuple(steps),
            res,
            self.kind[res],
            self.nslots,
            self.unbound,
        )


def compile_expr(e: Expr, argnames: Sequence[str], bindings: Mapping[str, int]) -> CompiledExpr:
    """Compile ``e`` over the argument variables ``argnames`` with the sizes ``bindings`` fixed."""
    return _Compiler(argnames, bindings).build(e)


class _Compiled:
    """What :func:`compiled` keeps per index function: the compiled code and its bindings."""

    def __init__(self, code: CompiledExpr, bindings: dict[str, int]) -> None:
        self.code = code
        self.bindings = bindings


_CACHE: weakref.WeakKeyDictionary[Any, _Compiled] = weakref.WeakKeyDictionary()


def compiled(fn: Any) -> CompiledExpr:
    """The compiled code of an :class:`attnsim.rasp.core.IndexFn` (its ``expr``, ``argnames`` and
    bound sizes), compiled on first use and kept as long as the function lives."""
    bindings = dict(fn.bindings)
    hit = _CACHE.get(fn)
    if hit is None or hit.bindings != bindings:
        hit = _Compiled(compile_expr(fn.expr, fn.argnames, bindings), bindings)
        _CACHE[fn] = hit
    return hit.code


def describe(code: CompiledExpr) -> str:
    """The steps, one a line (for debugging and docs)."""
    lines = [f"args {', '.join(f's{i}={n}' for i, n in enumerate(code.argnames))}"]
    lines += [f"s{s} = {v}" for s, v in code.constants]
    lines += [f"s{st.out} = {st.text}({', '.join(f's{a}' for a in st.args)})" for st in code.steps]
    lines.append(f"result s{code.result}")
    return "\n".join(lines)


__all__ = ["CompiledExpr", "Step", "compile_expr", "compiled", "describe"]
