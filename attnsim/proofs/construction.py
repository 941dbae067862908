"""What a prover reads of a construction: the :class:`Construction` protocol.

The provers (the all-sizes proof and its counterexample search in :mod:`attnsim.symbolic`, the
mutation checks, extraction, the report) sit on floors below or beside the paper's results, so
they cannot import the record every factory returns
(:class:`attnsim.constructions.construction.Construction`, a dataclass on the constructions'
floor).  They name this protocol instead: the attributes and methods they read, typed.  The
dataclass satisfies it structurally (mypy checks every call that passes one); nothing here runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.intent import Intent
from attnsim.rasp.layout import Layout


class ProgramView(Protocol):
    """What symbolic execution reads of a construction (:class:`attnsim.symbolic.execute.Executor`):
    the program, its layout, its head intents and the declarations that are premises of a proof.
    U's layer proof passes a smaller record of the same shape (its program over a case's premises)."""

    @property
    def program(self) -> C.SOp: ...

    @property
    def layout(self) -> Layout: ...

    @property
    def intents(self) -> Sequence[Intent]: ...

    @property
    def inputs(self) -> tuple[str, ...]: ...

    @property
    def preconditions(self) -> tuple[E.Expr, ...]: ...

    @property
    def minimums(self) -> Mapping[str, int] | Iterable[tuple[str, int]]: ...

    @property
    def scalars(self) -> tuple[Any, ...]: ...


class Construction(ProgramView, Protocol):
    """One lemma, theorem or application as a prover sees it: one program over (possibly unbound)
    sizes, the layout of its operands and result, its declarations (premises of every proof) and
    its independent specification.

    ``specification`` is a :class:`~attnsim.symbolic.spec_language.BoundSpec` (or None: no
    all-sizes statement); it is typed ``Any`` here because the spec language sits one floor up."""

    name: str
    paper_ref: str
    program: C.SOp
    layout: Layout
    inputs: tuple[str, ...]
    output: str
    out_shape: tuple[Any, ...] | None
    intents: list[Intent]
    exact: bool
    specification: Any
    cases: tuple[tuple[str, int], ...]
    scalars: tuple[tuple[str, int, Any, str], ...]
    binary: tuple[str, ...]
    built_by: tuple[str, str, tuple[tuple[str, Any], ...]] | None

    @property
    def reference_fn(self) -> Callable[..., Any]:
        """The textbook reference the runs are compared with."""
        ...

    @property
    def check_inputs(self) -> Callable[..., None] | None:
        """The run's input check beyond shapes (the declared premises), if any."""
        ...

    @property
    def minimums(self) -> dict[str, int]:
        """Each unbound size's least value (1 unless declared)."""
        ...

    @property
    def free_sizes(self) -> frozenset[str]:
        """The names of the sizes still unbound."""
        ...

    @property
    def preconditions(self) -> tuple[E.Expr, ...]:
        """The declared premises over the sizes (what the run's input check enforces)."""
        ...

    @property
    def sizes(self) -> dict[str, int]:
        """The bound sizes by name."""
        ...

    def size_exprs(self) -> list[E.Expr]:
        """Every size expression the program and layout read."""
        ...

    def bind(self, /, **sizes: int) -> Construction:
        """The same construction with the named unbound sizes bound."""
        ...

    def reparametrize(self, /, **sizes: E.Expr) -> Construction:
        """The construction with unbound sizes replaced by size expressions."""
        ...

    def encode(self, *operands: Any, backend: str = "numpy") -> np.ndarray:
        """The token sequence holding the operands (refused, ValueError, outside the declared domain)."""
        ...

    def run(self, *operands: Any, backend: str = "numpy") -> np.ndarray:
        """Encode, run the program on ``backend``, decode the result block."""
        ...

    def reference(self, *operands: Any, backend: str = "numpy") -> np.ndarray:
        """The textbook reference on the operands."""
        ...

    def spec(self, *operands: Any, backend: str = "numpy") -> np.ndarray:
        """The independent specification evaluated on concrete operands."""
        ...


__all__ = ["Construction", "ProgramView"]
