"""Running one mutant: its obligations cheapest first, the kill rule, then the equivalence proofs.

Each mutant runs in a process of its own (:mod:`attnsim.verify.mutation.pool`); its
construction's obligations (ids ``<construction>/...``) run cheapest first (exact, numeric, sympy,
then Z3; large instances last) until one fails or errors: the mutant is *killed* by it.  An
``unknown`` never kills.  A refutation with the program unchanged (only an intent changed) is
*claim only*, not a kill.  A surviving mutant is *equivalent* only with a proof
(:mod:`attnsim.verify.mutation.equivalence`)."""

from __future__ import annotations

import re
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from attnsim.constructions.construction import Construction
from attnsim.proofs import solver_work, z3sel
from attnsim.proofs.intents import Intent
from attnsim.proofs.obligation import Obligation, Outcome
from attnsim.rasp import core as C
from attnsim.verify.mutation.equivalence.graph import unreachable
from attnsim.verify.mutation.equivalence.node import prove_equivalent
from attnsim.verify.mutation.equivalence.output import output_equivalent
from attnsim.verify.mutation.equivalence.reader import consumers_equivalent
from attnsim.verify.mutation.equivalence.spec import spec_equivalent
from attnsim.verify.mutation.equivalence.unread import unread_changes
from attnsim.verify.mutation.generate import Mutant, Mutator, _without_hook

_METHOD_RANK = {
    "exact": 0,
    "numeric": 1,
    "sampled": 1,
    "sympy": 2,
    "z3-bounded": 3,
    "z3-parametric": 3,
    "z3-instance": 3,
    "all-sizes": 4,
    "kernel": 5,
}
_LARGE = 64  # an obligation whose id names sizes with a product above this runs after all others

# why a survivor is undecided (never read from its detail): an obligation stayed unknown, its worker
# died, ran over its budget or raised; "" when every obligation it ran was decided
MutantCause = Literal["", "unknown", "worker lost", "over budget", "worker error"]
MUTANT_CAUSES: tuple[MutantCause, ...] = ("", "unknown", "worker lost", "over budget", "worker error")


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
    cause: MutantCause = ""  # why the run left it undecided (see MUTANT_CAUSES): --resume reruns it then

    def __post_init__(self) -> None:
        if self.cause not in MUTANT_CAUSES:
            raise ValueError(f"unknown mutant cause {self.cause!r}; use one of {MUTANT_CAUSES}")

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


class _Timeout(BaseException):
    """Raised by SIGPROF inside a check (a BaseException, so that checks cannot swallow it)."""


_ARMED = [False]


def _alarm(signum: int, frame: Any) -> None:
    if _ARMED[0]:
        raise _Timeout()


def _run_check(ob: Obligation, timeout: float) -> Outcome:
    """One check under a hard alarm on this process's CPU seconds (``ITIMER_PROF``: a busy machine
    does not move it; it re-fires every 0.25 CPU s, in case one lands in a finalizer).  A check stuck
    off the CPU is left to the pool's wall-clock safety net."""
    signal.signal(signal.SIGPROF, _alarm)
    _ARMED[0] = True
    signal.setitimer(signal.ITIMER_PROF, timeout + 0.5, 0.25)
    try:
        try:
            return ob.check(timeout)
        except _Timeout:
            return Outcome.unknown(f"timeout after {timeout:g} s")
        except solver_work.NodeBudgetExceeded as exc:  # too large to decide: not a kill (as the runner)
            return exc.outcome()
        except Exception as exc:  # a crash on a mutant is a failure of the mutant
            return Outcome.bad(f"{type(exc).__name__}: {exc}")
        finally:
            _ARMED[0] = False
            signal.setitimer(signal.ITIMER_PROF, 0)
    except _Timeout:  # the alarm fired between the check's end and the disarming
        return Outcome.unknown(f"timeout after {timeout:g} s")


def run_mutant(m: Mutant, obs: Sequence[Obligation], example: Callable[[], Any], timeout: float) -> MutantResult:  # noqa: C901, PLR0912
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
        m,
        False,
        None,
        equivalent,
        why if equivalent else None,
        "; ".join(notes),
        time.perf_counter() - t0,
        applied,
        cause="unknown" if unknown else "",
    )


def _collect_constructions(into: list[Any] | None) -> None:
    """While ``into`` is a list, every Construction (and every Intent) built is appended to it (None: stop).

    Subclasses with their own ``__init__`` (a ``@dataclass`` subclass such as VectorConstruction)
    are patched too; only the outermost ``__init__`` of an instance appends it."""

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


def _quiet_timeouts(hook_args: Any) -> None:
    """An alarm landing in a finalizer (e.g. Z3's ``__del__``) is ignored there and fires again."""
    if not isinstance(hook_args.exc_value, _Timeout):
        sys.__unraisablehook__(hook_args)


def mutant_task(m: Mutant, obs: Sequence[Obligation], example: Callable[[], Any], timeout: float) -> tuple[Any, ...]:
    """One mutant, in a worker process of its own: (killed, by, equivalent, proof, detail, applied,
    claim_only, cause); its own failure is told as :func:`worker_error`, never raised."""
    sys.unraisablehook = _quiet_timeouts
    try:
        r = run_mutant(m, obs, example, timeout)
        return (r.killed, r.by, r.equivalent, r.proof, r.detail, r.applied, r.claim_only, r.cause)
    except BaseException as exc:  # an alarm landing outside a check, among others: told, never raised
        return worker_error(exc)


def worker_error(exc: BaseException) -> tuple[Any, ...]:
    """What a mutant's child sends when it fails itself: (killed, by, equivalent, proof, detail,
    applied, claim_only, cause), the cause ``worker error``."""
    return (False, None, False, None, f"worker error {type(exc).__name__}: {exc}", 0, False, "worker error")
