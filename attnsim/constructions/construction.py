"""The Construction object every lemma returns: one program and everything needed to run it.

A :class:`Construction` bundles one program, the :class:`Layout` of its operands and result,
the textbook reference, the paper's result it realizes and the Z3 intents of its selectors.
``run`` encodes the operands into one token sequence (Proposition 1), runs the program with
the chosen backend and decodes the result block.  :func:`sized` gives every factory one build
path (the symbolic build, bound).  The obligations every lemma shares are in
:mod:`attnsim.constructions.checks` and :mod:`attnsim.constructions.input_domain`: this
module is the program record, those the checking.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, TypeVar

import numpy as np

from attnsim.proofs import construction as protocol
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.arith import BackendError, NonFiniteError
from attnsim.rasp.bind import Binder
from attnsim.rasp.engine import BACKENDS, Trace, evaluate, trace
from attnsim.rasp.guards import complex_entry, sympy_instance
from attnsim.rasp.intent import Intent
from attnsim.rasp.layout import Layout, MatRef, as_array
from attnsim.rasp.schedule import Cost, cost


class ConstructionError(ValueError):
    """Bad operands for a construction (shape, NaN, singular...)."""


class NonFiniteResultError(ConstructionError):
    """A float64 result entry is not finite (overflow, 0/0...): refused, never returned."""


def to_backend(x: Any, backend: str, what: str = "operand") -> np.ndarray:  # noqa: C901, PLR0912
    """Convert an operand (NumPy of any dtype, nested lists, SymPy matrix) to a backend array."""
    a = as_array(x)
    bad_complex = complex_entry(a)
    if bad_complex:
        raise ConstructionError(f"{what}: {bad_complex}")
    if backend == "numpy":
        try:
            out = np.asarray(a, dtype=np.float64)
        except (TypeError, ValueError):
            raise ConstructionError(f"{what} has non-numeric entries; use backend='sympy'") from None
        if not np.all(np.isfinite(out)):
            raise ConstructionError(f"{what} contains NaN or inf")
        return out
    import sympy as sp  # the exact and SymPy backends: loaded for them only

    from attnsim.rasp.exact import ExactArith

    flat = a.reshape(-1)
    res = np.empty(flat.shape, dtype=object)
    for i, v in enumerate(flat):
        if backend == "exact":
            if isinstance(v, (float, np.floating)) and not np.isfinite(v):
                raise ConstructionError(f"{what} contains NaN or inf")
            try:
                res[i] = ExactArith.to_fraction(v)
            except BackendError as exc:
                raise ConstructionError(f"{what}: {exc}") from None
        elif backend == "sympy":
            if isinstance(v, (float, np.floating)):
                if not np.isfinite(v):
                    raise ConstructionError(f"{what} contains NaN or inf")
                f = Fraction(float(v))
                res[i] = sp.Rational(f.numerator, f.denominator)
            elif isinstance(v, Fraction):
                res[i] = sp.Rational(v.numerator, v.denominator)
            else:
                res[i] = sp.sympify(v)
        else:
            raise ConstructionError(f"unknown backend {backend!r}; use one of {BACKENDS}")
    return res.reshape(a.shape)


@dataclass
class Construction:
    """One lemma, theorem or application as a runnable, checkable program."""

    name: str
    paper_ref: str
    program: C.SOp
    layout: Layout
    inputs: tuple[str, ...]
    reference_fn: Callable[..., Any]
    output: str = "out"
    out_shape: tuple[Any, ...] | None = None  # ints, or size expressions bound with the program
    intents: list[Intent] = field(default_factory=list)
    paper_cost: dict[str, Any] | None = None
    exact: bool = True
    check_inputs: Callable[..., None] | None = None
    specification: Any = None  # a BoundSpec of the folder's spec.py: the independent textbook statement
    cases: tuple[tuple[str, int], ...] = ()  # (output coordinate, m): the spec proof splits it by residue mod m
    # (operand, lower, upper size, output coordinate): a 1 x 1 operand holding an integer in [lower, upper]
    # (what check_inputs enforces), compared with that coordinate; the spec proof splits on the comparison
    scalars: tuple[tuple[str, int, Any, str], ...] = ()
    binary: tuple[str, ...] = ()  # operands whose entries are 0 or 1 (what check_inputs enforces)
    # (module, public factory name, arguments with Size symbols): set by @sized, read by build_obligation
    built_by: tuple[str, str, tuple[tuple[str, Any], ...]] | None = None

    def __repr__(self) -> str:
        """One short line (the dataclass's repr printed the whole program and layout: 11 kB for Linformer)."""
        return f"<{type(self).__name__} {self.name!r} ({self.paper_ref}): {', '.join(self.inputs)} -> {self.output}>"

    # -- sizes ---------------------------------------------------------------------------
    def bind(self, /, **sizes: int) -> Construction:
        """The same construction with the named unbound sizes bound (an integer call of a factory
        is the symbolic build followed by this); bound sizes and unknown names are refused."""
        free = self.free_sizes
        for name, v in sizes.items():
            if name not in free:
                raise ConstructionError(
                    f"{self.name}: no unbound size {name!r} (unbound: {', '.join(sorted(free)) or 'none'})"
                )
            low = self.minimums.get(name, 1)
            if not isinstance(v, int) or isinstance(v, bool) or v < low:
                raise ConstructionError(f"{self.name}: size {name} must be an int >= {low}, got {v!r}")
        return self._rebind(sizes)

    def reparametrize(self, /, **sizes: E.Expr) -> Construction:
        """The construction with unbound sizes replaced by size expressions (n = 2 m, m a new size)."""
        for name in sizes:
            if name not in self.free_sizes:
                raise ConstructionError(f"{self.name}: no unbound size {name!r}")
        return self._rebind(sizes)

    def _rebind(self, sizes: dict[str, Any]) -> Construction:
        if not sizes:
            return self
        b = Binder(sizes)
        layout = Layout(tuple(b.block(x) for x in self.layout.blocks), b.expr(self.layout.length))
        intents = [
            dataclasses.replace(
                it,
                selector=b.node(it.selector),
                intent=b.expr(it.intent),
                queries=b.expr(it.queries),
                assumptions=tuple(b.expr(a) for a in it.assumptions),
                keys=_rebind_hint(it.keys, b),
            )
            for it in self.intents
        ]
        out = dataclasses.replace(
            self,
            program=b.node(self.program),
            layout=layout,
            intents=intents,
            out_shape=None if self.out_shape is None else tuple(_bound_value(b, x) for x in self.out_shape),
            paper_cost=None if self.paper_cost is None else {k: _bound_value(b, v) for k, v in self.paper_cost.items()},
            scalars=tuple((name, lo, b.expr(E.lift(up)), coord) for name, lo, up, coord in self.scalars),
        )
        for pre in self.preconditions:
            bpre = b.expr(pre)
            if C.unbound_sizes(bpre):
                continue
            if not bpre.evaluate(C.size_bindings(bpre)):
                raise ConstructionError(f"{self.name}: sizes {sizes} violate the precondition {E.render(pre)}")
        for name, low in self.minimums.items():  # the proofs' size domain: bind may not leave it
            v = sizes.get(name)
            if isinstance(v, int) and v < low:
                raise ConstructionError(f"{self.name}: size {name} = {v} is below its declared minimum {low}")
        return out

    @property
    def minimums(self) -> dict[str, int]:
        """Declared size minimums (1 unless an intent says otherwise): part of every proof's domain."""
        out: dict[str, int] = {}
        for it in self.intents:
            for name, low in it.minimum:
                out[name] = max(out.get(name, low), low) if name in out else low
        return out

    def size_exprs(self) -> list[E.Expr]:
        """Every size expression of the layout and of the program's index maps and constants."""
        out: list[E.Expr] = [self.layout.length]
        for b in self.layout:
            out += [b.offset, b.rows, b.cols, b.stack]
        for n in C.topological([self.program]):
            fn = getattr(n, "fn", None)
            if isinstance(fn, C.IndexFn):
                out.append(fn.expr)
            elif isinstance(fn, C.Prim):
                for p in fn.consts:
                    out += [p] if isinstance(p, E.Expr) else [p.num, p.den] if isinstance(p, C.Ratio) else []
        return out

    @property
    def free_sizes(self) -> frozenset[str]:
        """Names of the sizes not yet bound, in the layout or the program (an all-sizes proof works on these)."""
        return frozenset(name for e in self.size_exprs() for name in C.unbound_sizes(e))

    @property
    def preconditions(self) -> tuple[E.Expr, ...]:
        """Declared size constraints (premises of the all-sizes proof; checked by ``bind``)."""
        pre: list[E.Expr] = []
        for it in self.intents:
            pre += [a for a in it.assumptions if not (a.variables() & {"q!", "k!"})]
        return tuple(pre)

    # -- running ------------------------------------------------------------------------
    def _operands(self, operands: Sequence[Any], backend: str) -> list[np.ndarray]:
        if backend not in BACKENDS:
            raise ConstructionError(f"unknown backend {backend!r}; use one of {BACKENDS}")
        if len(operands) != len(self.inputs):
            raise ConstructionError(
                f"{self.name} takes {len(self.inputs)} operand(s) ({', '.join(self.inputs)}), got {len(operands)}"
            )
        out = []
        for nm, x in zip(self.inputs, operands, strict=True):
            a = to_backend(x, backend, nm)
            want = self.layout[nm].shape
            if a.shape != want:
                raise ConstructionError(f"{self.name}: operand {nm} must have shape {want}, got {a.shape}")
            out.append(a)
        self._check_domain(out)
        if self.check_inputs is not None:
            self.check_inputs(*out, backend=backend)
        return out

    def _check_domain(self, operands: Sequence[np.ndarray]) -> None:
        """The declared operand domain (``scalars``, ``binary``), enforced: the same declaration is
        a premise of the all-sizes proof, so the run refuses exactly what the proof assumes away."""
        by = dict(zip(self.inputs, operands, strict=True))
        for name, lo, upper, _ in self.scalars:
            v = by[name].reshape(-1)[0]
            hi = _num_value(upper)
            if not (_is_integer(v) and lo <= int(v) <= hi):
                raise ConstructionError(
                    f"{self.name}: operand {name} must be an integer in {lo}..{hi} (a premise of its all-sizes "
                    f"proof), got {v}"
                )
        for name in self.binary:
            bad = [v for v in by[name].reshape(-1) if not (_is_integer(v) and int(v) in (0, 1))]
            if bad:
                raise ConstructionError(
                    f"{self.name}: operand {name} takes binary tokens, 0 or 1 (a premise of its all-sizes proof), "
                    f"got {bad[0]!r}"
                )

    def encode(self, *operands: Any, backend: str = "numpy") -> np.ndarray:
        """The token sequence holding the operands."""
        ops = self._operands(operands, backend)
        seq = self.layout.encode(dict(zip(self.inputs, ops, strict=True)))
        return np.asarray(seq, dtype=np.float64) if backend == "numpy" else seq

    def run(self, *operands: Any, backend: str = "numpy") -> np.ndarray:
        """Run the program and decode the result (float64 or dtype object)."""
        if backend == "exact" and not self.exact:
            raise ConstructionError(
                f"{self.name} uses irrational primitives (exp...): no exact backend; use backend='sympy'"
            )
        seq = self.encode(*operands, backend=backend)
        blk = self.layout[self.output]
        try:  # only the result block is read: positions outside it are unspecified (maybe NaN)
            out = evaluate(self.program, seq, backend, finite=np.arange(blk.start, blk.end))
        except NonFiniteError as exc:
            raise NonFiniteResultError(f"{self.name}: {exc}") from None
        except BackendError as exc:
            raise ConstructionError(f"{self.name}: {exc}") from None
        res = self.layout.decode(out, self.output)
        return res.reshape(self.out_shape) if self.out_shape is not None else res

    def trace(self, *operands: Any, backend: str = "numpy") -> Trace:
        """Every intermediate value and selector matrix, by label."""
        return trace(self.program, self.encode(*operands, backend=backend), backend)

    def reference(self, *operands: Any, backend: str = "numpy") -> np.ndarray:
        """The textbook formula, in the same backend and types as ``run``."""
        ops = self._operands(operands, backend)
        extra = {"sizes": self.sizes} if "sizes" in inspect.signature(self.reference_fn).parameters else {}
        res = self.reference_fn(*ops, backend=backend, **extra)
        res = np.asarray(res, dtype=np.float64 if backend == "numpy" else object)
        return res.reshape(self.out_shape) if self.out_shape is not None else res

    def spec(self, *operands: Any, backend: str = "numpy") -> np.ndarray:
        """The independent specification (the folder's ``spec.py``) evaluated on concrete operands.

        The same spec object the all-sizes proof compares the program with; tests check it
        against ``reference`` so that a wrong spec fails on its own."""
        if self.specification is None:
            raise ConstructionError(f"{self.name} has no independent specification")
        ops = self._operands(operands, backend)
        sizes = self.sizes

        def resolve(e: Any) -> int:
            return e if isinstance(e, int) else int(E.lift(e).evaluate(sizes))

        res = self.specification.evaluate(dict(zip(self.inputs, ops, strict=True)), resolve, backend=backend)
        return res.reshape(self.out_shape if self.out_shape is not None else self.layout[self.output].shape)

    def cost(self) -> Cost:
        """Layers, heads per layer, positions."""
        return cost(self.program, positions=self.layout.total)

    @property
    def ref(self) -> MatRef:
        """The result as a matrix reference, for composition."""
        return MatRef(self.program, self.layout[self.output])

    @property
    def sizes(self) -> dict[str, int]:
        """The bound sizes, by name (the layout's and the program's)."""
        out: dict[str, int] = {}
        for e in self.size_exprs():
            out.update(C.size_bindings(e, bound_only=True))
        return out


def _satisfies_the_protocol(con: Construction) -> protocol.Construction:
    """Never called: mypy checks here that the dataclass is the provers' protocol
    (:class:`attnsim.proofs.construction.Construction`), attribute by attribute."""
    return con


@dataclass(repr=False)  # Construction's one-line repr
class VectorConstruction(Construction):
    """A Construction whose single-row operands may also be given as 1-D vectors."""

    def _operands(self, operands: Sequence[Any], backend: str) -> list[np.ndarray]:
        if len(operands) != len(self.inputs):
            raise ConstructionError(
                f"{self.name} takes {len(self.inputs)} operand(s) ({', '.join(self.inputs)}), got {len(operands)}"
            )
        fixed = []
        for nm, x in zip(self.inputs, operands, strict=True):
            a = as_array(x)
            want = self.layout[nm].shape
            if a.ndim == 1 and len(want) == 2 and want[0] == 1:
                if a.shape[0] != want[1]:
                    raise ConstructionError(f"{self.name}: operand {nm} must have length {want[1]}, got {a.shape[0]}")
                a = a.reshape(1, -1)
            fixed.append(a)
        return super()._operands(fixed, backend)


def _is_integer(v: Any) -> bool:
    """An integer value in any backend: a finite float equal to its floor, a Fraction over 1, a SymPy Integer."""
    if sympy_instance(v, "Basic"):
        return bool(v.is_Integer)
    if isinstance(v, Fraction):
        return v.denominator == 1
    try:
        f = float(v)
    except (TypeError, ValueError):
        return False
    return math.isfinite(f) and f == math.floor(f)


def _num_value(e: Any) -> int:
    """A bound size expression's value (an int as it is)."""
    return int(e.evaluate(C.size_bindings(e))) if isinstance(e, E.Expr) else int(e)


def _bound_value(b: Binder, v: Any) -> Any:
    """A size expression (or a list of them) bound, as an int once no size is left unbound."""
    if isinstance(v, list):
        return [_bound_value(b, x) for x in v]
    if not isinstance(v, E.Expr):
        return v
    e = b.expr(v)
    return e if C.unbound_sizes(e) else int(e.evaluate(C.size_bindings(e)))


def _rebind_hint(keys: Any, b: Any) -> Any:
    """An enumeration hint whose expressions go through the same binding as the program."""
    if keys is None:
        return None
    return dataclasses.replace(
        keys,
        key=lambda q, *ls, f=keys.key: b.expr(f(q, *ls)),
        witness=lambda k, f=keys.witnesses: tuple(b.expr(w) for w in f(k)),
        count=tuple(b.expr(c) for c in keys.counts),
    )


def size_args(labels: dict[str, str] | None = None, **sizes: object) -> dict[str, Any]:
    """A factory body's size arguments: each a Size (or None).  An int never reaches a body: the
    :func:`sized` decorator replaced it with an unbound Size and binds the build afterwards, so a
    factory has one build path; an int here means the factory is not decorated (refused)."""
    for name, v in sizes.items():
        if not (v is None or isinstance(v, C.Size)):
            label = (labels or {}).get(name, name)
            raise ConstructionError(
                f"{label}: a value of type {type(v).__name__} reached the factory body; its factory must be "
                "decorated with @sized (one build path: the symbolic build, bound)"
            )
    return dict(sizes)


F = TypeVar("F", bound=Callable[..., "Construction"])


def sized(refuse: Callable[[dict[str, int]], str | None] | None = None, **params: str) -> Callable[[F], F]:
    """One build path for a factory (``param=size name``): its size parameters reach the body as
    unbound :class:`~attnsim.rasp.core.Size` symbols, whatever the caller passed, and an integer
    call is that symbolic build followed by :meth:`Construction.bind`.  The body never sees an
    int, so no Python branch can give the integer call a program of its own; the build records
    which public factory made it (``built_by``), so that verify can rebuild every listed instance
    through that name and compare (:func:`build_obligation`).  ``refuse(values)`` may name an
    integer call outside the construction's domain (an odd MaxMin length) before anything is
    built: it can refuse a call, never change a program."""

    def deco(fn: F) -> F:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def factory(*args: Any, **kwargs: Any) -> Construction:
            call = sig.bind(*args, **kwargs)
            call.apply_defaults()
            values: dict[str, int] = {}
            for param, name in params.items():
                v = call.arguments.get(param)
                if v is None or isinstance(v, C.Size):
                    continue
                if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                    raise ConstructionError(f"{param} must be a positive int (or a Size), got {v!r}")
                call.arguments[param], values[name] = C.Size(name), v
            why = refuse(values) if refuse is not None else None
            if why:
                raise ConstructionError(why)
            con: Construction = fn(*call.args, **call.kwargs)
            symbolic_args = tuple(call.arguments.items())
            con = dataclasses.replace(con, built_by=(fn.__module__, fn.__name__, symbolic_args))
            return con.bind(**values) if values else con

        return factory  # type: ignore[return-value]

    return deco
