"""No code reads a fact back out of a proof's detail text (issue 26, item 6): outside the CLI's
printing, ``detail`` is only written, wrapped, sliced and shown; what a caller needs (scope,
counterexample, premises, lemmas, a timeout, the second solver's tally) is a typed field of the
Outcome or Result.

Backs every row of paper_map.md: a soundness check that parses prose (``"no sizes" in out.detail``)
passes as soon as the prose is reworded.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "attnsim"
EXEMPT_DIRS = ("cli",)  # the CLI prints the detail (folds, escapes, clips it)
# reading a detail as text: a membership or equality test, a string method that inspects it, a regex
INSPECTING = {
    *("startswith", "endswith", "find", "rfind", "index", "rindex", "count", "lower", "upper", "casefold"),
    *("partition", "rpartition", "split", "rsplit", "splitlines", "strip", "isdigit"),
}
ALLOWED: set[tuple[str, str]] = set()  # (module, function) pairs that may parse a detail: none


def _is_detail(node: ast.AST) -> bool:
    """``x.detail``, ``x["detail"]``, or a name ``detail`` (a detail passed on, e.g. to a parser)."""
    if isinstance(node, ast.Attribute):
        return node.attr == "detail"
    if isinstance(node, ast.Subscript):
        key = node.slice
        return isinstance(key, ast.Constant) and key.value == "detail"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str" and node.args:
        return _is_detail(node.args[0])
    return isinstance(node, ast.Name) and node.id == "detail"


def parses(source: str) -> list[tuple[int, str, str]]:
    """(line, enclosing function, what) for every place ``source`` reads a detail as data."""
    tree = ast.parse(source)
    found: list[tuple[int, str, str]] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else where
            if isinstance(child, ast.Compare):
                sides = [child.left, *child.comparators]
                for op, right in zip(child.ops, child.comparators, strict=True):
                    if isinstance(op, (ast.In, ast.NotIn)) and _is_detail(right):
                        found.append((child.lineno, where, "membership test on a detail"))
                    if isinstance(op, (ast.Eq, ast.NotEq)) and any(_is_detail(s) for s in sides):
                        found.append((child.lineno, where, "equality test on a detail"))
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
                f = child.func
                if f.attr in INSPECTING and _is_detail(f.value):
                    found.append((child.lineno, where, f"detail.{f.attr}()"))
                if isinstance(f.value, ast.Name) and f.value.id == "re" and any(_is_detail(a) for a in child.args):
                    found.append((child.lineno, where, f"re.{f.attr} on a detail"))
            visit(child, name)

    visit(tree, "<module>")
    return found


def offenders(root: Path = PACKAGE) -> list[str]:
    """Every parse of a detail in the package outside the CLI and :data:`ALLOWED`."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.split("/")[0] in EXEMPT_DIRS:
            continue
        for line, where, what in parses(path.read_text()):
            if (rel, where) not in ALLOWED:
                out.append(f"attnsim/{rel}:{line} ({where}): {what}")
    return out


def test_no_module_outside_the_cli_parses_a_detail() -> None:
    assert offenders() == []


@pytest.mark.parametrize(
    "source",
    [
        'def f(out):\n    return "no sizes" in out.detail\n',
        'def f(r):\n    return "timeout" not in r.detail.lower()\n',
        "def f(r):\n    return r.detail.startswith('worker died')\n",
        "import re\ndef f(res):\n    return re.search(r'holds for (.*)$', res.detail)\n",
        "import re\ndef premises(detail):\n    return re.findall(r'premise: ([^;]+)', detail)\n",
        'def f(r):\n    return str(r["detail"]).startswith("worker died")\n',
        'def f(r):\n    return "DISAGREE" in r["detail"]\n',
    ],
)
def test_each_kind_of_parse_is_found(source: str) -> None:
    """The ways a detail was parsed before (the runner's "no sizes", the timeout and lost-worker
    tests, the scope, premise and cvc5 regexes) are each caught."""
    assert parses(source), source


def test_writing_wrapping_and_showing_a_detail_is_no_parse() -> None:
    ok = (
        "def f(out, r):\n"
        "    a = out.retold(f'case: {out.detail}')\n"
        "    b = r.detail[:120]\n"
        "    c = r.detail.replace('|', '\\\\|')\n"
        "    return Outcome(False, f'{a.detail}; {b}'), c\n"
    )
    assert parses(ok) == []


def test_a_parse_put_back_into_a_module_fails(tmp_path: Path) -> None:
    """The check runs on the real tree: a copy of the runner with its old text test put back is found."""
    runner = (PACKAGE / "verify" / "runner.py").read_text()
    typed = "out.scope is not None and not out.scope.sizes"
    assert typed in runner
    (tmp_path / "verify").mkdir()
    (tmp_path / "verify" / "runner.py").write_text(runner.replace(typed, '"no sizes" in out.detail'))
    (bad,) = offenders(tmp_path)
    assert bad.startswith("attnsim/verify/runner.py:") and "(_check): membership test" in bad
