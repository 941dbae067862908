"""The deciding Z3 queries as SMT-LIB 2: exported to files, and re-checked by cvc5.

Every Z3 step that decides a proof (an ``unsat`` that proves, a ``sat`` that refutes) and every
premise (vacuity) check that decides (``sat``: the premises admit a value; ``unsat``: vacuous) is
recorded through :data:`SINK` when one is set, with its kind (:data:`KINDS`): the query's text is
taken with ``Solver.to_smt2()`` *before* ``check()`` (after it, Z3 adds ``model-add`` lines other
solvers reject), with the answer Z3 gave.  What is *not* a solver query, and so is never exported,
is the reasoning done in Python (the rewriting before a query, the Sum normal form): see
``docs/trusted-base.md``.  ``attnsim verify --smt2 DIR`` writes each as a standalone
``.smt2`` file with a comment ``; expected: unsat``; ``attnsim verify --cross-check`` gives each
to cvc5: an opposite answer fails the obligation, cvc5's ``unknown`` is counted and reported,
neither pass nor fail.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnsim.proofs.obligation import SecondSolver

SINK: contextvars.ContextVar[Callable[[Any, str, str], None] | None] = contextvars.ContextVar(
    "attnsim_smt_sink", default=None
)
KINDS = ("query", "premises")  # a deciding query of a proof; a premise (vacuity) check


def wanted() -> bool:
    """True when a sink is set (so that callers take the text before ``check()``)."""
    return SINK.get() is not None


def text_of(solver: Any) -> str | None:
    """The solver's assertions as SMT-LIB text, when a sink wants it."""
    return solver.to_smt2() if wanted() else None


def record(text: str | None, answer: str, kind: str = "query") -> None:
    """Hand a decided query (``answer`` sat or unsat) of ``kind`` (see :data:`KINDS`) to the sink."""
    if kind not in KINDS:
        raise ValueError(f"unknown query kind {kind!r}; use one of {KINDS}")
    sink = SINK.get()
    if sink is not None and text is not None and answer in ("sat", "unsat"):
        sink(text, answer, kind)


def standalone(text: str, expected: str, note: str = "") -> str:
    """A file any SMT-LIB solver runs: logic ALL, the assertions, (check-sat), the expected answer."""
    body = re.sub(r"^\(set-info :status \w+\)\n", "", text, flags=re.M)
    if "(check-sat)" not in body:
        body += "\n(check-sat)\n"
    head = f"; expected: {expected}\n" + (f"; {note}\n" if note else "")
    return head + "(set-logic ALL)\n" + body


CVC5_RLIMIT_PER = 20_000_000  # cvc5 resource units for one query (its rlimit-per: the same on any machine)
CVC5_BUDGET = 400_000_000  # cvc5 resource units for all of one obligation's queries


def cvc5_run(text: str, rlimit: int = CVC5_RLIMIT_PER) -> tuple[str, int]:
    """cvc5's answer (sat / unsat / unknown) to an SMT-LIB text within ``rlimit`` resource units
    (cvc5's ``rlimit-per``: a count of its own steps, not time), and the units it used."""
    import cvc5

    tm = cvc5.TermManager()
    slv = cvc5.Solver(tm)
    slv.setOption("rlimit-per", str(max(1, rlimit)))
    sm = cvc5.SymbolManager(tm)
    parser = cvc5.InputParser(slv, sm)
    parser.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, text, "query")
    answer = "unknown"
    while True:
        cmd = parser.nextCommand()
        if cmd.isNull():
            break
        out = cmd.invoke(slv, sm).strip()
        if out in ("sat", "unsat") or out.startswith("unknown"):
            answer = out.split()[0]
    used = slv.getStatistics().get(True, True).get("resource::resourceUnitsUsed", {}).get("value", 0)
    return answer, int(used)


def cvc5_answer(text: str, rlimit: int = CVC5_RLIMIT_PER) -> str:
    """cvc5's answer (sat / unsat / unknown) to an SMT-LIB text, within ``rlimit`` resource units."""
    return cvc5_run(text, rlimit)[0]


@dataclass
class Collector:
    """A sink for one obligation: writes files and/or asks cvc5, and tallies the answers."""

    directory: Path | None = None
    prefix: str = "query"
    cross_check: bool = False
    rlimit: int = CVC5_RLIMIT_PER
    count: int = 0
    premise_checks: int = 0  # of count, the premise (vacuity) checks
    confirmed: int = 0
    unknown: int = 0
    seconds: float = 0.0
    units: int = 0
    unchecked: int = 0
    disagreements: list[str] = field(default_factory=list)
    queued: list[tuple[int, str, str, str]] = field(default_factory=list)

    def __call__(self, text: str, answer: str, kind: str = "query") -> None:
        self.count += 1
        self.premise_checks += kind == "premises"
        full = standalone(text, answer, f"{self.prefix} ({kind})")
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
            (self.directory / f"{self.prefix}-{self.count:03d}.smt2").write_text(full)
        if self.cross_check:
            self.queued.append((self.count, full, answer, kind))  # checked after the proof: its time is not the proof's

    def run_cross_check(self, budget: int = CVC5_BUDGET) -> None:
        """Give every recorded query to cvc5 (after the proof ran, so that its budget is its own), each
        within ``rlimit`` resource units and all within ``budget`` units: queries left when the budget
        runs out are counted as not checked (neither pass nor fail).  Units, not seconds: which
        queries are checked is the same on a busy and an idle machine."""
        import time

        t0 = time.perf_counter()  # reported, never deciding
        for n, full, answer, kind in self.queued:
            left = budget - self.units
            if left < 1:
                self.unchecked += 1
                continue
            got, used = cvc5_run(full, min(self.rlimit, left))
            self.units += used
            if got == answer:
                self.confirmed += 1
            elif got == "unknown":
                self.unknown += 1
            else:
                self.disagreements.append(f"query {n} ({kind}): z3 {answer}, cvc5 {got}")
        self.queued.clear()
        self.seconds += time.perf_counter() - t0

    def stats(self) -> SecondSolver:
        """The tally as the typed record an outcome carries (what ``verify`` sums, never its text)."""
        return SecondSolver(
            exported=self.count,
            premise_checks=self.premise_checks,
            cross_checked=self.cross_check,
            confirmed=self.confirmed,
            unknown=self.unknown,
            unchecked=self.unchecked,
            disagree=tuple(self.disagreements),
            seconds=round(self.seconds, 4),
            units=self.units,
        )

    def summary(self) -> str:
        if not self.cross_check:
            return (
                f"{self.count} deciding quer{'y' if self.count == 1 else 'ies'} exported "
                f"({self.premise_checks} premise check(s))"
            )
        head = f"cvc5: {self.confirmed} of {self.count} deciding queries confirmed, {self.unknown} unknown"
        head += f", {self.seconds:.2f} s"
        if self.unchecked:
            head += f", {self.unchecked} not checked (cvc5 budget)"
        if self.disagreements:
            head += f", {len(self.disagreements)} DISAGREE ({'; '.join(self.disagreements[:3])})"
        return head


def safe_name(oid: str) -> str:
    """An obligation id as a file-name prefix."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", oid)


__all__ = [
    "CVC5_BUDGET",
    "CVC5_RLIMIT_PER",
    "KINDS",
    "SINK",
    "Collector",
    "cvc5_answer",
    "cvc5_run",
    "record",
    "safe_name",
    "standalone",
    "text_of",
    "wanted",
]
