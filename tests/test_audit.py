"""`attnsim audit`: paper_map.md against the code (the map backs every result of the paper)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim.cli.audit import COLUMNS, AuditError, audit, is_collected, parse_map
from attnsim.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
HEADER = "| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS) + "\n"
GOOD_ROW = (
    "| Lemma (transpose) | A^T | `attnsim.lemmas.transpose:transpose` | `transpose/*` "
    "(exact, numeric, sympy, z3-parametric) | `tests/lemmas/test_transpose.py::test_transpose_heads_and_cost` | - |\n"
)


def _write(tmp_path: Path, rows: str) -> Path:
    p = tmp_path / "paper_map.md"
    p.write_text("# map\n\n" + HEADER + rows, encoding="utf-8")
    return p


def test_real_map_is_clean() -> None:
    """The repository's paper_map.md resolves completely and covers every obligation."""
    rep = audit(ROOT / "paper_map.md", ROOT)
    assert rep.ok, "\n".join(f"{p.kind}: {p.ref}: {p.detail}" for p in rep.problems)
    assert rep.covered["obligations"] == rep.covered["obligations_registered"]


def test_dangling_references_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each kind of dangling reference is reported and makes the exit code non-zero."""
    rows = GOOD_ROW + (
        "| broken | x | `attnsim.lemmas.transpose:no_such_function` `attnsim.no_such_module:f` | "
        "`transpose/sympy/no-such-id` (sympy) `nosuch/*` (exact) `matmul/*` (sympy) | "
        "`tests/lemmas/test_transpose.py::test_no_such_test` `tests/no_such_file.py::test_x` "
        "`tests/lemmas/test_transpose.py::test_transpose_heads` | - |\n"
    )
    path = _write(tmp_path, rows)
    rep = audit(path, ROOT)
    kinds = {(p.kind, p.ref) for p in rep.problems}
    assert ("dangling-function", "attnsim.lemmas.transpose:no_such_function") in kinds
    assert ("dangling-function", "attnsim.no_such_module:f") in kinds
    assert ("dangling-obligation", "transpose/sympy/no-such-id") in kinds
    assert ("dangling-obligation", "nosuch/*") in kinds
    assert ("method-mismatch", "matmul/*") in kinds
    assert ("dangling-test", "tests/lemmas/test_transpose.py::test_no_such_test") in kinds
    assert ("dangling-test", "tests/no_such_file.py::test_x") in kinds
    # only a prefix of the real test_transpose_heads_and_cost: names no test
    assert ("dangling-test", "tests/lemmas/test_transpose.py::test_transpose_heads") in kinds
    assert not any(p.ref == "tests/lemmas/test_transpose.py::test_transpose_heads_and_cost" for p in rep.problems)
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
    rows = GOOD_ROW.replace("`transpose/*`", "`transpose/*` `matmul` `tests/x.py::y`")
    rep = audit(_write(tmp_path, rows), ROOT, check_tests=False)
    kinds = {p.kind for p in rep.problems}
    assert {"missing-obligation", "missing-construction", "malformed"} <= kinds
    missing = {p.ref for p in rep.problems if p.kind == "missing-construction"}
    assert "matmul" in missing and "transpose" not in missing


def test_method_must_be_stated(tmp_path: Path) -> None:
    """An obligation reference without its methods, or with a wrong set, fails."""
    rep = audit(_write(tmp_path, GOOD_ROW.replace(" (exact, numeric, sympy, z3-parametric)", "")), ROOT, False)
    assert any(p.kind == "method-missing" for p in rep.problems)
    rep = audit(_write(tmp_path, GOOD_ROW.replace("(exact, ", "(all-sizes, ")), ROOT, False)
    assert any(p.kind == "method-mismatch" for p in rep.problems)


def test_unreadable_map_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No table, or no file: a clear error, exit 2."""
    p = tmp_path / "m.md"
    p.write_text("no table here\n", encoding="utf-8")
    with pytest.raises(AuditError, match=r"^no table with the header \| result \| statement"):
        audit(p)
    with pytest.raises(AuditError, match=r"^no map at "):
        audit(tmp_path / "missing.md")
    assert main(["audit", "--map", str(p)]) == 2
    err = capsys.readouterr().err
    assert "error" in err and "no table with the header" in err and len(err.strip().splitlines()) == 1
    assert main(["audit", "--map", str(tmp_path / "missing.md")]) == 2
    err = capsys.readouterr().err
    assert "error" in err and "no map at" in err and len(err.strip().splitlines()) == 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="abc:/.*_`() |tes0", max_size=30), min_size=6, max_size=6))
def test_parser_classifies_every_backticked_reference(cells: list[str]) -> None:
    """Any cell text parses without crashing; every backticked string is either a reference
    of its column's syntax or reported as malformed (none is silently dropped)."""
    row = "| " + " | ".join(c.replace("|", "") for c in cells) + " |\n"
    text = HEADER + row
    rows = parse_map(text)
    assert len(rows) == 1
    r = rows[0]
    if not r.malformed or r.malformed[0][0] != "row":
        import re

        ticks = sum(len(re.findall(r"`([^`]+)`", c.replace("|", ""))) for c in cells[2:5])
        assert len(r.functions) + len(r.obligations) + len(r.tests) + len(r.malformed) == ticks
