"""program == spec for every size: the all-sizes proof of a construction (issue "proofs that mean
what they say"), driving :class:`attnsim.symbolic.key_listing.IntentListing` (the executor, with each head's keys
listed through its selector's proven intent).

For a construction built over unbound sizes, with an independent specification: the domain is
not vacuous; the layout is injective, disjoint and in range; the output block has the spec's
shape; the program's value at a symbolic output entry (split by residue where ``cases`` asks, by
each declared scalar operand's comparison with its coordinate) equals the spec's value by the Sum
normal form (:mod:`attnsim.symbolic.sums`); declared scalar/binary operands are what the input
check enforces; every spec sum has length >= 0.  Anything not shown is unknown, after a search for
a counterexample (:mod:`attnsim.symbolic.counterexample`).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import itertools
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import sympy as sp

from attnsim.proofs import z3sel
from attnsim.proofs.construction import Construction
from attnsim.proofs.intents import prove_layout
from attnsim.proofs.obligation import NormalForm, Obligation, Outcome, Premise, PremiseCheck, Scope
from attnsim.proofs.solver_work import sharing_answers
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.symbolic.counterexample import constants_compared, with_counterexample
from attnsim.symbolic.execute import ExecutionFailed, Executor, sym
from attnsim.symbolic.if_then_else import Ite
from attnsim.symbolic.key_listing import IntentListing
from attnsim.symbolic.sums import normal_forms


@sharing_answers  # the residue cases and the counterexample search share decided Z3 answers
def prove_program_equals_spec(con: Construction, timeout: float = 10.0) -> Outcome:
    """For all sizes (>= their minimum, under the preconditions) and every output entry: program == spec.

    ``con.cases`` splits an output coordinate c of extent X by its residue mod m: c = m t + s for
    each s < m, t < X div m (the preconditions must make m divide X: then the cases cover c < X)."""
    if con.specification is None:
        return Outcome.bad(f"{con.name}: no independent specification")
    undeclared = _declarations_not_enforced(con)
    if undeclared:
        return Outcome.bad(undeclared)
    t0 = time.process_time()
    split = dict(con.cases)
    residues = [dict(zip(split, rs, strict=True)) for rs in itertools.product(*(range(m) for m in split.values()))]
    shown = []
    proven = Outcome(True)  # the typed facts of every case, joined
    for case in residues:
        left = timeout - (time.process_time() - t0)
        out, special = _prove_case(con, case, split, max(left, 0.05))
        if out.ok is not True:
            where = ", ".join(f"{c} = {split[c]} t_{c} + {s}" for c, s in case.items())
            out = out.retold(f"case {where}: {out.detail}" if case else out.detail)
            if out.ok is False and out.counterexample is not None:
                return out
            return with_counterexample(con, out, special=special)
        proven = proven.joined(out)
        shown.append(out.detail)
    return proven.retold(" || ".join(shown) if len(shown) > 1 else shown[0])


def _prove_case(  # noqa: C901, PLR0912
    con: Construction, case: dict[str, int], split: dict[str, int], timeout: float
) -> tuple[Outcome, set[int]]:
    """One residue case; the outcome and the constants to try when searching a counterexample."""
    out = con.layout[con.output]
    extents = dict(zip(("o_h", "o_i", "o_j"), (out.stack, out.rows, out.cols), strict=True))
    renamed: dict[sp.Symbol, sp.Expr] = {}
    quotient: dict[str, C.Size] = {}
    for name, m in split.items():  # c = m t + s, the extent X = m X' (X' a fresh size, X' >= 1)
        ext = extents[name]
        if not (isinstance(ext, C.Size) and ext.value is None):
            return Outcome.bad(f"cannot split {name}: its extent {E.render(ext)} is not one unbound size"), set()
        if not any(E.render(p) == E.render((ext % m).eq(0)) for p in con.preconditions):
            return Outcome.bad(f"splitting {name} by {m} needs the precondition ({ext.name} mod {m}) == 0"), set()
        taken = con.free_sizes | set(con.sizes)
        fresh_name = f"{ext.name}_over{m}"
        while fresh_name in taken:  # fresh against the construction's own sizes
            fresh_name += "_"
        fresh = quotient[name] = C.Size(fresh_name)
        con = con.reparametrize(**{ext.name: fresh * m})
        renamed[sp.Symbol(ext.name, integer=True)] = m * sym(fresh)
    out = con.layout[con.output]
    ex = IntentListing(con, timeout)
    coords: list[E.Expr] = []
    for name, extent in (("o_h", out.stack), ("o_i", out.rows), ("o_j", out.cols)):
        if name in split:
            t = E.Var(f"t!{name}")
            ex.coords[t.name] = quotient[name]
            coords.append(t * split[name] + case[name])
        elif isinstance(extent, E.Const) and extent.value == 1:  # one value: the coordinate is 0
            coords.append(E.Const(0))
        else:
            coords.append(E.Var(internal(name)))
            ex.coords[internal(name)] = extent
    h, i, j = coords
    try:
        pc = _premises(ex)
        refused = pc.refusal()
        if refused is not None:
            return refused, set()

        lay = prove_layout(con.layout, ex.left(), minimum=ex.minimum)  # operands read where they are encoded
        if lay.ok is not True:
            return lay.retold(f"layout: {lay.detail}"), set()
        ex.steps.append("the layout is injective, disjoint and in range")
        got = ex.value(con.program, out.position(i, j, h))
    except ExecutionFailed as exc:
        return exc.outcome, set()
    to_sym = lambda e: sym(e) if isinstance(e, E.Expr) else sp.Integer(e)
    want = con.specification.symbolic(sym(h), sym(i), sym(j), to_sym).xreplace(renamed)
    spec_shape = con.specification.spec.shape({k: to_sym(v) for k, v in con.specification.sizes.items()})
    for have, need in zip((out.stack, out.rows, out.cols), spec_shape, strict=True):
        if sp.expand(sym(have) - sp.sympify(need).xreplace(renamed)) != 0:
            return Outcome.bad(
                f"the output block is {E.render(out.stack)} x {E.render(out.rows)} x {E.render(out.cols)} but the "
                f"spec's shape is {tuple(spec_shape)}"
            ), set()
    same, shown, diff, forms = _equal_in_every_scalar_case(con, got, want, ex)
    if same:
        lem = ", ".join(f"rasp/z3-parametric/{n}" for n in sorted(ex.lemmas)) or "none"
        domain = ", ".join(f"{n} >= {v}" for n, v in sorted(ex.minimum.items()) if v != 1)
        pre = ", ".join(E.render(p) for p in ex.premises)
        scope = "all sizes" + (f" with {domain}" if domain else "") + (f" under {pre}" if pre else "")
        return Outcome(  # the formula proven, not only the statement's text: the spec's entry as executed
            True,
            f"program == spec ({con.specification.spec.statement}) for {scope}: the spec's entry "
            f"{sp.sstr(want)} and the program's value {shown}; {len(ex.steps)} Z3 step(s); lemmas: {lem}",
            pc,
            scope=Scope(tuple(sorted(con.free_sizes))),
            normal_forms=forms,
            stated=tuple(Premise(E.render(p)) for p in ex.premises),
            lemmas=tuple(sorted(ex.lemmas)),
        ), set()
    differ = Outcome(
        None, f"normal forms differ: program - spec = {shown}", pc, normal_forms=forms, cause="not shown equal"
    )
    return differ, constants_compared(diff)


def _equal_in_every_scalar_case(
    con: Construction, got: Any, want: Any, ex: Executor
) -> tuple[bool, str, Any, tuple[NormalForm, ...]]:
    """Decide got == want, splitting on each declared scalar operand (see ``Construction.scalars``).

    Sizes become positive symbols and coordinates non-negative ones (their domain).  A scalar s with
    lo <= s <= X (X a size) compared with coordinate c < X is split into two cases that cover every
    admissible (s, c, X): s = c + 1 + u, X = s + v (c < s); or s = lo + u, c = s + w, X = c + 1 + v
    (c >= s); u, v, w >= 0.  SymPy's assumptions then decide each comparison, and the normal form's
    truncation rule may use X - s >= 0.  Also the normal forms of both sides, per case (up to the first
    case that differs)."""
    base: dict[Any, Any] = ex.signs.size_symbols()
    for name in ex.coords:
        base[sp.Symbol(name, integer=True)] = sp.Symbol(name, integer=True, nonnegative=True)
    got, want = _binary(con, got.xreplace(base)), _binary(con, want.xreplace(base))
    cases: list[tuple[str, dict[Any, Any]]] = [("", {})]
    for name, lo, upper, coord in con.scalars:
        s = sp.IndexedBase(name)[0, 0, 0]
        x = base.get(sp.Symbol(upper.name, integer=True)) if isinstance(upper, C.Size) else None
        c = base.get(sp.Symbol(internal(coord), integer=True))
        if x is None or c is None:
            return False, f"scalar {name}: its bound {upper} or coordinate {coord} is not a symbol here", sp.nan, ()
        u, v, w = (sp.Symbol(f"{name}!{t}", integer=True, nonnegative=True) for t in "uvw")
        below = {s: c + 1 + u, x: c + 1 + u + v}
        above = {s: lo + u, c: lo + u + w, x: lo + u + w + 1 + v}
        cases = [
            (f"{tag}{'; ' if tag else ''}{what}", {**prev, **new})
            for tag, prev in cases
            for what, new in ((f"{coord} < {name}", below), (f"{coord} >= {name}", above))
        ]
    shown = []
    forms: list[NormalForm] = []
    for tag, subst in cases:  # one case, with no substitution, when no scalar is declared
        where = f"case {tag}: " if tag else ""
        g, w = got.xreplace(subst), want.xreplace(subst)
        bad = _possibly_negative_sum(w)
        if bad is not None:  # SymPy's Sum over hi < lo - 1 is not empty (Karr): the spec means range()
            return False, f"{where}the spec's sum {sp.sstr(bad)} is not shown to have length >= 0", sp.nan, (*forms,)
        ng, nw, diff = normal_forms(g, w)
        forms.append(NormalForm(sp.sstr(w), sp.sstr(g), sp.sstr(nw), sp.sstr(ng), tag))
        if diff != 0:
            return False, f"{where}{sp.sstr(diff)}", diff, (*forms,)
        shown.append(f"[{tag}] both normalize to {sp.sstr(ng)}" if tag else f"both normalize to {sp.sstr(ng)}")
    return True, " ".join(shown), 0, (*forms,)


def _declarations_not_enforced(con: Construction) -> str:  # noqa: C901
    """Non-empty when a declared scalar or binary operand is not what the declaration says: a scalar
    must be a 1 x 1 block, and the input check must refuse a value outside the declared range (tried
    at one small instance).  The proof takes the declarations as premises."""
    if not (con.scalars or con.binary):
        return ""
    for name, _, _, _ in con.scalars:
        blk = con.layout[name]
        if not all(isinstance(x, E.Const) and x.value == 1 for x in (blk.stack, blk.rows, blk.cols)):
            return f"scalar operand {name} is not a 1 x 1 block"
    inst = None
    for v in (2, 3, 4):
        try:
            inst = con.bind(**dict.fromkeys(con.free_sizes, v))
            break
        except ValueError:
            continue
    if inst is None:
        return "declarations not checked: no small instance binds"
    scalar = {n: (lo, int(E.lift(up).evaluate(inst.sizes))) for n, lo, up, _ in con.scalars}
    fill = {n: scalar[n][0] if n in scalar else 0 for n in inst.inputs}

    def refused(name: str, bad: int) -> bool:
        ops = [np.full(inst.layout[n].shape, bad if n == name else fill[n], dtype=object) for n in inst.inputs]
        try:
            inst.encode(*ops, backend="exact")
        except ValueError:
            return True
        return False

    for n, (lo, hi) in scalar.items():
        if not (refused(n, lo - 1) and refused(n, hi + 1)):
            return f"scalar operand {n} is declared in [{lo}, upper] but the input check does not enforce it"
    for n in con.binary:
        if not refused(n, 2):
            return f"operand {n} is declared binary but the input check accepts 2"
    return ""


def _possibly_negative_sum(e: Any) -> Any:
    """A Sum in ``e`` whose length hi - lo + 1 is not known >= 0 from the symbols' signs, else None."""
    for s in e.atoms(sp.Sum):
        for _, lo, hi in s.limits:
            if (hi - lo + 1).is_nonnegative is not True:
                return s
    return None


def _binary(con: Construction, e: Any) -> Any:
    """``Ite(x == 1, 1, 0)`` is ``x`` for an entry x of an operand declared binary (0 or 1: what its
    input check enforces)."""
    names = set(con.binary)

    def flag_of_binary(t: Any) -> bool:
        if not (isinstance(t, Ite) and t.args[1] == 1 and t.args[2] == 0 and isinstance(t.args[0], sp.Eq)):
            return False
        lhs, rhs = t.args[0].args
        entry = lhs if rhs == 1 else rhs if lhs == 1 else None
        return isinstance(entry, sp.Indexed) and str(entry.base) in names

    def entry_of(t: Any) -> Any:
        lhs, rhs = t.args[0].args
        return lhs if rhs == 1 else rhs

    return e.replace(flag_of_binary, entry_of) if names else e


def internal(coord: str) -> str:
    """The executor's name of a declared output coordinate (o_h, o_i, o_j): with "!", which no size
    name may contain, so a size can never be captured as a coordinate or a bound key variable."""
    return coord.replace("_", "!", 1)


def _premises(ex: Executor) -> PremiseCheck:
    """The premises, size minimums and output region, shown satisfiable by a model (sat), empty
    (unsat: the proof fails "vacuous") or undecided (unknown: the proof is unknown)."""
    extent = [E.Const(0) < ext for ext in ex.coords.values()]
    return z3sel.check_premises([*ex.premises, *extent], minimum=ex.minimum, timeout=ex.net())


# -- the obligation -----------------------------------------------------------------------------
def spec_obligation(
    cid: str,
    paper_ref: str,
    makes: Sequence[Callable[[], Any]],
    statement: str,
    detail: str = "lemma",
) -> Obligation:
    """``all-sizes`` by symbolic execution: each symbolic build (unbound sizes) equals its
    independent specification at a symbolic entry, for all sizes (:mod:`attnsim.symbolic.execute`)."""

    def check(timeout: float) -> Outcome:
        t0 = time.process_time()
        parts = []
        proven = Outcome(True)  # the typed facts of every build's proof, joined
        for make in makes:
            con = make()
            if not con.free_sizes:
                return Outcome.bad(f"{con.name}: built with no unbound size, so no all-sizes claim")
            out = prove_program_equals_spec(con, timeout=max(0.05, timeout - (time.process_time() - t0)))
            if out.ok is not True:
                return out
            proven = proven.joined(out)
            parts.append(f"[{', '.join(sorted(con.free_sizes))}] {out.detail}")
        return proven.retold(" | ".join(parts))

    return Obligation(f"{cid}/all-sizes/{detail}", cid, paper_ref, "all-sizes", check, statement=statement)


# -- one build path -------------------------------------------------------------------------------
BUILD_SIZES = (1, 2, 3, 71, 100)  # small sizes, and past every size constant a construction compares with


def build_instances(free: Sequence[str]) -> list[dict[str, int]]:
    """Instances for the build check: every size in 1..3 together (at most 3 sizes: 27 calls), each
    size alone at 71 and 100 with the others at 2, and all at 71."""
    names = sorted(free)
    first = names[:3]
    rest = {n: 2 for n in names}
    small = [{**rest, **dict(zip(first, v, strict=True))} for v in itertools.product((1, 2, 3), repeat=len(first))]
    large = [{**{n: 2 for n in names}, name: v} for name in names for v in BUILD_SIZES[3:]]
    return [*small, *large, {n: BUILD_SIZES[3] for n in names}]


def _built(con: Construction) -> str:
    """What one build is, compared between the integer call and the bound symbolic build."""
    blocks = ";".join(
        f"{b.name}@{_num(b.offset)}:{_num(b.stack)}x{_num(b.rows)}x{_num(b.cols)}/{b.channel}"
        for b in con.layout.blocks
    )
    intents = ",".join(it.selector.fingerprint for it in con.intents)
    scalars = ",".join(f"{n}:{lo}..{_num(up)}@{c}" for n, lo, up, c in con.scalars)
    spec = getattr(con.specification, "name", None)
    return (
        f"program {con.program.fingerprint}; layout {blocks} length {_num(con.layout.length)}; inputs {con.inputs}; "
        f"out {con.output} {con.out_shape}; intents {intents}; domain {scalars} binary {con.binary}; "
        f"exact {con.exact}; spec {spec}; check {_qualname(con.check_inputs)}; reference {_qualname(con.reference_fn)}"
    )


def _qualname(fn: Any) -> str:
    """A callable by the code it runs (a partial by its function and arguments), for comparison."""
    if fn is None:
        return "none"
    if isinstance(fn, functools.partial):
        return f"{_qualname(fn.func)}{fn.args}{sorted(fn.keywords.items())}"
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__name__)}"


def _num(e: Any) -> str:
    return C.shape_text(e) if isinstance(e, E.Expr) else str(e)


#: The packages users import factories from (``from attnsim import lemmas; lemmas.softmax(...)``):
#: facades that re-export each construction's factory.  Named, not imported: they sit above this floor.
FACADES = ("attnsim.lemmas", "attnsim.applications")


def public_factories(module: str, name: str) -> list[tuple[str, Callable[..., Any]]]:
    """The factory ``name`` of ``module`` by each name a user may call it: a facade's re-export
    (``attnsim.lemmas.softmax``, what users call), found as the facade attribute of that name
    made from the defining one (same ``__module__``, what a re-export or a ``functools.wraps``
    keeps), and the defining module's attribute (``attnsim.constructions.softmax.program.softmax``)
    when that is another object."""
    defining = getattr(importlib.import_module(module), name)
    out: list[tuple[str, Callable[..., Any]]] = []
    for facade in FACADES:
        public = getattr(importlib.import_module(facade), name, None)
        if public is not None and not inspect.ismodule(public) and getattr(public, "__module__", None) == module:
            out.append((f"{facade}.{name}", public))
    if not any(f is defining for _, f in out):
        out.append((f"{module}.{name}", defining))
    return out


def build_obligation(cid: str, paper_ref: str, makes: Sequence[Callable[[], Any]], detail: str = "lemma") -> Obligation:
    """``exact``: the integer call of a construction's public factory is the symbolic build the
    all-sizes proof reads, bound, at every listed instance (:func:`build_instances`): the program,
    its layout, its output and its intents' selectors.  A factory that gave integer calls a path of
    their own (a branch on a size's value, a wrapper) fails here, naming the instance."""

    def check(timeout: float) -> Outcome:
        n = built = 0
        names: list[str] = []
        for make in makes:
            sym = make()
            if sym.built_by is None:
                return Outcome.bad(f"{sym.name}: built without @sized, so an integer call may take a path of its own")
            module, name, args = sym.built_by
            params = sorted(a.name for _, a in args if isinstance(a, C.Size) and a.value is None)
            for (called, factory), values in itertools.product(public_factories(module, name), build_instances(params)):
                # sizes that are not parameters (an offset) stay unbound
                call = {p: values.get(a.name, a) if isinstance(a, C.Size) and a.value is None else a for p, a in args}
                shown = f"{called}({', '.join(f'{p}={v}' for p, v in call.items() if v is not None)})"
                names += [called] if called not in names else []
                direct = bound = None
                try:
                    direct = _built(factory(**call))
                    built += 1
                except ValueError as exc:
                    direct = f"refused: {type(exc).__name__}"
                try:
                    bound = _built(sym.bind(**values))
                except ValueError as exc:
                    bound = f"refused: {type(exc).__name__}"
                if direct != bound:
                    why = _first_difference(direct, bound)
                    return Outcome.bad(f"{shown}: the integer call is not the bound symbolic build ({why})")
                n += 1
        if built == 0:
            return Outcome.bad("every listed instance was refused: no integer call was built, so nothing was compared")
        return Outcome.good(
            f"{n} integer calls of {', '.join(names)} ({built} built, the rest refused alike) equal the bound "
            "symbolic build (program, layout, inputs, output, intents, domain, spec, input check, reference)"
        )

    return Obligation(
        f"{cid}/exact/one-build-{detail}",
        cid,
        paper_ref,
        "exact",
        check,
        statement="at every listed instance (sizes 1..3 together; 71 and 100 alone), the integer call of the public "
        "factory equals the symbolic build of the all-sizes proof, bound (program, layout, output, intents)",
    )


def _first_difference(a: str, b: str) -> str:
    for x, y in zip(a.split("; "), b.split("; "), strict=False):
        if x != y:
            return f"integer call: {x[:160]} / bound: {y[:160]}"
    return f"integer call: {a[:160]} / bound: {b[:160]}"


def all_sizes_obligations(
    cid: str, paper_ref: str, makes: Sequence[Callable[[], Any]], statement: str, detail: str = "lemma"
) -> tuple[Obligation, Obligation]:
    """The all-sizes proof (:func:`spec_obligation`) and the check that integer calls are its build, bound."""
    return (
        spec_obligation(cid, paper_ref, makes, statement, detail),
        build_obligation(cid, paper_ref, makes, detail),
    )


__all__ = [
    "all_sizes_obligations",
    "build_instances",
    "build_obligation",
    "internal",
    "prove_program_equals_spec",
    "public_factories",
    "spec_obligation",
]
