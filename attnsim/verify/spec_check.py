"""Every specification checked on its own: ``<construction>/numeric/spec-independent``.

An all-sizes proof shows program == spec; a wrong factor written into the program *and* its spec
is proved equal.  Each obligation here evaluates a spec of a construction folder's ``spec.py`` (its
own entry formula, :meth:`~attnsim.symbolic.spec_language.BoundSpec.evaluate`) on random operands
and compares it with the textbook NumPy formula of the folder's ``reference.py``, which shares no
code with it, at

* every size 1, and small random sizes;
* each size in turn at a random large value (up to 128 where the spec is cheap), the others small;
* each size in turn at every constant the spec compares a size with (found by evaluating it with
  sizes that record their comparisons, :class:`TracedSize`) or a program proved against it
  compares a size expression with (:func:`attnsim.symbolic.counterexample.program_constants`),
  and at +-1 around each.

The method is ``numeric`` (float64, within the stated tolerance; integer-valued specs on integer
operands are compared with tolerance 0).  The spec is read from its ``spec.py`` when the check
runs, so a spec replaced there (a test's wrong factor) is the one checked.

The cases, one per spec, are the folders' ``cases.py``, gathered by :mod:`attnsim.verify.spec_cases`
(:class:`~attnsim.constructions.spec_case.SpecCase`); this module finds the constants, plans the
sizes and compares.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnsim.proofs.obligation import Obligation, Outcome
from attnsim.symbolic.counterexample import program_constants
from attnsim.symbolic.spec_language import ConcreteAlg, SpecError
from attnsim.verify.spec_cases import CASES, Sizes, SpecCase


def _plain(o: Any) -> Any:
    """A traced size as its plain int (so that comparing two traced sizes records nothing)."""
    return int(o) if isinstance(o, TracedSize) else o


class TracedSize(int):
    """An int size that records every plain int it is compared with (where a spec may branch on it).

    Arithmetic keeps the tracing (``inner - 1 > 70`` records 70); a comparison with another traced
    size records nothing."""

    seen: set[int]

    def __new__(cls, value: int, seen: set[int]) -> TracedSize:
        obj = super().__new__(cls, value)
        obj.seen = seen
        return obj

    def _keep(self, v: Any) -> Any:
        return TracedSize(v, self.seen) if isinstance(v, int) and not isinstance(v, bool) else v

    def _note(self, other: Any) -> None:
        if isinstance(other, int) and not isinstance(other, (bool, TracedSize)):
            self.seen.add(int(other))

    def __add__(self, o: Any) -> Any:
        return self._keep(int(self) + o)

    __radd__ = __add__

    def __sub__(self, o: Any) -> Any:
        return self._keep(int(self) - o)

    def __rsub__(self, o: Any) -> Any:
        return self._keep(o - int(self))

    def __mul__(self, o: Any) -> Any:
        return self._keep(int(self) * o)

    __rmul__ = __mul__

    def __floordiv__(self, o: Any) -> Any:
        return self._keep(int(self) // o)

    def __mod__(self, o: Any) -> Any:
        return self._keep(int(self) % o)

    def __neg__(self) -> Any:
        return self._keep(-int(self))

    def __lt__(self, o: Any) -> bool:
        self._note(o)
        return int(self) < _plain(o)

    def __le__(self, o: Any) -> bool:
        self._note(o)
        return int(self) <= _plain(o)

    def __gt__(self, o: Any) -> bool:
        self._note(o)
        return int(self) > _plain(o)

    def __ge__(self, o: Any) -> bool:
        self._note(o)
        return int(self) >= _plain(o)

    def __eq__(self, o: object) -> bool:
        self._note(o)
        return int(self) == _plain(o)

    def __ne__(self, o: object) -> bool:
        self._note(o)
        return int(self) != _plain(o)

    __hash__ = int.__hash__


# -- the check -------------------------------------------------------------------------------------
def spec_constants(case: SpecCase, sizes: Iterable[Mapping[str, int]], rounds: int = 3) -> set[int]:
    """Every plain int the spec compares a size with, evaluated at ``sizes`` (then again at the
    constants found, +-1, so that a comparison inside a branch first taken there is found too)."""
    spec = case.spec
    seen: set[int] = set()
    todo = [dict(s) for s in sizes]
    done: set[tuple[tuple[str, int], ...]] = set()
    rng = np.random.default_rng(0)
    for _ in range(rounds):
        before = set(seen)
        for sz in todo:
            key = tuple(sorted(sz.items()))
            if key in done or not case.valid(sz):
                continue
            done.add(key)
            traced = {k: TracedSize(v, seen) for k, v in sz.items()}
            plain = case.operands(sz, rng, 0)
            ops = {k: (a.reshape((1, *a.shape)) if a.ndim == 2 else a) for k, a in plain.items()}
            alg = ConcreteAlg("numpy")
            shape = tuple(int(x) for x in spec.shape(dict(sz)))
            for h, i, j in itertools.islice(np.ndindex(*shape), 64):
                spec.entry(alg, ops, h, i, j, traced)
        new = seen - before
        if not new:
            break
        base = dict(todo[0])
        todo = [{**base, s: v} for s in base for c in new for v in (c - 1, c, c + 1) if v >= 1]
    return seen


def _near(values: Iterable[int]) -> set[int]:
    return {w for v in values for w in (v - 1, v, v + 1) if w >= 1}


def size_plan(case: SpecCase, constants: set[int], rng: np.random.Generator) -> list[Sizes]:
    """The size assignments tried: all 1, small random, each size large in turn, each size at each
    constant (+-1) in turn; only those the spec is stated for (``case.valid``)."""
    names = case.spec.sizes
    small = lambda: {s: int(rng.integers(1, case.small + 1)) for s in names}
    plan: list[Sizes] = [dict.fromkeys(names, 1), small(), small()]
    plan += [small() for _ in range(case.extra_small)]
    plan.append({s: int(rng.integers(1, max(2, case.large[s] // 4) + 1)) for s in names})  # all sizes at once
    for s in names:
        lo = max(1, case.large[s] // 2)
        plan.append({**small(), s: int(rng.integers(lo, case.large[s] + 1))})
        plan.append({**small(), s: case.large[s]})
    for s in names:
        for v in sorted(_near(constants)):
            plan.append({**small(), s: v})
    out: list[Sizes] = []
    for sz in plan:
        if not case.valid(sz):
            sz = case.repair(sz)
        if case.valid(sz) and sz not in out:
            out.append(sz)
    return out


@dataclass(frozen=True)
class SpecComparison:
    """What a spec check found: how many size assignments and entries agreed (``largest``: each size's
    largest value among them), the constants tried, or the first mismatch."""

    assignments: int
    entries: int
    largest: Sizes
    constants: tuple[int, ...]
    mismatch: str = ""


def compare(case: SpecCase, seed: int = 0) -> SpecComparison:
    """Evaluate the spec and its textbook reference on the same random operands at every assignment
    of :func:`size_plan`; stop at the first entry where they differ."""
    rng = np.random.default_rng(seed)
    found = spec_constants(case, [dict.fromkeys(case.spec.sizes, 2), dict.fromkeys(case.spec.sizes, 3)])
    for make in case.makers:
        found |= program_constants(make())
    constants = tuple(sorted(v for v in found if v >= 0))
    plan = size_plan(case, set(constants), rng)
    entries = 0
    largest: Sizes = {}
    for trial, sz in enumerate(plan):
        ops = case.operands(sz, rng, trial)
        try:
            got = case.spec.at(**sz).evaluate(ops, int)
        except (SpecError, IndexError, ValueError, ZeroDivisionError) as exc:
            return SpecComparison(trial, entries, largest, constants, f"the spec fails to evaluate at {sz}: {exc}")
        want = case.reference(ops, sz)
        where = ", ".join(f"{k}={v}" for k, v in sz.items())
        if got.shape != want.shape:
            shapes = f"at {where} the spec's shape is {got.shape}, the reference's {want.shape}"
            return SpecComparison(trial, entries, largest, constants, shapes)
        bad = np.argwhere(~np.isclose(got, want, rtol=case.rtol, atol=case.atol))
        if len(bad):
            ix = tuple(int(x) for x in bad[0])
            return SpecComparison(
                trial,
                entries,
                largest,
                constants,
                f"at {where}, entry {list(ix)}: the spec gives {got[ix]!r}, the textbook reference {want[ix]!r} "
                f"({len(bad)} of {got.size} entries differ)",
            )
        entries += got.size
        largest = {k: max(v, largest.get(k, 0)) for k, v in sz.items()}
    return SpecComparison(len(plan), entries, largest, constants)


def spec_check(case: SpecCase) -> Callable[[float], Outcome]:
    """The obligation's check: ``compare`` as an Outcome."""

    def check(timeout: float) -> Outcome:
        res = compare(case)
        name = case.spec.name
        if res.mismatch:
            return Outcome.bad(f"spec {name} is not the textbook formula: {res.mismatch}")
        big = ", ".join(f"{k}={v}" for k, v in res.largest.items())
        tol = "exactly (tolerance 0, integer operands)" if case.rtol == case.atol == 0 else (
            f"within rtol {case.rtol:g}, atol {case.atol:g}"
        )
        return Outcome.good(
            f"spec {name} == its textbook NumPy formula {tol}: {res.assignments} size assignments "
            f"({res.entries} entries), each size up to {big}; constants compared with a size: "
            f"{list(res.constants) or 'none'} (each +-1)"
        )

    return check


def spec_obligations() -> Iterable[Obligation]:
    """One ``numeric`` obligation per specification."""
    for case in CASES:
        yield Obligation(
            case.id,
            case.construction,
            case.paper_ref,
            "numeric",
            spec_check(case),
            statement=f"the spec {case.spec.name} ({case.spec.statement[:120]}) equals an independent NumPy "
            "formula at random large sizes and at every size constant +-1",
        )


__all__ = [
    "CASES",
    "SpecCase",
    "SpecComparison",
    "TracedSize",
    "compare",
    "size_plan",
    "spec_constants",
    "spec_obligations",
]
