"""Where constructions register their obligations (lazily, through provider functions)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable

from attnsim.proofs.obligation import Obligation, ObligationError

Provider = Callable[[], Iterable[Obligation]]
_PROVIDERS: list[Provider] = []
_CACHE: list[Obligation] | None = None

# Modules whose import registers providers; each later issue adds its own.
CATALOG = (
    "attnsim.proofs.language",
    "attnsim.lemmas",
    "attnsim.applications",
    "attnsim.compile.obligations",
    "attnsim.simulator.obligations",
)


_CONSTRUCTIONS: dict[str, tuple[str, Callable[[], object]]] = {}


_PARTS: dict[str, str] = {}  # construction -> the construction whose program it is a part of


def register_construction(name: str, paper_ref: str, example: Callable[[], object], part_of: str | None = None) -> None:
    """Declare a construction (by the id prefix its obligations use) with a small example factory.

    Mutation testing, the audit, the report and the compiler iterate over these.  ``part_of``:
    the obligations check a part of another construction's program (its own scope row, e.g. a
    lemma about U's passes): mutation testing mutates that program once and counts these
    obligations with the other's.
    """
    if name in _CONSTRUCTIONS:
        raise ObligationError(f"construction {name!r} registered twice")
    _CONSTRUCTIONS[name] = (paper_ref, example)
    if part_of is not None:
        _PARTS[name] = part_of


def parts_of(name: str) -> list[str]:
    """The constructions registered as parts of ``name``."""
    constructions()
    return sorted(n for n, whole in _PARTS.items() if whole == name)


def is_part(name: str) -> bool:
    constructions()
    return name in _PARTS


def constructions() -> dict[str, tuple[str, Callable[[], object]]]:
    """name -> (paper_ref, example factory), for every registered construction."""
    for mod in CATALOG:
        importlib.import_module(mod)
    return dict(_CONSTRUCTIONS)


def provider(fn: Provider) -> Provider:
    """Decorator: ``fn()`` yields this module's obligations when verify asks for them."""
    _PROVIDERS.append(fn)
    return fn


def all_obligations(include_deep: bool = True) -> list[Obligation]:
    """Every registered obligation, in registration order (ids are unique)."""
    global _CACHE
    if _CACHE is None:
        for mod in CATALOG:
            importlib.import_module(mod)
        seen: dict[str, Obligation] = {}
        for p in _PROVIDERS:
            for ob in p():
                if ob.id in seen:
                    raise ObligationError(f"duplicate obligation id {ob.id!r}")
                seen[ob.id] = ob
        _CACHE = list(seen.values())
    return [o for o in _CACHE if include_deep or not o.deep]


def by_id(oid: str) -> Obligation:
    for o in all_obligations():
        if o.id == oid:
            return o
    raise ObligationError(f"no obligation with id {oid!r}")


def select(prefix: str | None = None, include_deep: bool = False) -> list[Obligation]:
    """Obligations whose id starts with ``prefix`` (a trailing ``*`` is allowed), or whose method is
    ``prefix`` (``kernel``: every kernel-checked obligation)."""
    obs = all_obligations(include_deep=include_deep)
    if not prefix:
        return obs
    p = prefix.rstrip("*")
    return [o for o in obs if o.id.startswith(p) or o.method == p]
