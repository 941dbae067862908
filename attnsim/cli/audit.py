"""`attnsim audit`: check that paper_map.md and the code agree, in both directions.

paper_map.md is a markdown table (the first table in the file whose header has the columns
below). Free prose is allowed in every cell; **references are exactly the text inside
backticks** in three columns, and each must have the column's syntax (a malformed reference is
itself an error, so a typo cannot silently turn into prose):

=================  =========================================================================
column             backticked reference syntax
=================  =========================================================================
``construction``   ``package.module:attr`` or ``package.module:Class.attr`` (must import and
                   resolve to an attribute)
``obligations``    an obligation id ``construction/method/detail`` (must be registered), or a
                   family ``prefix*`` (``*`` only at the end; must match at least one registered
                   obligation), each followed by ``(method, method...)``: the methods of the
                   obligations it matches, which must be exactly that set
``tests``          ``tests/path/test_file.py::test_name`` or ``...::TestClass::test_name``
                   (must be collected by pytest; a parametrized test is named without ``[...]``)
=================  =========================================================================

Coverage, the other direction: every registered obligation (deep ones included) must match
some reference, and every registered construction must have a row that references its
obligations *and* names at least one resolved ``module:attr``. ``attnsim audit`` exits 0 only
when there is nothing dangling, malformed or missing.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from attnsim.cli.commands import command
from attnsim.proofs import registry

COLUMNS = ("result", "statement", "construction", "obligations", "tests", "beyond / short of the paper")
REF = re.compile(r"`([^`]+)`")
FUNC = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
OBLIG = re.compile(r"^[\w.+\-]+(/[\w.+\-=,]+)*(/?\*)?$")
TEST = re.compile(r"^tests/[\w/.-]+\.py(::[A-Za-z_]\w*){1,2}$")
METHODS_AFTER = re.compile(r"^\s*\(([^)]*)\)")


class AuditError(ValueError):
    """The map cannot be read at all (no file, no table, wrong header)."""


@dataclass
class Row:
    """One row of the map: its result name, line number and the references of each column."""

    line: int
    result: str
    functions: list[str] = field(default_factory=list)
    obligations: list[tuple[str, tuple[str, ...] | None]] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    malformed: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Problem:
    """Something dangling, malformed or missing; ``kind`` names the check that failed."""

    kind: str
    ref: str
    detail: str
    line: int | None = None
    result: str = ""


@dataclass
class AuditReport:
    """The audit's outcome: rows read, references checked, problems found."""

    map_path: str
    rows: int
    references: dict[str, int]
    covered: dict[str, int]
    problems: list[Problem]

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "map": self.map_path,
            "rows": self.rows,
            "references": self.references,
            "covered": self.covered,
            "problems": [asdict(p) for p in self.problems],
        }


# -- parsing ---------------------------------------------------------------------------------
def _cells(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|"):
        s = s[:-1]
    # a literal pipe inside a cell is written \|
    parts = re.split(r"(?<!\\)\|", s)
    return [p.strip().replace("\\|", "|") for p in parts]


def parse_map(text: str) -> list[Row]:
    """The rows of the first table whose header is :data:`COLUMNS` (case-insensitive)."""
    lines = text.splitlines()
    start = None
    for i, line in enumerate(lines):
        if line.strip().startswith("|") and [c.lower() for c in _cells(line)] == list(COLUMNS):
            start = i
            break
    if start is None:
        raise AuditError(f"no table with the header | {' | '.join(COLUMNS)} |")
    if start + 1 >= len(lines) or not re.match(r"^\s*\|?[\s:|-]+\|?\s*$", lines[start + 1]):
        raise AuditError(f"line {start + 2}: the header must be followed by a |---| separator row")
    rows: list[Row] = []
    for i in range(start + 2, len(lines)):
        line = lines[i]
        if not line.strip().startswith("|"):
            break
        cells = _cells(line)
        if len(cells) != len(COLUMNS):
            rows.append(Row(i + 1, cells[0] if cells else "?", malformed=[("row", f"{len(cells)} cells")]))
            continue
        row = Row(i + 1, cells[0])
        for ref in REF.findall(cells[2]):
            if FUNC.match(ref):
                row.functions.append(ref)
            else:
                row.malformed.append(("construction", ref))
        for m in REF.finditer(cells[3]):
            ref = m.group(1)
            if not OBLIG.match(ref) or ref.count("/") < 1 or "*" in ref[:-1]:
                row.malformed.append(("obligations", ref))
                continue
            after = METHODS_AFTER.match(cells[3][m.end() :])
            methods = tuple(sorted(x.strip() for x in after.group(1).split(",") if x.strip())) if after else None
            row.obligations.append((ref, methods))
        for ref in REF.findall(cells[4]):
            if TEST.match(ref):
                row.tests.append(ref)
            else:
                row.malformed.append(("tests", ref))
        rows.append(row)
    return rows


# -- checks ----------------------------------------------------------------------------------
def resolve(ref: str) -> str | None:
    """None when ``module:attr.attr`` imports and resolves, else the reason."""
    mod_name, _, qual = ref.partition(":")
    try:
        obj: Any = importlib.import_module(mod_name)
    except Exception as exc:  # an import error of any kind is a dangling reference
        return f"module {mod_name} does not import ({type(exc).__name__}: {exc})"
    for part in qual.split("."):
        if not hasattr(obj, part):
            return f"{mod_name} has no attribute {qual}"
        obj = getattr(obj, part)
    return None


def _collect_cmd(files: list[str]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        "--collect-only",
        "-q",
        "-o",
        "addopts=",
        "--import-mode=importlib",
        "-p",
        "no:cacheprovider",
        *files,
    ]


def _collected(proc: subprocess.Popen[str]) -> tuple[set[str], str]:
    try:
        stdout, stderr = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        return set(), "pytest collection timed out after 600 s"
    ids = {ln.strip() for ln in stdout.splitlines() if "::" in ln and not ln.startswith(" ")}
    errors = "" if proc.returncode in (0, 5) else stdout[-2000:] + stderr[-1000:]
    return ids, errors


def collect_tests(files: list[str], root: Path) -> tuple[set[str], str]:
    """Node ids pytest collects from ``files`` (run in a subprocess, from ``root``), and errors."""
    if not files:
        return set(), ""
    proc = subprocess.Popen(_collect_cmd(files), cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return _collected(proc)


def is_collected(ref: str, ids: set[str]) -> bool:
    """A test reference names a collected test exactly: the node id itself, or one of its
    parametrized cases ``ref[...]``; a reference that is only a prefix of a name is not one."""
    return ref in ids or any(i.startswith(ref + "[") and i.endswith("]") for i in ids)


def _matches(ref: str, oid: str) -> bool:
    return oid.startswith(ref[:-1]) if ref.endswith("*") else oid == ref


def audit(map_path: Path, root: Path | None = None, check_tests: bool = True) -> AuditReport:
    """Run every check on the map at ``map_path``; test paths are relative to ``root``."""

    if not map_path.is_file():
        raise AuditError(f"no map at {map_path} (pass --map PATH/paper_map.md)")
    root = root or map_path.resolve().parent
    rows = parse_map(map_path.read_text(encoding="utf-8"))
    # start pytest's collection first: it runs in a subprocess while the imports are checked here
    test_refs = [(row, t) for row in rows for t in row.tests]
    files = sorted({t.split("::")[0] for _, t in test_refs})
    present = [f for f in files if (root / f).is_file()]
    proc = None
    if check_tests and present:
        proc = subprocess.Popen(
            _collect_cmd(present), cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    problems: list[Problem] = []
    obs = registry.all_obligations(include_deep=True)
    cons = registry.constructions()

    def add(kind: str, ref: str, detail: str, row: Row | None = None) -> None:
        problems.append(Problem(kind, ref, detail, row.line if row else None, row.result if row else ""))

    covered: set[str] = set()
    row_resolves: dict[int, bool] = {}
    for row in rows:
        for col, ref in row.malformed:
            add("malformed", ref, f"not a valid {col} reference (see `attnsim audit --help`)", row)
        ok_funcs = 0
        for ref in row.functions:
            why = resolve(ref)
            if why:
                add("dangling-function", ref, why, row)
            else:
                ok_funcs += 1
        row_resolves[row.line] = ok_funcs > 0
        for ref, methods in row.obligations:
            hit = [o for o in obs if _matches(ref, o.id)]
            if not hit:
                add("dangling-obligation", ref, "matches no registered obligation", row)
                continue
            covered.update(o.id for o in hit)
            have = tuple(sorted({o.method for o in hit}))
            if methods is None:
                add("method-missing", ref, f"state its methods after it: ({', '.join(have)})", row)
            elif methods != have:
                add("method-mismatch", ref, f"map says ({', '.join(methods)}), registry has ({', '.join(have)})", row)
    # tests
    if check_tests and test_refs:
        ids, errors = _collected(proc) if proc is not None else (set(), "")
        if errors:
            add("collection-error", " ".join(present), errors.strip().splitlines()[-1] if errors.strip() else "?")
        for row, t in test_refs:
            f = t.split("::")[0]
            if f not in present:
                add("dangling-test", t, f"no file {f}", row)
            elif not is_collected(t, ids):
                add("dangling-test", t, "pytest does not collect it", row)
    # coverage
    for o in obs:
        if o.id not in covered:
            add("missing-obligation", o.id, f"registered ({o.method}, {o.paper_ref}) but in no row")
    for name in cons:
        rows_for = [r for r in rows if any(ref.split("/")[0] == name for ref, _ in r.obligations)]
        if not rows_for:
            add("missing-construction", name, "registered construction named in no row's obligations")
        elif not any(row_resolves[r.line] for r in rows_for):
            add("missing-construction", name, "its rows name no module:function that resolves")
    refs = {
        "functions": sum(len(r.functions) for r in rows),
        "obligations": sum(len(r.obligations) for r in rows),
        "tests": len(test_refs),
    }
    cov = {
        "obligations": len(covered),
        "obligations_registered": len(obs),
        "constructions_registered": len(cons),
    }
    return AuditReport(str(map_path), len(rows), refs, cov, problems)


def default_map() -> Path:
    """paper_map.md in the current directory, else at the root of the source checkout.

    An installed (non-editable) package ships no map and no tests: then the error says to run
    from the checkout or to pass ``--map`` (and ``--root`` for its tests).
    """
    here = Path.cwd() / "paper_map.md"
    if here.is_file():
        return here
    checkout = Path(__file__).resolve().parents[2] / "paper_map.md"  # attnsim/cli/audit.py -> the checkout
    if checkout.is_file():
        return checkout
    raise AuditError(
        f"no paper_map.md in {Path.cwd()} nor in a source checkout next to {Path(__file__).resolve().parent} "
        "(an installed package ships none): run from the checkout or pass --map PATH/paper_map.md"
    )


# -- CLI -------------------------------------------------------------------------------------
def _args(p: argparse.ArgumentParser) -> None:
    p.description = __doc__
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument(
        "--map", type=Path, default=None, help="the map to audit (default: ./paper_map.md, else the source checkout's)"
    )
    p.add_argument("--root", type=Path, default=None, help="where test paths start (default: the map's folder)")
    p.add_argument("--no-tests", action="store_true", help="skip the pytest collection of the tests column")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")


@command("audit", _args)
def audit_cmd(args: argparse.Namespace) -> int:
    """Check paper_map.md against the code: dangling references and unmapped obligations."""
    from rich.console import Console
    from rich.table import Table

    path = args.map or default_map()
    err = Console(stderr=True)
    with err.status("auditing paper_map.md (importing, collecting tests)"):
        rep = audit(path, args.root, check_tests=not args.no_tests)
    if args.json:
        print(json.dumps(rep.as_dict(), indent=1))
        return 0 if rep.ok else 1
    out = Console(width=max(140, Console().width))
    if rep.problems:
        table = Table(title=f"paper_map.md audit: {len(rep.problems)} problem(s)")
        for col in ("kind", "reference", "line", "row", "detail"):
            table.add_column(col, overflow="fold")
        for p in rep.problems:
            table.add_row(f"[red]{p.kind}[/]", p.ref, "" if p.line is None else str(p.line), p.result, p.detail[:200])
        out.print(table)
    r, c = rep.references, rep.covered
    out.print(
        f"{rep.rows} rows; {r['functions']} functions, {r['obligations']} obligation refs, {r['tests']} tests; "
        f"{c['obligations']}/{c['obligations_registered']} obligations and "
        f"{c['constructions_registered']} constructions registered: "
        + ("[green]clean[/]" if rep.ok else f"[bold red]{len(rep.problems)} problem(s)[/]")
    )
    return 0 if rep.ok else 1
