"""The memory this process may still take, byte counts in one unit, and the one rule by which
work estimated not to fit is refused before it starts.

The estimates that feed :func:`refused` are upper estimates calibrated on measured peaks, not
bounds: they may refuse a run that would have fit.  Setting the environment variable
``ATTNSIM_IGNORE_MEMORY_ESTIMATE=1`` runs such work anyway (the operating system then decides).
"""

from __future__ import annotations

import os
from pathlib import Path

IGNORE_ESTIMATE_ENV = "ATTNSIM_IGNORE_MEMORY_ESTIMATE"
"""Set to 1 to run work whose memory estimate exceeds the memory available."""


def human_bytes(nbytes: float) -> str:
    """A byte count in binary units, three significant digits: '512 MiB', '1.4 GiB', '2 TiB'."""
    for unit, shift in (("PiB", 50), ("TiB", 40), ("GiB", 30)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):.3g} {unit}"
    return f"{nbytes / (1 << 20):.3g} MiB"


def _read_int(path: str) -> int | None:
    try:
        text = Path(path).read_text(encoding="ascii").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def available_memory() -> int | None:
    """Bytes this process may still take: the kernel's MemAvailable, lowered to the room left under
    a cgroup (v2) memory limit; None where neither can be read."""
    found: list[int] = []
    try:
        for line in Path("/proc/meminfo").read_text(encoding="ascii").splitlines():
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    limit, used = _read_int("/sys/fs/cgroup/memory.max"), _read_int("/sys/fs/cgroup/memory.current")
    if limit is not None and used is not None:
        found.append(max(limit - used, 0))
    return min(found) if found else None


def refused(estimate: int, free: int | None) -> str | None:
    """Why work estimated at ``estimate`` bytes is refused with ``free`` bytes available, as the end
    of a one-line message; None when it may run (it fits, ``free`` is unknown, or the estimate is
    overridden by :data:`IGNORE_ESTIMATE_ENV`)."""
    if free is None or estimate <= free or os.environ.get(IGNORE_ESTIMATE_ENV, "") not in ("", "0"):
        return None
    return (
        f"more than the {human_bytes(free)} of memory available (an upper estimate: "
        f"set {IGNORE_ESTIMATE_ENV}=1 to run anyway)"
    )


__all__ = ["IGNORE_ESTIMATE_ENV", "available_memory", "human_bytes", "refused"]
