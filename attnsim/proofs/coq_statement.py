"""The statement a kernel theorem must prove, generated from a construction's program and layout.

A :class:`KernelStatement` is rendered to one closed Coq proposition.  What a reader would
otherwise have to check line by line in a hand-written theory file comes from the Python objects
that run:

* the program is the exported definition (:mod:`attnsim.proofs.coq`) applied to the program's own
  size parameters, each a Coq ``nat`` binder (so no size can be fixed in the statement);
* every operand is bound over its block of the layout (a stack of ``'M[R]_(rows, cols)``, one
  matrix, or a natural number held by a 1 x 1 block) and held by the sequence ``x`` at that block
  (``encodes``);
* the sequence is at least as long as the layout (``length <= size x``);
* the output is read back from the output block with ``decode`` and equated with the declared
  conclusion, for every matrix of the output stack.

Only the conclusion (a MathComp term: ``trmx (A t)``, ``A t *m B t``, ...) and the premises on
sizes and values that the construction declares are written by hand, in the construction's own
record, beside its Python specification.  Size expressions are rendered over ``nat``
(``+``, ``*``, ``maxn``, ``minn``, ``%/``, ``%%``); any other operator is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from attnsim.proofs.coq import CoqExportError, coq_ident
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.layout import Layout

# the meanings of the generalized primitives, parameters of coq/Semantics.v's evaluator, in its order
PRIMITIVE_FUNCTIONS = ("expf", "sqrtf", "geluf", "gelu_tanhf")
_RESERVED = frozenset({"R", *PRIMITIVE_FUNCTIONS, "x", "t"})  # the statement's own binders
_NAT_OPS = {"+": "+", "*": "*", "div": "%/", "mod": "%%"}
_NAT_FUNS = {"max": "maxn", "min": "minn"}


def nat_term(e: E.Expr | int) -> str:  # noqa: C901, PLR0912
    """A size expression as a Coq term of type ``nat`` (``0 + e`` and ``1 * e`` shortened)."""
    e = E.lift(e)
    if isinstance(e, C.Size):
        return str(e.value) if e.value is not None else coq_ident(e.name)
    if isinstance(e, E.Var):
        return coq_ident(e.name)
    if isinstance(e, E.Const):
        v = int(e.value)
        if v < 0:
            raise CoqExportError(f"size expression {E.render(e)} is negative: not a nat")
        return str(v)
    if isinstance(e, E.BinOp):
        a, b = e.a, e.b
        if e.op == "+" and _is_const(a, 0):
            return nat_term(b)
        if e.op == "+" and _is_const(b, 0):
            return nat_term(a)
        if e.op == "*" and _is_const(a, 1):
            return nat_term(b)
        if e.op == "*" and _is_const(b, 1):
            return nat_term(a)
        if e.op in _NAT_OPS:
            return f"({nat_term(a)} {_NAT_OPS[e.op]} {nat_term(b)})%nat"
        if e.op == "max" and _is_const(a, 0):
            return nat_term(b)
        if e.op == "max" and _is_const(b, 0):
            return nat_term(a)
        if e.op in _NAT_FUNS:
            return f"({_NAT_FUNS[e.op]} {nat_term(a)} {nat_term(b)})"
    raise CoqExportError(f"size expression {E.render(e)} has no nat rendering (+, *, max, min, div, mod only)")


_BOOL_OPS = {"==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "and": "&&", "or": "||"}


def bool_term(e: E.Expr) -> str:
    """A size condition (comparisons, and, or, not of size expressions) as a Coq ``bool`` over nat."""
    if isinstance(e, E.Not):
        return f"(~~ {bool_term(e.a)})"
    if isinstance(e, E.BinOp) and e.op in ("and", "or"):
        return f"({bool_term(e.a)} {_BOOL_OPS[e.op]} {bool_term(e.b)})"
    if isinstance(e, E.BinOp) and e.op in _BOOL_OPS:
        return f"({nat_term(e.a)} {_BOOL_OPS[e.op]} {nat_term(e.b)})%nat"
    raise CoqExportError(f"size condition {E.render(e)} has no Coq rendering (comparisons, and, or, not)")


def _is_const(e: E.Expr, v: int) -> bool:
    return isinstance(e, E.Const) and int(e.value) == v


def _single(e: E.Expr) -> bool:
    return _is_const(e, 1)


@dataclass(frozen=True)
class Operand:
    """An input of the construction: the layout block holding it, and how the statement binds it.

    ``matrix``: a stack of matrices (one matrix when the block's stack is 1); ``nat``: a natural
    number in a 1 x 1 block, with the bounds the construction's input check enforces."""

    name: str
    kind: Literal["matrix", "nat"] = "matrix"
    low: int = 0
    high: E.Expr | int | None = None


@dataclass(frozen=True)
class KernelStatement:
    """The proposition a kernel theorem must prove about an exported program (see the module doc).

    ``field``: the structure ``R`` ranges over; ``exp``: None for any meaning of the ``exp``
    primitive (an ``expf : R -> R`` binder), else the Coq term that fixes it (``(@expR R)``); the
    other generalized primitives (``sqrtf``, ``geluf``, ``gelu_tanhf``) are bound, any meaning;
    ``minimums``: each size's declared least value (1 when not listed); ``preconditions``: the
    construction's declared size conditions; ``premises``: further side conditions, written in Coq
    (over the sizes, the operands and ``expf``), stated after those two and before the ones generated
    from the layout; ``head``: the name of the output stack's index in ``conclusion``."""

    program: str
    sizes: tuple[str, ...]
    layout: Layout
    operands: tuple[Operand, ...]
    output: str
    conclusion: str
    minimums: tuple[tuple[str, int], ...] = ()
    preconditions: tuple[E.Expr, ...] = ()
    premises: tuple[str, ...] = ()
    field: str = "realFieldType"
    exp: str | None = None
    head: str = "t"

    def __post_init__(self) -> None:
        names = [*self.sizes, *(op.name for op in self.operands)]
        clash = sorted({n for n in names if names.count(n) > 1 or n in _RESERVED or n == self.head})
        if clash:
            reserved = ", ".join(sorted(_RESERVED))
            raise CoqExportError(f"{self.program}: binder name(s) {', '.join(clash)} clash (reserved: {reserved})")
        for op in self.operands:
            if self.layout[op.name].channel != "tokens":
                raise CoqExportError(f"operand {op.name} is not read from the input tokens")

    def binders(self) -> list[str]:
        """The universally quantified variables, in order."""
        out = [f"(R : {self.field})"]
        free = PRIMITIVE_FUNCTIONS if self.exp is None else PRIMITIVE_FUNCTIONS[1:]
        out.append(f"({' '.join(free)} : R -> R)")
        if self.sizes:
            out.append(f"({' '.join(coq_ident(s) for s in self.sizes)} : nat)")
        for op in self.operands:
            out.append(f"({coq_ident(op.name)} : {self._operand_type(op)})")
        out.append("(x : seq R)")
        return out

    def _operand_type(self, op: Operand) -> str:
        if op.kind == "nat":
            return "nat"
        blk = self.layout[op.name]
        mat = f"'M[R]_({nat_term(blk.rows)}, {nat_term(blk.cols)})"
        return mat if _single(blk.stack) else f"'I_{nat_term(blk.stack)} -> {mat}"

    def hypotheses(self) -> list[str]:
        """The premises: the sizes' minimums, the preconditions, the declared ones, then each operand
        held by ``x``, then the length."""
        low = dict(self.minimums)
        out = [f"({low.get(s, 1)} <= {coq_ident(s)})%nat" for s in self.sizes if low.get(s, 1) > 0]
        out += [bool_term(p) for p in self.preconditions]
        out += self.premises
        for op in self.operands:
            out += self._operand_premises(op)
        out.append(f"({nat_term(self.layout.length)} <= size x)%nat")
        return out

    def _operand_premises(self, op: Operand) -> list[str]:
        blk = self.layout[op.name]
        name = coq_ident(op.name)
        if op.kind == "nat":
            if not (_single(blk.stack) and _is_const(blk.rows, 1) and _is_const(blk.cols, 1)):
                raise CoqExportError(f"operand {op.name}: a nat operand needs a 1 x 1 block")
            bounds = [f"({op.low} <= {name})%nat"] if op.low > 0 else []
            if op.high is not None:
                bounds.append(f"({name} <= {nat_term(E.lift(op.high))})%nat")
            return [*bounds, f"encodes x {nat_term(blk.offset)} 1 1 1 (fun _ => ({name}%:R)%:M)"]
        where = f"{nat_term(blk.offset)} {nat_term(blk.stack)} {nat_term(blk.rows)} {nat_term(blk.cols)}"
        held = name if not _single(blk.stack) else f"(fun _ => {name})"
        return [f"encodes x {where} {held}"]

    def conclusion_text(self) -> str:
        """``decode (eval expf sqrtf geluf gelu_tanhf (prog sizes) x) <output block> t = <conclusion>``,
        over the output stack (``expf`` the fixed ``exp`` when the statement fixes it)."""
        blk = self.layout[self.output]
        expf = " ".join(("expf" if self.exp is None else self.exp, *PRIMITIVE_FUNCTIONS[1:]))
        args = "".join(f" (Z.of_nat {coq_ident(s)})" for s in self.sizes)
        prog = f"({coq_ident(self.program)}{args})" if args else coq_ident(self.program)
        where = f"{nat_term(blk.offset)} {nat_term(blk.stack)} {nat_term(blk.rows)} {nat_term(blk.cols)}"
        head = "ord0" if _single(blk.stack) else coq_ident(self.head)
        eq = f"decode (eval {expf} {prog} x) {where} {head} = {self.conclusion}"
        if _single(blk.stack):
            return eq
        return f"forall {coq_ident(self.head)} : 'I_{nat_term(blk.stack)}, {eq}"

    def text(self) -> str:
        """The closed proposition, one premise per line."""
        lines = [f"forall {' '.join(self.binders())},"]
        lines += [f"  {h} ->" for h in self.hypotheses()]
        lines.append(f"  {self.conclusion_text()}")
        return "\n".join(lines)


def statement_definitions(statements: Sequence[tuple[str, KernelStatement]]) -> str:
    """``Definition <name> : Prop := <statement>.`` for each (name, statement)."""
    return "\n".join(f"Definition {coq_ident(n)} : Prop :=\n{s.text()}.\n" for n, s in statements)


__all__ = ["PRIMITIVE_FUNCTIONS", "KernelStatement", "Operand", "bool_term", "nat_term", "statement_definitions"]
