"""The package's architecture, checked: imports run down the floors, never up, and form no circle;
a construction's statement and its textbook formula import nothing of its program.

Floors, bottom to top (``docs/architecture.md``): the language with its arithmetic backends
(``rasp``), the solver kit (``proofs``), symbolic execution and the spec language (``symbolic``),
the paper's results, one folder each (``constructions``), the universal simulator U
(``universal``), the public facades (``lemmas``, ``applications``), the
verification harness (``verify``), executable extraction (``compile``), the report, the catalogue
of every obligation, and the command line (one module per subcommand).  A module may import its
own floor or a lower one.  An import placed inside a function counts like any other: hiding one
there does not dodge this test.  The only exceptions are optional third-party dependencies
(torch, dask), never our modules.

Inside a floor, the folder rule: in every construction folder (``attnsim/constructions/<name>/``
and ``attnsim/universal/``), ``spec.py`` and ``reference.py`` reach, through their own imports and
the imports of what they import, only the spec language (``attnsim.symbolic``) and the NumPy
helpers of ``attnsim/constructions/textbook.py``: no module of a program (any other module of any
construction folder or of U, or what the folders share), nothing of the engine (``attnsim.rasp``).
So a wrong program cannot leak into the statement it is proved against, nor into the formula
that statement is checked against.

The runtime rule: what importing the runtime (the facade, U, T, the engine, the command line with
``attnsim simulate``, the lemmas, the compiler and the compiled model) executes imports neither Z3
nor SymPy at module level.
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
    "constructions": 3,  # one folder per paper result, and what they share
    "universal": 4,  # U: builder, runtime, torch reading, layer proof
    "lemmas": 5,  # facade: re-exports the lemmas' factories (from attnsim import lemmas)
    "applications": 5,  # facade: re-exports the applications' factories
    "verify": 6,
    "compile": 7,
    "report": 8,
    "catalog": 9,  # names every construction and obligation module (explicit imports)
    "cli": 10,  # one module per subcommand
    "__init__": 11,  # the public facade: attnsim.compile_program, attnsim.UniversalSimulator, ...
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
    assert _floor(target) > _floor("attnsim.constructions.matmul.program")


# what a spec.py or reference.py may reach (besides itself): the spec language and the NumPy helpers
STATEMENT_SIDE = ("attnsim.symbolic.", "attnsim.constructions.textbook")
STATEMENT_FILES = ("spec", "reference")


def _path_of(module: str) -> Path | None:
    base = PACKAGE.parent / Path(*module.split("."))
    for p in (base.with_suffix(".py"), base / "__init__.py"):
        if p.exists():
            return p
    return None


def _reached(path: Path) -> set[str]:
    """Every module of ours that ``path`` imports, directly or through the modules it imports (a
    parent package's ``__init__`` is not followed: what a statement's code uses is what it imports)."""
    seen: set[str] = set()
    todo = [t for t, _, _ in _imports(path)]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        p = _path_of(m)
        if p is not None:
            todo += [t for t, _, _ in _imports(p)]
    return seen


def _program_side(reached: set[str], own: str) -> list[str]:
    """The modules among ``reached`` that a statement may not reach (``own``: the module itself)."""
    return sorted(m for m in reached if m != own and not m.startswith(STATEMENT_SIDE))


def _statement_modules() -> list[tuple[str, Path]]:
    folders = [d for d in sorted((PACKAGE / "constructions").iterdir()) if (d / "__init__.py").exists()]
    return [
        (_module(f), f)
        for d in (*folders, PACKAGE / "universal")
        for name in STATEMENT_FILES
        if (f := d / f"{name}.py").exists()
    ]


def test_every_spec_folder_has_its_reference() -> None:
    """A folder stating a spec also has the textbook formula it is checked against."""
    mods = {m for m, _ in _statement_modules()}
    lonely = sorted(m for m in mods if m.endswith(".spec") and m[: -len("spec")] + "reference" not in mods)
    assert not lonely, lonely
    assert len(mods) >= 20, sorted(mods)  # nine folders and U, each with both


def test_specs_and_references_import_nothing_of_a_program() -> None:
    """The folder rule: a spec.py or reference.py reaches only the spec language and textbook.py."""
    bad = {m: side for m, f in _statement_modules() if (side := _program_side(_reached(f), m))}
    assert not bad, "\n".join(f"{m} reaches {', '.join(side)}" for m, side in bad.items())


def test_the_folder_rule_sees_a_spec_importing_its_program(tmp_path: Path) -> None:
    """The folder rule can fail: a spec reaching its program (or the engine, through it) is reported."""
    f = tmp_path / "spec.py"
    f.write_text("from attnsim.symbolic.spec_language import Spec\nfrom attnsim.constructions.matmul import program\n")
    side = _program_side(_reached(f), "attnsim.constructions.matmul.spec")
    assert "attnsim.constructions.matmul.program" in side
    assert any(m.startswith("attnsim.rasp") for m in side)
    f.write_text("def f():\n    from attnsim.rasp import core\n")
    assert "attnsim.rasp.core" in _program_side(_reached(f), "x")


# The runtime rule: a numeric run imports no prover.  What importing these modules executes
# (their module-level imports of ours, and the packages above each module reached) imports
# neither Z3 nor SymPy at module level; a prover's import sits in the function that needs it.
RUNTIME = (
    "attnsim",  # the facade
    "attnsim.universal.universal",  # U: build and run
    "attnsim.universal.layer",  # T: random, from arrays, from torch, T(X)
    "attnsim.rasp.engine",  # evaluate, numpy backend
    "attnsim.cli.main",  # the command line
    "attnsim.cli.simulate",  # `attnsim simulate`
    "attnsim.lemmas",  # every lemma's program, built and run
    "attnsim.compile.compiler",  # a program compiled to weights
    "attnsim.compile.model",  # the compiled model run
)
PROVERS = ("z3", "sympy")


def _provers_imported(path: Path) -> list[str]:
    """The provers ``path`` imports at module level (not in a function, not under TYPE_CHECKING)."""
    tree = ast.parse(path.read_text())
    skip = {
        id(n)
        for top in ast.walk(tree)
        if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef))
        or (isinstance(top, ast.If) and ast.unparse(top.test).endswith("TYPE_CHECKING"))
        for n in ast.walk(top)
    }
    names = [
        name
        for n in ast.walk(tree)
        if id(n) not in skip
        for name in (
            [a.name for a in n.names]
            if isinstance(n, ast.Import)
            else [n.module or ""]
            if isinstance(n, ast.ImportFrom) and n.level == 0
            else []
        )
    ]
    return sorted({name.split(".")[0] for name in names} & set(PROVERS))


def _executed_on_import(roots: tuple[str, ...]) -> dict[str, str | None]:
    """Every module of ours that importing ``roots`` executes -> the module that imported it."""
    by: dict[str, str | None] = dict.fromkeys(roots)
    todo = list(roots)
    while todo:
        m = todo.pop()
        p = _path_of(m)
        if p is None:
            continue
        parents = [".".join(m.split(".")[:i]) for i in range(1, m.count(".") + 1)]
        for t in [*parents, *(t for t, _, inner in _imports(p) if not inner)]:
            if t not in by:
                by[t] = m
                todo.append(t)
    return by


def _runtime_violations(roots: tuple[str, ...]) -> list[str]:
    by = _executed_on_import(roots)
    out = []
    for m in sorted(by):
        p = _path_of(m)
        if p is not None and (found := _provers_imported(p)):
            chain = [m]
            while (up := by[chain[-1]]) is not None:
                chain.append(up)
            out.append(f"{' <- '.join(chain)} imports {', '.join(found)}")
    return out


def test_a_numeric_run_imports_no_prover() -> None:
    """The runtime rule: U, T, the engine's numeric path, `attnsim simulate`, the lemmas' programs,
    the compiler and the compiled model reach no module importing Z3 or SymPy at module level
    (tests/test_facade.py runs them and checks sys.modules)."""
    bad = _runtime_violations(RUNTIME)
    assert not bad, "\n".join(bad)


def test_the_runtime_rule_sees_a_prover(tmp_path: Path) -> None:
    """The runtime rule can fail: a module importing SymPy at module level, or reaching the
    provers' kit, is reported; a SymPy import inside a function is not."""
    f = tmp_path / "x.py"
    f.write_text("import numpy as np\nimport sympy as sp\n")
    assert _provers_imported(f) == ["sympy"]
    f.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import z3\ndef f():\n    import sympy\n")
    assert _provers_imported(f) == []
    assert any("imports z3" in v for v in _runtime_violations(("attnsim.proofs.intents",)))
