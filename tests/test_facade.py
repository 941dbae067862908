"""The package's public facade (``attnsim/__init__.py``): its names resolve when first used, so
``import attnsim`` loads neither Z3 nor SymPy, and ``attnsim.compile`` is the compiler's package
(the verb is ``attnsim.compile_program``), never a function shadowing it (issue 46)."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest


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


# A numeric run, step by step, each in a fresh interpreter started in an empty directory: every
# step checks its numbers (U against the reference T), then prints which of z3 and sympy it loaded.
NUMERIC_RUN = """
import numpy as np
import attnsim
rng = np.random.default_rng(0)
for variant in ("compact", "shallow"):
    U = attnsim.UniversalSimulator(4, 2, 1, 2, 3, variant=variant)
    T = attnsim.TransformerLayer.random(2, 1, 2, 3, seed=1, residual=True, norm="post", activation="gelu")
    again = attnsim.TransformerLayer(**{k: getattr(T, k) for k in ("w_q", "w_k", "w_v", "w_o", "w1", "w2")})
    X = rng.normal(size=(3, 2))
    for layer in (T, again):
        assert np.max(np.abs(U.run(layer, X) - layer(X))) < 1e-9, variant
"""
SIMULATE = """
from attnsim.cli.main import main
assert main(["simulate", "--max-len", "4", "--d-model", "2", "--heads", "1", "--d-head", "2", "--d-ff", "2"]) == 0
"""
COMPILED = """
import numpy as np
import attnsim
from attnsim import lemmas
con = lemmas.matmul(2, 3, 2)
A, B = np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(3, 2) - 2
assert np.allclose(con.run(A, B), A @ B)
seq = con.encode(A, B)
model = attnsim.compile_program(con.program, max_len=con.layout.total)
assert np.allclose(model.forward(seq, exact=False), attnsim.evaluate(con.program, seq, "numpy"))
"""
HEAVY = "import sys; print(sorted(m for m in ('z3', 'sympy') if m in sys.modules))"


def _fresh_elsewhere(code: str, where: Path) -> str:
    """``code`` run by a fresh interpreter in the directory ``where``, importing this attnsim; its
    last line of output."""
    import attnsim

    env = {**os.environ, "PYTHONPATH": str(Path(attnsim.__file__).parent.parent)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=where, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "step", [NUMERIC_RUN, SIMULATE, COMPILED], ids=["U.run and T(X)", "attnsim simulate", "compiled lemma"]
)
def test_a_numeric_run_loads_neither_z3_nor_sympy(step: str, tmp_path: Path) -> None:
    """Building U (both variants), T (random, and from its arrays), U.run(T, X) and T(X);
    ``attnsim simulate``; a lemma built, run, compiled to weights and the compiled model run:
    numeric all through, with neither prover imported."""
    assert _fresh_elsewhere(step + HEAVY, tmp_path) == "[]"


def test_the_check_sees_a_prover_loaded(tmp_path: Path) -> None:
    """The check can fail: a step that imports a prover is reported."""
    assert _fresh_elsewhere("import attnsim.proofs.intents\n" + HEAVY, tmp_path) == "['sympy', 'z3']"
