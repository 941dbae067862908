"""The docs' code runs (issue 25): every ```python block of README.md and docs/*.md is executed.

The blocks of one page run in order in one namespace (a tutorial builds on its earlier blocks),
from a temporary directory. A block that must not run is preceded by the line
``<!-- docs-test: skip: REASON -->`` (a reason is required); a page whose blocks import torch is
skipped when the optional extra is not installed (CI installs it, and fails on a skipped test).
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
SKIP = re.compile(r"<!-- docs-test: skip: (\S[^>]*?) -->\s*$")
MARKER = re.compile(r"<!-- docs-test:")


class DocsBlockError(ValueError):
    """A docs page marks a block wrongly (a skip marker without a reason, or a stray marker)."""


@dataclass(frozen=True)
class Block:
    """One ```python block of a page: its first line number, its code, and why it is skipped."""

    line: int
    code: str
    skip: str | None


def blocks(text: str) -> list[Block]:
    """The python blocks of a markdown text, each with the skip reason its marker line gives."""
    out = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = SKIP.search(before)
        if MARKER.search(before) and not skip:
            raise DocsBlockError(f"line {text.count(chr(10), 0, m.start())}: a docs-test marker needs a reason")
        out.append(Block(text.count("\n", 0, m.start()) + 2, m.group(1), skip.group(1) if skip else None))
    return out


def run_page(path: Path, text: str) -> int:
    """Run every block of a page that is not skipped, in order, in one namespace; the count run."""
    env: dict[str, object] = {"__name__": "__docs__"}
    ran = 0
    for b in blocks(text):
        if b.skip is None:
            exec(compile("\n" * (b.line - 1) + b.code, str(path), "exec"), env)
            ran += 1
    return ran


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_python_block_runs(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each page's python blocks run as written (an exception or a failed assert fails the page)."""
    text = page.read_text(encoding="utf-8")
    if re.search(r"^\s*import torch|, torch\b", text, re.M) and importlib.util.find_spec("torch") is None:
        pytest.skip("the page uses torch, an optional extra (pip install '.[torch]')")
    monkeypatch.chdir(tmp_path)
    run_page(page, text)


def test_the_tutorial_has_code_that_runs() -> None:
    """The tutorial walks a lemma in code: it has runnable blocks, none of them skipped."""
    bs = blocks((ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8"))
    assert len(bs) >= 4 and all(b.skip is None for b in bs)


def test_a_wrong_block_fails_and_markers_need_a_reason(tmp_path: Path) -> None:
    """A block whose claim is false fails the page; a skipped block is not run; a bare marker is refused."""
    good = "```python\nx = 1\n```\n"
    wrong = good + "\n```python\nassert x == 2, 'the docs claim x == 2'\n```\n"
    with pytest.raises(AssertionError, match="the docs claim x == 2"):
        run_page(tmp_path / "p.md", wrong)
    skipped = good + "\n<!-- docs-test: skip: shows a failure on purpose -->\n```python\nraise SystemExit\n```\n"
    assert run_page(tmp_path / "p.md", skipped) == 1
    assert blocks(skipped)[1].skip == "shows a failure on purpose"
    with pytest.raises(DocsBlockError, match="needs a reason"):
        blocks(good + "\n<!-- docs-test: skip -->\n```python\nraise SystemExit\n```\n")


def test_the_tutorial_says_where_the_output_is() -> None:
    """Proposition 1 as the tutorial tells it: transpose's output is not after the input tokens
    but at offset 0 of a channel of its own (the layout says so, and so must the page)."""
    from attnsim import lemmas

    out = lemmas.transpose(2, 3).layout["out"]
    assert (out.start, out.channel != "tokens") == (0, True)
    text = (ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8")
    assert "output block comes after" not in text
    assert "the output is read in its own channel, from offset 0" in text
