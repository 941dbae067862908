"""Where a node is created: its *site*, the source position (file, line, column) of the call.

A mutant changes every node created at one site (as editing that line would), in every instance an
obligation builds.  The call is found by walking out of ``attnsim/rasp`` from the creating frame."""

from __future__ import annotations

import os
import sys
from types import FrameType
from typing import Any

from attnsim.rasp import core as C

Site = tuple[str, int, int, str]  # file, line, column, node kind


_RASP_DIR = os.path.dirname(os.path.abspath(C.__file__))
_SKIP: dict[str, bool] = {}
_POSITIONS: dict[Any, list[Any]] = {}


def _skipped(filename: str) -> bool:
    hit = _SKIP.get(filename)
    if hit is None:
        hit = filename.startswith("<") or os.path.dirname(os.path.abspath(filename)) == _RASP_DIR
        _SKIP[filename] = hit
    return hit


def _caller_site(kind: str) -> Site | None:
    """File, line and column of the first call outside ``attnsim/rasp`` that is creating a node."""
    f: FrameType | None = sys._getframe(2)
    while f is not None and _skipped(f.f_code.co_filename):
        f = f.f_back
    if f is None:
        return None
    code = f.f_code
    pos = _POSITIONS.get(code)
    if pos is None:
        pos = _POSITIONS[code] = list(code.co_positions())
    ix = f.f_lasti // 2
    line, _, col, _ = pos[ix] if 0 <= ix < len(pos) else (f.f_lineno, None, 0, None)
    return (_portable(code.co_filename), line or f.f_lineno, col or 0, kind)


def _portable(filename: str) -> str:
    """A site's file, relative to the package when it is inside it (attnsim/constructions/matmul/program.py):
    the same on every worker, whether attnsim is imported from a checkout or from an installed copy."""
    norm = filename.replace(os.sep, "/")
    ix = norm.rfind("/attnsim/")
    return norm[ix + 1 :] if ix >= 0 else norm


def _where(site: Site) -> str:
    """``file:line`` of a site, the file named with its construction's folder when it is in one
    (``matmul/program.py:45``: every folder has a ``program.py``), else by its base name."""
    parts = site[0].split("/")
    shown = "/".join(parts[-2:]) if parts[:2] == ["attnsim", "constructions"] and len(parts) > 3 else parts[-1]
    return f"{shown}:{site[1]}"
