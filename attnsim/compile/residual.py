"""The compiler's intermediate form: the residual stream being laid out, and what lowering writes on it.

Like Tracr's ``nodes.py``, this module says what each pass writes (:mod:`attnsim.compile.compiler`
runs them):

1. **schedule** (``layer_of``, :mod:`attnsim.rasp.schedule`): ``layer``, each node's attention
   layer;
2. **lower** (:class:`attnsim.compile.lowering.Lowering`, with :mod:`.lookups`, :mod:`.maps` and
   :mod:`.heads`): ``real`` (each node's :class:`Realized` linear form over the residual dims),
   ``dims`` and ``pos`` (the residual dimensions and the (layer, depth) each is written at),
   ``emb`` (lookups of ``indices`` alone: position-embedding columns), ``items`` (the MLPs:
   :class:`ReluItem` ReLU units, :class:`FnItem` function nodes), ``heads`` (:class:`HeadB`,
   by (layer, key)) and ``notes`` (how each node was realized, for ``summary()``), calling
   ``progress`` (if set) as each of the ``nodes`` is realized;
3. **assemble** (:func:`attnsim.compile.assemble.assemble`): reads all of the above and writes
   the matrices of a :class:`~attnsim.compile.model.CompiledTransformer`.

Residual layout: ``bos``, ``one`` (1 on tokens, 0 on BOS), ``tokens``, ``indices``, then one
dimension per non-linear SOp and per derived feature.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from attnsim.compile.model import CompileError
from attnsim.rasp import core as C
from attnsim.rasp import domain as D
from attnsim.rasp.schedule import layer_of

Form = dict[int, Fraction]

BOS, ONE, TOK, IDX = 0, 1, 2, 3


@dataclass
class Origin:
    """The SOp equals ``table[i]`` when the source form equals ``points[i]`` (None: undefined there)."""

    src: Form
    points: tuple[Fraction, ...]
    table: tuple[Fraction | None, ...]


@dataclass
class Realized:
    """A realized SOp: its linear form over the residual dims, its value domain, its lookup origin."""

    form: Form
    domain: D.Domain
    origin: Origin | None = None


@dataclass
class ReluItem:
    """ReLU units of the MLP at (layer, depth): ``units`` read the residual, ``outs`` write dims."""

    layer: int
    depth: int
    units: list[Form]
    outs: list[tuple[int, list[tuple[int, Fraction]]]]
    note: str
    lookup_points: int | None = None  # a lookup table's points (None: not a lookup)


@dataclass
class FnItem:
    """An explicit function node (a generalized primitive) of the MLP at (layer, depth)."""

    layer: int
    depth: int
    prim: str
    params: tuple[Fraction, ...]
    args: list[Form]
    out: int
    note: str


@dataclass
class HeadB:
    """An attention head being built: its score columns (query form, key form) and its values."""

    name: str
    kind: str
    layer: int
    cols: list[tuple[Form, Form]]
    margin: Fraction
    forms: list[str]
    values: list[tuple[Form, int]] = field(default_factory=list)
    bound: tuple[Form, Fraction, Fraction, str] | None = None  # a scored head's score form, lo, hi, label


def form_key(f: Form) -> tuple[tuple[int, Fraction], ...]:
    return tuple(sorted((k, v) for k, v in f.items() if v != 0))


def lin(*terms: tuple[Fraction | int, Form]) -> Form:
    out: Form = {}
    for c, f in terms:
        for k, v in f.items():
            out[k] = out.get(k, Fraction(0)) + Fraction(c) * v
    return {k: v for k, v in out.items() if v != 0}


def unit(d: int) -> Form:
    return {d: Fraction(1)}


class LoweringState:
    """One compilation's intermediate form (the fields are listed in the module docstring)."""

    def __init__(
        self, program: C.SOp, max_len: int, vocab: Iterable[Any] | None, domains: dict[str, Iterable[Any]] | None
    ) -> None:
        if not isinstance(program, C.SOp):
            raise CompileError(f"compile() takes one SOp (the program's output), got {type(program).__name__}")
        if not isinstance(max_len, int) or isinstance(max_len, bool) or max_len < 1:
            raise CompileError(f"max_len must be a positive int, got {max_len!r}")
        self.program = program
        self.N = max_len
        self.vocab = None if vocab is None else D.Domain.of(Fraction(v) for v in vocab)
        self.hints = {
            k: vs.domain() if isinstance(vs, D.Interval) else D.Domain.of(Fraction(v) for v in vs)
            for k, vs in (domains or {}).items()
        }
        self.dims: list[str] = ["bos", "one", "tokens", "indices"]
        self.pos: list[tuple[int, int]] = [(0, 0)] * 4
        self.emb: dict[int, list[Fraction]] = {}
        self.items: list[ReluItem | FnItem] = []
        self.heads: dict[tuple[int, str], HeadB] = {}
        self.real: dict[str, Realized] = {}
        self.feat_cache: dict[tuple[str, str], Form] = {}
        self.lookup_cache: dict[Any, Form] = {}
        self.layer = layer_of([program])
        self.notes: dict[str, list[str]] = {"lookups": [], "folded": []}
        self.label_of: dict[str, str] = {}
        self.nodes = sum(1 for n in C.topological([program]) if isinstance(n, C.SOp))  # what realize counts
        self.progress: Callable[[str, int, int], None] | None = None  # (phase, done, total)

    def new_dim(self, name: str, where: tuple[int, int]) -> int:
        """A new residual dimension written at ``where`` = (layer, depth); its name made unique."""
        base, n = name, 1
        while name in self.dims:
            n += 1
            name = f"{base}#{n}"
        self.dims.append(name)
        self.pos.append(where)
        return len(self.dims) - 1

    def place(self, forms: Sequence[Form], min_layer: int = 0) -> tuple[int, int]:
        """(layer, depth) for an MLP item reading ``forms``."""
        ds = [d for f in forms for d in f if d != ONE]
        layer = max([min_layer, *(self.pos[d][0] for d in ds)])
        depth = 1 + max([0, *(self.pos[d][1] for d in ds if self.pos[d][0] == layer)])
        return layer, depth

    def name(self, node: C.RASPExpr) -> str:
        """The node's label (the first label seen for its structure)."""
        return self.label_of.get(node.fingerprint, node.label)

    def realize(self, node: C.SOp) -> Realized:
        """The node's realized form (:class:`attnsim.compile.lowering.Lowering` defines it)."""
        raise NotImplementedError
