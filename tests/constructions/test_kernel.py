"""The kernel-checked lemmas (Lemma transpose, matmul, 3, ReLU, MaxMin, inverse/determinant, the
Faddeev-LeVerrier steps) and the gate that decides "kernel-checked":

* every kernel obligation is proved, its statement the generated one, its assumptions listed by
  full path (the expR corollaries: all three of MathComp-analysis' boolp axioms);
* the attacks a skeptical reviewer tried each fail the obligation: an assumption whose type Coq
  prints on the next line, an allowed name faked in a module of ours, an Admitted proof, a
  vacuous premise, a weakened conclusion, a fixed size, a theory proving its own copy of the
  program, a wrong exported program;
* the engine answers to the kernel: Coq's evaluation of each exported term equals the engine's
  exact run, and a gather bug placed in the engine fails that obligation;
* a second build compiles nothing (the content-addressed cache).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from attnsim.constructions import coq_evaluator as V
from attnsim.constructions import kernel as K
from attnsim.constructions.matmul.program import matmul
from attnsim.constructions.transpose.program import transpose
from attnsim.proofs import coq_build as B
from attnsim.proofs import coq_gate as G
from attnsim.proofs.coq import CoqExportError, CoqProgram, export_program
from attnsim.proofs.coq_statement import KernelStatement, Operand, nat_term
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.interpreter import Interpreter
from attnsim.rasp.layout import Block, Layout

COQC = shutil.which("coqc")
needs_coq = pytest.mark.skipif(COQC is None, reason="coqc not installed (apt-get install coq libcoq-mathcomp-*)")
RELU_PROOF = "Proof.\nmove=> R expf sqrtf geluf gelu_tanhf n rows A x _ _ HA _; exact: relu_max0_core."
RELU_THEOREM = "Theorem relu_max0 : relu_max0_statement.\n" + RELU_PROOF
PRIMS = "(R : realFieldType) (expf sqrtf geluf gelu_tanhf : R -> R)"  # a statement's first binders
EVAL = "eval expf sqrtf geluf gelu_tanhf"
BOOLP = (
    "mathcomp.classical.boolp.constructive_indefinite_description",
    "mathcomp.classical.boolp.functional_extensionality_dep",
    "mathcomp.classical.boolp.propositional_extensionality",
)


def _theorem(theory: str) -> K.KernelTheorem:
    return next(t for t in K.THEOREMS if t.theory == theory)


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


@pytest.fixture
def sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the Coq sources the kernel checks read ($ATTNSIM_COQ_DIR), for a test to tamper with."""
    dest = tmp_path / "coq"
    shutil.copytree(K.coq_sources(), dest)
    monkeypatch.setenv("ATTNSIM_COQ_DIR", str(dest))
    yield dest


def _tamper(sources: Path, theory: str, old: str, new: str) -> None:
    path = sources / f"{theory}.v"
    text = path.read_text()
    assert old in text, f"{old!r} not in {theory}.v"
    path.write_text(text.replace(old, new, 1))


# -- statements: generated from the layout, sizes and declarations ---------------------------------
def test_the_statement_binds_every_size_and_operand_from_the_layout() -> None:
    """Lemma (transpose): the sizes are nat binders passed to the exported program, the operand is held
    at its block, the sequence is as long as the layout, the output is read at its block."""
    (_, st), = _theorem("Transpose").statements()
    text = st.text()
    assert text.startswith(f"forall {PRIMS} (rows cols heads : nat)")
    assert "(A : 'I_heads -> 'M[R]_(rows, cols))" in text
    assert "(1 <= rows)%nat ->" in text and "(1 <= heads)%nat ->" in text
    assert "encodes x 0 heads rows cols A ->" in text
    assert "<= size x)%nat ->" in text
    assert "transpose_heads_prog (Z.of_nat rows) (Z.of_nat cols) (Z.of_nat heads)) x) 0 heads cols rows t" in text
    assert text.endswith("= trmx (A t)")


def test_declared_domains_become_premises() -> None:
    """MaxMin's even length (a precondition) and masked softmax's width token (an integer operand in
    1..cols) are premises of the generated statements, as they are checks of the Python run."""
    (_, mm), = _theorem("MaxMin").statements()
    assert "((n %% 2)%nat == 0)%nat ->" in mm.text()
    _, masked = _theorem("SoftmaxMaskedStable").statements()[0]
    text = masked.text()
    assert "(n : nat)" in text and "(1 <= n)%nat ->" in text and "(n <= cols)%nat ->" in text
    assert "encodes x ((heads * rows)%nat * cols)%nat 1 1 1 (fun _ => (n%:R)%:M) ->" in text


def test_a_size_expression_without_a_nat_rendering_is_refused() -> None:
    n = C.Size("n")
    assert nat_term(n * 2 + 0) == "(n * 2)%nat"
    with pytest.raises(CoqExportError, match="no nat rendering"):
        nat_term(n - 1)
    blk = Block.of("A", n - 1, n, n)
    st = KernelStatement("p", ("n",), Layout.of(blk, length=n * n), (Operand("A"),), "A", "A")
    with pytest.raises(CoqExportError):
        st.text()


def test_the_kernel_parameters_are_the_programs_sizes() -> None:
    """A kernel record whose parameters miss one of the program's sizes is refused (a size left out of
    the statement would be fixed by the export)."""
    thm = _theorem("Matmul")
    bad = K.KernelTheorem(*[getattr(thm, f) for f in ("construction", "paper_ref", "theory", "against", "statement",
                                                      "make", "program")], ("rows", "inner", "cols"), thm.theorems,
                          thm.cases)  # fmt: skip
    with pytest.raises(K.KernelError, match="not the program's sizes"):
        bad.statements()


def test_kernel_checked_only_for_the_catalogues_own_construction() -> None:
    """The scope label: the masked softmax the catalogue (and U) runs is the max-shifted one, so its
    stable theory covers it and the plain one does not; the single-matrix matmul is the stacked program
    with heads = 1."""
    covers = {t.theory: K.covers_registered(t) for t in K.THEOREMS}
    assert covers["SoftmaxMaskedStable"] and not covers["SoftmaxMasked"] and not covers["SoftmaxStable"]
    assert covers["Matmul"] and covers["Transpose"] and covers["Det3"] and covers["Inverse3"]
    steps = ("Trace", "Frobenius", "FirstStep", "GeneralStep", "CoefficientStep", "Iteration")
    assert all(covers[f"Faddeev{s}"] for s in steps)  # the very factories of faddeev-steps' obligations
    assert not covers["FaddeevLeVerrier"]  # mathematics only: it checks no program
    r, c = C.Size("rows"), C.Size("cols")
    swapped = transpose(c, r, C.Size("heads")).program
    other = [export_program("transpose_heads_prog", swapped, ("rows", "cols", "heads"))]
    assert not K.covers_registered(_theorem("Transpose"), other)


# -- parsing Coq's own output ------------------------------------------------------------------------
def test_print_assumptions_is_read_by_its_structure() -> None:
    """A name whose type Coq prints on the next line is an entry like any other; a section other than
    Axioms is reported as such."""
    out = (
        "Axioms:\nboolp.propositional_extensionality : forall P Q : Prop, P <-> Q -> P = Q\n"
        "very_long_hypothesis_name\n  : forall (A : Type) (B : A -> Type),\n    A = A\n"
        "Section Variables:\nv : nat\n"
    )
    got = G.parse_assumptions(out)
    assert got.axioms == ("boolp.propositional_extensionality", "very_long_hypothesis_name")
    assert got.other == ("Section Variables: v",)
    assert G.parse_assumptions("Closed under the global context\n") == G.Printed((), ())


@pytest.mark.parametrize("text", ["", "\n", "   indented only\n"])
def test_print_assumptions_printing_nothing_is_not_closed(text: str) -> None:
    """Coq prints "Closed under the global context" or a list: an empty text is refused, not read as closed."""
    got = G.parse_assumptions(text)
    assert got.axioms == () and len(got.other) == 1 and "printed neither" in got.other[0], got


def test_names_are_resolved_to_one_full_path() -> None:
    env = ("mathcomp.classical.boolp.propositional_extensionality", "Attnsim.Relu.boolp.propositional_extensionality")
    one = G.resolve("t", G.Printed(("Relu.boolp.propositional_extensionality",), ()), env)
    assert one.resolved == (("Relu.boolp.propositional_extensionality", env[1]),) and one.refused == (env[1],)
    two = G.resolve("t", G.Printed(("boolp.propositional_extensionality",), ()), env)
    assert two.refused and "2 axioms" in two.refused[0]
    real = G.resolve("t", G.Printed(("boolp.propositional_extensionality",), ()), env[:1])
    assert real.refused == () and real.full == (env[0],)
    gone = G.resolve("t", G.Printed(("ghost",), ()), env)
    assert "no axiom of the environment" in gone.refused[0]


def test_the_coqchk_summary_is_parsed() -> None:
    out = (
        "\nCONTEXT SUMMARY\n===============\n\n* Theory: Set is predicative\n  \n* Axioms:\n"
        "    mathcomp.classical.boolp.propositional_extensionality\n    Attnsim.Relu.h\n  \n"
        "* Constants/Inductives relying on type-in-type: <none>\n  \n"
        "* Constants/Inductives relying on unsafe (co)fixpoints:\n    Attnsim.Relu.f\n  \n"
    )
    axioms, unsafe = B.parse_context(out)
    assert axioms == ("mathcomp.classical.boolp.propositional_extensionality", "Attnsim.Relu.h")
    assert unsafe == ("Attnsim.Relu.f",)


def test_a_kernel_flag_turned_off_is_refused_even_under_axioms() -> None:
    """Print Assumptions reports definitional UIP or an unsafe hierarchy inside its Axioms section:
    such a line is refused as what it is, not read as an axiom name."""
    out = "Axioms:\nRelu.seqs relies on definitional UIP.\nboolp.propositional_extensionality : forall P Q : Prop, P\n"
    got = G.parse_assumptions(out)
    assert got.axioms == ("boolp.propositional_extensionality",)
    assert got.other == ("Relu.seqs relies on definitional UIP.",)


def test_a_statement_binder_cannot_shadow_the_statements_own() -> None:
    n = C.Size("n")
    blk = Block.of("x", 0, n, n)
    with pytest.raises(CoqExportError, match="clash"):
        KernelStatement("p", ("n",), Layout.of(blk), (Operand("x"),), "x", "x")
    out = Block.of("A", 0, n, n, channel="out")
    with pytest.raises(CoqExportError, match="not read from the input tokens"):
        KernelStatement("p", ("n",), Layout.of(out), (Operand("A"),), "A", "A")


@pytest.mark.parametrize("command", ["Elpi Command hook.", "Declare ML Module \"x\".", "Load Other.",
                                     "Unset Guard Checking.", "Set Definitional UIP.", "Redirect \"f\" Print nat.",
                                     "#[bypass_check(guard)] Fixpoint loop (n : nat) : False := loop n."])
def test_commands_that_run_code_or_turn_a_check_off_are_refused_before_coq(sources: Path, command: str) -> None:
    """A plugin command (Elpi can run shell commands while coqc compiles, and so write the cache), a file
    command or a kernel check turned off: the theory is refused before Coq runs."""
    _tamper(sources, "Relu", "Theorem relu_max0 :", command + "\nTheorem relu_max0 :")
    out = K.kernel_check(_theorem("Relu"))(120.0)
    assert out.ok is False and "Relu.v uses" in out.detail and "refused" in out.detail


def test_the_semantics_is_pinned(sources: Path) -> None:
    """Semantics.v is trusted: a changed one (here `encodes` made vacuous) is refused, whatever Coq
    would accept; the pin is the shipped file's digest."""
    import hashlib

    shipped = (Path(__file__).resolve().parents[2] / "attnsim" / "coq" / "Semantics.v").read_bytes()
    assert hashlib.sha256(shipped).hexdigest() == K.SEMANTICS_SHA256
    _tamper(sources, "Semantics", "  forall (t : 'I_h)", "  (size x < 0)%nat /\\ forall (t : 'I_h)")
    out = K.kernel_check(_theorem("Relu"))(120.0)
    assert out.ok is False and "Semantics.v is not the reviewed semantics" in out.detail


def test_an_engine_that_raises_fails_the_differential_instead_of_checking_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*a: Any, **k: Any) -> Any:
        raise ValueError("engine broken")

    monkeypatch.setattr(V, "evaluate", broken)
    with pytest.raises(ValueError, match="engine broken"):
        V.diff_cases(_theorem("Relu"))
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/true")  # no coqc needed to fail first
    with pytest.raises(ValueError):
        V.differential_check(_theorem("Relu"))(10.0)


def test_integer_operands_reach_their_bounds_and_inner_values() -> None:
    """Masked softmax's width: some case has n < cols (the masked branch runs), some n = cols, some n = 1."""
    for theory in ("SoftmaxMasked", "SoftmaxMaskedStable"):
        thm = _theorem(theory)
        cases = V.diff_cases(thm)
        widths = []
        for c in cases:
            con = thm.make().bind(**c.sizes)
            blk = con.layout["n"]
            widths.append((int(c.tokens[blk.start]), c.sizes["cols"]))
        assert any(n < cols for n, cols in widths) and any(n == cols for n, cols in widths), widths


def test_the_coq_sources_ship_with_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The .v files are package data: found from any directory, without $ATTNSIM_COQ_DIR; a directory
    given there without them is named in one line."""
    import importlib.resources
    import tomllib

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ATTNSIM_COQ_DIR", raising=False)
    src = K.coq_sources()
    assert src == Path(str(importlib.resources.files("attnsim") / "coq"))
    for thm in K.THEOREMS:
        assert (src / f"{thm.theory}.v").is_file(), thm.theory
    data = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert "coq/*.v" in data["tool"]["setuptools"]["package-data"]["attnsim"]
    monkeypatch.setenv("ATTNSIM_COQ_DIR", str(tmp_path))
    with pytest.raises(K.KernelError, match="ATTNSIM_COQ_DIR"):
        K.coq_sources()


def test_without_coqc_the_obligation_is_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    out = K.kernel_check(_theorem("Relu"))(10.0)
    assert out.ok is None and out.detail.startswith("not run (coqc not installed")


def test_the_exports_library_holds_every_program_and_a_given_one_replaces_its_default() -> None:
    text = K.exports_text([])
    for thm in (t for t in K.THEOREMS if t.make is not None):
        assert f"Definition {thm.program} " in text
    own = CoqProgram("relu_prog", ("n", "rows"), "Definition relu_prog (n rows : Z) : sop := Tokens.\n")
    mutant = K.exports_text([own])
    assert own.text in mutant and mutant.count("Definition relu_prog ") == 1


def test_coq_runs_with_the_tuned_collector_unless_the_user_sets_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: list[dict[str, str]] = []

    class Fake:
        def __init__(self, *a: Any, **k: Any) -> None:
            seen.append(k["env"])
            self.returncode = 0

        def communicate(self, timeout: float | None = None) -> tuple[str, str]:
            return "", ""

    monkeypatch.setattr(B.subprocess, "Popen", Fake)
    monkeypatch.delenv("OCAMLRUNPARAM", raising=False)
    B.run_limited(["coqc"], tmp_path, 1.0)
    monkeypatch.setenv("OCAMLRUNPARAM", "v=0x400")
    B.run_limited(["coqc"], tmp_path, 1.0)
    assert [e["OCAMLRUNPARAM"] for e in seen] == [B.COQC_GC, "v=0x400"]


def test_a_run_over_its_cpu_budget_is_stopped_and_not_a_verdict(tmp_path: Path) -> None:
    """The budget is CPU seconds of the child (RLIMIT_CPU): a busy loop is stopped, reported as such."""
    code, out = B.run_limited(["python3", "-c", "while True: pass"], tmp_path, 1.0)
    assert code is None and "budget of 1 CPU seconds" in out


# -- the kernel gate on real Coq runs -----------------------------------------------------------------
@needs_coq
@pytest.mark.parametrize("theory", [t.theory for t in K.THEOREMS])
def test_kernel_obligation_is_proved(theory: str) -> None:
    thm = _theorem(theory)
    out = K.kernel_check(thm)(120.0)
    assert out.ok is True, out.detail
    assert out.kernel is not None and out.kernel.theorems == thm.theorem_names
    if any(t.exp is not None for t in thm.theorems):  # the expR corollaries: every boolp axiom, by full path
        assert out.kernel.assumptions == BOOLP
        assert "_expR: " + ", ".join(BOOLP) in out.detail
    else:
        assert out.kernel.assumptions == () and "closed under the global context" in out.detail


@needs_coq
def test_a_hypothesis_whose_type_is_printed_on_the_next_line_fails(sources: Path) -> None:
    """Attack 1: a Hypothesis outside any section (Coq prints its long type below its name) is an axiom
    the theorem uses: refused, named by its full path."""
    hyp = (
        "Hypothesis relu_is_fine_whatever_its_type_and_however_long_it_is :\n"
        "  forall (a b c d e f g h i j k l m : nat), a + b + c + d + e + f + g + h + i + j + k + l + m = 0.\n"
    )
    _tamper(sources, "Relu", "Theorem relu_max0 :", hyp + "Theorem relu_max0 :")
    uses = "have := relu_is_fine_whatever_its_type_and_however_long_it_is.\nmove=> _; exact: relu_max0_core."
    _tamper(sources, "Relu", "exact: relu_max0_core.", uses)
    out = K.kernel_check(_theorem("Relu"))(120.0)
    assert out.ok is False
    assert "Attnsim.Relu.relu_is_fine_whatever_its_type_and_however_long_it_is" in out.detail


@needs_coq
def test_an_allowed_name_faked_in_our_own_module_fails(sources: Path) -> None:
    """Attack 2: a module of ours named like MathComp-analysis' boolp, holding its axiom's name, in a
    theory that does not load analysis: the axiom's full path is ours (Attnsim...), refused."""
    fake = "Module boolp.\nHypothesis propositional_extensionality : False.\nEnd boolp.\n"
    _tamper(sources, "Relu", "Theorem relu_max0 :", fake + "Theorem relu_max0 :")
    out = K.kernel_check(_theorem("Relu"))(120.0)
    assert out.ok is False and "Attnsim.Relu.boolp.propositional_extensionality" in out.detail


@needs_coq
def test_an_admitted_proof_fails(sources: Path) -> None:
    _tamper(sources, "Relu", RELU_PROOF + "\nQed.", "Proof.\nAdmitted.")
    out = K.kernel_check(_theorem("Relu"))(120.0)
    assert out.ok is False and "Attnsim.Relu.relu_max0" in out.detail


@needs_coq
@pytest.mark.parametrize(
    "what, old, new",
    [
        (  # attack 4: a vacuous premise, proved by []
            "vacuous premise",
            RELU_THEOREM,
            f"Theorem relu_max0 {PRIMS} (n rows : nat) (A : 'M[R]_(rows, n)) (x : seq R) :\n"
            f"  (n < 0)%nat -> decode ({EVAL} (relu_prog (Z.of_nat n) (Z.of_nat rows)) x) 0 1 rows n ord0 = A.\n"
            "Proof.\nby [].",
        ),
        (  # a weakened conclusion: the first row only
            "weakened conclusion",
            RELU_THEOREM,
            f"Theorem relu_max0 {PRIMS} (n rows : nat) (A : 'M[R]_(rows, n)) (x : seq R) :\n"
            "  encodes x 0 1 rows n (fun _ => A) -> forall i : 'I_rows, forall j : 'I_n, (0 < i)%nat \\/ True.\n"
            "Proof.\nby move=> _ i j; right.",
        ),
        (  # a fixed size: rows = 1
            "fixed size",
            RELU_THEOREM,
            f"Theorem relu_max0 {PRIMS} (n : nat) (A : 'M[R]_(1, n)) (x : seq R) :\n"
            "  encodes x 0 1 1 n (fun _ => A) -> (1 * n <= size x)%nat ->\n"
            f"  decode ({EVAL} (relu_prog (Z.of_nat n) (Z.of_nat 1)) x) 0 1 1 n ord0\n"
            "  = map_mx (fun v => Num.max v 0%R) A.\n"
            "Proof.\nmove=> HA _; exact: relu_max0_core.",
        ),
    ],
)
def test_a_theorem_that_does_not_prove_its_generated_statement_fails(
    sources: Path, what: str, old: str, new: str
) -> None:
    """Attack 4: the theory compiles (Coq accepts the tampered theorem on its own terms), but the gate
    types it with the generated statement: refused."""
    _tamper(sources, "Relu", old, new)
    out = K.kernel_check(_theorem("Relu"))(120.0)
    assert out.ok is False and "ReluGate.v: the theorems' types are not their generated statements" in out.detail, (
        what,
        out.detail,
    )


@needs_coq
def test_a_theory_about_its_own_copy_of_the_program_fails(sources: Path) -> None:
    """A theorem about a hand-written program proves nothing about the export: its type mentions the
    theory's own definition, so the gate refuses it (unless the copy is the exported term up to
    conversion, which then is the same program: accepted)."""
    text = (sources / "Relu.v").read_text()
    head = text[: text.index("Section Relu.")]
    copy = (
        "Definition relu_prog (n r : Z) := Map1 PIdentity Tokens.\n"
        f"Theorem relu_max0 {PRIMS} (n rows : nat) (A : 'M[R]_(rows, n)) (x : seq R) :\n"
        "  encodes x 0 1 rows n (fun _ => A) ->\n"
        f"  decode ({EVAL} (relu_prog (Z.of_nat n) (Z.of_nat rows)) x) 0 1 rows n ord0 = A.\n"
        "Proof. by move=> HA; apply/matrixP => i j; rewrite !mxE /= (proj2 (HA ord0 i j)). Qed.\n"
    )
    (sources / "Relu.v").write_text(head + copy)
    out = K.kernel_check(_theorem("Relu"))(120.0)
    assert out.ok is False and "ReluGate.v: the theorems' types are not their generated statements" in out.detail
    same = text.replace("Section Relu.", "Definition relu_prog (n r : Z) := Map1 PRelu Tokens.\nSection Relu.")
    (sources / "Relu.v").write_text(same)
    assert K.kernel_check(_theorem("Relu"))(120.0).ok is True


@needs_coq
def test_transpose_reading_one_row_late_fails() -> None:
    """Lemma (transpose): the gather's source one row (cols positions) later is refused by Coq."""
    r, c, h = C.Size("rows"), C.Size("cols"), C.Size("heads")
    prog = _mutated(lambda: transpose(r, c, h).program, lambda fn: fn.expr + c)
    mutant = [export_program("transpose_heads_prog", prog, ("rows", "cols", "heads"))]
    assert "cols)) n0)" in mutant[0].text
    out = K.kernel_check(_theorem("Transpose"), mutant)(120.0)
    assert out.ok is False and "Transpose.v: Coq rejects it" in out.detail


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
    out = K.kernel_check(_theorem("Matmul"), mutant)(120.0)
    assert out.ok is False and "Matmul.v: Coq rejects it" in out.detail


@needs_coq
def test_an_export_coq_rejects_is_named_in_the_failure() -> None:
    bad = [CoqProgram("relu_prog", ("n", "rows"), "Definition relu_prog (n rows : Z) : sop := Map1 PRelu Tokenz.\n")]
    out = K.kernel_check(_theorem("Relu"), bad)(120.0)
    assert out.ok is False and "Exports.v: Coq rejects it" in out.detail


@needs_coq
def test_a_second_build_compiles_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache: a second run of the same theory compiles no file and reuses coqchk's verdict; a changed
    theory recompiles that theory and what requires it, nothing before it."""
    monkeypatch.setenv("ATTNSIM_COQ_CACHE", str(tmp_path / "cache"))
    thm = _theorem("Relu")
    first = K.run_kernel(thm)
    assert first.build.compiled == ("Semantics", "Lemmas", "Exports", "ReluStatement", "Relu", "ReluGate")
    second = K.run_kernel(thm)
    assert second.build.compiled == () and second.checked is not None and second.checked.cached
    assert K.judge(thm, second, True).ok is True
    src = tmp_path / "coq"
    shutil.copytree(K.coq_sources(), src)
    (src / "Relu.v").write_text((src / "Relu.v").read_text() + "\n(* edited *)\n")
    monkeypatch.setenv("ATTNSIM_COQ_DIR", str(src))
    third = K.run_kernel(thm)
    assert third.build.compiled == ("Relu", "ReluGate")


# -- the engine answers to the kernel ---------------------------------------------------------------
PROGRAMS = [t.theory for t in K.THEOREMS if t.make is not None]  # the theories about a program


@needs_coq
@pytest.mark.parametrize("theory", PROGRAMS)
def test_coqs_evaluator_equals_the_engine(theory: str) -> None:
    thm = _theorem(theory)
    exact = V.differential_check(thm)(120.0)
    assert exact.ok is True, exact.detail
    assert V.float_check(thm)(120.0).ok is True


def test_the_differential_inputs_reach_non_square_and_edge_sizes() -> None:
    """Each construction's differential cases include a size 1 and two unequal sizes, and the engine's
    output on them is not all zero (a run that computes nothing would agree with anything)."""
    for thm in (t for t in K.THEOREMS if t.make is not None):
        cases = V.diff_cases(thm)
        assert len(cases) == len(thm.cases) >= 3, thm.theory
        assert any(any(np.asarray(c.exact) != 0) for c in cases), thm.theory
        dims = [s for s in thm.sizes if s not in ("offset", "pad")]
        if dims:
            assert any(1 in c.sizes.values() for c in cases), thm.theory
        if len(dims) > 1:  # some case has unequal sizes (a non-square shape)
            assert any(len({c.sizes[s] for s in dims}) > 1 for c in cases), thm.theory


@needs_coq
def test_an_engine_gather_reading_one_position_early_fails_the_default_obligation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Attack 5: a bug in the engine (not in the program): a gather reads position q - 1 in the
    exact run. Coq's evaluation of the exported term disagrees with the engine, so the default run fails."""
    real = Interpreter.rows

    def early(self: Interpreter, sel: C.Selector, q: np.ndarray) -> np.ndarray:
        rows = real(self, sel, q)
        if isinstance(sel, C.Select) and isinstance(sel.keys, C.Indices) and sel.cmp == "==":
            rows = np.concatenate([rows[:, 1:], rows[:, :1]], axis=1)  # key k + 1 read as key k
        return rows

    monkeypatch.setattr(Interpreter, "rows", early)
    out = V.differential_check(_theorem("Transpose"))(120.0)
    assert out.ok is False and "differs from the engine's exact run" in out.detail


def test_the_differential_obligations_need_coq_and_the_float_one_rests_on_the_exact_one() -> None:
    obs = V.differential_obligations(_theorem("Relu"))
    assert [o.method for o in obs] == ["exact", "numeric"] and all(o.tools == ("coqc",) for o in obs)
    assert obs[1].requires == (obs[0].id,)


@needs_coq
def test_coqc_is_never_left_running(tmp_path: Path) -> None:
    """A coqc started by a process that dies is killed with it (PR_SET_PDEATHSIG): no orphan."""
    flag = tmp_path / "started"
    child = "import sys, time; open(sys.argv[1], 'w').close(); time.sleep(600)"
    script = tmp_path / "parent.py"
    script.write_text(
        "import pathlib, sys\n"
        "from attnsim.proofs import coq_build as B\n"
        f"B.run_limited([sys.executable, '-c', {child!r}, {str(flag)!r}], pathlib.Path('.'), 900)\n"
    )
    cmd = [sys.executable, str(script)]
    parent = subprocess.Popen(cmd, cwd=tmp_path)
    while not flag.exists():
        if parent.poll() is not None:
            pytest.fail("the parent exited before its child started")
    child = _child_of(parent.pid)
    parent.kill()
    parent.wait()
    assert child is not None
    _wait_gone(child)


def _child_of(pid: int) -> int | None:
    for _ in range(1000):
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        if kids:
            return int(kids[0])
    return None


def _wait_gone(pid: int) -> None:
    """Wait until ``pid`` is gone or a zombie (the kernel delivers the death signal at once)."""
    for _ in range(100000):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except FileNotFoundError:
            return
        if state in ("Z", "X"):
            return
    pytest.fail(f"process {pid} outlived its parent")
