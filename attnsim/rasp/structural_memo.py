"""What runs computed, and the values that depend only on positions and sizes, kept across runs.

:class:`RunStats` counts a run's nodes and the positions it produced; :class:`StructuralMemo` keeps
index maps over ``indices`` (and maps of them) between runs of one program, in a compact exact
form (:mod:`attnsim.rasp.kept_values`), within a byte budget.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attnsim.rasp import core as C
from attnsim.rasp import long_values
from attnsim.rasp.kept_values import AffinePieces, Chunked, KeptForm, NarrowArray, kept_form
from attnsim.rasp.long_values import Lazy
from attnsim.rasp.selector_plans import RegularKeys


@dataclass
class RunStats:
    """What runs computed (numpy backend): SOp nodes, and the positions of their values that a
    run had to produce (``head_positions``: a compact value's head, else the whole length; the
    position-only index maps read from a memo are counted apart, in ``memo_positions``), and
    the positions of streamed values computed piece by piece (``piece_positions``: each time a
    reader or a batched pass computed them, not the reads of kept index maps; above the heads of
    the streamed values, it is work done again).  Accumulates over the runs it is given to."""

    runs: int = 0
    nodes: int = 0
    head_positions: int = 0
    memo_positions: int = 0
    piece_positions: int = 0


@dataclass(frozen=True)
class MemoSummary:
    """What a :class:`StructuralMemo` holds: kept values, their bytes, its budget, refused
    values (computed on every run), and reads (hits) and offers (misses) so far."""

    kept: int
    bytes: int
    budget_bytes: int
    refused: int
    hits: int
    misses: int


@dataclass
class StructuralMemo:
    """Values that depend only on positions and sizes (index maps over ``indices``, index maps
    of such maps), kept across runs of one program (U keeps one): a run reads them instead of
    computing them again.  Each head is kept in the smaller of two exact forms
    (:func:`attnsim.rasp.kept_values.kept_form`: affine pieces or a narrow array); a value whose
    form would take the kept total past ``budget_bytes`` is not kept (it is computed on every
    run, as without a memo) and is not offered again."""

    budget_bytes: int = 256 << 20
    stored: dict[tuple[int, int], tuple[C.SOp, KeptForm, np.ndarray]] = field(default_factory=dict)
    refused: set[tuple[int, int]] = field(default_factory=set)
    groupings: dict[tuple[int, int, int, int], tuple[C.SOp, RegularKeys | None]] = field(default_factory=dict)
    used_bytes: int = 0
    hits: int = 0
    misses: int = 0

    def get(self, node: C.SOp, L: int) -> tuple[KeptForm, np.ndarray] | None:
        """(kept head, tail) of ``node`` at length L, if kept."""
        hit = self.stored.get((id(node), L))
        if hit is None or hit[0] is not node:  # kept for another node of the same id: not this one's
            return None
        self.hits += 1
        return hit[1], hit[2]

    def offer(self, node: C.SOp, L: int, lz: Lazy) -> tuple[KeptForm, np.ndarray] | None:
        """Keep ``node``'s values (``lz``, read ``PIECE`` positions at a time, each piece kept in its
        smaller form) if they fit the budget: (kept form, tail); None when refused (the pieces
        computed so far are dropped)."""
        self.misses += 1
        room = self.budget_bytes - self.used_bytes
        parts: list[NarrowArray | AffinePieces] = []
        size = 0
        tail = np.asarray(lz.tail, dtype=np.int64).reshape(1)
        bounds: list[tuple[int, int]] = []
        for a in range(0, lz.m, long_values.PIECE):
            b = min(lz.m, a + long_values.PIECE)
            piece = np.broadcast_to(np.asarray(lz.fn(a, b, {}), dtype=np.int64), (b - a,))
            form = kept_form(piece)
            size += form.nbytes
            if size > room:
                self.refused.add((id(node), L))
                return None
            parts.append(form)
            bounds.append((int(piece.min()), int(piece.max())))
        kept = Chunked(long_values.PIECE, tuple(parts), tuple(bounds))
        self.stored[(id(node), L)] = (node, kept, tail)
        self.used_bytes += size
        return kept, self.stored[(id(node), L)][2]

    def grouping(self, node: C.SOp, L: int, a: int, b: int) -> tuple[bool, RegularKeys | None]:
        """(known, its regular key side) for the keys a..b-1 of an equality head ``node`` whose
        key side is position-only (``Lazy.position_only``, no key condition): known False when
        not offered yet; a known None is a side that is not regular (grouped by ``bin_sums``)."""
        hit = self.groupings.get((id(node), L, a, b))
        return (False, None) if hit is None or hit[0] is not node else (True, hit[1])

    def offer_grouping(self, node: C.SOp, L: int, a: int, b: int, reg: RegularKeys | None) -> None:
        """Keep what :func:`~attnsim.rasp.selector_plans.regular_keys` found for these keys (its
        distinct keys count against the byte budget; over it, nothing is kept)."""
        size = 0 if reg is None else int(reg.keys.nbytes)
        if self.used_bytes + size <= self.budget_bytes:
            self.groupings[(id(node), L, a, b)] = (node, reg)
            self.used_bytes += size

    def tried(self, node: C.SOp, L: int) -> bool:
        """The node was refused before: do not compute it whole again to offer it."""
        return (id(node), L) in self.refused

    def summary(self) -> MemoSummary:
        kept, refused = len(self.stored), len(self.refused)
        return MemoSummary(kept, self.used_bytes, self.budget_bytes, refused, self.hits, self.misses)
