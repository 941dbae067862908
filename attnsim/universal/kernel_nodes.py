"""U's export cut into one node library per kernel stage, so that a change to one node recompiles
only the stages that can read it.

:func:`partition` takes an export's text (one ``Definition`` per node, each after its label comment,
in the order the program builds them: :func:`attnsim.proofs.coq.export_nodes`) and, for each part in
turn, the nodes that part's statements name.  Part k holds every node those names reach through the
definitions' bodies that no earlier part holds, in the export's order; so every definition refers
only to definitions of its own part or of earlier ones, and part k's text depends on nothing the
names of later parts add.  No definition is in two parts, and each is the export's byte for byte:
Coq reads the term the Python program builds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_BLOCK = re.compile(r"^\(\* [^\n]* \*\)\nDefinition (\S+) .*?(?=^\(\* |\Z)", re.S | re.M)


@dataclass(frozen=True)
class Node:
    """One exported definition: its name, its text (label comment included) and the names it reads."""

    name: str
    text: str
    reads: frozenset[str]


def nodes(text: str, prefix: str) -> dict[str, Node]:
    """The definitions of an export, in its order; ``prefix`` is the program's name (every node's
    name starts with ``prefix`` and ``_``).  Raises ``ValueError`` on text that is not an export."""
    found = {m.group(1): m.group(0) for m in _BLOCK.finditer(text)}
    if not found or not all(n.startswith(f"{prefix}_") or n == prefix for n in found):
        raise ValueError(f"not an export of {prefix!r}: no definitions, or one not named {prefix}_...")
    ident = re.compile(rf"\b{re.escape(prefix)}(?:_\w+)?\b")
    return {
        name: Node(name, body, frozenset(r for r in ident.findall(body) if r in found and r != name))
        for name, body in found.items()
    }


def _reach(defs: dict[str, Node], names: Iterable[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += defs[name].reads
    return seen


def partition(text: str, prefix: str, wanted: Sequence[Iterable[str]]) -> list[str]:
    """The export's definitions cut into ``len(wanted)`` parts (see the module doc): part k the nodes
    ``wanted[k]`` reaches that no earlier part holds, each part's definitions in the export's order.
    A name in ``wanted`` that the export does not define raises ``ValueError``."""
    defs = nodes(text, prefix)
    held: set[str] = set()
    parts = []
    for names in wanted:
        names = list(names)
        unknown = sorted(set(names) - defs.keys())
        if unknown:
            raise ValueError(f"the export of {prefix!r} defines no {', '.join(unknown)}")
        new = _reach(defs, names) - held
        parts.append("".join(defs[n].text for n in defs if n in new))
        held |= new
    return parts


def names_in(text: str, prefix: str) -> set[str]:
    """The identifiers of ``text`` that may name a node of ``prefix`` (a superset: callers keep those
    the export defines)."""
    return set(re.findall(rf"\b{re.escape(prefix)}(?:_\w+)?\b", text))


__all__ = ["Node", "names_in", "nodes", "partition"]
