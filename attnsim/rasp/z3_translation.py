"""Index expressions to Z3: the translation every Z3 proof of a selector, a layout or a decoded
position goes through.

An :class:`~attnsim.rasp.expr.Expr` becomes a Z3 integer term (or formula); ``div`` and ``mod``
become fresh quotient/remainder variables with side conditions.  Its own module, apart from the
expression language (:mod:`attnsim.rasp.expr`), because it is a step of the trusted base: the
exported SMT-LIB queries are its output, and benchmarks/trusted_base.py counts this file
(docs/trusted-base.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from attnsim.rasp.expr import _BOOL, _CMP, COMPARATORS, BinOp, Const, Expr, ExprError, If, Not, Var, render


def _quotient_name(a: Any, b: Any) -> str:
    """The name of (a div b, a mod b) for two Z3 terms: a digest of the terms themselves.

    Named by content, not by a process-wide counter: the same query then has the same text (and
    Z3 the same work, in rlimit units) however many queries the process asked before;
    two translators feeding one solver give the same (a, b) the same quotient, which its side
    conditions define uniquely (floor division, b >= 1), and distinct pairs distinct names."""
    return hashlib.sha1(f"{a.sexpr()}|{b.sexpr()}".encode()).hexdigest()[:20]


@dataclass
class Z3Translator:
    """Translate expressions to Z3 with div/mod as fresh variables.

    For ``a div d`` and ``a mod d`` we introduce q, r with ``d >= 1 -> (a = q*d + r, 0 <= r < d)``
    and reuse them for the same (a, d) pair.  This is floor division for positive divisors and is
    what keeps nonlinear proofs decidable in practice.  ``d >= 1`` is NOT assumed: every divisor is
    collected in ``divisors`` and a prover must show it (:meth:`defined`), so that a claim cannot
    hold merely because a divisor is <= 0 somewhere (where the engine raises).
    """

    env: Mapping[str, Any]
    side: list[Any]
    cache: dict[tuple[str, str], tuple[Any, Any]] = field(default_factory=dict)
    divisors: list[Any] = field(default_factory=list)

    def defined(self) -> Any:
        """Every divisor translated so far is >= 1 (a Z3 formula): conjoin it with the goal."""
        import z3

        return z3.And(*[d >= 1 for d in self.divisors]) if self.divisors else z3.BoolVal(True)

    def term(self, e: Expr) -> Any:  # noqa: C901
        import z3

        if isinstance(e, Var):
            if e.name not in self.env:
                raise ExprError(f"unbound variable {e.name!r} for Z3")
            return self.env[e.name]
        if isinstance(e, Const):
            return z3.IntVal(e.value)
        if isinstance(e, Not):
            return z3.Not(self.boolean(e.a))
        if isinstance(e, If):
            return z3.If(self.boolean(e.cond), self.term(e.a), self.term(e.b))
        assert isinstance(e, BinOp)
        if e.op in _CMP or e.op in _BOOL:
            return z3.If(self.boolean(e), z3.IntVal(1), z3.IntVal(0))
        a, b = self.term(e.a), self.term(e.b)
        if e.op == "+":
            return a + b
        if e.op == "-":
            return a - b
        if e.op == "*":
            return a * b
        if e.op == "min":
            return z3.If(a <= b, a, b)
        if e.op == "max":
            return z3.If(a >= b, a, b)
        key = (render(e.a), render(e.b))
        if key not in self.cache:
            n = _quotient_name(a, b)
            q, r = z3.Int(f"q!{n}"), z3.Int(f"r!{n}")
            self.side.append(z3.Implies(b >= 1, z3.And(a == q * b + r, r >= 0, r < b)))
            self.divisors.append(b)
            self.cache[key] = (q, r)
        q, r = self.cache[key]
        return q if e.op == "div" else r

    def boolean(self, e: Expr) -> Any:
        import z3

        if isinstance(e, Not):
            return z3.Not(self.boolean(e.a))
        if isinstance(e, BinOp) and e.op in _BOOL:
            fa, fb = self.boolean(e.a), self.boolean(e.b)
            return z3.And(fa, fb) if e.op == "and" else z3.Or(fa, fb)
        if isinstance(e, BinOp) and e.op in _CMP:
            return COMPARATORS[e.op](self.term(e.a), self.term(e.b))
        return self.term(e) != 0
