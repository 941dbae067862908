"""Proof obligations: what is checked, by which method, for which paper result.

An obligation's method is fixed when it is registered, never chosen at run time:

==============  ===============================================================  ==========
method          meaning                                                          success
==============  ===============================================================  ==========
all-sizes       program == independent spec, every size (symbolic execution)     proved
kernel          Coq's kernel checks program == MathComp definition, every size   proved
z3-parametric   Z3, for every value of the size symbols (unbounded)              proved
z3-instance     Z3, one fixed instance (a claim that mentions no size symbol)    proved
z3-bounded      Z3, for every size up to ``bound``                               proved
sympy           symbolic identity at the stated sizes                            proved
exact           Fraction arithmetic on the stated inputs, compared with ``==``   passed
numeric         float64 against a reference, within a stated tolerance           passed
sampled         random points                                                    passed
==============  ===============================================================  ==========

``unknown`` (a Z3 ``unknown``, a timeout) is never counted as proved.  An obligation whose
conclusion rests on others declares them (``requires``); it is ``conditional`` (never counted as
proved, never a failure of its own) until every one of them is proved or passed in the same
results (:func:`settle`): a run that skips a premise says so instead of claiming the conclusion.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

METHODS = ("all-sizes", "kernel", "z3-parametric", "z3-instance", "z3-bounded", "sympy", "exact", "numeric", "sampled")
STATUSES = ("proved", "passed", "conditional", "failed", "unknown")
HOLDS = ("proved", "passed")  # a premise holds only with one of these statuses
PROVING = ("all-sizes", "kernel", "z3-parametric", "z3-instance", "z3-bounded", "sympy")


class ObligationError(ValueError):
    """An obligation was registered wrongly (unknown method, duplicate id...)."""


@dataclass(frozen=True)
class PremiseCheck:
    """Whether a proof's premises admit a value, decided before the proof (issue 26, item 4).

    ``sat`` with a ``model`` (a witness: the proof then goes on), ``unsat`` (the premises are
    empty: any claim would follow, so the proof fails "vacuous") or ``unknown`` (the obligation is
    unknown: an undecided vacuity check is never read as "not vacuous")."""

    status: Literal["sat", "unsat", "unknown"]
    model: tuple[tuple[str, int], ...] = ()
    reason: str = ""

    def refusal(self) -> Outcome | None:
        """None when the proof may go on (sat); else the outcome the proof must return."""
        if self.status == "sat":
            return None
        if self.status == "unsat":
            return Outcome(False, "vacuous: the premises (assumptions, region, size minimums) admit no values", self)
        return Outcome(None, f"premises not shown satisfiable (z3 {self.reason or 'unknown'})", self)


@dataclass(frozen=True)
class Outcome:
    """What a check returns: ok (True/False/None for unknown), a detail string, and the premise
    check its proof started with (None when the check is no proof over premises)."""

    ok: bool | None
    detail: str = ""
    premises: PremiseCheck | None = None

    @staticmethod
    def good(detail: str = "") -> Outcome:
        return Outcome(True, detail)

    @staticmethod
    def bad(detail: str) -> Outcome:
        return Outcome(False, detail)

    @staticmethod
    def unknown(detail: str) -> Outcome:
        return Outcome(None, detail)


@dataclass(frozen=True)
class Obligation:
    """One checkable claim.  ``check`` takes a timeout in seconds and returns an Outcome."""

    id: str
    construction: str
    paper_ref: str
    method: str
    check: Callable[[float], Outcome]
    statement: str = ""
    bound: int | None = None
    deep: bool = False
    requires: tuple[str, ...] = ()  # ids of the obligations this conclusion rests on

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ObligationError(f"{self.id}: unknown method {self.method!r}; use one of {METHODS}")
        if self.id.count("/") < 2:
            raise ObligationError(f"obligation id {self.id!r} must be construction/method/detail")
        if self.method == "z3-bounded" and self.bound is None:
            raise ObligationError(f"{self.id}: a z3-bounded obligation must state its bound")


@dataclass
class Result:
    """An obligation's run: the JSON record of `attnsim verify --json`."""

    id: str
    construction: str
    paper_ref: str
    method: str
    bound: int | None
    status: str
    seconds: float
    detail: str
    requires: tuple[str, ...] = field(default=())
    units: int = 0  # Z3 resource units (rlimit count) the check used: reproducible, unlike seconds
    queries: int = 0  # Z3 checks asked
    exhausted: int = 0  # of which stopped by their rlimit budget (answer unknown)
    largest: int = 0  # the most units one decided query used
    premises: str = ""  # the first premise check's status: sat / unsat / unknown ("" when none ran)
    premise_model: dict[str, int] | None = None  # its witness when sat

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def status_of(method: str, outcome: Outcome) -> str:
    """proved / passed / failed / unknown."""
    if outcome.ok is None:
        return "unknown"
    if not outcome.ok:
        return "failed"
    return "proved" if method in PROVING else "passed"


def settle(results: Sequence[Result]) -> list[Result]:
    """The results with each conclusion whose premises do not all hold marked ``conditional``.

    A premise holds when it is proved (for a proving conclusion) or proved or passed (for a
    checked one) among ``results`` (this run, or the cache for the same code): a premise checked
    only at stated instances (``passed``) does not make an all-sizes conclusion proved.  One not
    run, unknown, failed or itself conditional leaves the conclusion conditional (chains settle to
    a fixpoint).  The detail names each premise and its status."""
    out = list(results)
    status = {r.id: r.status for r in out}
    changed = True
    while changed:
        changed = False
        for i, r in enumerate(out):
            if r.status not in HOLDS or not r.requires:
                continue
            holds = ("proved",) if r.method in PROVING else HOLDS
            missing = [q for q in r.requires if status.get(q) not in holds]
            if missing:
                why = ", ".join(f"{q} ({status.get(q, 'not run')})" for q in missing)
                out[i] = replace(r, status="conditional", detail=f"conditional on {why}; {r.detail}")
                status[r.id] = "conditional"
                changed = True
    return out
