"""One folder per paper result (docs/architecture.md): every construction folder holds its program,
obligations and a short page, every registered construction belongs to one folder's page, and each
page points at exactly the Coq theories that ``kernel_theorems.THEOREMS`` assigns to its
constructions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import attnsim
from attnsim import catalog
from attnsim.constructions.kernel_theorems import THEOREMS
from attnsim.proofs import registry

PACKAGE = Path(attnsim.__file__).parent
FOLDERS = sorted(d for d in (PACKAGE / "constructions").iterdir() if (d / "__init__.py").exists())
PAGES = [*(d / "README.md" for d in FOLDERS), PACKAGE / "universal" / "README.md"]
LISTED = re.compile(r"^Constructions? \(the catalogue's names?\): (.*)$", re.M)
THEORY = re.compile(r"`attnsim/coq/(\w+)\.v`")


def listed(page: Path) -> list[str]:
    """The constructions a folder's page names (its line 'Constructions (the catalogue's names): ...')."""
    m = LISTED.search(page.read_text(encoding="utf-8"))
    assert m, f"{page}: no line naming its constructions"
    return re.findall(r"`([\w-]+)`", m.group(1))


def theories(page: Path) -> set[str]:
    return set(THEORY.findall(page.read_text(encoding="utf-8")))


@pytest.mark.parametrize("folder", FOLDERS, ids=[d.name for d in FOLDERS])
def test_a_folder_holds_its_program_obligations_and_page(folder: Path) -> None:
    have = {p.name for p in folder.iterdir()}
    assert {"__init__.py", "program.py", "obligations.py", "README.md"} <= have, sorted(have)
    assert ("spec.py" in have) <= ("reference.py" in have)  # a spec is checked against a reference
    page = (folder / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`(\w+\.py)`", page))
    assert named <= have, f"{folder.name}/README.md names missing files: {sorted(named - have)}"
    assert {p for p in have if p.endswith(".py") and p != "__init__.py"} <= named, "a file the page omits"


def test_every_construction_has_one_folder() -> None:
    catalog.load()
    registered = {n for n, _ in registry.constructions().items() if not registry.is_part(n)}
    owners: dict[str, list[str]] = {}
    for page in PAGES:
        for name in listed(page):
            owners.setdefault(name, []).append(page.parent.name)
    assert not {n: o for n, o in owners.items() if len(o) > 1}, owners
    assert registered <= set(owners), sorted(registered - set(owners))


def test_each_page_points_at_its_coq_theories() -> None:
    """A page names exactly the theories whose construction it lists, and each file exists."""
    for page in PAGES:
        mine = set(listed(page))
        want = {t.theory for t in THEOREMS if t.construction in mine}
        assert theories(page) == want, f"{page.parent.name}/README.md: {sorted(theories(page))} != {sorted(want)}"
        for t in want:
            assert (PACKAGE / "coq" / f"{t}.v").exists(), t


def test_a_missing_pointer_is_seen(tmp_path: Path) -> None:
    """The pointer check can fail: the softmax page without SoftmaxMasked.v names fewer theories."""
    page = PACKAGE / "constructions" / "softmax" / "README.md"
    cut = tmp_path / "README.md"
    cut.write_text("\n".join(ln for ln in page.read_text().splitlines() if "SoftmaxMasked.v" not in ln))
    want = {t.theory for t in THEOREMS if t.construction in set(listed(cut))}
    assert "SoftmaxMasked" in want and "SoftmaxMasked" not in theories(cut)
