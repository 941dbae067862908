"""How much memory a numeric run of U needs, estimated before it starts, and how much there is.

A run of U holds: its input and each pass's output without their zero padding (8 bytes per
position of ``positions_of_input``, twice), the n x n masks ``encode`` builds (float64 additive,
bool blocked, and their temporaries: 24 bytes per entry), the memo of position-only index maps
(at most its budget, and about 32 bytes per position below it), every value whose head is at
most ``SHORT`` positions whole (counted 24 alive at once; about 16 measured), and the two
largest grids the executor holds whole (the planned executor streams no value).

Against measurements (tracemalloc's peak of the second run plus the memo, planned executor;
``tests/universal/test_memory.py`` repeats the two smallest): compact capacity 48, 7.3 MiB held of
an estimate of 95 MiB; 128, 127 of 579 MiB; 256, 987 of 1,483 MiB; shallow 16, 11.6 of 246 MiB;
32, 308 of 993 MiB; 44, 1,439 of 3,080 MiB.  An upper estimate of that order (1.5-21x), not a
bound proven from the executor: :func:`check_fits` refuses a run only when the estimate exceeds
the memory available, and ``ATTNSIM_IGNORE_MEMORY_ESTIMATE=1`` overrides it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attnsim.rasp.engine import StructuralMemo
from attnsim.rasp.layout import value_of
from attnsim.resources import available_memory, refused
from attnsim.resources import human_bytes as gib
from attnsim.universal.errors import SimulatorError

# grids whose values the executor streams piece by piece (never held whole), per variant: none now
STREAMED_GRIDS: dict[str, tuple[str, ...]] = {"compact": (), "shallow": ()}
SHORT = 1 << 20  # a value of at most this many positions counts as short
ALIVE_SHORT = 24  # values of at most SHORT positions held whole at once (measured: about 16)
ALIVE_LONG = 2  # values of the largest grid held whole at once
MASK_BYTES = 24  # per entry of the n x n masks encode builds
MEMO_BYTES = 32  # per position, of the memo (below its budget)


@dataclass(frozen=True)
class MemoryEstimate:
    """What a numeric run of U over ``positions`` tokens is estimated to hold, in bytes, by part."""

    positions: int
    input: int
    masks: int
    memo: int
    values: int

    @property
    def total(self) -> int:
        return self.input + self.masks + self.memo + self.values

    def text(self) -> str:
        """One line: the total, the length and the parts, e.g. for an error message."""
        parts = (("values held whole", self.values), ("masks", self.masks), ("input", self.input), ("memo", self.memo))
        shown = ", ".join(f"{nm} {gib(b)}" for nm, b in sorted(parts, key=lambda p: -p[1]) if b)
        return f"about {gib(self.total)} (a run over {self.positions:.3g} positions: {shown})"


def estimate(u: Any, n: int, layers: int = 1) -> MemoryEstimate:
    """The memory a numeric run of U (a :class:`UniversalSimulator`) on ``n`` tokens with
    ``layers`` records is estimated to hold (see the module's docstring for what it counts)."""
    L = u.positions(layers)
    streamed = STREAMED_GRIDS.get(u.variant, ())
    held = [value_of(g.end_expr()) for g in u.stage_grids if g.block.name not in streamed]
    longest = max([m for m in held if m > SHORT], default=0)
    return MemoryEstimate(
        positions=L,
        input=2 * 8 * u.positions_of_input(layers),
        masks=MASK_BYTES * n * n,
        memo=min(StructuralMemo.budget_bytes, MEMO_BYTES * L),
        values=8 * (ALIVE_SHORT * min(L, SHORT) + ALIVE_LONG * longest),
    )


def check_fits(u: Any, n: int, layers: int = 1) -> MemoryEstimate:
    """The estimate of a run, after refusing in one line (with the estimate) a run estimated to
    need more memory than is available."""
    est = estimate(u, n, layers)
    why = refused(est.total, available_memory())
    if why is not None:
        cap = ", ".join(f"{v}" for v in u.capacity.values())
        raise SimulatorError(
            f"U at capacity (N, D, H, K, F) = ({cap}) on n = {n} is estimated to need {est.text()}, "
            f"{why}; or use a smaller capacity"
        )
    return est


__all__ = ["MemoryEstimate", "available_memory", "check_fits", "estimate", "gib"]
