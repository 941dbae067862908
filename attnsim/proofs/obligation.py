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

``unknown`` (a Z3 ``unknown``, a timeout) is never counted as proved.

==============  ===============================================================================
status          meaning
==============  ===============================================================================
proved          a proving method (above) succeeded
passed          a checking method (exact, numeric, sampled) succeeded
conditional     succeeded, but a required obligation did not hold in the same results (:func:`settle`)
failed          refuted, or the check crashed: exit 1
unknown         undecided (a Z3 ``unknown``, a timeout): exit 1
skipped         not run, its tool absent (a kernel obligation without ``coqc``): never proved, no failure
==============  ===============================================================================

Only ``failed`` and ``unknown`` make ``attnsim verify`` exit 1; ``conditional`` rows are not
proved either, and ``verify --failures-only`` shows them with the other two (:data:`NOT_PROVED`).

A check's :class:`Outcome` is a typed record: besides the human ``detail`` it
carries what the proof established, each in a field of its own (the premise check and its model,
the :class:`Scope` of sizes, a counterexample, the :class:`NormalForm` of both sides, the
:class:`Premise` records it states, the lemmas it used, why it stopped, the second solver's
:class:`SecondSolver` tally), and :class:`Result` copies them into the JSON row.  No code reads
those facts back out of ``detail``: it is prose for a reader.  An obligation whose
conclusion rests on others declares them (``requires``); it is ``conditional`` (never counted as
proved, never a failure of its own) until every one of them is proved or passed in the same
results (:func:`settle`): a run that skips a premise says so instead of claiming the conclusion.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, TypeVar

METHODS = ("all-sizes", "kernel", "z3-parametric", "z3-instance", "z3-bounded", "sympy", "exact", "numeric", "sampled")
STATUSES = ("proved", "passed", "conditional", "failed", "unknown", "skipped")
NOT_PROVED = ("failed", "unknown", "conditional")  # rows that ran and do not hold: `verify --failures-only`
HOLDS = ("proved", "passed")  # a premise holds only with one of these statuses
PROVING = ("all-sizes", "kernel", "z3-parametric", "z3-instance", "z3-bounded", "sympy")
# the keys of a JSON row (Result.as_dict) that carry an outcome's typed facts: every row has each
STRUCTURED = (
    "premises",
    "premise_model",
    "scope",
    "counterexample",
    "normal_forms",
    "stated",
    "padding",
    "lemmas",
    "cause",
    "second_solver",
    "kernel",
)


class ObligationError(ValueError):
    """An obligation was registered wrongly (unknown method, duplicate id...)."""


Cause = Literal[
    "",
    "timeout",
    "rlimit exhausted",
    "over its node budget",
    "not shown equal",
    "divisor not shown > 0",
    "worker lost",
]
CAUSES: tuple[Cause, ...] = (
    "",
    "timeout",
    "rlimit exhausted",
    "over its node budget",
    "not shown equal",
    "divisor not shown > 0",
    "worker lost",
)
CauseKind = Literal["", "budget exhausted", "not shown equal", "side condition not shown", "worker lost"]
# why a check stopped undecided, in kinds kept apart (as Why3 and cvc5 do): a budget ran out (its
# CPU seconds, a Z3 rlimit, a node budget: more budget may decide it); the two sides were computed
# and are not shown equal (no counterexample found either: more budget does not help); a side
# condition the proof needs (a divisor > 0) is not shown; the worker was lost
CAUSE_KINDS: dict[Cause, CauseKind] = {
    "": "",
    "timeout": "budget exhausted",
    "rlimit exhausted": "budget exhausted",
    "over its node budget": "budget exhausted",
    "not shown equal": "not shown equal",
    "divisor not shown > 0": "side condition not shown",
    "worker lost": "worker lost",
}


def cause_kind(cause: str) -> CauseKind:
    """The kind of a cause (:data:`CAUSE_KINDS`): budget exhausted, not shown equal, side condition
    not shown, worker lost; "" for none (decided, or an unknown that names no cause)."""
    return CAUSE_KINDS.get(cause, "")  # type: ignore[call-overload]


def unknown_cause(reason: str) -> Cause:
    """The cause of a Z3 ``unknown`` from its reason: its wall-clock net ("timeout") or its rlimit
    ("canceled", "max. resource limit exceeded", as :mod:`attnsim.proofs.z3sel` words it "out of its
    rlimit budget"); "" for any other reason (incomplete, a quantifier...)."""
    if reason == "timeout":
        return "timeout"
    if reason in ("canceled", "max. resource limit exceeded", "out of its rlimit budget"):
        return "rlimit exhausted"
    return ""


@dataclass(frozen=True)
class Scope:
    """The sizes a proof quantifies over: every value of ``sizes`` (each at least its minimum), or,
    with ``bound``, every value up to it.  No sizes at all: the proof is about a fixed instance."""

    sizes: tuple[str, ...] = ()
    bound: int | None = None

    def text(self) -> str:
        """``all sizes (n, m)``, ``every size <= 6 (n)`` or ``all sizes (no sizes)``."""
        over = f"every size <= {self.bound}" if self.bound is not None else "all sizes"
        return f"{over} ({', '.join(self.sizes) or 'no sizes'})"

    def joined(self, other: Scope | None) -> Scope:
        """The scope of a conjunction: the sizes of both; bounded by the smaller bound if either is."""
        if other is None:
            return self
        bounds = [b for b in (self.bound, other.bound) if b is not None]
        return Scope(tuple(sorted(set(self.sizes) | set(other.sizes))), min(bounds) if bounds else None)


@dataclass(frozen=True)
class Premise:
    """A premise a proof states (it holds on the construction's domain, e.g. an input check
    enforces it): its text, the cases it was used in (every case when empty), and ``unproven`` when
    it is about the program's own values and no step proved it (the claim is then not proven)."""

    text: str
    cases: tuple[str, ...] = ()
    unproven: bool = False

    def shown(self) -> str:
        """The premise as printed: its text, its cases joined by `` | ``."""
        return f"{self.text} (cases {' | '.join(self.cases)})" if self.cases else self.text


@dataclass(frozen=True)
class PaddingValue:
    """A proof's statement that the node ``label`` holds the padding value ``value`` on the rows past
    the true size, the value of the representative node ``rep`` there."""

    label: str
    value: str
    rep: str


@dataclass(frozen=True)
class NormalForm:
    """program == spec at one case (``case``, "" when unsplit): the spec's entry and the program's
    value as executed, and the normal form each reached (equal: the proof; else the difference)."""

    spec: str
    program: str
    spec_normal: str
    program_normal: str
    case: str = ""


@dataclass(frozen=True)
class SecondSolver:
    """What happened to the obligation's solver queries outside Z3: how many were exported as
    SMT-LIB (``premise_checks`` of them vacuity checks), and with ``--cross-check`` what cvc5 said:
    confirmed, unknown, not checked (its budget ran out) and the disagreements (each fails the
    obligation)."""

    exported: int = 0
    premise_checks: int = 0
    cross_checked: bool = False
    confirmed: int = 0
    unknown: int = 0
    unchecked: int = 0
    disagree: tuple[str, ...] = ()
    seconds: float = 0.0
    units: int = 0  # cvc5's resource units used (what its budget counts)


@dataclass(frozen=True)
class PremiseCheck:
    """Whether a proof's premises admit a value, decided before the proof.

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
        return Outcome(
            None,
            f"premises not shown satisfiable (z3 {self.reason or 'unknown'})",
            self,
            cause=unknown_cause(self.reason),
        )


@dataclass(frozen=True)
class KernelFacts:
    """What a kernel check established: the theorems Coq accepted with their generated statements,
    every axiom they rest on by full path, whether the program checked is the catalogue's own
    construction (else a variant of it), and the sizes its statements quantify over (none: the
    construction has one fixed size, e.g. 3 x 3).  ``via``: the id of the kernel row (a ``requires``
    of this one) that ran Coq on these theorems and lists their axioms; ``assumptions`` is then empty."""

    theorems: tuple[str, ...]
    assumptions: tuple[str, ...]
    registered: bool
    sizes: tuple[str, ...] = ()
    via: str = ""


@dataclass(frozen=True)
class Outcome:
    """What a check returns: ok (True/False/None for unknown), a detail string for a reader, and
    the typed facts of the proof (none of them is ever parsed out of ``detail``):

    * ``premises``: the premise check it started with (None when the check is no proof over premises);
    * ``scope``: the sizes it quantifies over (None when it does not say);
    * ``counterexample``: the values refuting it (sizes, positions), when refuted by a model; on an
      undecided outcome, the values of a counterexample found to the claim it is part of (U's
      layer, by a search after the proof stopped): then no longer budget will prove it;
    * ``normal_forms``: program == spec, both sides' normal forms (one per case);
    * ``stated``: the premises it states (on the domain, or unproven on the program's own values);
    * ``padding``: the padding values it proves (whole-layer stages);
    * ``lemmas``: the names of the lemmas of :data:`attnsim.proofs.decoding.LEMMAS` it used;
    * ``cause``: why it stopped undecided (:data:`CAUSES`, of the kinds of :data:`CAUSE_KINDS`: a
      budget exhausted, not shown equal, a side condition not shown, a lost worker);
    * ``second_solver``: the export and cvc5 tally (set by the runner);
    * ``kernel``: what a kernel check established (:class:`KernelFacts`)."""

    ok: bool | None
    detail: str = ""
    premises: PremiseCheck | None = None
    scope: Scope | None = None
    counterexample: tuple[tuple[str, int], ...] | None = None
    normal_forms: tuple[NormalForm, ...] = ()
    stated: tuple[Premise, ...] = ()
    padding: tuple[PaddingValue, ...] = ()
    lemmas: tuple[str, ...] = ()
    cause: Cause = ""
    second_solver: SecondSolver | None = None
    kernel: KernelFacts | None = None

    def __post_init__(self) -> None:
        if self.cause not in CAUSES:
            raise ValueError(f"unknown cause {self.cause!r}; use one of {CAUSES}")

    @property
    def timed_out(self) -> bool:
        """True when the check stopped because it ran out of time (not a Z3 ``unknown`` of its own)."""
        return self.cause == "timeout"

    def retold(self, detail: str, ok: bool | Literal["same"] | None = "same") -> Outcome:
        """The same facts told with another ``detail`` (and, if given, another ``ok``): what a caller
        that wraps a sub-proof's outcome returns, so that no typed fact is lost on the way."""
        return replace(self, detail=detail, ok=self.ok if ok == "same" else ok)

    def joined(self, other: Outcome, ok: bool | Literal["same"] | None = "same", detail: str | None = None) -> Outcome:
        """``self`` and ``other`` as one conclusion (both hold): scopes joined, lemmas, stated premises,
        padding values and normal forms of both; ``self``'s premise check, counterexample and cause
        first.  ``ok`` and ``detail`` default to ``self``'s."""
        scope = self.scope.joined(other.scope) if self.scope is not None else other.scope
        return replace(
            self,
            ok=self.ok if ok == "same" else ok,
            detail=self.detail if detail is None else detail,
            premises=self.premises or other.premises,
            scope=scope,
            counterexample=self.counterexample if self.counterexample is not None else other.counterexample,
            normal_forms=(*self.normal_forms, *other.normal_forms),
            stated=_unique((*self.stated, *other.stated)),
            padding=_unique((*self.padding, *other.padding)),
            lemmas=tuple(sorted(set(self.lemmas) | set(other.lemmas))),
            cause=self.cause or other.cause,
        )

    @staticmethod
    def good(detail: str = "") -> Outcome:
        return Outcome(True, detail)

    @staticmethod
    def bad(detail: str) -> Outcome:
        return Outcome(False, detail)

    @staticmethod
    def unknown(detail: str) -> Outcome:
        return Outcome(None, detail)


_T = TypeVar("_T")


def _unique(items: tuple[_T, ...]) -> tuple[_T, ...]:
    """``items`` in order, each once."""
    return tuple(dict.fromkeys(items))


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
    # CPU seconds of the time safety net when the method's default (attnsim.verify.budgets) does not
    # fit: the measured use times a margin; never what decides a verdict (solver work does)
    budget: float | None = None
    # external programs the check runs (``coqc``): without one, the obligation is not run (skipped)
    tools: tuple[str, ...] = ()
    # a second route to what obligations running these programs prove: under --deep where they are
    # all installed, in the default run where one is missing (attnsim.proofs.registry.is_deep)
    deep_where: tuple[str, ...] = ()

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
    # the outcome's typed facts (see Outcome), copied so that every JSON row carries them
    scope: Scope | None = None
    counterexample: dict[str, int] | None = None
    normal_forms: tuple[NormalForm, ...] = ()
    stated: tuple[Premise, ...] = ()
    padding: tuple[PaddingValue, ...] = ()
    lemmas: tuple[str, ...] = ()
    cause: str = ""
    second_solver: SecondSolver | None = None
    kernel: KernelFacts | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> Result:
        """A row of :meth:`as_dict` (e.g. read back from the cache) as a Result, its records typed again;
        a key the row lacks (written before the field existed) takes the field's default."""
        f = {k: d[k] for k in Result.__dataclass_fields__ if k in d}
        f["requires"] = tuple(f.get("requires", ()))
        if f.get("scope") is not None:
            f["scope"] = Scope(tuple(f["scope"]["sizes"]), f["scope"]["bound"])
        f["normal_forms"] = tuple(NormalForm(**x) for x in f.get("normal_forms", ()))
        f["stated"] = tuple(Premise(x["text"], tuple(x["cases"]), x["unproven"]) for x in f.get("stated", ()))
        f["padding"] = tuple(PaddingValue(**x) for x in f.get("padding", ()))
        f["lemmas"] = tuple(f.get("lemmas", ()))
        if f.get("second_solver") is not None:
            two = f["second_solver"]
            f["second_solver"] = SecondSolver(**{**two, "disagree": tuple(two["disagree"])})
        if f.get("kernel") is not None:
            k = f["kernel"]
            f["kernel"] = KernelFacts(
                tuple(k["theorems"]),
                tuple(k["assumptions"]),
                bool(k["registered"]),
                tuple(k.get("sizes", ())),
                str(k.get("via", "")),
            )
        return Result(**f)

    @staticmethod
    def skipped(ob: Obligation, why: str) -> Result:
        """The row of obligation ``ob`` that was not run (``why``: its tool is absent): ``skipped``."""
        return Result(ob.id, ob.construction, ob.paper_ref, ob.method, ob.bound, "skipped", 0.0, why, ob.requires)

    @staticmethod
    def of(ob: Obligation, out: Outcome, seconds: float, **work: Any) -> Result:
        """The row of obligation ``ob`` whose check gave ``out`` in ``seconds``; ``work``: the solver
        work fields (units, queries, exhausted, largest) and the first premise check's when the
        outcome has none."""
        metered: PremiseCheck | None = work.pop("first_premises", None)
        first = out.premises or metered
        return Result(
            ob.id,
            ob.construction,
            ob.paper_ref,
            ob.method,
            ob.bound,
            status_of(ob.method, out),
            round(seconds, 4),
            out.detail,
            ob.requires,
            premises=first.status if first is not None else "",
            premise_model=dict(first.model) if first is not None and first.status == "sat" else None,
            scope=out.scope,
            counterexample=dict(out.counterexample) if out.counterexample is not None else None,
            normal_forms=out.normal_forms,
            stated=out.stated,
            padding=out.padding,
            lemmas=out.lemmas,
            cause=out.cause,
            second_solver=out.second_solver,
            kernel=out.kernel,
            **work,
        )


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
