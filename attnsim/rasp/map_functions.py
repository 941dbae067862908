"""The functions a Map / SequenceMap carries: a registered value primitive with its constants
(:class:`Prim`) or an integer index expression over its arguments (:class:`IndexFn`).

Apart from the program graph (:mod:`attnsim.rasp.core`, which names them too) because they are
what its position-wise nodes hold, not nodes themselves: each has its own arity, realization and
fingerprint, and reads the sizes of :mod:`attnsim.rasp.sizes`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any

from attnsim.rasp import expr as E
from attnsim.rasp import primitives as P
from attnsim.rasp.sizes import Param, ProgramError, _param, _param_render, param_value, shape_text, size_bindings


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
