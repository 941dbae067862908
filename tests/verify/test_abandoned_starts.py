"""The local Dask cluster's forkserver preload (attnsim.verify.abandoned_starts): a child that loses
its parent's start data dies without a traceback (Ctrl-C while the cluster starts, issue 27: "pytest
passes beside 6 CPU-bound processes"); every other exception is still printed.

Each case runs in a fresh interpreter, as the forkserver does: the module replaces sys.excepthook
at import."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# a child's start: spawn._main reading the parent's data from a pipe whose writer is gone
SETUP = """
import os, sys
import attnsim.verify.abandoned_starts
from multiprocessing import spawn
r, w = os.pipe()
{write}
os.close(w)
try:
    spawn._main(r, os.dup(r))
except BaseException:
    sys.excepthook(*sys.exc_info())
{after}
"""


def _stderr(write: str = "", after: str = "") -> str:
    code = SETUP.format(write=write, after=after)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    return out.stderr


def test_a_child_whose_parent_data_is_gone_prints_nothing() -> None:
    """EOFError while reading the start data (the parent exited): dropped."""
    assert _stderr() == ""


def test_a_start_that_fails_otherwise_is_still_printed() -> None:
    """The mutation: an error of another kind in the same place (data that does not unpickle) keeps
    its traceback."""
    err = _stderr(write="os.write(w, b'not a pickle')")
    assert "Traceback" in err and "UnpicklingError" in err


def test_the_same_error_outside_a_start_is_still_printed() -> None:
    """EOFError raised by the process's own code, not while it reads its start data: printed."""
    err = _stderr(after="try:\n    raise EOFError('mine')\nexcept EOFError:\n    sys.excepthook(*sys.exc_info())")
    assert "EOFError: mine" in err


def test_the_forkserver_preloads_it() -> None:
    """deaf_forkserver starts the server with the module as its preload (by the name that exists)."""
    pytest.importorskip("distributed")
    from attnsim.verify.dask_runner import ABANDONED_STARTS

    assert importlib.util.find_spec(ABANDONED_STARTS) is not None
