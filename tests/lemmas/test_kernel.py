"""Kernel-checked lemmas (issue 28): Lemma (transpose), Lemma (matmul), Activation ReLU proven in Coq.

* each ``kernel`` obligation is proved by coqc (no axiom outside the allow-list);
* a wrong program fails its kernel obligation (transpose reading one row late; a matmul whose
  average misses one key), and an Admitted proof fails it;
* the differential test: the exported term, evaluated by ``vm_compute`` over MathComp's rationals,
  equals the Python exact engine at every position, at 3 sizes for every exported construction;
  softmax and masked softmax (whose exp is irrational) with exp instantiated on both sides by the
  same rational stand-in (Semantics.v's evaluator takes exp as a parameter ``expf``; the exact
  engine's ``exp`` primitive is patched for the test only), and a different stand-in is rejected.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from attnsim.lemmas.construction import Construction
from attnsim.lemmas.forms import consumer_matmul, gathered_transpose
from attnsim.lemmas.kernel import (
    _BASE_PREFIX,
    _BUILD_PREFIX,
    THEOREMS,
    KernelTheorem,
    _compiled_base,
    _coqc,
    _remove_orphaned_bases,
    coq_sources,
    exports_text,
    kernel_check,
    parse_assumptions,
)
from attnsim.lemmas.matmul import matmul
from attnsim.lemmas.maxmin import maxmin
from attnsim.lemmas.relu import relu
from attnsim.lemmas.softmax import masked_softmax, softmax
from attnsim.lemmas.transpose import transpose
from attnsim.proofs.coq import CoqProgram, export_program, module_text
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp import primitives as P
from attnsim.rasp.engine import evaluate

COQC = shutil.which("coqc")
needs_coq = pytest.mark.skipif(COQC is None, reason="coqc not installed (apt-get install coq libcoq-mathcomp-*)")


def _theorem(name: str) -> KernelTheorem:
    return next(t for t in THEOREMS if t.construction == name)


def _mutated(build: Callable[[], C.SOp], change: Callable[[C.IndexFn], E.Expr | None]) -> C.SOp:
    """The program ``build`` makes, with every index map whose expression ``change`` rewrites replaced."""

    def hook(node: Any) -> Any:
        if isinstance(node, C.Map) and isinstance(node.fn, C.IndexFn):
            new = change(node.fn)
            if new is not None:
                object.__setattr__(node, "fn", C.IndexFn(new, node.fn.argnames))
        return node

    token = C.MUTATION_HOOK.set(hook)
    try:
        return build()
    finally:
        C.MUTATION_HOOK.reset(token)


def test_assumptions_are_parsed() -> None:
    out = "Axioms:\nboolp.propositional_extensionality : forall P Q : Prop,\n  P <-> Q -> P = Q\nTop.x : nat\n"
    assert parse_assumptions(out) == ("boolp.propositional_extensionality", "Top.x")
    assert parse_assumptions("Closed under the global context\n") == ()


def test_without_coqc_the_obligation_is_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    out = kernel_check(_theorem("relu"))(10.0)
    assert out.ok is None and out.detail.startswith("not run (coqc not installed")


@needs_coq
@pytest.mark.parametrize("name", [t.construction for t in THEOREMS])
def test_kernel_obligation_is_proved(name: str) -> None:
    out = kernel_check(_theorem(name))(120.0)
    assert out.ok is True, out.detail
    if name.startswith("softmax"):  # the expR corollary rests on MathComp-analysis' own axiom
        assert "axioms: boolp.propositional_extensionality" in out.detail
    else:
        assert "closed under the global context" in out.detail


@needs_coq
def test_transpose_reading_one_row_late_fails() -> None:
    """Lemma (transpose): the gather's source one row (cols positions) later is refused by Coq."""
    r, c, h = C.Size("rows"), C.Size("cols"), C.Size("heads")

    def late(fn: C.IndexFn) -> E.Expr:
        return fn.expr + c

    prog = _mutated(lambda: transpose(r, c, h).program, late)
    mutant = [export_program("transpose_heads_prog", prog, ("rows", "cols", "heads"))]
    assert "cols)) n0)" in mutant[0].text  # the mutation is in the exported term
    out = kernel_check(_theorem("transpose"), mutant)(120.0)
    assert out.ok is False and "Coq rejects Transpose.v" in out.detail


@needs_coq
def test_matmul_whose_average_misses_one_key_fails() -> None:
    """Lemma (matmul): the sum head's group sends key l = inner - 1 nowhere, so the mean misses it."""
    r, k, c, h = C.Size("rows"), C.Size("inner"), C.Size("cols"), C.Size("heads")

    def miss_last(fn: C.IndexFn) -> E.Expr | None:
        if E.render(fn.expr) != "(x0 div inner)":
            return None
        x0 = E.Var("x0")
        return E.if_((x0 % k).eq(k - 1), -1, x0 // k)

    prog = _mutated(lambda: matmul(r, k, c, h).program, miss_last)
    mutant = [export_program("matmul_heads_prog", prog, ("rows", "inner", "cols", "heads"))]
    assert "iif" in mutant[0].text
    out = kernel_check(_theorem("matmul"), mutant)(120.0)
    assert out.ok is False and "Coq rejects Matmul.v" in out.detail


def test_the_exports_library_holds_every_program_and_a_given_one_replaces_its_default() -> None:
    """Exports.v: every kernel theorem's programs; a construction's own programs (a mutant) take the
    place of the defaults of their names, so the theory is checked against exactly them."""
    text = exports_text([])
    for thm in THEOREMS:
        for prog in thm.programs():
            assert f"Definition {prog.name} " in text
    own = CoqProgram("relu_prog", ("n", "rows"), "Definition relu_prog (n rows : Z) : sop := Tokens.\n")
    mutant = exports_text([own])
    assert own.text in mutant and mutant.count("Definition relu_prog ") == 1


@needs_coq
def test_an_export_coq_rejects_is_named_in_the_failure() -> None:
    """A term Coq cannot type in the export is reported in the export's file, not the theory's."""
    bad = [CoqProgram("relu_prog", ("n", "rows"), "Definition relu_prog (n rows : Z) : sop := Map1 PRelu Tokenz.\n")]
    out = kernel_check(_theorem("relu"), bad)(120.0)
    assert out.ok is False and "Coq rejects Exports.v" in out.detail


@needs_coq
def test_an_admitted_proof_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A theory whose proof is Admitted is never proved (hole found in the sources)."""
    src = coq_sources()
    for f in src.glob("*.v"):
        shutil.copy(f, tmp_path / f.name)
    relu_v = tmp_path / "Relu.v"
    text = relu_v.read_text()
    relu_v.write_text(text.replace("Proof. by move=> HA;", "Proof. Admitted. Lemma unused : True. Proof. by [];"))
    monkeypatch.setenv("ATTNSIM_COQ_DIR", str(tmp_path))
    out = kernel_check(_theorem("relu"))(120.0)
    assert out.ok is False and "Relu.v" in out.detail


@needs_coq
def test_a_theory_defining_the_program_itself_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A theorem about a hand-written copy of the program proves nothing about the export: refused."""
    src = coq_sources()
    for f in src.glob("*.v"):
        shutil.copy(f, tmp_path / f.name)
    relu_v = tmp_path / "Relu.v"
    own = "Definition relu_prog (n r : Z) := Map1 PRelu Tokens.\n"
    relu_v.write_text(relu_v.read_text().replace("Section Relu.", own + "Section Relu."))
    monkeypatch.setenv("ATTNSIM_COQ_DIR", str(tmp_path))
    out = kernel_check(_theorem("relu"))(120.0)
    assert out.ok is False and "defines relu_prog itself" in out.detail


@needs_coq
def test_a_theory_that_undoes_the_export_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A theory that defines the program's name by a Lemma, or Resets a definition, is refused before
    Coq runs (with the export a library of its own, Reset cannot reach it anyway)."""
    src = coq_sources()
    for f in src.glob("*.v"):
        shutil.copy(f, tmp_path / f.name)
    relu_v = tmp_path / "Relu.v"
    text = relu_v.read_text()
    own = "Lemma relu_prog (n rows : Z) : sop. exact (Map1 PRelu Tokens). Defined.\n"
    relu_v.write_text(text.replace("Section Relu.", own + "Section Relu."))
    monkeypatch.setenv("ATTNSIM_COQ_DIR", str(tmp_path))
    out = kernel_check(_theorem("relu"))(120.0)
    assert out.ok is False and "defines relu_prog itself" in out.detail
    relu_v.write_text("Reset relu_prog.\n" + text)
    out = kernel_check(_theorem("relu"))(120.0)
    assert out.ok is False and "undone definitions" in out.detail and "Relu.v" in out.detail


def test_orphaned_bases_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    """A compiled base whose process is gone (killed before ``atexit``) is deleted; ours and a
    name without a PID are kept."""
    child = subprocess.Popen(["true"])
    child.wait()  # a PID that no longer exists
    dead = tmp_path / f"{_BASE_PREFIX}{child.pid}-abc"
    live = tmp_path / f"{_BASE_PREFIX}{os.getpid()}-abc"
    dead_build = tmp_path / f"{_BUILD_PREFIX}{child.pid}-abc"
    old = tmp_path / f"{_BASE_PREFIX}abc"
    for d in (dead, live, dead_build, old):
        d.mkdir()
        (d / "Semantics.vo").write_text("")
    assert _remove_orphaned_bases(tmp_path) == [dead, dead_build]
    assert not dead.exists() and not dead_build.exists() and live.exists() and old.exists()


# -- differential test: Coq's evaluator (vm_compute over rat) == the Python exact engine ---------------
def _q(v: Fraction) -> str:
    return f"(q ({v.numerator})%Z ({v.denominator})%Z)"


def _seq(vs: Any) -> str:
    return "[:: " + "; ".join(_q(Fraction(v)) for v in vs) + "]"


def _differential_file(
    module: str, cases: list[tuple[str, list[Fraction], list[Fraction]]], expf: str = "(fun _ => 0)"
) -> str:
    """``expf``: the Coq term (rat -> rat) the evaluator's exp parameter is instantiated with."""
    lines = [
        "From mathcomp Require Import all_ssreflect all_algebra.",
        "From Coq Require Import ZArith.",
        f"From Attnsim Require Import Semantics {module}.",
        "Local Open Scope ring_scope.",
        "Definition q (n d : Z) : rat := zR rat_realFieldType n / zR rat_realFieldType d.",
        f"Definition expf : rat -> rat := {expf}.",
        "Definition run (p : sop) (x : seq rat) : seq rat :=",
        "  [seq eval (R := rat_realFieldType) expf p x i | i <- iota 0 (size x)].",
    ]
    for i, (call, xs, ys) in enumerate(cases):
        lines.append(f"Lemma agrees{i} : (run ({call}) {_seq(xs)} == {_seq(ys)}) = true.")
        lines.append("Proof. vm_compute. reflexivity. Qed.")
    return "\n".join(lines) + "\n"


def _coq_export(tmp: Path, export: str, programs: list[CoqProgram]) -> Path:
    """``tmp`` holding the compiled semantics (compiled once per process, as the obligation does) and
    the export of ``programs`` compiled against it: differential files are then compiled beside it."""
    assert COQC is not None
    base = _compiled_base(COQC, coq_sources(), 300.0)
    assert isinstance(base, Path), base
    shutil.copy(base / "Semantics.vo", tmp / "Semantics.vo")
    (tmp / f"{export}.v").write_text(module_text(programs))
    res = _coqc(COQC, tmp, export, 300.0)
    assert res.returncode == 0, res.stdout + res.stderr
    return tmp


def _coq_accepts(build: Path, name: str, diff: str) -> subprocess.CompletedProcess[str]:
    """coqc on the differential file ``name``.v (text ``diff``) in a build made by :func:`_coq_export`."""
    assert COQC is not None
    (build / f"{name}.v").write_text(diff)
    return _coqc(COQC, build, name, 300.0)


def _case(
    con: Construction, call: str, seed: int, scalars: dict[str, int] | None = None
) -> tuple[str, list[Fraction], list[Fraction]]:
    """Random half-integer operands (an operand named in ``scalars`` takes that integer value)."""
    rng = np.random.default_rng(seed)
    halves = np.vectorize(lambda v: Fraction(int(v), 2), otypes=[object])
    ops = [halves(rng.integers(-6, 7, size=con.layout[n].shape)) for n in con.inputs]
    for i, n in enumerate(con.inputs):
        if scalars and n in scalars:
            ops[i] = np.full(con.layout[n].shape, Fraction(scalars[n]), dtype=object)
    x = con.encode(*ops, backend="exact")
    y = evaluate(con.program, x, "exact")
    return call, list(x), list(y)


DIFFERENTIAL: list[tuple[str, str, Callable[[], list[CoqProgram]], list[tuple[Callable[[], Construction], str]]]] = [
    (
        "transpose",
        "Export_transpose",
        _theorem("transpose").programs,
        [
            (lambda: transpose(1, 1, 1), "transpose_heads_prog 1 1 1"),
            (lambda: transpose(2, 3, 1), "transpose_heads_prog 2 3 1"),
            (lambda: transpose(3, 2, 2), "transpose_heads_prog 3 2 2"),
        ],
    ),
    (
        "matmul",
        "Export_matmul",
        _theorem("matmul").programs,
        [
            (lambda: matmul(1, 1, 1, 1), "matmul_heads_prog 1 1 1 1"),
            (lambda: matmul(2, 3, 2, 1), "matmul_heads_prog 2 3 2 1"),
            (lambda: matmul(2, 2, 1, 2), "matmul_heads_prog 2 2 1 2"),
        ],
    ),
    (
        "relu",
        "Export_relu",
        _theorem("relu").programs,
        [
            (lambda: relu(1, rows=1), "relu_prog 1 1"),
            (lambda: relu(3, rows=2), "relu_prog 3 2"),
            (lambda: relu(4, rows=3), "relu_prog 4 3"),
        ],
    ),
    (
        "maxmin",
        "Export_maxmin",
        _theorem("maxmin").programs,
        [
            (lambda: maxmin(2, rows=1), "maxmin_prog 2 1"),
            (lambda: maxmin(4, rows=2), "maxmin_prog 4 2"),
            (lambda: maxmin(6, rows=3), "maxmin_prog 6 3"),
        ],
    ),
]
DIFFERENTIAL.append(
    (
        "gathered-transpose",
        "Export_gathered_transpose",
        _theorem("gathered-transpose").programs,
        [
            (lambda: gathered_transpose(1, 1), "gathered_transpose_prog 1 1"),
            (lambda: gathered_transpose(2, 3), "gathered_transpose_prog 2 3"),
            (lambda: gathered_transpose(3, 2), "gathered_transpose_prog 3 2"),
        ],
    )
)
DIFFERENTIAL.append(
    (
        "consumer-matmul",
        "Export_consumer_matmul",
        _theorem("consumer-matmul").programs,
        [
            (lambda: consumer_matmul(1, 1, 1, 1), "consumer_matmul_prog 1 1 1 1"),
            (lambda: consumer_matmul(2, 2, 1, 3), "consumer_matmul_prog 2 2 1 3"),
            (lambda: consumer_matmul(1, 3, 2, 2), "consumer_matmul_prog 1 3 2 2"),
        ],
    )
)
# softmax: exp is irrational (the exact engine refuses it); see the stand-in differential test below.


@needs_coq
@pytest.mark.parametrize("name, export, programs, cases", DIFFERENTIAL, ids=[d[0] for d in DIFFERENTIAL])
def test_differential_coq_equals_python_exact(
    name: str,
    export: str,
    programs: Callable[[], list[CoqProgram]],
    cases: list[tuple[Callable[[], Construction], str]],
    tmp_path: Path,
) -> None:
    built = [_case(make(), call, seed) for seed, (make, call) in enumerate(cases)]
    build = _coq_export(tmp_path, export, programs())
    res = _coq_accepts(build, "Differential", _differential_file(export, built))
    assert res.returncode == 0, res.stdout + res.stderr
    # the comparison can fail: one output value changed is rejected by Coq
    call, xs, ys = built[-1]
    wrong = [*ys[:-1], ys[-1] + 1]
    res = _coq_accepts(build, "Wrong", _differential_file(export, [(call, xs, wrong)]))
    assert res.returncode != 0
    assert 'Wrong.v", line 10' in res.stderr and 'Unable to unify "true" with "false"' in res.stderr


# -- softmax, masked softmax: the same rational stand-in for exp on both sides ---------------------------
# Semantics.v's evaluator takes exp as a parameter (expf; the kernel theorems hold for any expf, the
# expR corollaries fix it): Coq instantiates it with a rational function, and the Python exact engine
# runs with the exp primitive's (absent) exact implementation patched to the same function.  x^2 + 1 is
# positive everywhere, so every row sum is >= 1 and the divisions are defined on any input.
EXP_STANDIN_COQ = "(fun v : rat => v * v + 1)"


def _exp_standin(x: Fraction) -> Fraction:
    return x * x + 1


def _exp_other(x: Fraction) -> Fraction:  # a different stand-in, for the failing check
    return x * x + 2


def _with_exact_exp(monkeypatch: pytest.MonkeyPatch, fn: Callable[[Fraction], Fraction]) -> None:
    """The exact engine's ``exp`` is ``fn`` until the test ends (production's has no exact value)."""
    monkeypatch.setitem(P._REGISTRY, "exp", dataclasses.replace(P.get("exp"), exact=fn))


CaseSpec = tuple[Callable[[], Construction], str, dict[str, int] | None]
DIFFERENTIAL_EXP: list[tuple[str, str, Callable[[], list[CoqProgram]], list[CaseSpec]]] = [
    (
        "softmax",
        "Export_softmax",
        _theorem("softmax").programs,
        [
            (lambda: softmax(1, 1, 1), "softmax_heads_prog 1 1 1", None),
            (lambda: softmax(2, 3, 1), "softmax_heads_prog 2 3 1", None),
            (lambda: softmax(2, 2, 2), "softmax_heads_prog 2 2 2", None),
        ],
    ),
    (
        "softmax-masked",
        "Export_masked_softmax",
        _theorem("softmax-masked").programs,
        [
            (lambda: masked_softmax(1, 1, 1), "masked_softmax_heads_prog 1 1 1", {"n": 1}),
            (lambda: masked_softmax(2, 3, 1), "masked_softmax_heads_prog 2 3 1", {"n": 2}),
            (lambda: masked_softmax(2, 3, 2), "masked_softmax_heads_prog 2 3 2", {"n": 3}),
        ],
    ),
]


@needs_coq
@pytest.mark.parametrize("name, export, programs, cases", DIFFERENTIAL_EXP, ids=[d[0] for d in DIFFERENTIAL_EXP])
def test_differential_softmax_with_rational_exp(
    name: str,
    export: str,
    programs: Callable[[], list[CoqProgram]],
    cases: list[CaseSpec],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert P.get("exp").exact is None  # production behaviour: exp has no exact value (patched below, test only)
    _with_exact_exp(monkeypatch, _exp_standin)
    built = [_case(make(), call, seed, scalars) for seed, (make, call, scalars) in enumerate(cases)]
    for _, xs, ys in built:  # one value per position, and the result block is not all zero
        assert len(ys) == len(xs) and any(y != 0 for y in ys)
    build = _coq_export(tmp_path, export, programs())
    res = _coq_accepts(build, "Differential", _differential_file(export, built, EXP_STANDIN_COQ))
    assert res.returncode == 0, res.stdout + res.stderr
    # the comparison can fail: the Python side with a different stand-in (x^2 + 2) is rejected by Coq
    _with_exact_exp(monkeypatch, _exp_other)
    make, call, scalars = cases[-1]
    other = _case(make(), call, len(cases) - 1, scalars)
    assert other[1] == built[-1][1] and other[2] != built[-1][2]
    res = _coq_accepts(build, "Wrong", _differential_file(export, [other], EXP_STANDIN_COQ))
    assert res.returncode != 0  # rejected at `vm_compute. reflexivity.`, not by a compile error elsewhere
    assert 'Wrong.v", line 10' in res.stderr and 'Unable to unify "true" with "false"' in res.stderr


def test_coqc_runs_with_the_tuned_collector_unless_the_user_sets_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The kernel checks' coqc gets OCaml GC settings that make the run shorter (COQC_GC); a user's
    own OCAMLRUNPARAM is passed through unchanged."""
    from attnsim.lemmas import kernel

    seen: list[dict[str, str]] = []
    monkeypatch.setattr(kernel.subprocess, "run", lambda *a, **k: seen.append(k["env"]))
    monkeypatch.delenv("OCAMLRUNPARAM", raising=False)
    _coqc("coqc", tmp_path, "X", 1.0)
    monkeypatch.setenv("OCAMLRUNPARAM", "v=0x400")
    _coqc("coqc", tmp_path, "X", 1.0)
    assert [e["OCAMLRUNPARAM"] for e in seen] == [kernel.COQC_GC, "v=0x400"]
