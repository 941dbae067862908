"""Index maps over positions, planned from their expressions (never from their values).

:func:`plan_index` gives ``f(p)`` at every position p < L: the points where a comparison of two
sides affine in p changes cut [0, L) into stretches; on each, p is the coordinates of a
row-major frame, div/mod by a constant kept affine (:class:`Lin`) by splitting an axis where
the divisor needs it, anything else an array over the axes it varies on.  Values and errors
are those of :meth:`attnsim.rasp.expr.Expr.evaluate` at every position.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from attnsim.numeric.values import Lin, Val, axis_bounds
from attnsim.rasp import expr as E

Sym = Any  # a Lin or an int64 array broadcastable to the frame


class _Split(Exception):
    """Axis ``axis`` of the frame must be split into (n / r, r); evaluate the stretch again."""

    def __init__(self, axis: int, r: int) -> None:
        self.axis, self.r = axis, r


def _affine(e: E.Expr, var: str, env: Mapping[str, int], memo: dict[int, tuple[int, int] | None]) -> Any:
    """``e`` as (a, b) with e = a p + b, when it is built from p, constants and + - * only."""
    if id(e) in memo:
        return memo[id(e)]
    out: tuple[int, int] | None = None
    if isinstance(e, E.Var):
        out = (1, 0) if e.name == var else (0, int(env[e.name])) if e.name in env else None
    elif isinstance(e, E.Const):
        out = (0, e.value)
    elif isinstance(e, E.BinOp) and e.op in ("+", "-", "*"):
        a, b = _affine(e.a, var, env, memo), _affine(e.b, var, env, memo)
        if a is not None and b is not None:
            if e.op == "+":
                out = (a[0] + b[0], a[1] + b[1])
            elif e.op == "-":
                out = (a[0] - b[0], a[1] - b[1])
            elif a[0] == 0 or b[0] == 0:
                out = (a[0] * b[1] + b[0] * a[1], a[1] * b[1])
    memo[id(e)] = out
    return out


_FLIPPED = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}


def cut_points(e: E.Expr, var: str, env: Mapping[str, int], L: int) -> list[int]:
    """0, L and every point in between where a comparison of two sides affine in ``var`` may change."""
    memo: dict[int, Any] = {}
    points, seen, stack = {0, L}, set(), [e]
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        stack.extend(x.children())
        if isinstance(x, E.BinOp) and x.op in E.COMPARATORS:
            a, b = _affine(x.a, var, env, memo), _affine(x.b, var, env, memo)
            if a is not None and b is not None and a[0] != b[0]:
                t = Fraction(b[1] - a[1], a[0] - b[0])  # where the two sides meet
                op = x.op if a[0] > b[0] else _FLIPPED.get(x.op, x.op)  # as a comparison of p with t
                if op in ("<", ">="):
                    got = [math.ceil(t)]
                elif op in ("<=", ">"):
                    got = [math.floor(t) + 1]
                else:
                    got = [int(t), int(t) + 1] if t.denominator == 1 else []
                points.update(p for p in got if 0 < p < L)
    return sorted(points)


class _Stretch:
    """The evaluation of one expression over positions ``lo + (frame coordinates)``."""

    def __init__(self, var: str, env: Mapping[str, int], lo: int, shape: tuple[int, ...]) -> None:
        self.var, self.env, self.lo, self.shape = var, env, lo, shape
        self.memo: dict[int, Sym] = {}

    def arr(self, v: Sym) -> np.ndarray:
        """A value as an int64 array over the axes it varies on (extent 1 elsewhere)."""
        return v.array(self.shape) if isinstance(v, Lin) else np.asarray(v)

    def const(self, c: int) -> Lin:
        return Lin(int(c), (0,) * len(self.shape))

    def ev(self, e: E.Expr) -> Sym:
        got = self.memo.get(id(e))
        if got is None:
            got = self.memo[id(e)] = self._ev(e)
        return got

    def _ev(self, e: E.Expr) -> Sym:
        if isinstance(e, E.Var):
            if e.name == self.var:
                return Lin(self.lo, tuple(axis_bounds(self.shape)[-2::-1]))
            if e.name not in self.env:
                raise E.ExprError(f"unbound variable {e.name!r} in {E.render(e)}")
            return self.const(self.env[e.name])
        if isinstance(e, E.Const):
            return self.const(e.value)
        if isinstance(e, E.Not):
            return self._truth(self.ev(e.a), negate=True)
        if isinstance(e, E.If):
            c, a, b = self._truth(self.ev(e.cond)), self.ev(e.a), self.ev(e.b)
            if isinstance(c, Lin):
                return a if c.c else b
            return np.where(c != 0, self.arr(a), self.arr(b))
        assert isinstance(e, E.BinOp)
        return self._binop(e.op, self.ev(e.a), self.ev(e.b))

    def _truth(self, v: Sym, negate: bool = False) -> Sym:
        if isinstance(v, Lin) and not any(v.coef):
            return self.const(int((v.c != 0) != negate))
        return ((self.arr(v) != 0) != negate).astype(np.int64)

    def _binop(self, op: str, a: Sym, b: Sym) -> Sym:  # noqa: C901
        la, lb = isinstance(a, Lin), isinstance(b, Lin)
        if la and lb and op in ("+", "-"):
            s = 1 if op == "+" else -1
            return Lin(a.c + s * b.c, tuple(x + s * y for x, y in zip(a.coef, b.coef, strict=True)))
        if la and lb and op == "*" and (not any(a.coef) or not any(b.coef)):
            (k, v) = (a.c, b) if not any(a.coef) else (b.c, a)
            return Lin(k * v.c, tuple(k * x for x in v.coef))
        if op in ("div", "mod"):
            if np.any(self.arr(b) <= 0):
                raise E.ExprError("div/mod by a non-positive number; divisors in index expressions must be >= 1")
            if la and lb and not any(b.coef):
                return self._divmod(a, b.c, op)
        if op in E.COMPARATORS and la and lb:
            lo, hi = Lin(a.c - b.c, tuple(x - y for x, y in zip(a.coef, b.coef, strict=True))).span(self.shape)
            if op in ("==", "!=") and (lo > 0 or hi < 0 or lo == hi):
                return self.const(int(E.COMPARATORS[op](lo, 0)))
            if op not in ("==", "!=") and E.COMPARATORS[op](lo, 0) == E.COMPARATORS[op](hi, 0):
                return self.const(int(E.COMPARATORS[op](lo, 0)))
        if op in ("and", "or"):
            ta, tb = self._truth(a), self._truth(b)
            decide = 0 if op == "and" else 1  # a constant side that decides: the other is computed, not read
            for t in (ta, tb):
                if isinstance(t, Lin) and t.c == decide:
                    return self.const(decide)
            if isinstance(ta, Lin) and isinstance(tb, Lin):
                return self.const(ta.c * tb.c if op == "and" else max(ta.c, tb.c))
            x, y = self.arr(ta), self.arr(tb)
            return x * y if op == "and" else np.maximum(x, y)
        out = E.BinOp(op, E.Var("a"), E.Var("b")).evaluate({"a": self.arr(a), "b": self.arr(b)})
        return np.asarray(out, dtype=np.int64)

    def _divmod(self, a: Lin, d: int, op: str) -> Sym:
        """``a div d`` or ``a mod d`` kept affine (see the module docstring), else an array."""
        high = [x % d == 0 for x in a.coef]
        low = Lin(a.c, tuple(0 if h else x for x, h in zip(a.coef, high, strict=True)))
        lo, hi = low.span(self.shape)
        if lo // d == hi // d:
            q = lo // d
            if op == "mod":
                return Lin(low.c - q * d, low.coef)
            return Lin(q, tuple(x // d if h else 0 for x, h in zip(a.coef, high, strict=True)))
        cands = [(x, j) for j, x in enumerate(low.coef) if 0 < x < d and d % x == 0]
        for x, j in sorted(cands, reverse=True):
            r, n = d // x, self.shape[j]
            if 1 < r < n and n % r == 0:
                raise _Split(j, r)
        arr = self.arr(a)
        return arr // d if op == "div" else arr % d


def _stretch(e: E.Expr, var: str, env: Mapping[str, int], lo: int, hi: int) -> tuple[tuple[int, ...], Sym]:
    """``e`` over positions lo .. hi-1: the frame found for it and the value over that frame (a
    Lin, or an int64 array)."""
    shape: tuple[int, ...] = (hi - lo,)
    while True:
        st = _Stretch(var, env, lo, shape)
        try:
            got = st.ev(e)
            return shape, got if isinstance(got, Lin) else np.asarray(got, dtype=np.int64)
        except _Split as s:
            n = shape[s.axis]
            shape = (*shape[: s.axis], n // s.r, s.r, *shape[s.axis + 1 :])


def plan_index(e: E.Expr, var: str, env: Mapping[str, int], L: int) -> Val:
    """The value of ``e`` at positions ``var = 0 .. L-1`` (int64), planned (module docstring)."""
    pts = cut_points(e, var, env, L)
    parts: list[tuple[tuple[int, ...], Sym, Any]] = []  # (frame, value, the constant it is or None)
    for lo, hi in itertools.pairwise(pts):
        shape, v = _stretch(e, var, env, lo, hi)
        const = (None if any(v.coef) else v.c) if isinstance(v, Lin) else (v.reshape(-1)[0] if v.size == 1 else None)
        parts.append((shape, v, const))
    tail = parts[-1][2]
    while tail is not None and len(parts) > 1 and parts[-2][2] == tail:
        parts.pop()
    if tail is not None and len(parts) == 1:
        return Val.const(np.int64(tail))
    if tail is not None:
        parts.pop()
    if len(parts) == 1:
        shape, v, _ = parts[0]
        if tail is None:  # the value at the last position stands for the tail (never read: m = L)
            last = (-1,) * len(shape)  # a Lin's from its coefficients: never formed over the frame
            tail = v.c + sum(a * (n - 1) for a, n in zip(v.coef, shape, strict=True)) if isinstance(v, Lin) else v[last]
        lin = v if isinstance(v, Lin) else None
        return Val(None if lin else v, shape, np.int64(tail), lin)
    head = np.concatenate(
        [np.broadcast_to(v.array(s) if isinstance(v, Lin) else v, s).reshape(-1) for s, v, _ in parts]
    )
    return Val.flat(head, np.int64(tail if tail is not None else head[-1]))


__all__ = ["Lin", "cut_points", "plan_index"]
