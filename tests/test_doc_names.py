"""The docs name only what exists: every file path and every ``attnsim`` module or attribute written
in backticks in README.md, CONTRIBUTING.md, docs/*.md and the folders' pages resolves (a doc drifting from the code,
e.g. naming a deleted module, fails here)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "attnsim" / "constructions").glob("*/README.md")),  # each paper result's page
    ROOT / "attnsim" / "universal" / "README.md",
]
TICKED = re.compile(r"`([^`\s]+)`")
PATH = re.compile(r"^(attnsim|tests|docs|benchmarks|tools|\.ci)/[\w./*-]*$")
DOTTED = re.compile(r"^attnsim(\.[A-Za-z_]\w*)+$")
BARE = re.compile(r"^[\w-]+\.(py|v|md)$")  # a file named without its folder
# files the tools write, named by the docs: attnsim report's page, the kernel build's export
GENERATED = frozenset({"report.md", "Exports.v"})


def names(text: str) -> list[str]:
    """The backticked file paths and dotted ``attnsim`` names of a page (a call's arguments and a
    test id's ``::`` part are cut off)."""
    out = []
    for m in TICKED.finditer(text):
        ref = m.group(1).split("(", 1)[0].split("::", 1)[0].rstrip(".,;:")
        if PATH.match(ref) or DOTTED.match(ref) or BARE.match(ref):
            out.append(ref)
    return out


def resolves(ref: str) -> bool:
    """A path exists (a glob matches something); a bare file name exists somewhere in the repository;
    a dotted name is a module or an attribute of one."""
    if BARE.match(ref):
        return ref in GENERATED or any(p for p in ROOT.rglob(ref) if ".git" not in p.parts)
    if "/" in ref:
        return any(ROOT.glob(ref)) if "*" in ref else (ROOT / ref).exists()
    parts = ref.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_name_in_the_docs_exists(page: Path) -> None:
    missing = sorted({r for r in names(page.read_text(encoding="utf-8")) if not resolves(r)})
    assert not missing, f"{page.name} names what does not exist: {missing}"


def test_a_name_that_does_not_exist_is_found() -> None:
    text = "see `attnsim/lemmas/base.py`, `attnsim.rasp.nowhere` and `gathercases.py` but `attnsim/rasp/expr.py`"
    gone = ["attnsim/lemmas/base.py", "attnsim.rasp.nowhere", "gathercases.py"]
    assert [r for r in names(text) if not resolves(r)] == gone
