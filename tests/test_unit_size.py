"""Long units, measured (issue 25): modules over 500 lines and functions over 80 lines in ``attnsim/``.

The issue's bar is "no module over 500 lines, no function over 80 lines, except where the closing
note says why".  ``KNOWN`` lists the units still over the bar with their size when last measured:
the test fails when a new unit crosses the bar, when a listed one grows, or when a listed one has
been split (then delete its line, so the list only shrinks).  Run this file as a script to print
the current listing: ``PYTHONPATH=$PWD python tests/test_unit_size.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import attnsim

PACKAGE = Path(attnsim.__file__).parent
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80

# unit -> lines when last measured; a module is its path, a function is ``path:Qualified.name``.
KNOWN: dict[str, int] = {
}


def long_units(package: Path = PACKAGE) -> dict[str, int]:
    """Every module over ``MAX_MODULE_LINES`` and function over ``MAX_FUNCTION_LINES``, with its length."""
    out: dict[str, int] = {}
    for path in sorted(package.rglob("*.py")):
        source = path.read_text()
        rel = path.relative_to(package.parent).as_posix()
        if (n := len(source.splitlines())) > MAX_MODULE_LINES:
            out[rel] = n

        def visit(node: ast.AST, prefix: str, rel: str = rel) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    assert child.end_lineno is not None
                    if (n := child.end_lineno - child.lineno + 1) > MAX_FUNCTION_LINES:
                        out[f"{rel}:{prefix}{child.name}"] = n
                    visit(child, f"{prefix}{child.name}.")
                elif isinstance(child, ast.ClassDef):
                    visit(child, f"{prefix}{child.name}.")

        visit(ast.parse(source), "")
    return out


def test_no_new_long_unit() -> None:
    """A module or function crossing the bar is split, or listed in ``KNOWN`` with a reason."""
    new = sorted(set(long_units()) - set(KNOWN))
    assert not new, new


def test_no_listed_unit_grows() -> None:
    """A unit already over the bar does not grow further."""
    grown = {u: (KNOWN[u], n) for u, n in long_units().items() if u in KNOWN and n > KNOWN[u]}
    assert not grown, grown


def test_split_units_leave_the_list() -> None:
    """Once a listed unit is under the bar (or gone), its line in ``KNOWN`` is deleted."""
    stale = sorted(set(KNOWN) - set(long_units()))
    assert not stale, stale


def test_the_measure_sees_a_long_function(tmp_path: Path) -> None:
    """The measure itself can fail: an 81-line method of a class is reported by its qualified name."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    body = "\n".join(f"        x{i} = {i}" for i in range(80))
    (pkg / "m.py").write_text(f"class C:\n    def f(self):\n{body}\n")
    assert long_units(pkg) == {"pkg/m.py:C.f": 81}


if __name__ == "__main__":
    units = long_units()
    modules = {u: n for u, n in units.items() if ":" not in u}
    functions = {u: n for u, n in units.items() if ":" in u}
    print(f"{len(modules)} modules over {MAX_MODULE_LINES} lines:")
    for u, n in sorted(modules.items(), key=lambda kv: -kv[1]):
        print(f"  {n:5d}  {u}")
    print(f"{len(functions)} functions over {MAX_FUNCTION_LINES} lines:")
    for u, n in sorted(functions.items(), key=lambda kv: -kv[1]):
        print(f"  {n:5d}  {u}")
