"""The obligation registry: what :mod:`attnsim.catalog` registers, and the queries over it.

Nothing registers itself on import: the catalogue (:func:`attnsim.catalog.make_registrations`) is
the one place that names every construction and every obligation provider, in order.  The entry
points (the CLI, the test suite's conftest, a Dask worker before it looks an obligation up) call
:func:`attnsim.catalog.load` once; the queries here then read what it registered.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from attnsim.proofs.obligation import Obligation, ObligationError

Provider = Callable[[], Iterable[Obligation]]


@dataclass(frozen=True)
class ConstructionEntry:
    """A construction, by the id prefix its obligations use, with a small example factory.

    Mutation testing, the audit, the report and the compiler iterate over these.  ``part_of``:
    the obligations check a part of another construction's program (its own scope row, e.g. a
    lemma about U's passes): mutation testing mutates that program once and counts these
    obligations with the other's.
    """

    name: str
    paper_ref: str
    example: Callable[[], object]
    part_of: str | None = None


_PROVIDERS: list[Provider] = []
_CONSTRUCTIONS: dict[str, ConstructionEntry] = {}
_CACHE: list[Obligation] | None = None


def register(entries: Iterable[ConstructionEntry], *providers: Provider) -> None:
    """Declare constructions and the providers of their obligations (called by the catalogue only)."""
    global _CACHE
    for e in entries:
        if e.name in _CONSTRUCTIONS:
            raise ObligationError(f"construction {e.name!r} registered twice")
        _CONSTRUCTIONS[e.name] = e
    _PROVIDERS.extend(providers)
    _CACHE = None


def loaded() -> bool:
    """Whether the catalogue has registered anything yet."""
    return bool(_PROVIDERS)


def _require() -> None:
    if not _PROVIDERS:
        raise ObligationError("no obligations registered: call attnsim.catalog.load() first")


def parts_of(name: str) -> list[str]:
    """The constructions registered as parts of ``name``."""
    _require()
    return sorted(n for n, e in _CONSTRUCTIONS.items() if e.part_of == name)


def is_part(name: str) -> bool:
    _require()
    return _CONSTRUCTIONS[name].part_of is not None if name in _CONSTRUCTIONS else False


def constructions() -> dict[str, tuple[str, Callable[[], object]]]:
    """name -> (paper_ref, example factory), for every registered construction."""
    _require()
    return {n: (e.paper_ref, e.example) for n, e in _CONSTRUCTIONS.items()}


def all_obligations(include_deep: bool = True) -> list[Obligation]:
    """Every registered obligation, in registration order (ids are unique)."""
    global _CACHE
    _require()
    if _CACHE is None:
        seen: dict[str, Obligation] = {}
        for p in _PROVIDERS:
            for ob in p():
                if ob.id in seen:
                    raise ObligationError(f"duplicate obligation id {ob.id!r}")
                seen[ob.id] = ob
        for ob in seen.values():
            unknown = [q for q in ob.requires if q not in seen]
            if unknown:
                raise ObligationError(f"{ob.id} requires {', '.join(unknown)}: no such obligation")
        _refuse_circular_premises(seen)
        _CACHE = list(seen.values())
    return [o for o in _CACHE if include_deep or not is_deep(o)]


def is_deep(ob: Obligation) -> bool:
    """Whether ``ob`` runs only under ``--deep`` here: it says so, or it is a second route
    (``deep_where``) and every program of its ``deep_where`` is installed (so the default run
    proves the same by the first; where one is missing, the default run takes this route)."""
    return ob.deep or (bool(ob.deep_where) and all(shutil.which(t) is not None for t in ob.deep_where))


def _refuse_circular_premises(obs: dict[str, Obligation]) -> None:
    """A conclusion may not rest on itself, directly or through others (it would settle proved)."""
    state: dict[str, int] = {}

    def visit(oid: str, path: list[str]) -> None:
        state[oid] = 1
        for q in obs[oid].requires:
            if state.get(q) == 1:
                chain = [*path, oid, q]
                raise ObligationError(f"circular premises: {' -> '.join(chain[chain.index(q) :])}")
            if q not in state:
                visit(q, [*path, oid])
        state[oid] = 2

    for oid in obs:
        if oid not in state:
            visit(oid, [])


def by_id(oid: str) -> Obligation:
    for o in all_obligations():
        if o.id == oid:
            return o
    raise ObligationError(f"no obligation with id {oid!r}")


def with_premises(obs: list[Obligation]) -> list[Obligation]:
    """``obs`` and every registered obligation they rest on (``requires``, transitively), in
    registration order: a conclusion selected alone is then settled on its premises, not left
    conditional.  A premise that names no registered obligation is left out (settle says so)."""
    known = {o.id: o for o in all_obligations()}  # registration order
    chosen = {o.id for o in obs}
    want = set(chosen)
    todo = [q for o in obs for q in o.requires]
    while todo:
        q = todo.pop()
        if q in known and q not in want:
            want.add(q)
            todo.extend(known[q].requires)
    return [*obs, *(o for oid, o in known.items() if oid in want - chosen)]


def select(prefix: str | None = None, include_deep: bool = False) -> list[Obligation]:
    """Obligations whose id starts with ``prefix`` (a trailing ``*`` is allowed), or whose method is
    ``prefix`` (``kernel``: every kernel-checked obligation)."""
    obs = all_obligations(include_deep=include_deep)
    if not prefix:
        return obs
    p = prefix.rstrip("*")
    return [o for o in obs if o.id.startswith(p) or o.method == p]
