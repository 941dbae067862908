"""Kernel-checked lemmas: the programs exported to Coq and proven against MathComp's definitions.

Each :class:`KernelTheorem` names a hand-written theory of ``attnsim/coq/`` (``Transpose.v``...),
the construction it is about (built over unbound sizes by the construction's own factory) and, per
theorem, the conclusion in MathComp's terms (``trmx (A t)``, ``A t *m B t``...).  Its ``kernel``
obligation builds, through the content-addressed cache of :mod:`attnsim.proofs.coq_build`:

1. ``Semantics.v`` and ``Lemmas.v`` (hand-written), ``Exports.v`` (every kernel theorem's program
   exported by :mod:`attnsim.proofs.coq`; a check given other programs, a mutant, exports those);
2. ``<Theory>Statement.v``: each theorem's statement generated from the construction's layout,
   sizes and declarations (:mod:`attnsim.proofs.coq_statement`), ``<name>_statement : Prop``;
3. the theory, which proves ``Theorem <name> : <name>_statement``;
4. ``<Theory>Gate.v`` (:mod:`attnsim.proofs.coq_gate`): each theorem given its generated statement
   as its type (the kernel checks they agree) and its ``Print Assumptions``;
5. ``coqchk`` over all six libraries.

Proved only when every file is accepted, coqchk accepts the libraries and finds no axiom in our own
files, and every theorem's assumptions, resolved to full paths, are in
:data:`~attnsim.proofs.coq_gate.ALLOWED_AXIOMS`; the detail lists them.  Without ``coqc`` the
obligation is not run (the CLI reports it skipped).

The Coq-evaluator obligations that tie the engine to the exported terms are in
:mod:`attnsim.constructions.coq_evaluator`.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from attnsim.constructions.construction import Construction, ConstructionError
from attnsim.constructions.kernel_theorems import THEOREMS, KernelError, KernelTheorem, Theorem
from attnsim.proofs import coq_build as B
from attnsim.proofs import coq_gate as G
from attnsim.proofs.coq import CoqProgram, export_program, module_text
from attnsim.proofs.obligation import KernelFacts, Obligation, Outcome
from attnsim.rasp.core import built_once
from attnsim.rasp.layout import Block, value_of

HAND_WRITTEN = ("Semantics", "Lemmas")
EXPORTS = "Exports"
# Semantics.v is trusted (the language's meaning, `encodes`, `decode`): a change to it must be
# deliberate, reviewed, and this digest updated with it (a test compares them).
SEMANTICS_SHA256 = "81efab7ecda1deddac6842b15a640f472eb31fce6ed6d6dcdec76d901f97891b"
# Vernacular that runs code, reads or writes files, or turns a kernel check off: refused in every
# hand-written file before Coq runs (a plugin such as Elpi can run shell commands while coqc compiles).
FORBIDDEN = re.compile(
    r"\b(Elpi|elpi|Declare\s+ML\s+Module|Load|Cd|Redirect|Extraction|Extract|LoadPath|ML\s+Path|"
    r"Definitional\s+UIP|Guard\s+Checking|Positivity\s+Checking|Universe\s+Checking|Typing\s+Flags|Drop|bypass_check)\b"
)
COQ_BUDGET = 300.0  # CPU seconds for one coqc or coqchk run (the largest theory takes about 10)


def coq_sources() -> Path:
    """The hand-written Coq files: ``$ATTNSIM_COQ_DIR`` if set, else the package's ``coq/``."""
    env = os.environ.get("ATTNSIM_COQ_DIR")
    d = Path(env) if env else Path(__file__).resolve().parents[1] / "coq"
    if not (d / "Semantics.v").is_file():
        where = f"$ATTNSIM_COQ_DIR={env}" if env else str(d)
        raise KernelError(f"the Coq sources are not in {where} (no Semantics.v there)")
    return d


# -- sources and the build ---------------------------------------------------------------------
_ANALYSIS = "From mathcomp Require Import reals sequences exp.\n"  # realType, expR: loaded only where used


def _imports(thm: KernelTheorem) -> str:
    """The generated files' preamble (MathComp-analysis only for a theorem over a ``realType``)."""
    analysis = _ANALYSIS if any(t.field != "realFieldType" or t.exp is not None for t in thm.theorems) else ""
    return (
        "From mathcomp Require Import all_ssreflect all_algebra.\n"
        + analysis
        + "From Coq Require Import ZArith.\nFrom Attnsim Require Import Semantics Exports.\n"
        "Import GRing.Theory Num.Theory.\nLocal Open Scope ring_scope.\n"
    )


@built_once
def default_programs() -> tuple[CoqProgram, ...]:
    """Every kernel theorem's exported program, once per process (the library's default text)."""
    return tuple(p for thm in THEOREMS for p in thm.programs())


def exports_text(programs: Sequence[CoqProgram]) -> str:
    """``Exports.v``: the default programs, each replaced by the one of ``programs`` of its name."""
    given = {p.name: p for p in programs}
    names = {p.name for p in default_programs()}
    return module_text(
        [given.get(p.name, p) for p in default_programs()] + [p for p in programs if p.name not in names]
    )


def statement_text(thm: KernelTheorem) -> str:
    """``<Theory>Statement.v``: each theorem's generated statement as a ``Prop`` definition."""
    defs = "\n".join(f"Definition {name} : Prop :=\n{text}.\n" for name, text in thm.statement_texts())
    head = "(* Generated by attnsim.constructions.kernel from the construction's layout and declarations. *)\n"
    return head + _imports(thm) + "\n" + thm.definitions + "\n" + defs


def gate_text(thm: KernelTheorem) -> str:
    """``<Theory>Gate.v``: the theorems typed by their generated statements, and their assumptions."""
    pre = _imports(thm) + f"From Attnsim Require Import {thm.theory}Statement.\n"
    return G.gate_text(pre, thm.theory, thm.theorem_names)


def kernel_files(thm: KernelTheorem, programs: Sequence[CoqProgram] = ()) -> list[B.CoqFile]:
    """The build of one theory: semantics, lemmas, exports, statements, the theory, its gate."""
    src = coq_sources()
    stmt = f"{thm.theory}Statement"
    if not (src / f"{thm.theory}.v").is_file():
        raise KernelError(f"the theory {thm.theory}.v is not in {src}")
    return [
        B.CoqFile("Semantics", (src / "Semantics.v").read_text()),
        B.CoqFile("Lemmas", (src / "Lemmas.v").read_text(), ("Semantics",)),
        B.CoqFile(EXPORTS, exports_text(programs), ("Semantics",)),
        B.CoqFile(stmt, statement_text(thm), ("Semantics", EXPORTS)),
        B.CoqFile(thm.theory, (src / f"{thm.theory}.v").read_text(), ("Semantics", "Lemmas", EXPORTS, stmt)),
        B.CoqFile(f"{thm.theory}Gate", gate_text(thm), ("Semantics", EXPORTS, stmt, thm.theory)),
    ]


def source_problems(thm: KernelTheorem) -> list[str]:
    """What in the hand-written files refuses the check before Coq runs: a changed ``Semantics.v``
    (its digest is pinned), or a forbidden command in ``Lemmas.v`` or the theory."""
    src = coq_sources()
    out = []
    sem = hashlib.sha256((src / "Semantics.v").read_bytes()).hexdigest()
    if sem != SEMANTICS_SHA256:
        pinned = SEMANTICS_SHA256[:12]
        out.append(f"Semantics.v is not the reviewed semantics (SHA-256 {sem[:12]}..., pinned {pinned}...)")
    for name in ("Lemmas", thm.theory):
        found = sorted({m.group(0) for m in FORBIDDEN.finditer((src / f"{name}.v").read_text())})
        if found:
            out.append(f"{name}.v uses {', '.join(found)} (code, files or a kernel check turned off: refused)")
    return out


@dataclass(frozen=True)
class KernelRun:
    """The build, coqchk's verdict (None when the build stopped first) and each theorem's assumptions."""

    build: B.Build
    checked: B.Checked | None
    assumptions: tuple[G.Assumptions, ...]
    own: tuple[str, ...]


def run_kernel(thm: KernelTheorem, programs: Sequence[CoqProgram] = (), tools: B.CoqTools | None = None) -> KernelRun:
    """Build the theory (through the cache), check it with coqchk and read its assumptions."""
    tools = tools or B.CoqTools.find()
    if tools is None:
        raise B.CoqToolError("coqc is not installed")
    files = kernel_files(thm, programs)
    built = B.build(files, tools, COQ_BUDGET)
    if built.failed is not None:
        return KernelRun(built, None, (), ())
    checked = B.check(files, built, tools, COQ_BUDGET)
    texts = G.split_gate_output(built.result(f"{thm.theory}Gate").output, thm.theorem_names)
    missing = G.Assumptions("", (), ("Print Assumptions printed nothing between its markers",))
    assumptions = tuple(
        G.resolve(t, G.parse_assumptions(texts[t]), checked.axioms) if t in texts else replace(missing, theorem=t)
        for t in thm.theorem_names
    )
    return KernelRun(built, checked, assumptions, G.own_axioms(checked))


def first_error(output: str) -> str:
    """Coq's error message, on one line: where it is, then its last 300 characters (the message
    proper comes after the environment Coq prints)."""
    lines = output.splitlines()
    for i, ln in enumerate(lines):
        if ln.startswith("Error"):
            where = lines[i - 1].strip() if i and lines[i - 1].startswith("File") else ""
            text = " ".join(x.strip() for x in lines[i:] if x.strip())
            return f"{where} {text if len(text) <= 300 else '... ' + text[-300:]}".strip()
    return output.strip()[-300:]


def covers_registered(thm: KernelTheorem, programs: Sequence[CoqProgram] = ()) -> bool:
    """Whether the program Coq checked is the catalogue's own construction: the registered
    construction's exported body (the ``let`` lines) equals the checked program's, and its operands,
    output and declared domain sit where the statement says, the checked construction's sizes that
    the registered one lacks set to 1 (a single matrix is a stack of one)."""
    if thm.registered is None:
        return False
    given = {p.name: p for p in programs}.get(thm.program)
    reg = thm.registered()
    extra = {s: 1 for s in thm.sizes if s not in reg.free_sizes}
    kept = tuple(s for s in thm.sizes if s not in extra)
    if given is not None and extra:
        return False  # a given (mutant) program is checked as exported; it is not re-bound here
    mine = thm.build().bind(**extra)
    checked = given or export_program(thm.program, mine.program, kept)
    same_program = _body(export_program(thm.program, reg.program, kept).text) == _body(checked.text)
    return same_program and _same_interface(mine, reg, kept)


def _same_interface(a: Construction, b: Construction, sizes: Sequence[str]) -> bool:
    """Same operands, output and declared domain, every block at the same place: compared at a few
    size points (all sizes 1..4, and unequal ones)."""
    if (a.inputs, a.output, len(a.scalars), a.binary) != (b.inputs, b.output, len(b.scalars), b.binary):
        return False
    points = [dict.fromkeys(sizes, v) for v in (1, 2, 4)] + [{s: 2 + i for i, s in enumerate(sizes)}]
    for point in points:
        try:
            ca, cb = a.bind(**point), b.bind(**point)
        except ConstructionError:  # a point outside a precondition (an odd MaxMin length): skipped
            continue
        for name in (*a.inputs, a.output):
            ba, bb = ca.layout[name], cb.layout[name]
            if _placed(ba) != _placed(bb):
                return False
        if ca.layout.total != cb.layout.total:
            return False
    return True


def _placed(blk: Block) -> tuple[int, int, int, int, str]:
    return blk.start, value_of(blk.stack), value_of(blk.rows), value_of(blk.cols), blk.channel


def _body(text: str) -> str:
    """The term of an exported definition, without its header and its comments (node labels)."""
    return re.sub(r"\(\*.*?\*\)", "", text.split(":=", 1)[1])


def kernel_check(thm: KernelTheorem, programs: Sequence[CoqProgram] | None = None) -> Callable[[float], Outcome]:
    """The obligation's check: ``programs`` (default: the construction's own export) against the theory."""

    def check(timeout: float) -> Outcome:
        _ = timeout  # coqc and coqchk run on their own CPU budget (COQ_BUDGET)
        tools = B.CoqTools.find()
        if tools is None:
            return Outcome.unknown("not run (coqc not installed; see README: apt-get install coq libcoq-mathcomp-*)")
        try:
            problems = source_problems(thm)
            if problems:
                return Outcome.bad("; ".join(problems))
            run = run_kernel(thm, programs or (), tools)
        except (KernelError, B.CoqToolError) as exc:
            return Outcome.bad(str(exc))
        return judge(thm, run, covers_registered(thm, programs or ()))

    return check


def judge(thm: KernelTheorem, run: KernelRun, registered: bool) -> Outcome:
    """The verdict of a kernel run (see the module doc)."""
    failed = run.build.failed
    if failed is not None:
        if failed.status == "over budget":
            return Outcome.unknown(f"coqc stopped on {failed.name}.v: {failed.output.strip()[-200:]}")
        gate = failed.name == f"{thm.theory}Gate"
        what = "the theorems' types are not their generated statements" if gate else "Coq rejects it"
        return Outcome.bad(f"{failed.name}.v: {what}: {first_error(failed.output)}")
    assert run.checked is not None
    if run.checked.status == "over budget":
        return Outcome.unknown(f"coqchk stopped: {run.checked.output.strip()[-200:]}")
    if run.checked.status != "ok":
        return Outcome.bad(f"coqchk rejects the libraries: {first_error(run.checked.output)}")
    if run.own:
        return Outcome.bad(
            f"assumptions in our own Coq files (Axiom, Parameter, Hypothesis or Variable outside a section, "
            f"Conjecture, Admitted): {', '.join(run.own)}"
        )
    if run.checked.unsafe:
        return Outcome.bad(f"coqchk reports unsafe definitions: {', '.join(run.checked.unsafe)}")
    refused = [f"{a.theorem}: {r}" for a in run.assumptions for r in a.refused]
    if refused:
        return Outcome.bad(f"assumptions outside the allowed set: {'; '.join(refused)}")
    every = tuple(sorted({f for a in run.assumptions for f in a.full}))
    closed = "none (closed under the global context)"
    per = "; ".join(f"{a.theorem}: {', '.join(a.full) or closed}" for a in run.assumptions)
    facts = KernelFacts(thm.theorem_names, every, registered, thm.sizes)
    form = "the catalogue's construction" if registered else "a variant the catalogue does not register"
    detail = (
        f"Coq accepts {thm.theory}.v ({form}), statements as generated, coqchk re-checks it; "
        f"against {thm.against}; assumptions by full path: {per}"
    )
    return Outcome(True, detail, kernel=facts)


def kernel_obligation(thm: KernelTheorem) -> Obligation:
    """``<construction>/kernel/<theory>``: the Coq kernel checks the theorems for all sizes."""
    return Obligation(
        f"{thm.construction}/kernel/{thm.theory}",
        thm.construction,
        thm.paper_ref,
        "kernel",
        kernel_check(thm),
        statement=thm.statement,
        tools=("coqc",),
    )


def kernel_obligations() -> Iterable[Obligation]:
    """One kernel obligation per theory file."""
    for thm in THEOREMS:
        yield kernel_obligation(thm)


__all__ = [
    "COQ_BUDGET",
    "SEMANTICS_SHA256",
    "THEOREMS",
    "KernelError",
    "KernelRun",
    "KernelTheorem",
    "Theorem",
    "coq_sources",
    "covers_registered",
    "default_programs",
    "exports_text",
    "first_error",
    "judge",
    "kernel_check",
    "kernel_files",
    "kernel_obligation",
    "kernel_obligations",
    "run_kernel",
    "source_problems",
    "statement_text",
]
