"""Mutation testing: break every construction on purpose and check that its obligations notice.

A *mutant* is one small source-level change to the code that builds a construction, applied while
the program is built (through :data:`attnsim.rasp.core.MUTATION_HOOK`, so the Intents, Layout and
program built together all see the same change):

* ``off-by-one``: a constant ``c`` of an index map becomes ``c+1`` or ``c-1``; a variable ``v``
  (an argument or a size) becomes ``v+1``;
* ``comparison``: a Select's ``==`` becomes ``!=``, ``<`` becomes ``<=`` or ``>``...; an index
  map's comparison likewise; a Select's keys and queries are swapped;
* ``dropped conjunct``: ``a & b`` becomes ``a`` or ``b`` (same for ``|``);
* ``swapped operands`` of a SequenceMap whose function is not known to be commutative;
* ``wrong constant``: ``full(c)`` becomes ``full(c+1)``, a primitive constant ``k`` becomes ``k+1``;
* ``dropped score``: a value-scored head (``C.maximum``, ``C.argmax_aggregate``) becomes the plain
  mean over its selected keys;
* ``wrong block offset``: the program and intents address a block at ``offset+1`` while the data
  are still encoded (and the result decoded) at ``offset``.

A *site* is the source position (file, line, column) of the call that creates a node; a mutant
changes every node created there (as editing that line would), in every instance an obligation
builds.  Sites are enumerated by building the construction's registered example once.

Each mutant runs in its own forked process; its construction's obligations (ids
``<construction>/...``) run cheapest first (exact, numeric, sympy, then Z3; large instances
last) until one fails or errors: the mutant is *killed* by it.  An ``unknown`` never kills.  The
obligation that killed is re-run on the unmutated construction, and a kill only counts when it
passes there.  A surviving mutant is *equivalent* only with a proof:

* node level (Z3, all values of the size symbols within the construction's domain: the minimum
  sizes and the size-only assumptions of its intents, e.g. an even row length for MaxMin): every
  changed index map or selector equals the original at every position ``0 <= p < length`` of each
  instance built (the layout's length; any length for a node outside every construction's
  program, under the domain of the intents built on it); SymPy: the primitive is symmetric in the
  swapped operands.  A selector comparing index maps of the tokens is compared for all integer
  token values; when Z3 cannot decide that with symbolic sizes (``x mod p``), once per size
  assignment with every size <= :data:`BOUNDED_SIZE` and at each instance's sizes, labelled BOUNDED;
* reader level: a changed index map read only by selectors, each proven unchanged (as above), or,
  for a head with an intent, proven to still meet that intent (which the original meets by its
  obligation) or to select the same keys at every query of the intent's region;
* graph level: no changed node is reachable from any program or intent built (dead code);
* unread (:mod:`attnsim.proofs.taint`): the positions where a changed value may differ are
  followed through the program (position-wise maps keep them; an attention read keeps only the
  queries whose selected keys include one) until none is left or the output block is reached;
  none may reach an operand that can raise (a divisor on the exact backend...).  Every instance
  built is enumerated position by position at its own sizes; then Z3 tries the same for all sizes
  of the domain (within a budget); the proof says which instances hold for all sizes and which
  only at their sizes (BOUNDED);
* output level: every changed instance is a fixed program (no size symbols) and a SymPy
  obligation proved its output equal to the reference on symbolic inputs;
* spec level (a moved scratch block only): an ``all-sizes`` obligation proved the mutated build
  equal to its independent spec for every size, every instance built is that build bound, and the
  moved block holds no operand and no output, so encoding and decoding are unchanged.

Anything else is listed as a survivor.  The default run samples (seeded, stratified so that
every site keeps a mutant) :data:`DEFAULT_MAX_MUTANTS` mutants per construction;
``--max-mutants 0`` runs all of them.
"""

from __future__ import annotations

import dataclasses
import functools
import multiprocessing as mp
import os
import random
import re
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from multiprocessing.connection import Connection
from types import FrameType, SimpleNamespace
from typing import Any, cast

from attnsim.proofs import registry, taint, z3sel
from attnsim.proofs.obligation import Obligation, Outcome
from attnsim.proofs.runner import run_all
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.layout import Block

Site = tuple[str, int, int, str]  # file, line, column, node kind

COMMUTATIVE = frozenset({"add", "mul", "max", "min"})
SELECT_FLIPS: dict[str, tuple[str, ...]] = {
    "==": ("!=",),
    "!=": ("==",),
    "<": ("<=", ">"),
    "<=": ("<", ">="),
    ">": (">=", "<"),
    ">=": (">", "<="),
    "TRUE": ("FALSE",),
    "FALSE": ("TRUE",),
}
EXPR_FLIPS: dict[str, tuple[str, ...]] = {k: v for k, v in SELECT_FLIPS.items() if k not in ("TRUE", "FALSE")}
_METHOD_RANK = {
    "exact": 0,
    "numeric": 1,
    "sampled": 1,
    "sympy": 2,
    "z3-bounded": 3,
    "z3-parametric": 3,
    "z3-instance": 3,
    "all-sizes": 4,
}
DEFAULT_MAX_MUTANTS = 12  # per construction in the default run (stratified: one per site first)
_LARGE = 64  # an obligation whose id names sizes with a product above this runs after all others


class MutationError(ValueError):
    """Mutation testing was asked for something it cannot do (unknown construction...)."""


@dataclass(frozen=True)
class Mutant:
    """One change at one site: ``op`` applied to the node (or index sub-expression at ``path``)."""

    construction: str
    site: Site
    op: str
    description: str
    path: tuple[int, ...] | None = None
    sig: str = ""
    restate_intent: bool = False  # the bug is also written into the intents of the changed selectors


@dataclass
class MutantResult:
    """What happened to one mutant."""

    mutant: Mutant
    killed: bool
    by: str | None
    equivalent: bool
    proof: str | None
    detail: str = ""
    seconds: float = 0.0
    applied: int = 0
    claim_only: bool = False  # refuted, but the program is unchanged: a broken claim, not a killed program mutant

    def as_dict(self) -> dict[str, Any]:
        """The JSON record of ``attnsim verify --mutants --json``."""
        return {
            "construction": self.mutant.construction,
            "mutant": self.mutant.description,
            "killed": self.killed,
            "by": self.by,
            "equivalent": self.equivalent,
            "proof": self.proof,
            "claim_only": self.claim_only,
        }

    @property
    def survived(self) -> bool:
        return not self.killed and not self.equivalent and not self.claim_only


# -- where a node is created --------------------------------------------------------------------
_RASP_DIR = os.path.dirname(os.path.abspath(C.__file__))
_SKIP: dict[str, bool] = {}
_POSITIONS: dict[Any, list[Any]] = {}


def _skipped(filename: str) -> bool:
    hit = _SKIP.get(filename)
    if hit is None:
        hit = filename.startswith("<") or os.path.dirname(os.path.abspath(filename)) == _RASP_DIR
        _SKIP[filename] = hit
    return hit


def _caller_site(kind: str) -> Site | None:
    """File, line and column of the first call outside ``attnsim/rasp`` that is creating a node."""
    f: FrameType | None = sys._getframe(2)
    while f is not None and _skipped(f.f_code.co_filename):
        f = f.f_back
    if f is None:
        return None
    code = f.f_code
    pos = _POSITIONS.get(code)
    if pos is None:
        pos = _POSITIONS[code] = list(code.co_positions())
    ix = f.f_lasti // 2
    line, _, col, _ = pos[ix] if 0 <= ix < len(pos) else (f.f_lineno, None, 0, None)
    return (_portable(code.co_filename), line or f.f_lineno, col or 0, kind)


def _portable(filename: str) -> str:
    """A site's file, relative to the package when it is inside it (attnsim/lemmas/matmul.py): the same
    on every worker, whether attnsim is imported from a checkout or from an installed copy."""
    norm = filename.replace(os.sep, "/")
    ix = norm.rfind("/attnsim/")
    return norm[ix + 1 :] if ix >= 0 else norm


def _where(site: Site) -> str:
    return f"{os.path.basename(site[0])}:{site[1]}"


# -- index-expression sub-sites ---------------------------------------------------------------
def _sig(e: E.Expr) -> str:
    if isinstance(e, E.Const):
        return "Const"
    if isinstance(e, E.Var):
        return f"Var:{e.name}"
    if isinstance(e, E.BinOp):
        return f"BinOp:{e.op}"
    return type(e).__name__


def _short(e: E.Expr, limit: int = 48) -> str:
    s = E.render(e)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def expr_mutations(e: E.Expr) -> list[tuple[tuple[int, ...], str, str, str]]:
    """(path, signature, op, description) for every off-by-one and comparison flip in ``e``."""
    out: list[tuple[tuple[int, ...], str, str, str]] = []

    def walk(x: E.Expr, path: tuple[int, ...], parent: E.Expr | None) -> None:
        ctx = f" in {_short(parent)}" if parent is not None else ""
        if isinstance(x, E.Const):
            out.append((path, "Const", "+1", f"{x.value} -> {x.value + 1}{ctx}"))
            out.append((path, "Const", "-1", f"{x.value} -> {x.value - 1}{ctx}"))
        elif isinstance(x, E.Var):
            out.append((path, _sig(x), "+1", f"{x.name} -> {x.name}+1{ctx}"))
        elif isinstance(x, E.BinOp) and x.op in EXPR_FLIPS:
            for new in EXPR_FLIPS[x.op]:
                out.append((path, _sig(x), f"cmp:{new}", f"{x.op} -> {new} in {_short(x)}"))
        for i, c in enumerate(x.children()):
            walk(c, (*path, i), x)

    walk(e, (), None)
    return out


def _at(e: E.Expr, path: tuple[int, ...]) -> E.Expr | None:
    for i in path:
        kids = e.children()
        if i >= len(kids):
            return None
        e = kids[i]
    return e


def _rebuild(e: E.Expr, kids: list[E.Expr]) -> E.Expr:
    if isinstance(e, E.Not):
        return E.Not(kids[0])
    if isinstance(e, E.If):
        return E.If(kids[0], kids[1], kids[2])
    assert isinstance(e, E.BinOp)
    return E.BinOp(e.op, kids[0], kids[1])


def mutate_expr(e: E.Expr, path: tuple[int, ...], op: str) -> E.Expr:
    """``e`` with the sub-expression at ``path`` changed by ``op`` (+1, -1, cmp:<new>)."""
    if path:
        kids = list(e.children())
        kids[path[0]] = mutate_expr(kids[path[0]], path[1:], op)
        return _rebuild(e, kids)
    if op == "+1":
        return E.BinOp("+", e, E.Const(1)) if isinstance(e, E.Var) else E.Const(e.value + 1)  # type: ignore[attr-defined]
    if op == "-1":
        return E.Const(e.value - 1)  # type: ignore[attr-defined]
    if op.startswith("cmp:") and isinstance(e, E.BinOp):
        return E.BinOp(op[4:], e.a, e.b)
    raise MutationError(f"cannot apply {op!r} to {E.render(e)}")


# -- the mutations of one node ----------------------------------------------------------------
def _fn_name(fn: Any) -> str:
    return fn.name if isinstance(fn, C.Prim) else "imap"


def node_mutations(obj: Any) -> list[tuple[tuple[int, ...] | None, str, str, str]]:
    """(path, signature, op, description) of every mutation the node (or Block) admits."""
    out: list[tuple[tuple[int, ...] | None, str, str, str]] = []
    if isinstance(obj, (C.Map, C.SequenceMap)):
        fn, args = obj.fn, obj.args
        if isinstance(fn, C.IndexFn):
            for path, sig, op, desc in expr_mutations(fn.expr):
                out.append((path, sig, f"expr:{op}", f"imap: {desc}"))
        else:
            for i, p in enumerate(fn.consts):
                shown = E.render(p) if isinstance(p, E.Expr) else p.render() if isinstance(p, C.Ratio) else str(p)
                out.append((None, "", f"param:{i}", f"{fn.name} constant #{i} {shown} -> {shown} + 1"))
        if len(args) >= 2 and not (isinstance(fn, C.Prim) and fn.name in COMMUTATIVE):
            for i in range(len(args)):
                for j in range(i + 1, len(args)):
                    out.append((None, "", f"swap:{i},{j}", f"{_fn_name(fn)}: operands {i} and {j} swapped"))
    elif isinstance(obj, C.Select):
        for new in SELECT_FLIPS[obj.cmp]:
            out.append((None, "", f"cmp:{new}", f"select: {obj.cmp} -> {new}"))
        out.append((None, "", "kq-swap", "select: keys and queries swapped"))
    elif isinstance(obj, (C.SelectAnd, C.SelectOr)):
        sym = "&" if isinstance(obj, C.SelectAnd) else "|"
        out.append((None, "", "drop:a", f"a {sym} b -> b (left operand dropped)"))
        out.append((None, "", "drop:b", f"a {sym} b -> a (right operand dropped)"))
    elif isinstance(obj, C.Full):
        out.append((None, "", "full:+1", f"full({obj.value}) -> full({obj.value + 1})"))
    elif isinstance(obj, C.Aggregate) and obj.score is not None:
        out.append((None, "", "score:drop", "value-scored head -> plain mean (score dropped)"))
    elif isinstance(obj, Block):
        out.append((None, "", "offset:+1", f"block {obj.name}: program offset {E.render(obj.offset)} -> +1"))
    return out


@dataclass(frozen=True, eq=False)
class MisplacedBlock(Block):
    """A block that the program addresses at ``offset`` while its data live at ``data_offset``."""

    data_offset: E.Expr = field(default_factory=lambda: E.Const(0))

    @property
    def start(self) -> int:
        return int(self.data_offset.evaluate(C.size_bindings(self.data_offset)))


@dataclass
class Applied:
    """One node changed by a mutant, with what it was (for the equivalence proof)."""

    node: Any
    op: str
    before: Any


class Recorder:
    """Hook in record mode: every site and its mutations, in creation order."""

    def __init__(self, construction: str) -> None:
        self.construction = construction
        self.mutants: list[Mutant] = []
        self.seen: set[Site] = set()

    def __call__(self, obj: Any) -> Any:
        kinds = (C.Map, C.SequenceMap, C.Select, C.SelectAnd, C.SelectOr, C.Full, C.Aggregate, Block)
        if isinstance(obj, kinds) and not (isinstance(obj, C.Aggregate) and obj.score is None):
            site = _caller_site(type(obj).__name__)
            if site is not None and site not in self.seen:
                self.seen.add(site)
                for path, sig, op, desc in node_mutations(obj):
                    full_desc = f"{_where(site)} {desc}"
                    self.mutants.append(Mutant(self.construction, site, op, full_desc, path, sig))
        return obj


class Mutator:
    """Hook in mutate mode: change every node created at the mutant's site."""

    def __init__(self, mutant: Mutant) -> None:
        self.m = mutant
        self.applied = 0
        self.log: list[Applied] = []

    def __call__(self, obj: Any) -> Any:
        kind = type(obj).__name__
        if kind != self.m.site[3] or _caller_site(kind) != self.m.site:
            return obj
        return self._apply(obj)

    def _note(self, node: Any, before: Any) -> None:
        self.applied += 1
        self.log.append(Applied(node, self.m.op, before))

    def _apply(self, obj: Any) -> Any:
        op = self.m.op
        st = object.__setattr__
        if op.startswith("expr:"):
            fn = obj.fn
            if not isinstance(fn, C.IndexFn) or self.m.path is None:
                return obj
            target = _at(fn.expr, self.m.path)
            if target is None or _sig(target) != self.m.sig:
                return obj
            st(obj, "fn", C.IndexFn(mutate_expr(fn.expr, self.m.path, op[5:]), fn.argnames))
            self._note(obj, fn)
        elif op.startswith("param:"):
            fn, i = obj.fn, int(op[6:])
            if isinstance(fn, C.Prim) and i < len(fn.consts):
                ps = list(fn.consts)
                p = ps[i]
                ps[i] = C.Ratio(p.num + p.den, p.den) if isinstance(p, C.Ratio) else p + 1
                st(obj, "fn", C.Prim(fn.name, tuple(ps)))
                self._note(obj, fn)
        elif op.startswith("swap:"):
            i, j = (int(x) for x in op[5:].split(","))
            if isinstance(obj, C.SequenceMap) and j < len(obj.args):
                args = list(obj.args)
                args[i], args[j] = args[j], args[i]
                self._note(obj, obj.args)
                st(obj, "args", tuple(args))
        elif op.startswith("cmp:") and isinstance(obj, C.Select):
            self._note(obj, (obj.keys, obj.queries, obj.cmp))
            st(obj, "cmp", op[4:])
        elif op == "kq-swap" and isinstance(obj, C.Select):
            keys, queries = obj.keys, obj.queries
            self._note(obj, (keys, queries, obj.cmp))
            st(obj, "keys", queries)
            st(obj, "queries", keys)
        elif op.startswith("drop:") and isinstance(obj, (C.SelectAnd, C.SelectOr)):
            self._note(obj, (obj.a, obj.b))
            if op == "drop:a":
                st(obj, "a", obj.b)
            else:
                st(obj, "b", obj.a)
        elif op == "full:+1" and isinstance(obj, C.Full):
            self._note(obj, obj.value)
            st(obj, "value", Fraction(obj.value) + 1)
        elif op == "score:drop" and isinstance(obj, C.Aggregate) and obj.score is not None:
            self._note(obj, obj.score)
            st(obj, "score", None)
        elif op == "offset:+1" and isinstance(obj, Block):
            new = MisplacedBlock(
                obj.name, obj.offset + 1, obj.rows, obj.cols, obj.stack, obj.channel, data_offset=obj.offset
            )
            self._note(new, obj)
            return new
        return obj


# -- enumerating ------------------------------------------------------------------------------
def mutants_of(name: str, example: Callable[[], object]) -> list[Mutant]:
    """Every mutant of a construction: build its example once with the recording hook."""
    rec = Recorder(name)
    token = C.MUTATION_HOOK.set(rec)
    try:
        example()
    finally:
        C.MUTATION_HOOK.reset(token)
    counts: dict[str, int] = {}
    for m in rec.mutants:
        counts[m.description] = counts.get(m.description, 0) + 1
    seen: dict[str, int] = {}
    out = []
    for m in rec.mutants:  # make equal descriptions distinct: "... [#2 of 3]"
        if counts[m.description] > 1:
            seen[m.description] = seen.get(m.description, 0) + 1
            m = replace(m, description=f"{m.description} [#{seen[m.description]} of {counts[m.description]}]")
        out.append(m)
    if getattr(_without_hook(example), "specification", None) is not None:
        # a bug written consistently into a selector and its intent: only the spec proof can catch it
        out += [
            replace(m, restate_intent=True, description=f"{m.description} + its intent restated to match")
            for m in out
            if m.site[3] == "Select" or (m.op.startswith("expr:") and m.site[3] in ("Map", "SequenceMap"))
        ]
    return out


def _size_hint(oid: str) -> int:
    nums = [int(x) for x in re.findall(r"\d+", oid.split("/", 2)[-1])]
    out = 1
    for n in nums:
        out *= max(n, 1)
    return out


def order_obligations(obs: Sequence[Obligation]) -> list[Obligation]:
    """Cheapest first: small instances before large ones, exact < numeric < sympy < Z3."""
    keyed = [
        (_size_hint(o.id) > _LARGE, _METHOD_RANK.get(o.method, 5), _size_hint(o.id), i, o) for i, o in enumerate(obs)
    ]
    return [k[-1] for k in sorted(keyed, key=lambda k: k[:4])]


# -- running one mutant (in a forked child) -------------------------------------------------------
class _Timeout(BaseException):
    """Raised by SIGALRM inside a check (a BaseException, so that checks cannot swallow it)."""


_ARMED = [False]


def _alarm(signum: int, frame: Any) -> None:
    if _ARMED[0]:
        raise _Timeout()


def _run_check(ob: Obligation, timeout: float) -> Outcome:
    """One check under a hard alarm (it re-fires every 0.25 s, in case one lands in a finalizer)."""
    signal.signal(signal.SIGALRM, _alarm)
    _ARMED[0] = True
    signal.setitimer(signal.ITIMER_REAL, timeout + 0.5, 0.25)
    try:
        try:
            return ob.check(timeout)
        except _Timeout:
            return Outcome.unknown(f"timeout after {timeout:g} s")
        except Exception as exc:  # a crash on a mutant is a failure of the mutant
            return Outcome.bad(f"{type(exc).__name__}: {exc}")
        finally:
            _ARMED[0] = False
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Timeout:  # the alarm fired between the check's end and the disarming
        return Outcome.unknown(f"timeout after {timeout:g} s")


def run_mutant(m: Mutant, obs: Sequence[Obligation], example: Callable[[], Any], timeout: float) -> MutantResult:
    """Run the (ordered) obligations on one mutant in this process; then try an equivalence proof."""
    t0 = time.perf_counter()
    hook = Mutator(m)
    token = C.MUTATION_HOOK.set(hook)
    built: list[Any] = []
    _RESTATING[0] = hook if m.restate_intent else None
    try:
        _collect_constructions(built)
        unknown: list[str] = []
        symbolic: list[tuple[str, list[Any]]] = []  # sympy obligations that held, with what they built
        for ob in obs:
            n_built = len(built)
            out = _run_check(ob, timeout)
            if out.ok is True and ob.method in ("sympy", "all-sizes"):
                symbolic.append((ob.id, built[n_built:]))
            if out.ok is False:
                if _program_unchanged(example):  # only a claim (an intent) changed: refuted, but no program bug
                    return MutantResult(
                        m,
                        False,
                        ob.id,
                        False,
                        None,
                        f"claim only: {out.detail[:280]}",
                        time.perf_counter() - t0,
                        hook.applied,
                        claim_only=True,
                    )
                return MutantResult(
                    m, True, ob.id, False, None, out.detail[:300], time.perf_counter() - t0, hook.applied
                )
            if out.ok is None:
                unknown.append(ob.id)
        applied = hook.applied
        equivalent, why = prove_equivalent(m, example, hook, timeout, built)
        if not equivalent:
            provers: list[Callable[[], tuple[bool, str]]] = [
                lambda: unreachable(hook, built),
                lambda: consumers_equivalent(hook, built, timeout),
                lambda: unread_changes(hook, built, timeout),
                lambda: output_equivalent(hook, built, symbolic),
                lambda: spec_equivalent(hook, built, symbolic),
            ]
            tried = [why]
            for prover in provers:
                ok, why2 = prover()
                if ok:
                    equivalent, why = True, why2
                    break
                if why2 != "-":
                    tried.append(why2)
            else:
                why = "; ".join(tried)
    finally:
        C.MUTATION_HOOK.reset(token)
        _collect_constructions(None)
        _RESTATING[0] = None
    notes = []
    if applied == 0:
        notes.append("no obligation built this site")
    if unknown:
        notes.append(f"unknown: {', '.join(unknown)}")
    if not equivalent:
        notes.append(why)
    return MutantResult(
        m, False, None, equivalent, why if equivalent else None, "; ".join(notes), time.perf_counter() - t0, applied
    )


def unreachable(hook: Mutator, built: Sequence[Any]) -> tuple[bool, str]:
    """Dead code: no changed node is reachable from the program (or an intent) of any Construction
    built for the obligations and the example, so no output of the construction can change."""
    if not hook.log or not all(isinstance(a.node, C.RASPExpr) for a in hook.log):
        return False, "-"
    changed = {id(a.node) for a in hook.log}
    n = 0
    for con in built:
        program = getattr(con, "program", None)
        if not isinstance(program, C.RASPExpr):
            continue
        n += 1
        roots = [program, *(it.selector for it in getattr(con, "intents", ()))]
        if any(id(x) in changed for x in C.topological(roots)):
            return False, "-"
    if n == 0:
        return False, "-"
    return (
        True,
        (
            f"graph: the {len(changed)} changed node(s) are unreachable from the programs and intents "
            f"of all {n} Constructions built (dead code here)"
        ),
    )


def _instance(con: Any) -> tuple[str, tuple[tuple[str, int], ...]]:
    return (E.render(con.layout.length), tuple(sorted(con.sizes.items())))


def output_equivalent(
    hook: Mutator, built: Sequence[Any], symbolic: Sequence[tuple[str, list[Any]]]
) -> tuple[bool, str]:
    """Equivalent on the outputs: every instance the mutant changed has no size symbols (it is one
    fixed program) and a SymPy obligation proved that instance's output = the reference on symbols."""
    changed = {id(a.node) for a in hook.log}
    seen: set[int] = set()
    needed: dict[tuple[str, tuple[tuple[str, int], ...]], bool] = {}
    for con in built:
        program = getattr(con, "program", None)
        if getattr(con, "layout", None) is None or not isinstance(program, C.RASPExpr):
            continue
        hit = {id(n) for n in C.topological([program])} & changed
        if hit:
            seen |= hit
            needed[_instance(con)] = not con.sizes
    if not needed or seen != changed:
        return False, "-"
    if not all(needed.values()):
        return False, "-"
    covered: dict[tuple[str, tuple[tuple[str, int], ...]], str] = {}
    for oid, cons in symbolic:
        for con in cons:
            if getattr(con, "layout", None) is not None:  # Constructions (built also holds Intents)
                covered.setdefault(_instance(con), oid)
    missing = [k for k in needed if k not in covered]
    if missing:
        return False, f"{len(missing)} changed instance(s) without a SymPy proof"
    ids = sorted({covered[k] for k in needed})
    return True, (
        f"sympy: {', '.join(ids)} proved the mutant's output = the reference for all symbolic inputs, "
        f"and every changed instance is a fixed program (no size symbols; {len(needed)} instance(s))"
    )


def spec_equivalent(hook: Mutator, built: Sequence[Any], symbolic: Sequence[tuple[str, list[Any]]]) -> tuple[bool, str]:
    """Equivalent by the specification, for a mutant that only moves intermediate blocks (``offset:+1``
    of a block holding neither an operand nor the output of any Construction built: encoding and
    decoding are unchanged, the program addresses its own scratch channel one position further).
    An ``all-sizes`` obligation proved the mutated build, over unbound sizes, equal to its independent
    spec for every size, and every instance built is that build bound (same program and layout): the
    mutant computes the spec, as the original does by the same obligation."""
    if not hook.log or not all(a.op == "offset:+1" and isinstance(a.before, Block) for a in hook.log):
        return False, "-"
    moved = {a.before.name for a in hook.log}
    cons = [
        c
        for c in built
        if getattr(c, "layout", None) is not None and isinstance(getattr(c, "program", None), C.RASPExpr)
    ]
    if not cons or any(moved & {*c.inputs, c.output} for c in cons):
        return False, "-"
    proven = [
        (oid, c)
        for oid, cs in symbolic
        if "/all-sizes/" in oid
        for c in cs
        if getattr(c, "layout", None) is not None and c.free_sizes
    ]
    if not proven:
        return False, "-"

    def same(a: Any, b: Any) -> bool:
        def key(lay: Any) -> list[str]:
            dims = [(x.name, x.channel, x.offset, x.rows, x.cols, x.stack) for x in lay.blocks]
            return [E.render(lay.length), *(f"{n}@{ch}:" + ",".join(E.render(e) for e in es) for n, ch, *es in dims)]

        return bool(a.program.fingerprint == b.program.fingerprint and key(a.layout) == key(b.layout))

    def binds_to(sym: Any, inst: Any) -> bool:  # the same build, or that build bound at the instance's sizes
        if inst.free_sizes:
            return bool(inst.free_sizes == sym.free_sizes) and same(sym, inst)
        if set(inst.sizes) != set(sym.free_sizes):
            return False
        try:
            return same(sym.bind(**inst.sizes), inst)
        except Exception:
            return False

    for c in cons:
        if not any(binds_to(sym, c) for _, sym in proven):
            return False, f"instance {c.name} {c.sizes} is no binding of an all-sizes-proven build"
    ids = sorted({oid for oid, _ in proven})
    return True, (
        f"spec: {', '.join(ids)} proved the mutated build = its independent spec for all sizes; all "
        f"{len(cons)} Constructions built are that build bound; the moved block(s) {', '.join(sorted(moved))} "
        "hold no operand and no output (encoding and decoding unchanged)"
    )


def _collect_constructions(into: list[Any] | None) -> None:
    """While ``into`` is a list, every Construction (and every Intent) built is appended to it (None: stop).

    Subclasses with their own ``__init__`` (a ``@dataclass`` subclass such as VectorConstruction)
    are patched too; only the outermost ``__init__`` of an instance appends it."""
    from attnsim.lemmas.base import Construction, Intent

    classes: list[type] = [Construction, Intent]
    for cls in classes:
        subs: list[type] = cls.__subclasses__()
        classes.extend(sub for sub in subs if sub not in classes)
    for cls in classes:
        if "__init__" not in cls.__dict__:
            continue
        init = cls.__dict__["__init__"]
        orig = getattr(init, "__wrapped_init__", init)
        if into is None:
            cls.__init__ = orig  # type: ignore[misc]
            continue

        def collecting(self: Any, *args: Any, _orig: Any = orig, _cls: type = cls, **kwargs: Any) -> None:
            _orig(self, *args, **kwargs)
            if _outermost(type(self), _cls):
                if isinstance(self, Intent) and _RESTATING[0] is not None:
                    _restate(self, _RESTATING[0])
                into.append(self)

        collecting.__wrapped_init__ = orig  # type: ignore[attr-defined]
        cls.__init__ = collecting  # type: ignore[misc]


_RESTATING: list[Mutator | None] = [None]  # the running mutant, when it also restates intents


def _restate(intent: Any, hook: Mutator) -> None:
    """Write the mutant's change into the intent too: the intent becomes the changed selector's formula."""
    changed = {id(a.node) for a in hook.log}
    if not any(id(n) in changed for n in C.topological([intent.selector])):
        return
    try:
        formula = z3sel.selector_expr(intent.selector)
    except z3sel.NotStructural:
        return
    object.__setattr__(intent, "intent", formula)


def _program_unchanged(example: Callable[[], Any]) -> bool:
    """The example's program and layout are the same with and without the mutant (only claims differ)."""
    try:
        mutated, original = example(), _without_hook(example)
        same_layout = [b.describe() if hasattr(b, "describe") else b for b in (mutated.layout, original.layout)]
        return bool(mutated.program.fingerprint == original.program.fingerprint and same_layout[0] == same_layout[1])
    except Exception:  # an example that cannot be built with the mutant has changed
        return False


def _outermost(t: type, cls: type) -> bool:
    """``cls`` is the first class in ``t``'s MRO that defines ``__init__`` (no other wrapper ran it)."""
    for c in t.__mro__:
        if "__init__" in c.__dict__:
            return c is cls
    return False


# -- equivalence proofs ----------------------------------------------------------------------------
def _without_hook(fn: Callable[[], Any]) -> Any:
    token = C.MUTATION_HOOK.set(None)
    try:
        return fn()
    finally:
        C.MUTATION_HOOK.reset(token)


def prove_equivalent(
    m: Mutant, example: Callable[[], Any], hook: Mutator, timeout: float, built: Sequence[Any] = ()
) -> tuple[bool, str]:
    """A proof that every node the mutant changed (in every instance the obligations and the
    example built) computes what the original node computes, at every position, for all sizes.

    ``built`` are the Constructions built meanwhile: a node inside one of their programs is
    compared on that sequence's positions ``0 <= p < layout.length``; any other node on every
    position ``p >= 0`` of a sequence of any length."""
    try:
        example()
    except Exception as exc:
        return False, f"example does not build: {type(exc).__name__}: {exc}"
    if not hook.log:
        return False, "site not built by the example or any obligation"
    where: dict[int, list[tuple[E.Expr | None, dict[str, int], tuple[E.Expr, ...]]]] = {}
    for con in built:
        layout, program = getattr(con, "layout", None), getattr(con, "program", None)
        if layout is None or not isinstance(program, C.RASPExpr):
            continue
        minimum, assume = domain_of(con)
        for node in C.topological([program]):
            where.setdefault(id(node), []).append((layout.length, minimum, assume))
    for it in built:  # a node outside every program (e.g. an intent checked at any offset): its intents' domain
        if isinstance(getattr(it, "selector", None), C.RASPExpr) and not hasattr(it, "program"):
            for node in C.topological([it.selector]):
                if id(node) not in where:
                    where.setdefault(-id(node), []).append((None, *domain_of(SimpleNamespace(intents=[it]))))
    distinct: dict[str, tuple[Applied, E.Expr | None, dict[str, int], tuple[E.Expr, ...]]] = {}
    for a in hook.log:
        for length, minimum, assume in where.get(id(a.node)) or where.get(-id(a.node)) or [(None, {}, ())]:
            key = f"{_applied_key(a)}|{E.render(length) if length is not None else '*'}"
            key += "|" + ",".join(E.render(x) for x in assume) + f"|{sorted(minimum.items())}"
            distinct.setdefault(key, (a, length, minimum, assume))
    values: dict[str, list[dict[str, int]]] = {}  # the size values of every changed node (bounded proofs)
    for a in hook.log:
        values.setdefault(_applied_key(a), []).append(_node_sizes(a))
    proofs = []
    for a, length, minimum, assume in distinct.values():
        ok, why = _prove_node(a, timeout, length, minimum, assume, values.get(_applied_key(a), []))
        if not ok:
            return False, f"no equivalence proof ({why})"
        proofs.append(why)
    uniq = list(dict.fromkeys(proofs))
    return True, "; ".join(uniq) + f" [{len(hook.log)} changed nodes, {len(distinct)} distinct cases, all proven]"


def _node_sizes(a: Applied) -> dict[str, int]:
    """The values of the sizes a changed selector node reads (empty for other nodes)."""
    if not isinstance(a.node, C.Selector):
        return {}
    f = token_selector_expr(a.node)
    try:
        return C.size_bindings(f) if f is not None else {}
    except C.ProgramError:
        return {}


def _applied_key(a: Applied) -> str:
    n = a.node
    if isinstance(n, (C.Map, C.SequenceMap)):  # size values are left out: the proofs hold for all of them
        args = ",".join(_arg_key(x) for x in n.args)
        before = _fn_key(a.before) if isinstance(a.before, (C.IndexFn, C.Prim)) else ",".join(map(_arg_key, a.before))
        return f"{_fn_key(n.fn)}|{args}|{before}"
    if isinstance(n, C.Select):
        k, q, cmp = a.before
        return f"sel|{_arg_key(n.keys)}|{_arg_key(n.queries)}|{n.cmp}|{_arg_key(k)}|{_arg_key(q)}|{cmp}"
    if isinstance(n, C.RASPExpr):
        return n.fingerprint + repr(a.before)
    return repr(a.op) + str(id(n))


def _fn_key(fn: C.Fn) -> str:
    return E.render(fn.expr) if isinstance(fn, C.IndexFn) else fn.fingerprint


def _arg_key(x: Any) -> str:
    e = C.index_expr(x, _POS) if isinstance(x, C.SOp) else None
    return E.render(e) if e is not None else (x.fingerprint if isinstance(x, C.RASPExpr) else repr(x))


_POS = E.Var("pos!")
_LEN = E.Var("length")


def _structural_args(args: Sequence[C.SOp]) -> list[E.Expr] | None:
    out = []
    for a in args:
        e = C.index_expr(a, _POS)
        if e is None:
            return None
        out.append(e)
    return out


def domain_of(con: Any) -> tuple[dict[str, int], tuple[E.Expr, ...]]:
    """The construction's domain as its intents state it: minimum sizes, and the assumptions that
    mention only sizes (e.g. ``cols % 2 == 0`` for MaxMin, which the factory enforces)."""
    minimum: dict[str, int] = {}
    assume: list[E.Expr] = []
    for it in getattr(con, "intents", ()):
        minimum.update(dict(it.minimum))
        for x in it.assumptions:
            if x.variables() <= set(z3sel.size_names(x)) and all(x is not y for y in assume):
                assume.append(x)
    return minimum, tuple(assume)


def _prove_node(
    a: Applied,
    timeout: float,
    length: E.Expr | None = None,
    minimum: dict[str, int] | None = None,
    assume: Sequence[E.Expr] = (),
    instances: Sequence[dict[str, int]] = (),
) -> tuple[bool, str]:
    """Z3 / SymPy: the changed node equals the original one, at every position 0 <= p < length
    (``length`` the instance's layout length over its size symbols; None: any length), all sizes
    within the construction's domain (``minimum`` sizes and the size-only ``assume``)."""
    op = a.op
    seq = _LEN if length is None else length
    bound = "length" if length is None else _short(length, 40)
    within = f"every position 0 <= p < {bound}"
    assume = tuple(assume)
    given = f" given {', '.join(_short(x, 40) for x in assume)}" if assume else ""
    if op.startswith("expr:") or (op.startswith("swap:") and isinstance(a.node.fn, C.IndexFn)):
        node = a.node
        old_fn = a.before if op.startswith("expr:") else node.fn
        old_args = node.args if op.startswith("expr:") else a.before
        new_e, old_e = _structural_args(node.args), _structural_args(old_args)
        if new_e is not None and old_e is not None:
            new = node.fn.expr.substitute(dict(zip(node.fn.argnames, new_e, strict=True)))
            old = old_fn.expr.substitute(dict(zip(old_fn.argnames, old_e, strict=True)))
            goal = new.eq(old).substitute({"length": seq})
            res = z3sel.prove(goal, (_POS >= 0, _POS < seq, *assume), minimum=minimum, timeout=timeout)
            domain = within + given
        elif op.startswith("expr:"):
            res = z3sel.prove(node.fn.expr.eq(old_fn.expr), assume, minimum=minimum, timeout=timeout)
            domain = "all integer arguments"
        else:
            return False, "operands are not index expressions of the position"
        if res.ok is True:
            return True, f"z3: mutated index map = original at {domain}, {_scope(res)}"
        return False, f"z3 {'counterexample' if res.ok is False else 'unknown'}: {res.detail[:160]}"
    if op.startswith(("cmp:", "kq-swap", "drop:")):
        orig = _original_selector(a)
        return prove_same_selector(a.node, orig, timeout, seq, bound, minimum, assume, instances)
    if op.startswith("swap:"):
        return _prove_symmetric(a.node.fn, op)
    return False, f"no equivalence prover for {op}"


def _original_selector(a: Applied) -> C.Selector:
    """The selector a changed Select / SelectAnd / SelectOr was before the mutant (built unhooked)."""
    if a.op.startswith("drop:"):
        ka, kb = a.before
        return cast(
            C.Selector,
            _without_hook(lambda: C.SelectAnd(ka, kb) if isinstance(a.node, C.SelectAnd) else C.SelectOr(ka, kb)),
        )
    k, q, cmp = a.before
    return cast(C.Selector, _without_hook(lambda: C.Select(k, q, cmp)))


def prove_same_selector(
    new_sel: C.Selector,
    orig: C.Selector,
    timeout: float,
    seq: E.Expr,
    bound: str,
    minimum: dict[str, int] | None = None,
    assume: Sequence[E.Expr] = (),
    instances: Sequence[dict[str, int]] = (),
) -> tuple[bool, str]:
    """Z3: two selectors select the same (q, k) for all 0 <= q, k < ``seq`` and all sizes in the domain
    (token-dependent selectors: for all integer tokens at q and k; if Z3 cannot decide that with
    symbolic sizes, a BOUNDED proof per size assignment, said so)."""
    assume = tuple(assume)
    given = f" given {', '.join(_short(x, 40) for x in assume)}" if assume else ""
    tokens = ""
    try:
        f_new, f_old = z3sel.selector_expr(new_sel), z3sel.selector_expr(orig)
    except z3sel.NotStructural as exc:
        f_tok_new, f_tok_old = token_selector_expr(new_sel), token_selector_expr(orig)
        if f_tok_new is None or f_tok_old is None:
            return False, f"selector is not structural: {exc}"
        f_new, f_old = f_tok_new, f_tok_old
        tokens = " and all integer token values at q and k"
    iff = ((f_new & f_old) | (E.Not(f_new) & E.Not(f_old))).substitute({"length": seq})
    qv, kv = z3sel.Q, z3sel.K
    hyps = (qv >= 0, qv < seq, kv >= 0, kv < seq, *assume)
    res = _cached_prove(iff, hyps, minimum or {}, timeout)
    if res.ok is True:
        return True, f"z3: mutated selector = original for all 0 <= q, k < {bound}{tokens}{given}, {_scope(res)}"
    if res.ok is None and tokens:  # e.g. x mod p with p symbolic: nonlinear; each fixed p is linear
        ok, scope = _prove_per_size(iff, hyps, minimum or {}, instances, timeout)
        if ok:
            return True, f"z3: mutated selector = original for all 0 <= q, k < {bound}{tokens}{given}, {scope}"
        res = Outcome.unknown(f"{res.detail}; {scope}")
    return False, f"z3 {'counterexample' if res.ok is False else 'unknown'}: {res.detail[:160]}"


def _reselect(sel: C.Select, original: Callable[[C.SOp], C.SOp]) -> C.Select:
    return C.Select(original(sel.keys), original(sel.queries), sel.cmp)


def consumers_equivalent(hook: Mutator, built: Sequence[Any], timeout: float) -> tuple[bool, str]:
    """A changed index map read only by selectors: every such selector, rebuilt on the original
    map, selects the same (q, k) at every position of its instance, for all sizes of the domain
    (e.g. a mask whose 'else' value changes from 0 to -1 while the selector tests mask == 1)."""
    maps = (C.Map, C.SequenceMap)
    if not hook.log or not all(a.op.startswith("expr:") and isinstance(a.node, maps) for a in hook.log):
        return False, "-"
    before = {id(a.node): a.before for a in hook.log}
    cases: dict[str, tuple[C.Select, C.Select, E.Expr, dict[str, int], tuple[E.Expr, ...], Any, Any]] = {}
    covered: set[int] = set()
    for con in built:
        layout, program = getattr(con, "layout", None), getattr(con, "program", None)
        if layout is None or not isinstance(program, C.RASPExpr):
            continue
        minimum, assume = domain_of(con)
        nodes = C.topological([program])
        if id(program) in before:
            return False, "-"  # the changed map is the output itself
        for n in nodes:
            hit = [c for c in n.children() if id(c) in before]
            if not hit:
                continue
            if not isinstance(n, C.Select):
                return False, "-"
            covered |= {id(c) for c in hit}

            def original(x: C.SOp) -> C.SOp:
                if id(x) not in before:
                    return x
                return cast(C.SOp, _without_hook(lambda: dataclasses.replace(cast(Any, x), fn=before[id(x)])))

            orig = cast(C.Select, _without_hook(functools.partial(_reselect, n, original)))
            # a head with an intent: its queries outside the intent's region are unspecified (no intent
            # reads them: every key region is a block, every block an intent's query region)
            its = [it for it in getattr(con, "intents", ()) if it.selector is n]
            region = tuple(it.queries for it in its[:1])
            key = f"{_arg_key(n.keys)}|{_arg_key(n.queries)}|{n.cmp}|{E.render(layout.length)}"
            key += f"|{sorted(minimum.items())}|{','.join(E.render(r) for r in region)}"
            cases.setdefault(key, (n, orig, layout.length, minimum, assume + region, its[0] if its else None, layout))
    if not cases or covered != set(before):
        return False, "-"
    proofs = []
    from attnsim.lemmas.base import check_intent

    for new_sel, orig, length, minimum, assume, intent, layout in cases.values():
        if intent is not None:  # the changed head still meets its intent, which the original meets (its obligation)
            res = check_intent(intent, layout, timeout=timeout, bound=None if intent.parametric else 8)
            if res.ok is True:
                kind = _scope(res) if intent.parametric else "BOUNDED: every size <= 8"
                proofs.append(
                    f"z3 ({kind}): the changed head still meets its intent {intent.name!r} (as the original does, "
                    f"by that intent's obligation), so it selects the same keys at every query of the intent's region"
                )
                continue
        ok, why = prove_same_selector(new_sel, orig, timeout, length, _short(length, 40), minimum, assume)
        if not ok:
            return False, f"selector reading the changed map: {why}"
        proofs.append(why + (" (q within the head's intent query region)" if intent is not None else ""))
    return True, (
        "every reader of the changed map is a selector, proven unchanged: "
        + "; ".join(dict.fromkeys(proofs))
        + f" [{len(cases)} distinct selectors]"
    )


def _initial_taint(a: Applied, at_least_one: Callable[[E.Expr], bool]) -> tuple[E.Expr | None, E.Expr | None]:
    """(T(p), D(q, k)) of one changed node: where it may now differ from the original."""
    n, op = a.node, a.op
    if isinstance(n, (C.Map, C.SequenceMap)):
        if isinstance(n.fn, C.IndexFn) and op.startswith("expr:"):
            return taint.changed_map(n, a.before, n.args, at_least_one), None
        if isinstance(n.fn, C.IndexFn) and op.startswith("swap:"):
            return taint.changed_map(n, n.fn, a.before, at_least_one), None
        if isinstance(n.fn, C.Prim) and op.startswith(("swap:", "param:")):
            if n.fn.primitive.partial:
                raise taint.Unsupported(f"the changed {n.fn.name} may raise where the original does not")
            return taint.TRUE, None
    if isinstance(n, (C.Full, C.Aggregate)) and op in ("full:+1", "score:drop"):
        return taint.TRUE, None
    if isinstance(n, C.Selector) and op.startswith(("cmp:", "kq-swap", "drop:")):
        try:
            new, old = z3sel.selector_expr(n), z3sel.selector_expr(_original_selector(a))
        except z3sel.NotStructural:
            return None, taint.TRUE
        return None, (new & E.Not(old)) | (old & E.Not(new))
    raise taint.Unsupported(f"no taint rule for {op}")


def unread_changes(hook: Mutator, built: Sequence[Any], timeout: float) -> tuple[bool, str]:
    """Equivalent on the outputs: in every Construction built that contains a changed node, Z3
    proves that no position of the output block can hold a changed value (the changes stay where
    only position-wise maps read them, and every selector leaves those positions out), and that no
    change can make the program raise (:mod:`attnsim.proofs.taint`).  For all sizes of the
    construction's domain when Z3 decides it; else at the instance's own sizes (BOUNDED, said so)."""
    if not hook.log:
        return False, "-"
    changed = {id(a.node) for a in hook.log}
    seen: set[int] = set()
    symbolic: set[str] = set()
    concrete: dict[str, list[str]] = {}
    emptied = 0
    n_cons = 0
    deadline = time.perf_counter() + 3 * timeout  # for the all-sizes attempts
    for con in built:
        layout, program = getattr(con, "layout", None), getattr(con, "program", None)
        if layout is None or not isinstance(program, C.RASPExpr):
            continue
        hit = {id(x) for x in C.topological([program])} & changed
        if not hit:
            continue
        seen |= hit
        n_cons += 1
        log = [a for a in hook.log if id(a.node) in hit]
        # every position of this instance first (fast, and a taint reaching the output ends it);
        # then, while the budget lasts, the same for all sizes by Z3
        try:
            ok, why, k = _unread_in(con, program, log, timeout, fixed=True)
        except taint.Unsupported as exc:
            ok, why, k = False, str(exc), 0
        if not ok:
            return False, f"unread: {why}"
        out = con.layout[con.output].name
        ok = False
        if time.perf_counter() < deadline:
            try:
                ok, _, k2 = _unread_in(con, program, log, timeout, fixed=False)
            except taint.Unsupported:
                ok = False
        if ok:
            symbolic.add(out)
            emptied += k2
        else:
            emptied += k
            concrete.setdefault(out, []).append(", ".join(f"{n}={v}" for n, v in sorted(con.sizes.items())))
    if n_cons == 0 or seen != changed:
        return False, "-"
    n_enum = sum(len(v) for v in concrete.values())
    if n_enum == 0:
        scope = f"z3, for all sizes of each construction's domain, in all {n_cons} Constructions built"
    else:
        shown = "; ".join(dict.fromkeys(x or "fixed sizes" for v in concrete.values() for x in v))
        scope = (
            f"BOUNDED: {n_enum} of {n_cons} Constructions built by enumerating every position at their own "
            f"sizes ({shown}), the other {n_cons - n_enum} by z3 for all sizes of the domain"
        )
    return True, (
        f"unread ({scope}): no position of the output block ({', '.join(sorted(symbolic | set(concrete)))}) can "
        f"hold a changed value ({emptied} attention reads skip every changed position; no partial primitive, "
        "divisor or token comparison reached)"
    )


def _unread_in(
    con: Any, program: C.RASPExpr, log: Sequence[Applied], timeout: float, fixed: bool
) -> tuple[bool, str, int]:
    """One Construction: (proved, why not, attention reads proven clean).  ``fixed``: the taints are
    enumerated on the instance's positions (its sizes); else formulas over symbolic sizes, by Z3."""
    minimum, assume = domain_of(con)
    layout = con.layout
    pos = taint.POS
    length = layout.length
    hyps = (pos >= 0, pos < length, *assume)
    budget = min(timeout, 2.0)

    def valid(goal: E.Expr, extra: tuple[E.Expr, ...] = ()) -> bool:
        goal = goal.substitute({"length": length})
        return _cached_prove(goal, hyps + extra, minimum, budget).ok is True

    sizes = dict(con.sizes)
    dom: taint.Formulas | taint.Positions
    if fixed:
        dom = taint.Positions(layout.total, sizes)
        at_least_one: Callable[[E.Expr], bool] = lambda d: bool(int(d.evaluate(C.size_bindings(d))) >= 1)
    else:
        dom = taint.Formulas(length, lambda f: valid(E.Not(f)))
        at_least_one = lambda d: valid(d >= 1)
    sop0: dict[int, E.Expr] = {}
    sel0: dict[int, E.Expr] = {}
    for a in log:
        t0, d0 = _initial_taint(a, at_least_one)
        for into, x in ((sop0, t0), (sel0, d0)):
            if x is not None:
                into[id(a.node)] = x if id(a.node) not in into else into[id(a.node)] | x
    spread = taint.Spread(dom)
    spread.run(program, sop0, sel0)
    out_blk = layout[con.output]
    t_out = spread.taint(program)
    if t_out is None:
        return True, "", spread.emptied
    if isinstance(dom, taint.Positions):
        ok = not bool(t_out[out_blk.start : out_blk.end].any())
    else:
        ok = valid(E.Not(t_out), (out_blk.contains(pos),))
    if not ok:
        where = "at the instance's sizes" if fixed else "for all sizes"
        return False, f"the output block {out_blk.name} may change {where}", spread.emptied
    return True, "", spread.emptied


_TOK_Q, _TOK_K = E.Var("token_q"), E.Var("token_k")


def _token_expr(sop: C.SOp, pos: E.Expr, tok: E.Expr) -> E.Expr | None:
    """Like :func:`attnsim.rasp.core.index_expr`, with the token at ``pos`` as the integer ``tok``
    (index maps of tokens: tokens are integers wherever an index map reads them)."""
    if isinstance(sop, C.Tokens):
        return tok
    if isinstance(sop, (C.Map, C.SequenceMap)) and isinstance(sop.fn, C.IndexFn):
        subs: dict[str, E.Expr | int] = {}
        for name, x in zip(sop.fn.argnames, sop.args, strict=True):
            ex = _token_expr(x, pos, tok)
            if ex is None:
                return None
            subs[name] = ex
        return sop.fn.expr.substitute(subs)
    return C.index_expr(sop, pos)


def token_selector_expr(sel: C.Selector) -> E.Expr | None:
    """The selector as a boolean expression of q, k and the integer tokens at q and k; None when a
    side depends on anything else (an aggregate, a value primitive)."""
    if isinstance(sel, C.Select):
        if sel.cmp in ("TRUE", "FALSE"):
            return z3sel.selector_expr(sel)
        ek, eq = _token_expr(sel.keys, z3sel.K, _TOK_K), _token_expr(sel.queries, z3sel.Q, _TOK_Q)
        if ek is None or eq is None:
            return None
        if sel.cmp in ("==", "!="):
            return ek.eq(eq) if sel.cmp == "==" else ek.ne(eq)
        return E.BinOp(sel.cmp, ek, eq)
    if isinstance(sel, (C.SelectAnd, C.SelectOr)):
        fa, fb = token_selector_expr(sel.a), token_selector_expr(sel.b)
        if fa is None or fb is None:
            return None
        return fa & fb if isinstance(sel, C.SelectAnd) else fa | fb
    if isinstance(sel, C.SelectNot):
        f = token_selector_expr(sel.a)
        return None if f is None else E.Not(f)
    return None


_SYMBOLIC: dict[str, Outcome] = {}  # all-sizes proofs attempted in this (child) process


def _cached_prove(goal: E.Expr, hyps: Sequence[E.Expr], minimum: dict[str, int], timeout: float) -> Outcome:
    """z3sel.prove, once per (goal, hypotheses, minimum) in this process: sizes render by name, so
    instances that differ only in size values share one all-sizes attempt."""
    key = "|".join(E.render(x) for x in (goal, *hyps)) + repr(sorted(minimum.items()))
    res = _SYMBOLIC.get(key) or z3sel.prove(goal, hyps, minimum=minimum, timeout=timeout)
    _SYMBOLIC[key] = res
    return res


BOUNDED_SIZE = 8  # bounded equivalence proofs: every size <= this (and the sizes of every instance built)


def _prove_per_size(
    goal: E.Expr, hyps: Sequence[E.Expr], minimum: dict[str, int], instances: Sequence[dict[str, int]], timeout: float
) -> tuple[bool, str]:
    """Z3 once per assignment of the sizes (each in minimum..BOUNDED_SIZE, plus each instance's own
    values): a BOUNDED proof, said so, for goals Z3 cannot decide with symbolic sizes."""
    import itertools

    sizes = sorted(z3sel.size_names(goal, *hyps))
    grids = [range(minimum.get(n, 1), BOUNDED_SIZE + 1) for n in sizes]
    combos = {tuple(c) for c in itertools.product(*grids)}
    combos |= {tuple(inst[n] for n in sizes) for inst in instances if all(n in inst for n in sizes)}
    if len(combos) > 4096:
        return False, f"bounded proof skipped ({len(combos)} size assignments)"
    deadline = time.perf_counter() + 3 * timeout
    for combo in sorted(combos):
        env = dict(zip(sizes, combo, strict=True))
        if not all(bool(h.substitute(env).evaluate({})) for h in hyps if not h.substitute(env).variables()):
            continue
        left = deadline - time.perf_counter()
        if left <= 0:
            return False, "bounded proof ran out of time"
        res = z3sel.prove(goal.substitute(env), [h.substitute(env) for h in hyps], timeout=min(timeout, left))
        if res.ok is not True:
            return False, f"at {env}: {res.detail[:120]}"
    extra = sorted({tuple(sorted(i.items())) for i in instances} - {()})
    inst = f" and at the instances' sizes {[dict(x) for x in extra]}" if extra else ""
    return True, (
        f"BOUNDED: holds for every size assignment with {', '.join(sizes)} <= {BOUNDED_SIZE}{inst} "
        f"({len(combos)} assignments, each proven by z3 for all tokens and positions)"
    )


def _scope(res: Outcome) -> str:
    m = re.search(r"holds for (.*)$", res.detail)
    return m.group(1) if m else res.detail


def _prove_symmetric(fn: C.Prim, op: str) -> tuple[bool, str]:
    import sympy as sp

    i, j = (int(x) for x in op[5:].split(","))
    xs = list(sp.symbols(f"x0:{fn.arity}", real=True))
    ys = list(xs)
    ys[i], ys[j] = ys[j], ys[i]
    f = fn.primitive.sympy
    diff = sp.simplify(f(*xs, *fn.params) - f(*ys, *fn.params))
    if diff == 0:
        return True, f"sympy: {fn.name} is symmetric in operands {i}, {j} (difference simplifies to 0)"
    return False, f"{fn.name}(x) - {fn.name}(swapped x) = {diff}"


# -- the pool ---------------------------------------------------------------------------------------
def _quiet_timeouts(hook_args: Any) -> None:
    """An alarm landing in a finalizer (e.g. Z3's ``__del__``) is ignored there and fires again."""
    if not isinstance(hook_args.exc_value, _Timeout):
        sys.__unraisablehook__(hook_args)


def _child(m: Mutant, obs: Sequence[Obligation], example: Callable[[], Any], timeout: float, conn: Connection) -> None:
    sys.unraisablehook = _quiet_timeouts
    try:
        r = run_mutant(m, obs, example, timeout)
        conn.send((r.killed, r.by, r.equivalent, r.proof, r.detail, r.applied, r.claim_only))
    except BaseException as exc:  # report, never hang the parent
        conn.send((False, None, False, None, f"worker error {type(exc).__name__}: {exc}", 0, False))
    conn.close()


@dataclass
class Job:
    """The mutants of one construction with what they need."""

    name: str
    example: Callable[[], Any]
    obligations: list[Obligation]
    mutants: list[Mutant]
    total: int  # before sampling
    error: str = ""  # the example did not build: no mutant can be derived


def sample(ms: Sequence[Mutant], k: int, rng: random.Random) -> list[Mutant]:
    """``k`` mutants, at least one per site while ``k`` allows (stratified, seeded); creation order kept."""
    by_site: dict[Site, list[int]] = {}
    for i, m in enumerate(ms):
        by_site.setdefault(m.site, []).append(i)
    sites = list(by_site)
    if len(sites) > k:
        sites = rng.sample(sites, k)
    keep = {rng.choice(by_site[s]) for s in sites}
    rest = [i for i in range(len(ms)) if i not in keep]
    keep |= set(rng.sample(rest, k - len(keep)))
    return [ms[i] for i in sorted(keep)]


def plan(
    prefix: str | None = None,
    max_mutants: int | None = None,
    seed: int = 0,
    include_deep: bool = False,
) -> list[Job]:
    """The constructions to mutate (those whose name matches ``prefix``), with their mutants."""
    cons = registry.constructions()
    p = (prefix or "").rstrip("*").rstrip("/")
    exact = prefix is not None and prefix.endswith("/") and p in cons  # "softmax/": that construction only
    names = [n for n in cons if not p or (n == p if exact else n.startswith(p) or p.startswith(n + "/"))]
    if prefix and not names:
        raise MutationError(f"no registered construction matches {prefix!r}; known: {', '.join(sorted(cons))}")
    jobs = []
    for n in names:
        if registry.is_part(n):  # mutated as the construction it is part of (its obligations count there)
            continue
        example = cons[n][1]
        try:
            ms = mutants_of(n, example)
        except Exception as exc:
            jobs.append(Job(n, example, [], [], 0, f"example does not build: {type(exc).__name__}: {exc}"))
            continue
        total = len(ms)
        if max_mutants and total > max_mutants:
            ms = sample(ms, max_mutants, random.Random(f"{seed}:{n}"))
        scope = p if p.startswith(n + "/") else f"{n}/"  # "transpose/exact" keeps only those obligations
        selected = registry.select(scope, include_deep=include_deep)
        if scope == f"{n}/":
            for part in registry.parts_of(n):
                selected = [*selected, *registry.select(f"{part}/", include_deep=include_deep)]
        obs = order_obligations(selected)
        jobs.append(Job(n, example, obs, ms, total))
    return jobs


def mutant_budget(job: Job, timeout: float) -> float:
    """Seconds one mutant of ``job`` may take in all (each obligation's timeout, plus the proofs)."""
    return (timeout + 1.0) * (len(job.obligations) + 1) + 5.0


def run_jobs(
    jobs: Sequence[Job],
    workers: int | None = None,
    timeout: float = 10.0,
    on_done: Callable[[MutantResult], None] | None = None,
    confirm: bool = True,
) -> list[MutantResult]:
    """Run every mutant in forked workers; then (``confirm``) check that each killer passes on the original."""
    workers = workers or os.cpu_count() or 1
    ctx = mp.get_context("fork")
    todo = [(job, m) for job in jobs for m in job.mutants]
    results: dict[int, MutantResult] = {}
    pending = list(enumerate(todo))
    running: dict[int, tuple[Any, Connection, float, float]] = {}
    while pending or running:
        while pending and len(running) < workers:
            idx, (job, m) = pending.pop(0)
            if not job.obligations:
                results[idx] = MutantResult(m, False, None, False, None, "no obligations registered")
                if on_done:
                    on_done(results[idx])
                continue
            parent, child = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_child, args=(m, job.obligations, job.example, timeout, child), daemon=True)
            proc.start()
            child.close()
            budget = mutant_budget(job, timeout)
            running[idx] = (proc, parent, time.perf_counter(), budget)
        done = []
        for idx, (proc, conn, t0, budget) in running.items():
            m = todo[idx][1]
            elapsed = time.perf_counter() - t0
            if conn.poll():
                try:
                    killed, by, eq, proof, detail, applied, claim = conn.recv()
                    r = MutantResult(m, killed, by, eq, proof, detail, elapsed, applied, claim)
                except EOFError:
                    r = MutantResult(m, False, None, False, None, f"worker died (exit {proc.exitcode})", elapsed)
                done.append((idx, r))
            elif not proc.is_alive():
                done.append((idx, MutantResult(m, False, None, False, None, f"worker died (exit {proc.exitcode})")))
            elif elapsed > budget:
                proc.kill()
                done.append((idx, MutantResult(m, False, None, False, None, f"worker over budget ({budget:.0f} s)")))
        for idx, r in done:
            proc, conn, _, _ = running.pop(idx)
            conn.close()
            proc.join(timeout=1)
            results[idx] = r
            if on_done:
                on_done(r)
        if not done:
            time.sleep(0.002)
    out = [results[i] for i in range(len(todo))]
    if confirm:
        confirm_killers(out, jobs, timeout, lambda obs, t: run_all(obs, jobs=workers, timeout=t))
    return out


def confirm_killers(
    results: list[MutantResult],
    jobs: Sequence[Job],
    timeout: float,
    run: Callable[[list[Obligation], float], list[Any]],
) -> None:
    """A kill counts only if the killing obligation holds on the unmutated construction.

    ``run(obligations, timeout)`` runs them (the local pool, or a Dask cluster) and returns results."""
    by_id = {o.id: o for job in jobs for o in job.obligations}
    killers = sorted({r.by for r in results if r.by is not None})
    if not killers:
        return
    base = run([by_id[k] for k in killers], max(3 * timeout, 30.0))
    bad = {b.id: b.status for b in base if b.status not in ("proved", "passed")}
    for r in results:
        if r.by in bad:
            r.detail = f"killer {r.by} is {bad[r.by]} on the original too; {r.detail}"
            r.killed, r.by = False, None


# -- summary and output -------------------------------------------------------------------------------
def summarize(jobs: Sequence[Job], results: Sequence[MutantResult]) -> list[dict[str, Any]]:
    """Per construction: mutants, killed, equivalent, survived, how they were killed."""
    out = []
    for job in jobs:
        rs = [r for r in results if r.mutant.construction == job.name]
        methods: dict[str, int] = {}
        for r in rs:
            if r.by:
                meth = r.by.split("/")[1]
                methods[meth] = methods.get(meth, 0) + 1
        out.append(
            {
                "construction": job.name,
                "mutants": len(rs),
                "sites_total": job.total,
                "killed": sum(r.killed for r in rs),
                "equivalent": sum(r.equivalent for r in rs),
                "claim_only": sum(r.claim_only for r in rs),
                "survived": sum(r.survived for r in rs),
                "by_method": methods,
                "obligations": len(job.obligations),
            }
        )
    return out


def run_cli(args: Any, campaign: Any = None) -> int:
    """``attnsim verify --mutants``: the table (or JSON); exit 1 when a non-equivalent mutant survives.

    ``campaign`` (:class:`attnsim.proofs.campaign.Campaign`): run the mutants through it (a Dask
    cluster, the result cache) instead of the local forked pool."""
    import json

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    err = Console(stderr=True)
    t0 = time.perf_counter()
    cap = getattr(args, "max_mutants", None)
    jobs = plan(args.only, DEFAULT_MAX_MUTANTS if cap is None else cap, include_deep=getattr(args, "deep", False))
    n = sum(len(j.mutants) for j in jobs)
    with Progress(
        TextColumn("mutants"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err, transient=True
    ) as prog:
        task = prog.add_task("mutants", total=n)
        if campaign is None:
            results = run_jobs(jobs, workers=args.jobs, timeout=args.timeout, on_done=lambda r: prog.advance(task))
        else:
            results = campaign.mutants(jobs, args.timeout, on_done=lambda r: prog.advance(task))
    total = time.perf_counter() - t0
    survivors = [r for r in results if r.survived]
    broken = [j for j in jobs if j.error]
    if args.json:
        print(json.dumps([r.as_dict() for r in results], indent=1))
    else:
        out = Console()
        table = Table(title="mutation testing: every mutant must be killed or proven equivalent")
        for col in ("construction", "killed / total", "equivalent", "survived", "killed by", "sampled"):
            table.add_column(col, overflow="fold")
        for s in summarize(jobs, results):
            ok = s["survived"] == 0
            table.add_row(
                s["construction"],
                f"[{'green' if ok else 'bold red'}]{s['killed']} / {s['mutants']}[/]",
                str(s["equivalent"]),
                f"[{'green' if ok else 'bold red'}]{s['survived']}[/]",
                ", ".join(f"{k} {v}" for k, v in sorted(s["by_method"].items(), key=lambda kv: -kv[1])),
                "" if s["mutants"] == s["sites_total"] else f"{s['mutants']} of {s['sites_total']} (seeded)",
            )
        out.print(table)
        for j in broken:
            out.print(f"[bold red]{j.name}: {j.error}[/]")
        rest = [r for r in results if not r.killed]
        if rest:
            t2 = Table(title="equivalent and surviving mutants")
            for col in ("construction", "mutant", "status", "proof / detail"):
                t2.add_column(col, overflow="fold")
            for r in rest:
                st = (
                    "[yellow]equivalent[/]"
                    if r.equivalent
                    else "[cyan]claim only[/]"
                    if r.claim_only
                    else "[bold red]SURVIVED[/]"
                )
                t2.add_row(r.mutant.construction, r.mutant.description, st, (r.proof or r.detail)[:300])
            out.print(t2)
        out.print(
            f"{sum(r.killed for r in results)} killed, {sum(r.equivalent for r in results)} equivalent, "
            f"{sum(r.claim_only for r in results)} claim-only (an intent changed, the program not: not counted "
            f"as killed), {len(survivors)} survived; {len(results)} mutants in {total:.1f} s"
        )
    err.print(f"total time {total:.1f} s")
    for j in broken:
        err.print(f"{j.name}: {j.error}")
    return 1 if survivors or broken else 0
