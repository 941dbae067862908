"""The package's architecture, checked: imports run down the floors, never up, and form no circle.

Floors, bottom to top (``docs/architecture.md``): the language with its arithmetic backends
(``rasp``), the solver kit (``proofs``), symbolic execution and the specifications (``symbolic``),
the constructions (``lemmas``, ``applications``, ``simulator``), the verification harness
(``verify``), executable extraction (``compile``), the report, the catalogue of every
obligation, and the command line (one module per subcommand).  A module may import its own floor or a lower one.
An import placed inside a function counts like any other: hiding one there does not dodge this
test.  The only exceptions are optional third-party dependencies (torch, dask), never our modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import attnsim

PACKAGE = Path(attnsim.__file__).parent

FLOORS: dict[str, int] = {
    "version": 0,
    "resources": 0,  # memory available, byte units, the refusal rule
    "rasp": 0,
    "numeric": 1,  # the planned numeric executor (imports the language)
    "rasp.engine": 1,  # evaluate and trace: the oracle or the numeric executor, by backend
    "proofs": 1,
    "symbolic": 2,
    "lemmas": 3,
    "applications": 4,
    "simulator": 5,
    "verify": 6,
    "compile": 7,
    "report": 8,
    "catalog": 9,  # names every construction and obligation module (explicit imports)
    "cli": 10,  # one module per subcommand
    "__init__": 11,  # the public facade: attnsim.compile, attnsim.UniversalSimulator, ...
    "__main__": 12,  # python -m attnsim
}


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _floor(module: str) -> int:
    """The floor of the longest dotted prefix listed (a module may sit above its package)."""
    parts = module.split(".")[1:]
    if not parts:
        return FLOORS["__init__"]
    return next(FLOORS[k] for n in range(len(parts), 0, -1) if (k := ".".join(parts[:n])) in FLOORS)


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """(imported attnsim module, line, inside a function) for every import of ours in ``path``."""
    tree = ast.parse(path.read_text())
    typing_only = {  # `if TYPE_CHECKING:` imports: annotations only, never run
        id(n)
        for branch in ast.walk(tree)
        if isinstance(branch, ast.If) and ast.unparse(branch.test).endswith("TYPE_CHECKING")
        for n in ast.walk(branch)
    }
    inner: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner.update(id(n) for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom)))
    out = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("attnsim"):
            assert node.module is not None
            for a in node.names:  # `from attnsim.x import y` may import the module attnsim.x.y
                sub = f"{node.module}.{a.name}"
                is_mod = (PACKAGE.parent / Path(*sub.split("."))).with_suffix(".py").exists() or (
                    PACKAGE.parent / Path(*sub.split("."))
                ).is_dir()
                out.append((sub if is_mod else node.module, node.lineno, id(node) in inner))
        elif isinstance(node, ast.Import):
            out += [(a.name, node.lineno, id(node) in inner) for a in node.names if a.name.startswith("attnsim")]
    return out


def _graph() -> dict[str, list[tuple[str, int, bool]]]:
    return {_module(p): _imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


def test_every_module_has_a_floor() -> None:
    """A new top-level module or package is placed on a floor here, deliberately."""
    tops = {p.stem for p in PACKAGE.glob("*.py")} | {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert tops <= set(FLOORS), sorted(tops - set(FLOORS))


def test_no_import_runs_up_a_floor() -> None:
    """Architecture: every import of ours (at module level or inside a function) goes down or stays.

    Imports under ``if TYPE_CHECKING:`` are annotations only; they are not counted."""
    upward = [
        f"{mod}:{line} imports {target}{' (inside a function)' if inner else ''}"
        for mod, imports in _graph().items()
        for target, line, inner in imports
        if _floor(target) > _floor(mod)
    ]
    assert not upward, "\n".join(upward)


def test_no_import_circle() -> None:
    """No two modules need each other, even through others (imports inside functions included)."""
    graph = {m: sorted({t for t, _, _ in imps if t != m and not m.startswith(t + ".")}) for m, imps in _graph().items()}
    state: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in graph.get(m, []):
            if state.get(t) == 1:
                circles.append([*stack[stack.index(t) :], t])
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m)
    assert not circles, "\n".join(" -> ".join(c) for c in circles)


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    """The test itself can fail: a lemma module importing the harness is reported."""
    f = tmp_path / "x.py"
    f.write_text("def f():\n    from attnsim.verify import runner\n")
    ((target, line, inner),) = _imports(f)
    assert (target, line, inner) == ("attnsim.verify.runner", 2, True)
    assert _floor(target) > _floor("attnsim.lemmas.matmul")
