"""`attnsim audit`: paper_map.md against the code (the map backs every result of the paper)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim.cli.audit import FIELDS, AuditError, audit, is_collected, parse_map
from attnsim.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
GOOD_SECTION = (
    "## Lemma (transpose)\n\n"
    "- **statement:** A^T\n"
    "- **code:** `attnsim.constructions.transpose.program:transpose`\n"
    "- **obligations:**\n"
    "  - `transpose/*` (exact, numeric, sympy, z3-parametric)\n"
    "- **tests:** `tests/constructions/test_transpose.py::test_transpose_heads_and_cost`\n"
    "- **beyond / short:** -\n\n"
)


def _write(tmp_path: Path, sections: str) -> Path:
    p = tmp_path / "paper_map.md"
    p.write_text("# map\n\nFree prose before the first section.\n\n" + sections, encoding="utf-8")
    return p


def test_real_map_is_clean() -> None:
    """The repository's paper_map.md resolves completely and covers every obligation."""
    rep = audit(ROOT / "paper_map.md", ROOT)
    assert rep.ok, "\n".join(f"{p.kind}: {p.ref}: {p.detail}" for p in rep.problems)
    assert rep.covered["obligations"] == rep.covered["obligations_registered"]


def test_dangling_references_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each kind of dangling reference is reported and makes the exit code non-zero."""
    sections = GOOD_SECTION + (
        "## broken\n"
        "- **statement:** x\n"
        "- **code:** `attnsim.constructions.transpose.program:no_such_function`\n"
        "  - `attnsim.no_such_module:f`\n"
        "- **obligations:** `transpose/sympy/no-such-id` (sympy)\n"
        "  - `nosuch/*` (exact) `matmul/*` (sympy)\n"
        "- **tests:**\n"
        "  - `tests/constructions/test_transpose.py::test_no_such_test` `tests/no_such_file.py::test_x`\n"
        "  - `tests/constructions/test_transpose.py::test_transpose_heads`\n"
        "- **beyond / short:** -\n"
    )
    path = _write(tmp_path, sections)
    rep = audit(path, ROOT)
    kinds = {(p.kind, p.ref) for p in rep.problems}
    assert ("dangling-function", "attnsim.constructions.transpose.program:no_such_function") in kinds
    assert ("dangling-function", "attnsim.no_such_module:f") in kinds
    assert ("dangling-obligation", "transpose/sympy/no-such-id") in kinds
    assert ("dangling-obligation", "nosuch/*") in kinds
    assert ("method-mismatch", "matmul/*") in kinds
    assert ("dangling-test", "tests/constructions/test_transpose.py::test_no_such_test") in kinds
    assert ("dangling-test", "tests/no_such_file.py::test_x") in kinds
    # only a prefix of the real test_transpose_heads_and_cost: names no test
    assert ("dangling-test", "tests/constructions/test_transpose.py::test_transpose_heads") in kinds
    full = "tests/constructions/test_transpose.py::test_transpose_heads_and_cost"
    assert not any(p.ref == full for p in rep.problems)
    assert main(["audit", "--map", str(path), "--root", str(ROOT), "--json", "--no-tests"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is False and out["problems"]
    # table mode too (issue 30 item 10): an audit that finds problems must not exit 0 in CI
    assert main(["audit", "--map", str(path), "--root", str(ROOT), "--no-tests"]) == 1
    assert "problem(s)" in capsys.readouterr().out


NAME = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)


@settings(max_examples=100, deadline=None)
@given(NAME, st.from_regex(r"[a-z0-9_]{1,5}", fullmatch=True), st.from_regex(r"[a-z0-9-]{1,5}", fullmatch=True))
def test_test_names_match_exactly(name: str, more: str, param: str) -> None:
    """A test reference resolves to the node id itself or its parametrized cases, never to a
    longer name it is a prefix of (nor to a test of a class it names)."""
    ref = f"tests/t.py::{name}"
    assert is_collected(ref, {ref})
    assert is_collected(ref, {f"{ref}[{param}]"})
    assert not is_collected(ref, {f"{ref}{more}", f"{ref}{more}[{param}]", f"{ref}::test_{more}"})
    assert not is_collected(ref, {f"tests/other.py::{name}", f"tests/t.py::{more}{name}"})


def test_missing_coverage_and_malformed(tmp_path: Path) -> None:
    """Unmapped obligations and constructions are missing; a malformed reference is an error."""
    sections = GOOD_SECTION.replace("`transpose/*`", "`transpose/*` `matmul` `tests/x.py::y`")
    rep = audit(_write(tmp_path, sections), ROOT, check_tests=False)
    kinds = {p.kind for p in rep.problems}
    assert {"missing-obligation", "missing-construction", "malformed"} <= kinds
    missing = {p.ref for p in rep.problems if p.kind == "missing-construction"}
    assert "matmul" in missing and "transpose" not in missing


def test_method_must_be_stated(tmp_path: Path) -> None:
    """An obligation reference without its methods, or with a wrong set, fails."""
    rep = audit(_write(tmp_path, GOOD_SECTION.replace(" (exact, numeric, sympy, z3-parametric)", "")), ROOT, False)
    assert any(p.kind == "method-missing" for p in rep.problems)
    rep = audit(_write(tmp_path, GOOD_SECTION.replace("(exact, ", "(all-sizes, ")), ROOT, False)
    assert any(p.kind == "method-mismatch" for p in rep.problems)


def test_unreadable_map_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No result section, or no file: a clear error, exit 2."""
    p = tmp_path / "m.md"
    p.write_text("no section here\n", encoding="utf-8")
    with pytest.raises(AuditError, match=r"^no result section: the map needs `## result` headings"):
        audit(p)
    with pytest.raises(AuditError, match=r"^no map at "):
        audit(tmp_path / "missing.md")
    assert main(["audit", "--map", str(p)]) == 2
    err = capsys.readouterr().err
    assert "error" in err and "no result section" in err and len(err.strip().splitlines()) == 1
    assert main(["audit", "--map", str(tmp_path / "missing.md")]) == 2
    err = capsys.readouterr().err
    assert "error" in err and "no map at" in err and len(err.strip().splitlines()) == 1


def test_section_structure_is_strict(tmp_path: Path) -> None:
    """A missing, unknown or repeated field, or a line outside a field, is malformed: nothing a
    section holds is silently dropped as prose."""
    cases = {
        "missing": GOOD_SECTION.replace(
            "- **tests:** `tests/constructions/test_transpose.py::test_transpose_heads_and_cost`\n", ""
        ),
        "unknown": GOOD_SECTION.replace("- **statement:**", "- **statment:**"),
        "twice": GOOD_SECTION.replace("- **beyond / short:** -\n", "- **beyond / short:** -\n- **code:** x\n"),
        "outside": GOOD_SECTION.replace("- **statement:** A^T\n", "- **statement:** A^T\nstray `transpose/*`\n"),
    }
    for case, text in cases.items():
        rep = audit(_write(tmp_path, text), ROOT, check_tests=False)
        malformed = [p for p in rep.problems if p.kind == "malformed" and p.ref == "Lemma (transpose)"]
        assert malformed, case
    assert not any(p.kind == "malformed" for p in audit(_write(tmp_path, GOOD_SECTION), ROOT, False).problems)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="abc:/.*_`() -tes0", max_size=30), min_size=5, max_size=5))
def test_parser_classifies_every_backticked_reference(texts: list[str]) -> None:
    """Any field text parses without crashing; every backticked string of the code, obligations
    and tests fields is either a reference of its field's syntax or reported as malformed (none is
    silently dropped)."""
    body = "".join(f"- **{label}:** {t}\n" for label, t in zip(FIELDS, texts, strict=True))
    sections = parse_map("## r\n" + body)
    assert len(sections) == 1
    s = sections[0]
    ticks = sum(len(re.findall(r"`([^`]+)`", t)) for t in texts[1:4])
    assert len(s.functions) + len(s.obligations) + len(s.tests) + len(s.malformed) == ticks
