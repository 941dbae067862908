"""The package's public facade (``attnsim/__init__.py``): its names resolve when first used, so
``import attnsim`` loads neither Z3 nor SymPy, and ``attnsim.compile`` is the compiler's package
(the verb is ``attnsim.compile_program``), never a function shadowing it (issue 46)."""

from __future__ import annotations

import subprocess
import sys
import types


def _fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_import_attnsim_loads_neither_z3_nor_sympy() -> None:
    out = _fresh("import sys, attnsim; print(sorted(m for m in ('z3', 'sympy') if m in sys.modules))")
    assert out == "[]", out


def test_compile_is_the_package_and_compile_program_the_verb() -> None:
    import attnsim
    from attnsim.compile import model  # failed after `import attnsim` while a function shadowed it

    assert isinstance(attnsim.compile, types.ModuleType) and model.CompiledTransformer is not None
    from attnsim.compile.compiler import compile_program

    assert attnsim.compile_program is compile_program
    assert {"UniversalSimulator", "TransformerLayer", "evaluate", "Size"} <= set(dir(attnsim))


def test_an_unknown_name_is_an_attribute_error() -> None:
    import attnsim

    try:
        attnsim.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no attribute 'no_such_name'" in str(exc)
    else:
        raise AssertionError("attnsim.no_such_name resolved")
