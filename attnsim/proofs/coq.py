"""Export a GAHAT-RASP program to Coq: one printer over the program graph, no per-lemma code.

The printed term is a value of the deep embedding ``sop`` of ``coq/Semantics.v``, parameterised
by the program's unbound sizes (Coq ``Z``), one ``let`` per node in dependency order so that a
node read twice is written once.  Index SOps (indices, length, integer constants, index Maps:
what :func:`attnsim.rasp.core.is_structural` accepts) become ``isop`` terms whose functions are
Coq functions over ``Z`` (``div``/``mod`` are ``Z.div``/``Z.modulo``, floor division as in
Python); value SOps become ``sop`` terms, an index SOp read as a value wrapped in ``OfIdx``.

A selector over two index SOps is a ``Select``, one comparing values (a value SOp on either side)
a ``VSelect`` of the two read as values.  What the Coq semantics does not have is refused with
:class:`CoqExportError` naming the node (``SelectorWidth``, an argmax head scored by another SOp,
a primitive without a Coq meaning): never a silently different program.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from attnsim.rasp import core as C
from attnsim.rasp import expr as E


class CoqExportError(ValueError):
    """A program (or a name) has no Coq rendering in coq/Semantics.v's embedding."""


_IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_COQ_KEYWORDS = frozenset(
    {"as", "at", "cofix", "else", "end", "exists", "fix", "for", "forall", "fun", "if", "in", "let", "match",
     "mod", "return", "then", "with", "Type", "Prop", "Set", "is", "of", "sop", "isop", "sel", "cst", "Z"}
)  # fmt: skip

_CMP = {"==": "CEq", "!=": "CNe", "<": "CLt", "<=": "CLe", ">": "CGt", ">=": "CGe", "TRUE": "CTrue", "FALSE": "CFalse"}
_PRIM1 = {"identity": "PIdentity", "neg": "PNeg", "relu": "PRelu", "abs": "PAbs", "square": "PSquare",
          "reciprocal": "PReciprocal", "exp": "PExp", "sqrt": "PSqrt", "gelu": "PGelu",
          "gelu_tanh": "PGeluTanh"}  # fmt: skip
_PRIM1_PARAMS = {"scale": "PScale", "affine": "PAffine"}
_PRIM2 = {"add": "PAdd", "sub": "PSub", "max": "PMax", "min": "PMin", "mul": "PMul", "div": "PDiv", "lt": "PLt",
          "gate": "PGate"}  # fmt: skip
_PRIM3 = {"where": "PWhere"}
_ZBIN = {"+": "Z.add", "-": "Z.sub", "*": "Z.mul", "div": "Z.div", "mod": "Z.modulo", "min": "Z.min",
         "max": "Z.max", "==": "ieq", "!=": "ine", "<": "ilt", "<=": "ile", "and": "iand", "or": "ior"}  # fmt: skip


def coq_ident(name: str) -> str:
    """A size or definition name as a Coq identifier (refused if it is not one, or is reserved)."""
    if not _IDENT.match(name) or name in _COQ_KEYWORDS:
        raise CoqExportError(f"{name!r} is not usable as a Coq identifier (letters, digits, _; not a keyword)")
    return name


def _z(value: int) -> str:
    return f"({value})%Z"


def index_term(e: E.Expr) -> str:
    """An index expression as a Coq term of type Z (its variables are Coq variables of type Z)."""
    if isinstance(e, C.Size):
        return _z(e.value) if e.value is not None else coq_ident(e.name)
    if isinstance(e, E.Var):
        return coq_ident(e.name)
    if isinstance(e, E.Const):
        return _z(int(e.value))
    if isinstance(e, E.Not):
        return f"(inot {index_term(e.a)})"
    if isinstance(e, E.If):
        return f"(iif {index_term(e.cond)} {index_term(e.a)} {index_term(e.b)})"
    if isinstance(e, E.BinOp):
        a, b = index_term(e.a), index_term(e.b)
        if e.op == ">":
            return f"(ilt {b} {a})"
        if e.op == ">=":
            return f"(ile {b} {a})"
        return f"({_ZBIN[e.op]} {a} {b})"
    raise CoqExportError(f"index expression {e!r} has no Coq rendering")


def _cst(p: C.Param) -> str:
    if isinstance(p, C.Ratio):
        return f"(CQ {index_term(p.num)} {index_term(p.den)})"
    if isinstance(p, E.Expr):
        return f"(CQ {index_term(p)} {_z(1)})"
    f = Fraction(p)
    return f"(CQ {_z(f.numerator)} {_z(f.denominator)})"


def _is_index(node: C.SOp) -> bool:
    if isinstance(node, (C.Indices, C.Length)):
        return True
    if isinstance(node, C.Full):
        return Fraction(node.value).denominator == 1
    return isinstance(node, (C.Map, C.SequenceMap)) and isinstance(node.fn, C.IndexFn)


@dataclass(frozen=True)
class CoqProgram:
    """A program exported as one Coq definition: its name, size parameters and source text."""

    name: str
    sizes: tuple[str, ...]
    text: str


class _Printer:
    """Prints the nodes of one program in dependency order as ``let`` bindings."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.kinds: dict[int, str] = {}  # node id -> "isop" | "sop" | "sel"
        self.lets: list[str] = []

    def ref(self, node: C.RASPExpr, want: str) -> str:
        name, kind = self.names[id(node)], self.kinds[id(node)]
        if kind == want:
            return name
        if kind == "isop" and want == "sop":
            return f"(OfIdx {name})"
        raise CoqExportError(
            f"node {node.label!r} is a value SOp where the Coq semantics needs an index SOp "
            "(an index map over values is not in coq/Semantics.v)"
        )

    def node(self, n: C.RASPExpr) -> None:
        kind, term = self._term(n)
        name = f"n{len(self.lets)}"
        # a label the construction gave, else the node's kind: a generated label (e.g. select_48)
        # counts the nodes built before in the process, and the text (a cache key) would follow it
        label = getattr(n, "_label", None) or type(n).__name__
        label = label.replace("(*", "( *").replace("*)", "* )")  # a label cannot close the comment
        self.lets.append(f"  let {name} := {term} in (* {label} *)")
        self.names[id(n)], self.kinds[id(n)] = name, kind

    def _term(self, n: C.RASPExpr) -> tuple[str, str]:  # noqa: C901, PLR0912
        if isinstance(n, C.Tokens):
            return "sop", "Tokens"
        if isinstance(n, C.Indices):
            return "isop", "Indices"
        if isinstance(n, C.Length):
            return "isop", "Length"
        if isinstance(n, C.Full):
            v = Fraction(n.value)
            if v.denominator == 1:
                return "isop", f"(IConst {_z(v.numerator)})"
            return "sop", f"(Full {_cst(v)})"
        if isinstance(n, (C.Map, C.SequenceMap)):
            args = n.args
            if isinstance(n.fn, C.IndexFn):
                if len(args) > 3:
                    raise CoqExportError(f"index map {n.label!r} has {len(args)} arguments; Coq's IMap has up to 3")
                params = " ".join(coq_ident(a) for a in n.fn.argnames)
                body = index_term(n.fn.expr)
                refs = " ".join(self.ref(a, "isop") for a in args)
                return "isop", f"(IMap{len(args)} (fun {params} : Z => {body}) {refs})"
            return "sop", self._prim(n, n.fn, args)
        if isinstance(n, C.Select):
            if self.kinds[id(n.keys)] == "isop" and self.kinds[id(n.queries)] == "isop":
                keys, queries = self.ref(n.keys, "isop"), self.ref(n.queries, "isop")
                return "sel", f"(Select {keys} {queries} {_CMP[n.cmp]})"
            keys, queries = self.ref(n.keys, "sop"), self.ref(n.queries, "sop")
            return "sel", f"(VSelect {keys} {queries} {_CMP[n.cmp]})"
        if isinstance(n, C.SelectAnd):
            return "sel", f"(SAnd {self.ref(n.a, 'sel')} {self.ref(n.b, 'sel')})"
        if isinstance(n, C.SelectOr):
            return "sel", f"(SOr {self.ref(n.a, 'sel')} {self.ref(n.b, 'sel')})"
        if isinstance(n, C.SelectNot):
            return "sel", f"(SNot {self.ref(n.a, 'sel')})"
        if isinstance(n, C.Aggregate):
            sl, val = self.ref(n.selector, "sel"), self.ref(n.values, "sop")
            if n.score is None:
                return "sop", f"(Aggregate {sl} {val})"
            if n.score is n.values:
                return "sop", f"(Maximum {sl} {val})"
            raise CoqExportError(f"argmax head {n.label!r} scored by another SOp is not in the Coq semantics")
        raise CoqExportError(f"node {n.label!r} ({type(n).__name__}) is not in the Coq semantics")

    def _prim(self, n: C.SOp, fn: C.Prim, args: Sequence[C.SOp]) -> str:
        refs = " ".join(self.ref(a, "sop") for a in args)
        if fn.name in _PRIM1:
            return f"(Map1 {_PRIM1[fn.name]} {refs})"
        if fn.name in _PRIM1_PARAMS:
            consts = " ".join(_cst(p) for p in fn.consts)
            return f"(Map1 ({_PRIM1_PARAMS[fn.name]} {consts}) {refs})"
        if fn.name in _PRIM2:
            return f"(Map2 {_PRIM2[fn.name]} {refs})"
        if fn.name in _PRIM3:
            return f"(Map3 {_PRIM3[fn.name]} {refs})"
        raise CoqExportError(f"primitive {fn.name!r} of node {n.label!r} has no meaning in coq/Semantics.v")


class _NodePrinter(_Printer):
    """Prints each node of one program as a definition of its own over the sizes (``lets`` holds
    the definitions): ``Definition <prefix>_<label> (<sizes> : Z) : <kind> := <term>.``, a node
    read by another as ``(<prefix>_<label> <sizes>)``."""

    def __init__(self, prefix: str, sizes: Sequence[str]) -> None:
        super().__init__()
        self.prefix, self.sizes = prefix, tuple(coq_ident(s) for s in sizes)
        self.taken: set[str] = set()

    def _name(self, n: C.RASPExpr) -> str:
        """``<prefix>_<label>`` for a node its construction labelled (``.`` and other non-identifier
        characters as ``_``; the node's index appended on a clash), else ``<prefix>_n<index>``."""
        label = getattr(n, "_label", None)
        stem = re.sub(r"[^A-Za-z0-9_]", "_", label) if label else f"n{len(self.lets)}"
        name = f"{self.prefix}_{stem}"
        if name in self.taken:
            name = f"{name}_{len(self.lets)}"
        self.taken.add(name)
        return coq_ident(name)

    def node(self, n: C.RASPExpr, name: str | None = None) -> None:
        kind, term = self._term(n)
        name = name or self._name(n)
        # the node's label (a generated one, e.g. map_62, counts nodes built in the process: its kind)
        label = getattr(n, "_label", None) or type(n).__name__
        label = label.replace("(*", "( *").replace("*)", "* )")  # a label cannot close the comment
        params = f" ({' '.join(self.sizes)} : Z)" if self.sizes else ""
        self.lets.append(f"(* {label} *)\nDefinition {name}{params} : {kind} :=\n  {term}.")
        self.names[id(n)] = f"({name} {' '.join(self.sizes)})" if self.sizes else name
        self.kinds[id(n)] = kind


def _check_sizes(name: str, order: Sequence[C.RASPExpr], sizes: Sequence[str]) -> None:
    free: set[str] = set()
    for n in order:
        for e in _index_exprs(n):
            free |= C.unbound_sizes(e)
    missing = sorted(free - set(sizes))
    if missing:
        raise CoqExportError(f"{name}: unbound sizes {', '.join(missing)} are not among the parameters {list(sizes)}")


def export_nodes(name: str, program: C.SOp, sizes: Sequence[str] = ()) -> CoqProgram:
    """The program as one definition per node, in dependency order, the last one ``<name>``
    (``Definition <name> (<sizes> : Z) : sop``): the same term as :func:`export_program`'s with
    each ``let`` a definition, so that a proof unfolds one node at a time (a large program
    unfolded whole, like U's, is a tree of some 3.5e5 nodes).  A node its construction labelled is
    ``<name>_<label>``; the others ``<name>_n<index>``."""
    coq_ident(name)
    order = C.topological([program])
    _check_sizes(name, order, sizes)
    printer = _NodePrinter(name, sizes)
    for n in order[:-1]:
        printer.node(n)
    root = order[-1]
    assert root is program
    if _is_index(root):
        printer.node(root)
        params = f" ({' '.join(printer.sizes)} : Z)" if printer.sizes else ""
        printer.lets.append(f"Definition {coq_ident(name)}{params} : sop :=\n  {printer.ref(root, 'sop')}.")
    else:
        printer.node(root, coq_ident(name))
    return CoqProgram(name, tuple(sizes), "\n\n".join(printer.lets) + "\n")


def export_program(name: str, program: C.SOp, sizes: Sequence[str] = ()) -> CoqProgram:
    """``Definition <name> (<sizes> : Z) : sop := ...``: the program over its unbound sizes.

    ``sizes`` fixes the parameter order; every unbound size of the program must be among them
    (a size missing would be a free Coq variable: refused)."""
    coq_ident(name)
    order = C.topological([program])
    _check_sizes(name, order, sizes)
    printer = _Printer()
    for n in order:
        printer.node(n)
    out = printer.ref(program, "sop")
    params = f" ({' '.join(coq_ident(s) for s in sizes)} : Z)" if sizes else ""
    body = "\n".join(printer.lets)
    text = f"Definition {name}{params} : sop :=\n{body}\n  {out}.\n"
    return CoqProgram(name, tuple(sizes), text)


def _index_exprs(n: C.RASPExpr) -> list[E.Expr]:
    """The index expressions a node carries (its index function, its primitive's constants)."""
    if isinstance(n, (C.Map, C.SequenceMap)):
        if isinstance(n.fn, C.IndexFn):
            return [n.fn.expr]
        out: list[E.Expr] = []
        for p in n.fn.consts:
            if isinstance(p, C.Ratio):
                out += [p.num, p.den]
            elif isinstance(p, E.Expr):
                out.append(p)
        return out
    return []


HEADER = """From mathcomp Require Import all_ssreflect.
From Coq Require Import ZArith.
From Attnsim Require Import Semantics.

(* Generated by attnsim.proofs.coq from the Python program graph; do not edit. *)
"""


def module_text(programs: Sequence[CoqProgram]) -> str:
    """A .v file defining the given exported programs."""
    return HEADER + "\n" + "\n".join(p.text for p in programs)


__all__ = ["CoqExportError", "CoqProgram", "coq_ident", "export_nodes", "export_program", "index_term", "module_text"]
