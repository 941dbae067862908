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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

METHODS = ("all-sizes", "kernel", "z3-parametric", "z3-instance", "z3-bounded", "sympy", "exact", "numeric", "sampled")
STATUSES = ("proved", "passed", "failed", "unknown")
PROVING = ("all-sizes", "kernel", "z3-parametric", "z3-instance", "z3-bounded", "sympy")


class ObligationError(ValueError):
    """An obligation was registered wrongly (unknown method, duplicate id...)."""


@dataclass(frozen=True)
class Outcome:
    """What a check returns: ok (True/False/None for unknown) and a detail string."""

    ok: bool | None
    detail: str = ""

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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def status_of(method: str, outcome: Outcome) -> str:
    """proved / passed / failed / unknown."""
    if outcome.ok is None:
        return "unknown"
    if not outcome.ok:
        return "failed"
    return "proved" if method in PROVING else "passed"
