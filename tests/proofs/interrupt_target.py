"""``python interrupt_target.py MARK verify ARGS``: the ``attnsim`` console script as an installer
writes it (the entry point named in pyproject.toml, called as ``sys.exit(main())`` from a script
file), running ``verify ARGS`` with one obligation more, ``interrupt-target/exact/blocks``: the
target of the Ctrl-C tests (tests/proofs/test_sigint.py).

Two files say what happened, the events the tests wait for instead of a delay:

* ``MARK.main`` is written just before the entry point runs: the command line has started (it
  then loads its subcommands and the catalogue, seconds of imports);
* ``MARK`` is written by the target's check, which then waits for ever: a check is running, and
  the run cannot end before the test interrupts it (a short run such as ``--only softmax`` had
  ended first on a loaded machine).

The target joins whatever ``--only`` selects, with the largest budget (so it starts first); it is
not in the registry, so a Dask cluster receives it cloudpickled, with this module's functions by
value."""

from __future__ import annotations

import importlib
import sys
import threading
import tomllib
from pathlib import Path

from attnsim.proofs import registry
from attnsim.proofs.obligation import Obligation, Outcome

ROOT = Path(__file__).resolve().parents[2]
MARK = Path("running")  # the first argument, set under __main__ (a re-import leaves sys.argv alone)
_SELECT = registry.select


def entry_point() -> str:
    """The ``attnsim`` console script's entry point, ``module:function``, as pyproject.toml names it."""
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["attnsim"])


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
    module, function = entry_point().split(":")
    main = getattr(importlib.import_module(module), function)
    MARK.with_name(MARK.name + ".main").write_text("started")
    sys.exit(main())
