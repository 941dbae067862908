"""The stage proof: U's node equals its statement at every entry of a region, in every option case.

For every capacity and size: U (:mod:`attnsim.universal.universal`) is built over unbound capacity
sizes N, D, H, K, F; the simulated layer has true sizes n <= N, d <= D, hh <= H, k <= K, f <= F.  A
stage's value is computed by symbolic execution of U's own program
(:class:`~attnsim.universal.layerproof.executor.LayerExecutor`) at a symbolic entry of the grid where U holds
it, one executor per option case (:class:`CaseRun`), and compared with the statement written
from the specification's own intermediate quantities (:func:`attnsim.universal.spec.encoder_layer_parts`)
by the Sum normal form (:mod:`attnsim.symbolic.sums`; ``simplify`` is never called); flags are
compared in one form (:func:`attnsim.universal.layerproof.flags.merge_flags`).  A statement over earlier
stages' cuts is checked to be the spec's (:mod:`attnsim.universal.layerproof.cut`); a failing case is searched
for a counterexample (:mod:`attnsim.universal.layerproof.refutation`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from attnsim.proofs.obligation import Outcome, Premise
from attnsim.proofs.solver_work import sharing_answers
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.layout import Layout
from attnsim.symbolic.alpha_equivalence import alpha_equal
from attnsim.symbolic.execute import ExecutionFailed, sym
from attnsim.symbolic.sums import normal_forms
from attnsim.universal.layerproof.case_sharing import SharedValue
from attnsim.universal.layerproof.cut import Cut, statement_over_cuts
from attnsim.universal.layerproof.divisors import RowWitness
from attnsim.universal.layerproof.encoder_spec import fix
from attnsim.universal.layerproof.executor import LayerExecutor
from attnsim.universal.layerproof.flags import flag_form, merge_flags
from attnsim.universal.layerproof.frame import _Program
from attnsim.universal.layerproof.refutation import past_divisors, refuted
from attnsim.universal.record import CAPACITY, TRUE


def setup(u: Any) -> tuple[_Program, dict[str, Any]]:
    im = u.map
    lay = Layout.of(*(g.block for g in im.grids), *(g.block for g in u.stage_grids), length=u._positions_expr(1))
    con = _Program(u.program, lay, [it for _, it in u.intents])
    return con, {t: sym(getattr(u, CAPACITY[t])) for t in TRUE}


def node_of(u: Any, label: str) -> C.SOp:
    """The node of U's program labelled ``label`` (the stage is checked on U's own graph)."""
    found = [n for n in C.topological([u.program]) if n.label == label]
    if len(found) != 1:
        raise KeyError(f"{label}: {len(found)} node(s) in U's program")
    node = found[0]
    assert isinstance(node, C.SOp)
    return node


@dataclass
class CaseRun:
    """One proof run over option cases at one entry: an executor per case (:meth:`executor`), each
    given the CPU seconds left of ``timeout`` (at least 0.5 s), reading tokens through U's input map's
    sources and sharing the run's selector-intent proofs and Z3 answers."""

    u: Any
    con: _Program
    caps: dict[str, Any]
    timeout: float
    coords: dict[str, E.Expr]
    below: dict[str, str]
    cuts: dict[str, Cut]
    step_cap: float
    witnesses: tuple[RowWitness, ...] = ()
    above: dict[str, str] = field(default_factory=dict)
    # selectors proven their intents, shared by the cases
    intent_proofs: dict[tuple[int, int], Outcome] = field(default_factory=dict)
    proofs: dict[tuple[Any, ...], Outcome] = field(default_factory=dict)  # Z3 answers, shared by the cases
    t0: float = field(default_factory=time.process_time)
    # node values that read no option, shared by the cases (see case_sharing)
    shared: dict[tuple[int, str], SharedValue] = field(default_factory=dict)

    def executor(self, case: dict[str, int]) -> tuple[LayerExecutor, str]:
        """The executor of the option case ``case`` at the run's entry, and the case's label."""
        ex = LayerExecutor(
            self.con,
            max(0.5, self.timeout - (time.process_time() - self.t0)),
            sources=self.u.map.sources(),
            options=case,
            capacity=self.caps,
            below=self.below,
            above=self.above,
            cuts=self.cuts,
            step_cap=self.step_cap,
            intent_proofs=self.intent_proofs,
            witnesses=self.witnesses,
            proofs=self.proofs,
            shared=self.shared,
        )
        ex.coords.update(self.coords)
        what = ", ".join(f"{k} = {v}" for k, v in case.items()) or "every option a symbol"
        return ex, what


@dataclass(frozen=True)
class StageProofOptions:
    """How :func:`prove_stage` compares U's value with the statement; the defaults compare them as
    they are, by the normal form.

    ``flags``: U's value is compared in its 0/1-flag form
    (:func:`~attnsim.universal.layerproof.flags.flag_form`); ``spec_flags``: the statement too, where
    the flagged branch is shown finite
    (:meth:`~attnsim.universal.layerproof.divisors.Positivity.as_flags_where_finite`).
    ``past_divisors_search``: when a divisor is not shown > 0, U's value is executed again past it
    and compared where the divisors are > 0 (:func:`past_divisors`; a counterexample or unknown:
    it costs a second execution of the rest of the case).
    ``step_cap``: the seconds one Z3 step may take.  ``witnesses``: premises of the domain the proof
    may use (:class:`RowWitness`), stated in the Outcome."""

    flags: bool = False
    spec_flags: bool = False
    past_divisors_search: bool = False
    step_cap: float = 20.0
    witnesses: tuple[RowWitness, ...] = ()


@sharing_answers  # the option cases ask many of the same queries
def prove_stage(  # noqa: C901
    u: Any,
    goal: Cut,
    cases: list[dict[str, int]],
    timeout: float,
    *,
    cuts: Mapping[str, Cut] | None = None,
    statement: Callable[[dict[str, Any]], Any] | None = None,
    spec_over: Mapping[str, str] | None = None,
    options: StageProofOptions = StageProofOptions(),
) -> Outcome:
    """U's node ``goal.label`` at a symbolic position of ``goal.grid`` with coordinates in the
    goal's region equals its statement, in every option case, by the normal form.

    ``cuts`` are earlier stages' proven statements (read as opaque functions, :class:`Cut`);
    ``statement`` (default ``goal.spec``) is the goal written in those opaque functions, and is
    then checked to be ``goal.spec`` once every cut is unfolded (so a stage cannot state its
    claim in a form other than the spec's).
    ``spec_over`` (spec intermediate -> a cut's opaque name, e.g. ``{"y1": "Y1"}``): the statement
    is the spec's own ``goal.part`` written over those cuts (:func:`statement_over_cuts`, refused
    unless every opaque function in it is a proven cut stating that intermediate), compared at that
    level: the whole spec is not built.  A cut proven on the padding rows (``Cut.padded``) is read
    there as its proven padding value; the cases where a variance read one are named in the Outcome.
    ``options``: how the values are compared (:class:`StageProofOptions`)."""
    flags, spec_flags = options.flags, options.spec_flags
    past_divisors_search, step_cap, witnesses = options.past_divisors_search, options.step_cap, options.witnesses
    cut_map = {c.label: c for c in (cuts or {}).values()}
    if spec_over is not None:
        if statement is not None:
            raise ValueError("prove_stage: give statement or spec_over, not both")
        statement, why = statement_over_cuts(goal, spec_over, cut_map)
        if statement is None:
            return Outcome.unknown(f"{goal.stage}: {why}")
    con, caps = setup(u)
    node = node_of(u, goal.label)
    grid = goal.grid
    vs = {a: E.Var(f"{a}!") for a in grid.axes}
    coords = {vs[a].name: grid.dim(a) for a in grid.axes}
    below = {vs[a].name: t for a, t in goal.below}
    cs = {a: sym(v) for a, v in vs.items()}
    pos = grid.position(*(vs[a] for a in grid.axes))
    run = CaseRun(u, con, caps, timeout, coords, below, cut_map, step_cap, witnesses)
    steps = 0
    done = []
    padded: list[str] = []  # the cases where a variance read a cut's proven padding values
    for case in cases:
        ex, what = run.executor(case)
        try:
            got = ex.value(node, pos)
        except ExecutionFailed as exc:
            failed = exc.outcome.retold(f"{goal.stage} ({what}): {exc.outcome.detail}")
            if not past_divisors_search or exc.outcome.ok is not None or exc.outcome.cause != "divisor not shown > 0":
                return failed
            # a divisor not shown > 0: search for a counterexample where U's divisors are > 0
            found = past_divisors(ex, node, pos, goal, cs, case, statement, witnesses, what)
            return found if found.ok is False else failed
        want = fix(goal.statement(cs) if statement is None else statement(cs), case)
        mine = flag_form(got) if flags else got
        theirs = ex.as_flags_where_finite(want) if spec_flags else want
        theirs = merge_flags(theirs) if flags else theirs
        diff = normal_forms(mine, theirs)[2]
        if diff != 0:  # the difference is what is shown (nothing is printed when they agree)
            shown_nf = sp.sstr(diff)
            fixed = {k: v for w in witnesses for k, v in w.sample}
            return refuted(f"{goal.stage} ({what}): {goal.label} at {grid.name}", got, want, shown_nf, fixed)
        if statement is not None and spec_over is None:
            differs = _not_the_specs(want, goal.statement(cs), cut_map, case)
            if differs is not None:
                return Outcome.bad(f"{goal.stage} ({what}): the stage's statement is not the spec's: {differs}")
        steps += len(ex.steps)
        variances = sum(st.startswith("variance") for st in ex.steps)
        done.append(what + (f" (a variance shown a mean of squares {variances} time(s))" if variances else ""))
        if ex.padding_used:
            padded.append(what)
    return _proven(goal, done, steps, cut_map, witnesses, padded, spec_over)


def _not_the_specs(want: Any, spec: Any, cut_map: Mapping[str, Cut], case: dict[str, int]) -> str | None:
    """None when the statement ``want`` with every cut unfolded is the spec in the case; else the
    normal form shown (its first 300 characters)."""
    unfolded = want
    for c in cut_map.values():
        unfolded = c.unfold(unfolded)
    lhs, rhs = fix(unfolded, case), fix(spec, case)
    same = lhs == rhs  # structurally the same expression (the usual case): no normal form needed
    if not same:
        same = alpha_equal(lhs, rhs)  # the same up to the names of bound variables
    if same:
        return None
    diff = normal_forms(lhs, rhs)[2]
    return None if diff == 0 else sp.sstr(diff)[:300]


def _proven(
    goal: Cut,
    done: list[str],
    steps: int,
    cut_map: Mapping[str, Cut],
    witnesses: tuple[RowWitness, ...],
    padded: list[str],
    spec_over: Mapping[str, str] | None,
) -> Outcome:
    """The proven stage's Outcome: the claim, its cases and steps, and every premise it used."""
    grid = goal.grid
    region = ", ".join(f"{a} < {t}" for a, t in goal.below)
    return Outcome(
        True,
        f"for all capacities N, D, H, K, F and true sizes n <= N, d <= D, hh <= H, k <= K, f <= F (eps > 0): "
        f"at every entry ({', '.join(grid.axes)}) of {grid.name} with {region or 'any coordinates'}, U's "
        f"{goal.label} == its statement; cases {'; '.join(done)}; {steps} Z3/normal-form step(s)"
        + (f"; premises: the proven stages {', '.join(sorted({c.stage for c in cut_map.values()}))}" if cut_map else "")
        + "".join(f"; premise: {w.text}" for w in witnesses)
        + (
            f"; padding rows (cases {'; '.join(padded)}): read as the proven padding values "
            f"{', '.join(sorted({c.padded for c in cut_map.values() if c.padded}))}"
            if padded
            else ""
        )
        + (
            f"; stated over the cuts {', '.join(f'{v} = {k}' for k, v in spec_over.items())} (the spec's own "
            f"{goal.part} with those intermediates given)"
            if spec_over
            else ""
        ),
        stated=tuple(Premise(w.text) for w in witnesses),
    )


__all__ = ["CaseRun", "StageProofOptions", "node_of", "prove_stage", "setup"]
