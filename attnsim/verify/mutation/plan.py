"""Which mutants run: the constructions matching a prefix, their mutants and ordered obligations.

The default run samples (seeded, stratified so that every site keeps a mutant)
:data:`DEFAULT_MAX_MUTANTS` mutants per construction; ``--max-mutants 0`` runs all of them."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from attnsim.proofs import registry
from attnsim.proofs.obligation import Obligation
from attnsim.verify.mutation.generate import Mutant, MutationError, mutants_of
from attnsim.verify.mutation.run import order_obligations
from attnsim.verify.mutation.sites import Site

DEFAULT_MAX_MUTANTS = 12  # per construction in the default run (stratified: one per site first)


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
