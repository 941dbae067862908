"""A compile's size and memory, estimated before any work, and the memory the machine has free.

Compiling holds, for each position up to ``max_len``, a few Python numbers per program node (the
position embedding's entries, the lookups over the positions, the value domains of index maps),
and, for a few nodes, a table over a product of domains: an index map of several arguments
tabulates its mixed-radix code (up to ``CODE_CAP`` entries), a selector other than an equality
between two SOps its predicate (up to ``TABLE_CAP``).  The estimate is

    FIXED_BYTES + BYTES_PER_CELL x nodes x max_len + BYTES_PER_ENTRY x table entries,

a table's entries bounded from the domains its arguments can take at most (positions, the
vocabulary, ``max_len + 1`` counts; a derived value: max_len or the vocabulary, whichever is
larger) and by the compiler's caps.  Measured peaks (tracemalloc, :func:`compile_program` on this
repository's lemmas up to 16,384 positions, U at three capacities, the classic programs up to
max_len 1,000): 56-186 bytes per position and node, 370-450 bytes per table entry, about 2 MB of
one-time caches; ``tests/compile/test_memory.py`` checks that the estimate bounds the measured
peak.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from attnsim.compile.heads import TABLE_CAP
from attnsim.compile.maps import CODE_CAP
from attnsim.rasp import core as C
from attnsim.resources import available_memory
from attnsim.resources import human_bytes as human

BYTES_PER_CELL = 256
"""Estimated peak bytes per (position, program node) of a compile."""

BYTES_PER_ENTRY = 640
"""Estimated peak bytes per entry of an index map's code table or a selector's predicate table."""

FIXED_BYTES = 8 * 10**6
"""A compile's fixed cost: heads, notes, caches filled on first use."""


@dataclass(frozen=True)
class Estimate:
    """A compile's size before it runs: positions, program nodes, table entries, peak memory."""

    positions: int
    nodes: int
    entries: int
    bytes: int

    def describe(self) -> str:
        """One phrase: ``8,000,000 positions x 13 program nodes, about 24.8 GiB of memory``."""
        tables = f" and {self.entries:,} table entries" if self.entries else ""
        return f"{self.positions:,} positions x {self.nodes} program nodes{tables}, about {human(self.bytes)} of memory"


def estimate(program: C.SOp, max_len: int, vocab_size: int | None = None) -> Estimate:
    """The estimated peak memory of compiling ``program`` for sequences up to ``max_len`` over a
    vocabulary of ``vocab_size`` tokens (None: numerical tokens)."""
    nodes = C.topological([program])

    def span(s: C.SOp) -> int:  # the most integer values an SOp's domain can span
        if isinstance(s, C.Full):
            return 1
        if isinstance(s, C.Indices):
            return max_len
        if isinstance(s, (C.Length, C.SelectorWidth)):
            return max_len + 1
        if isinstance(s, C.Tokens) and vocab_size is not None:
            return vocab_size
        return max(max_len, vocab_size or 0)

    entries = 0
    for n in nodes:
        if isinstance(n, (C.Map, C.SequenceMap)) and isinstance(n.fn, C.IndexFn) and len(n.args) > 1:
            entries += min(CODE_CAP, math.prod(span(a) for a in n.args))
        elif isinstance(n, C.Select) and n.cmp != "==" and not isinstance(n.keys, C.Full):
            if not isinstance(n.queries, C.Full):
                entries += min(TABLE_CAP, span(n.keys) * span(n.queries))
    total = FIXED_BYTES + BYTES_PER_CELL * len(nodes) * max_len + BYTES_PER_ENTRY * entries
    return Estimate(max_len, len(nodes), entries, total)


__all__ = ["Estimate", "available_memory", "estimate", "human"]
