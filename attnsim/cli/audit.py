"""`attnsim audit`: check that paper_map.md and the code agree, in both directions.

paper_map.md holds one section per paper result: a ``## result`` heading, then the labelled
fields below, each a top-level bullet ``- **label:** text`` whose text may go on in indented
lines or sub-bullets (``  - item``). Everything before the first ``## `` heading is free prose.
Each field appears exactly once per section; any other line in a section is an error, so a typo
cannot silently turn into prose. Free prose is allowed in every field; **references are exactly
the text inside backticks** in three fields, and each must have the field's syntax (a malformed
reference is itself an error):

=================  =========================================================================
field              backticked reference syntax
=================  =========================================================================
``code``           ``package.module:attr`` or ``package.module:Class.attr`` (must import and
                   resolve to an attribute)
``obligations``    an obligation id ``construction/method/detail`` (must be registered), or a
                   family ``prefix*`` (``*`` only at the end; must match at least one registered
                   obligation), each followed by ``(method, method...)``: the methods of the
                   obligations it matches, which must be exactly that set
``tests``          ``tests/path/test_file.py::test_name`` or ``...::TestClass::test_name``
                   (must be collected by pytest; a parametrized test is named without ``[...]``)
=================  =========================================================================

Backticks in ``statement`` and ``beyond / short`` are prose. Coverage, the other direction:
every registered obligation (deep ones included) must match some reference, and every
registered construction must have a section that references its obligations *and* names at
least one resolved ``module:attr``. ``attnsim audit`` exits 0 only when there is nothing
dangling, malformed or missing.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from attnsim.cli.commands import command
from attnsim.proofs import registry
from attnsim.proofs.obligation import Obligation

FIELDS = ("statement", "code", "obligations", "tests", "beyond / short")
SECTION = re.compile(r"^## +(\S.*?)\s*$")
FIELD = re.compile(r"^- \*\*([^*]+):\*\*(.*)$")
REF = re.compile(r"`([^`]+)`")
FUNC = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
OBLIG = re.compile(r"^[\w.+\-]+(/[\w.+\-=,]+)*(/?\*)?$")
TEST = re.compile(r"^tests/[\w/.-]+\.py(::[A-Za-z_]\w*){1,2}$")
METHODS_AFTER = re.compile(r"^\s*\(([^)]*)\)")


class AuditError(ValueError):
    """The map cannot be read at all (no file, no result section)."""


@dataclass
class Section:
    """One result section of the map: its name, heading line and the references of each field."""

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
    """The audit's outcome: sections read, references checked, problems found."""

    map_path: str
    sections: int
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
            "sections": self.sections,
            "references": self.references,
            "covered": self.covered,
            "problems": [asdict(p) for p in self.problems],
        }


# -- parsing ---------------------------------------------------------------------------------
def _fields(section: Section, body: list[tuple[int, str]]) -> dict[str, str]:
    """The text of each labelled field of one section (continuation lines joined by newlines);
    a line outside a field, an unknown label or a repeated one is recorded as malformed."""
    text: dict[str, list[str]] = {}
    current: str | None = None
    for lineno, line in body:
        if not line.strip():
            continue
        m = FIELD.match(line)
        if m:
            label = m.group(1).strip().lower()
            if label not in FIELDS:
                section.malformed.append(("section", f"line {lineno}: unknown field **{m.group(1)}:**"))
                current = None
            elif label in text:
                section.malformed.append(("section", f"line {lineno}: field **{label}:** given twice"))
                current = None
            else:
                current = label
                text[label] = [m.group(2)]
        elif line[:1].isspace() and current is not None:
            text[current].append(line)
        else:
            section.malformed.append(("section", f"line {lineno}: text outside a field: {line.strip()[:60]}"))
    for label in FIELDS:
        if label not in text:
            section.malformed.append(("section", f"no **{label}:** field"))
    return {label: "\n".join(lines) for label, lines in text.items()}


def _references(section: Section, fields: dict[str, str]) -> None:
    """Classify the backticked references of the code, obligations and tests fields."""
    for ref in REF.findall(fields.get("code", "")):
        if FUNC.match(ref):
            section.functions.append(ref)
        else:
            section.malformed.append(("code", ref))
    obligations = fields.get("obligations", "")
    for m in REF.finditer(obligations):
        ref = m.group(1)
        if not OBLIG.match(ref) or ref.count("/") < 1 or "*" in ref[:-1]:
            section.malformed.append(("obligations", ref))
            continue
        after = METHODS_AFTER.match(obligations[m.end() :])
        methods = tuple(sorted(x.strip() for x in after.group(1).split(",") if x.strip())) if after else None
        section.obligations.append((ref, methods))
    for ref in REF.findall(fields.get("tests", "")):
        if TEST.match(ref):
            section.tests.append(ref)
        else:
            section.malformed.append(("tests", ref))


def parse_map(text: str) -> list[Section]:
    """The result sections of the map: every ``## `` heading and the fields under it."""
    heads = [(i, m.group(1)) for i, line in enumerate(text.splitlines()) if (m := SECTION.match(line))]
    if not heads:
        raise AuditError(
            "no result section: the map needs `## result` headings, each with the fields "
            + ", ".join(f"**{f}:**" for f in FIELDS)
        )
    lines = text.splitlines()
    sections: list[Section] = []
    for k, (start, name) in enumerate(heads):
        stop = heads[k + 1][0] if k + 1 < len(heads) else len(lines)
        section = Section(start + 1, name)
        body = [(i + 1, lines[i]) for i in range(start + 1, stop)]
        _references(section, _fields(section, body))
        sections.append(section)
    return sections


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


def _check_sections(
    sections: list[Section], obs: Sequence[Obligation], add: Callable[..., None]
) -> tuple[set[str], dict[int, bool]]:
    """Each section's own references: malformed ones, functions that do not resolve, obligations
    that match nothing or state other methods, each recorded by ``add(kind, ref, detail, section)``.
    Returns the obligation ids the map covers and, per section line, whether a function of it
    resolves."""
    covered: set[str] = set()
    resolves: dict[int, bool] = {}
    for sec in sections:
        for where, ref in sec.malformed:
            if where == "section":
                add("malformed", sec.result, f"{ref} (see `attnsim audit --help`)", sec)
            else:
                add("malformed", ref, f"not a valid {where} reference (see `attnsim audit --help`)", sec)
        ok_funcs = 0
        for ref in sec.functions:
            why = resolve(ref)
            if why:
                add("dangling-function", ref, why, sec)
            else:
                ok_funcs += 1
        resolves[sec.line] = ok_funcs > 0
        for ref, methods in sec.obligations:
            hit = [o for o in obs if _matches(ref, o.id)]
            if not hit:
                add("dangling-obligation", ref, "matches no registered obligation", sec)
                continue
            covered.update(o.id for o in hit)
            have = tuple(sorted({o.method for o in hit}))
            if methods is None:
                add("method-missing", ref, f"state its methods after it: ({', '.join(have)})", sec)
            elif methods != have:
                add("method-mismatch", ref, f"map says ({', '.join(methods)}), registry has ({', '.join(have)})", sec)
    return covered, resolves


def audit(map_path: Path, root: Path | None = None, check_tests: bool = True) -> AuditReport:  # noqa: C901
    """Run every check on the map at ``map_path``; test paths are relative to ``root``."""

    if not map_path.is_file():
        raise AuditError(f"no map at {map_path} (pass --map PATH/paper_map.md)")
    root = root or map_path.resolve().parent
    sections = parse_map(map_path.read_text(encoding="utf-8"))
    # start pytest's collection first: it runs in a subprocess while the imports are checked here
    test_refs = [(sec, t) for sec in sections for t in sec.tests]
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

    def add(kind: str, ref: str, detail: str, sec: Section | None = None) -> None:
        problems.append(Problem(kind, ref, detail, sec.line if sec else None, sec.result if sec else ""))

    covered, resolves = _check_sections(sections, obs, add)
    # tests
    if check_tests and test_refs:
        ids, errors = _collected(proc) if proc is not None else (set(), "")
        if errors:
            add("collection-error", " ".join(present), errors.strip().splitlines()[-1] if errors.strip() else "?")
        for sec, t in test_refs:
            f = t.split("::")[0]
            if f not in present:
                add("dangling-test", t, f"no file {f}", sec)
            elif not is_collected(t, ids):
                add("dangling-test", t, "pytest does not collect it", sec)
    # coverage
    for o in obs:
        if o.id not in covered:
            add("missing-obligation", o.id, f"registered ({o.method}, {o.paper_ref}) but in no section")
    for name in cons:
        naming = [sec for sec in sections if any(ref.split("/")[0] == name for ref, _ in sec.obligations)]
        if not naming:
            add("missing-construction", name, "registered construction named in no section's obligations")
        elif not any(resolves[sec.line] for sec in naming):
            add("missing-construction", name, "its sections name no module:function that resolves")
    refs = {
        "functions": sum(len(sec.functions) for sec in sections),
        "obligations": sum(len(sec.obligations) for sec in sections),
        "tests": len(test_refs),
    }
    cov = {
        "obligations": len(covered),
        "obligations_registered": len(obs),
        "constructions_registered": len(cons),
    }
    return AuditReport(str(map_path), len(sections), refs, cov, problems)


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
        for col in ("kind", "reference", "line", "section", "detail"):
            table.add_column(col, overflow="fold")
        for p in rep.problems:
            table.add_row(f"[red]{p.kind}[/]", p.ref, "" if p.line is None else str(p.line), p.result, p.detail[:200])
        out.print(table)
    r, c = rep.references, rep.covered
    out.print(
        f"{rep.sections} sections; {r['functions']} functions, {r['obligations']} obligation refs, {r['tests']} tests; "
        f"{c['obligations']}/{c['obligations_registered']} obligations and "
        f"{c['constructions_registered']} constructions registered: "
        + ("[green]clean[/]" if rep.ok else f"[bold red]{len(rep.problems)} problem(s)[/]")
    )
    return 0 if rep.ok else 1
