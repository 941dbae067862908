"""The trusted base in Python is named, with line counts generated from the sources (issue 26,
item 9): docs/trusted-base-lines.md is benchmarks/trusted_base.py's output for the current tree,
and every file it counts exists.

Backs the "what remains trusted" paragraph of README.md and docs/proofs.md.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_page_is_the_scripts_output_for_these_sources(benchmark_script: Callable[[str], ModuleType]) -> None:
    """Stale counts fail: rerun `python benchmarks/trusted_base.py` after editing a counted file."""
    tb = benchmark_script("trusted_base")
    assert tb.PAGE.read_text(encoding="utf-8") == tb.render(), "rerun: python benchmarks/trusted_base.py"


def test_the_counted_steps_are_the_python_reasoning_the_docs_name(
    benchmark_script: Callable[[str], ModuleType],
) -> None:
    tb = benchmark_script("trusted_base")
    files = {f for _, fs in tb.STEPS for f in fs}
    assert all((ROOT / f).is_file() for f in files)
    for named in ("attnsim/symbolic/sums.py", "attnsim/symbolic/sumsplit.py", "attnsim/proofs/decoding/rewriting.py"):
        assert named in files
    doc = (ROOT / "docs" / "trusted-base.md").read_text(encoding="utf-8")
    assert "[trusted-base-lines.md](trusted-base-lines.md)" in doc
    assert "trusted-base.md" in (ROOT / "docs" / "proofs.md").read_text(encoding="utf-8")


def test_code_lines_leave_out_blanks_comments_and_docstrings(
    tmp_path: Path, benchmark_script: Callable[[str], ModuleType]
) -> None:
    tb = benchmark_script("trusted_base")
    src = (
        '"""Module doc,\non two lines."""\n\n# a comment\n'
        'def f(x):\n    """Doc."""\n    return (x +\n        1)  # why\n'
    )
    (tmp_path / "m.py").write_text(src)
    tb.ROOT = tmp_path
    c = tb.count(tmp_path / "m.py")
    assert (c.lines, c.code) == (8, 3)  # def, return, its continuation


def test_the_coq_trust_list_names_the_specification_and_the_exporter(
    benchmark_script: Callable[[str], ModuleType],
) -> None:
    tb = benchmark_script("trusted_base")
    files = {f for _, fs in tb.COQ_TRUST for f in fs}
    assert all((ROOT / f).is_file() for f in files)
    for named in ("attnsim/coq/Semantics.v", "attnsim/coq/EncoderLayer.v", "attnsim/universal/kernel_export.py"):
        assert named in files


def test_coq_code_lines_leave_out_comments_and_blank_lines(
    benchmark_script: Callable[[str], ModuleType], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tb = benchmark_script("trusted_base")
    v = tmp_path / "X.v"
    v.write_text("(** a (* nested *)\n   comment *)\n\nDefinition x := 1. (* trailing *)\n(* c *) Lemma y : True.\n")
    monkeypatch.setattr(tb, "ROOT", tmp_path)
    c = tb.count_coq(v)
    assert (c.lines, c.code) == (5, 2)
