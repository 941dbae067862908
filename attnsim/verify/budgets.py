"""Budgets: Z3 work per query (deciding), and per-obligation time as the outer safety net.

**Solver work decides**.  Every Z3 query of the proof kit runs in a fresh context with
an ``rlimit`` (:mod:`attnsim.proofs.solver_work`), so the same commit gives the same answers on an
idle and on a loaded machine.  The limits were set from the default run measured on 2026-12-03
(1,120 obligations, 0 unknown, ``attnsim verify --json``, Z3 4.15 / z3-solver 5.4.1, load
average ~14) and still cover the run of 2026-12-05 (1,227 obligations, 0 unknown, idle):

===============================  ============  ===================================================
query                            rlimit units  measured use (decided queries)
===============================  ============  ===================================================
one plain query (z3sel, z3prog)  60 M          the largest decided query of the run: 3.5 M
a premise (vacuity) check        5 M           (within the same 3.5 M maximum)
decoding prover, seeded restarts 4 M, doubled  total 120 M per query; the largest: 3.5 M (U's
                                               shallow eps/ffn/d/scale gathers, first seed)
===============================  ============  ===================================================

Per run: 143 M units in all on 2026-12-03, the most for one obligation 19.2 M
(``linformer/all-sizes/lemma``, 302 queries); on 2026-12-05 222.4 M in all (Theorem 6's stage
goals now in the run; 652.7 M before the linear abstraction's monomials), the largest decided
query 3.48 M (U's shallow gathers), the most 18.9 M (``linformer/all-sizes/lemma``, 281 queries);
later that day 93.9 M in all (premises shown by a witness found by evaluation, a claim first tried
without its assumptions in 200 k units, the lemmas' key listings through their intents), the
largest decided query 3.29 M and the most for one obligation 8.56 M (both
``simulator-frame/shallow/all-sizes/frame``).
``attnsim verify`` prints the units per obligation, ``--json`` carries them (``units``,
``queries``, ``exhausted``: queries stopped by their rlimit, ``largest``).

**Time is the safety net only.**  The seconds below are what ``--timeout`` replaces; the runner
counts them in the worker's CPU seconds (``/proc``), so a loaded machine does not stop a check
that an idle one finishes, and in-process loops (decoding cases, the symbolic executor) count CPU
seconds too.  SymPy work is counted (:mod:`attnsim.symbolic.sympy_work`): terms per expansion of
the Sum normal form, values one executor computes, nodes of an expression handed to ``cancel``;
past a budget the obligation is unknown, "over its node budget", on any machine.  SymPy's own work
within those budgets is limited by these CPU seconds (a net a load does not move, unlike wall time).

One timeout for everything either starves the slow deep obligations (the whole-U SymPy ones
take 9-24 s on this project's 2-core machine, so a flat 10 s left them *unknown*) or lets a
runaway check hang a normal run.  The defaults below are the measured times times a margin:

==========================  =======  =======================================================
obligations                 budget   measured (2-core machine, one worker, 2026-12)
==========================  =======  =======================================================
``all-sizes``               60 s     program == spec: Linformer 5.2 s, linear attention 1.8 s, the others < 1 s
                                     (idle); a loaded 2-core machine took Linformer past 10 s
non-deep ``sympy``          30 s     whole-U SymPy, ReLU FFN (rational weights): 4.2 s idle, > 10 s loaded
every other non-deep one    10 s     718 in 34.4 s with 2 workers; none above 5 s
deep ``sympy``              120 s    whole-U SymPy: 0.4-1.0 s, FFN post/ReLU 13.3 s, pre/GELU 15.6 s;
                                     tanh-GELU (rational weights) 80 s on a loaded 2-core machine;
                                     det/inverse n=5 <= 1.9 s
deep ``z3-bounded``         30 s     U's stage selectors for capacities <= 3: 1.2-2.4 s each
deep ``exact``/``numeric``  30 s     det/inverse at n = 16: <= 4.4 s; compile exhaustive <= 0.6 s
deep ``all-sizes``          900 s    the deep all-sizes proofs (U's layer, frame and step by our prover
                                     are a second route, ``deep_where``: their non-deep budgets)
``kernel`` (deep or not)    120 s    the worker's own CPU: statements, the gate's parse (coqc and coqchk
                                     run on COQ_BUDGET); U's stages are deep, Theorem 6 builds them all
own ``budget``              300 s    Theorem 6 in Coq (``simulator/kernel/UniversalTheorem6``): the
                                     largest, so the runner starts it first; cold, its serial build of
                                     every stage took 240 s of wall time (2026-12-07, 2-core machine)
own ``budget``              120 s    a stage goal of U's layer (``simulator-stages/.../<stage>/<node>``):
                                     CPU seconds 0.1-15 each, the FFN 1 pre-activations 10-15 (6 option
                                     cases; 2026-12-04, one process, 2-core machine)
==========================  =======  =======================================================

An obligation may state its own ``budget`` (CPU seconds) when its method's does not fit.  The
runner starts the largest budgets first, so the long proofs share the workers with the short ones.

An explicit ``--timeout`` replaces every budget.  An obligation that runs out of time is
*unknown* (never proved).  :func:`explain_unknown` says why an unknown stopped, by the kind of its
typed cause (:data:`attnsim.proofs.obligation.CAUSE_KINDS`: budget exhausted, not shown equal, side
condition not shown), and suggests a longer ``--timeout`` only where that can help: the check ran
out of CPU seconds and no counterexample was found.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from attnsim.proofs.obligation import Obligation, Result, cause_kind
from attnsim.verify.runner import run_all

DEFAULT_TIMEOUT = 10.0
METHOD_TIMEOUTS: dict[str, float] = {
    "all-sizes": 60.0,
    "kernel": 120.0,
    "sympy": 30.0,
}  # non-deep methods whose budget is not the default
DEEP_TIMEOUTS: dict[str, float] = {
    "all-sizes": 900.0,
    "kernel": 120.0,
    "sympy": 120.0,
    "z3-bounded": 30.0,
    "exact": 30.0,
    "numeric": 30.0,
}
DEEP_DEFAULT = 30.0


def budget(ob: Obligation) -> float:
    """The default timeout (seconds) of one obligation: its own ``budget`` if it states one, else
    10 s, or its method's (deep) budget."""
    if ob.budget is not None:
        return ob.budget
    if not ob.deep:
        return METHOD_TIMEOUTS.get(ob.method, DEFAULT_TIMEOUT)
    return DEEP_TIMEOUTS.get(ob.method, DEEP_DEFAULT)


def timeout_for(ob: Obligation, override: float | None) -> float:
    """``override`` (an explicit ``--timeout``) if given, else the obligation's :func:`budget`."""
    return budget(ob) if override is None else override


def is_timeout(r: Result) -> bool:
    """True when the result is unknown because the check ran out of time (not a Z3 ``unknown``)."""
    return r.status == "unknown" and r.cause == "timeout"


def suggested_timeout(ob: Obligation, used: float) -> float:
    """A ``--timeout`` to rerun a timed-out obligation with: its budget if larger, else 4x ``used``."""
    b = budget(ob)
    return b if b > used else 4 * used


# what a longer budget can do for an unknown of each cause (the CPU-seconds timeout: see explain_unknown)
ADVICE: dict[str, str] = {
    "rlimit exhausted": "a Z3 query ran out of its rlimit units (attnsim/proofs/solver_work.py), which --timeout "
    "does not change",
    "over its node budget": "an expression grew past its node budget (attnsim/symbolic/sympy_work.py), which "
    "--timeout does not change",
    "not shown equal": "both sides were computed and are not shown equal, and no counterexample was found: a "
    "longer budget does not help",
    "divisor not shown > 0": "a side condition the proof needs (a divisor > 0) is not shown: a longer budget "
    "does not help",
}


def explain_unknown(r: Result, ob: Obligation, used: float) -> Result:
    """``r`` (when unknown with a typed cause) with its detail led by the kind of the cause (budget
    exhausted, not shown equal, side condition not shown) and ending with what to do: a rerun with
    a larger ``--timeout`` only when it ran out of CPU seconds and no counterexample was found (one
    found: no budget will prove it); otherwise why a longer budget does not help."""
    kind = cause_kind(r.cause)
    if r.status != "unknown" or not kind:
        return r
    if r.cause != "timeout":
        advice = ADVICE.get(r.cause, "")
    elif r.counterexample is not None:
        advice = "a counterexample was found: no longer budget will prove it"
    else:
        t = suggested_timeout(ob, used)
        why = "its default budget" if t == budget(ob) else "4x this run's"
        advice = f"rerun with `attnsim verify --only {ob.id} --timeout {t:g}` ({why})"
    lead = kind if kind == r.cause else f"{kind} ({r.cause})"  # "not shown equal" once, not twice
    r.detail = f"{lead}: {r.detail}" + (f"; {advice}" if advice else "")
    return r


def run_budgeted(
    obs: Sequence[Obligation],
    jobs: int | None = None,
    timeout: float | None = None,
    on_done: Callable[[Result], None] | None = None,
    smt: Any = None,
) -> list[Result]:
    """Run obligations with their budgets (or ``timeout`` for all); results in input order.

    ``smt``: :class:`attnsim.verify.runner.SmtOptions` (export / cvc5 cross-check of the deciding queries).

    All go to one forked pool of :func:`attnsim.verify.runner.run_all`, each with its own budget,
    the largest budgets (the long proofs) started first so the short ones fill the other workers
    around them; an unknown result says why it stopped (:func:`explain_unknown`).
    """

    limits = [timeout_for(ob, timeout) for ob in obs]
    res = run_all(obs, jobs=jobs, timeout=limits, on_done=on_done, smt=smt)
    return [explain_unknown(r, ob, t) for r, ob, t in zip(res, obs, limits, strict=True)]
