"""``python interrupt_target.py MARK verify ARGS``: ``attnsim verify ARGS`` with one obligation more,
``interrupt-target/exact/blocks``, the target of the Ctrl-C tests (tests/proofs/test_sigint.py) that
interrupt a run after the import.

Its check writes the file MARK and then waits for ever: the run cannot end before the test
interrupts it (a short run such as ``--only softmax`` had ended first on a loaded machine), and the
file is the event "a check is running" the test waits for, instead of a delay.  It joins whatever
``--only`` selects, with the largest budget (so it starts first); it is not in the registry, so a
Dask cluster receives it cloudpickled, with this module's functions by value."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import attnsim_launcher
from attnsim.proofs import registry
from attnsim.proofs.obligation import Obligation, Outcome

MARK = Path("running")  # the first argument, set under __main__ (a re-import leaves sys.argv alone)
_SELECT = registry.select


def _blocks(timeout: float) -> Outcome:
    """Say "running" in MARK, then wait for ever (the interrupted run kills this worker)."""
    MARK.write_text("running")
    threading.Event().wait()
    raise AssertionError("unreachable: the event is never set")


TARGET = Obligation(
    "interrupt-target/exact/blocks",
    "interrupt-target",
    "-",
    "exact",
    _blocks,
    "waits until the run is interrupted",
    budget=3600.0,
)


def _selected(prefix: str | None = None, include_deep: bool = False) -> list[Obligation]:
    return [TARGET, *_SELECT(prefix, include_deep)]


if __name__ == "__main__":
    MARK = Path(sys.argv.pop(1))
    registry.select = _selected
    sys.exit(attnsim_launcher.main())
