"""Kernel-checked lemmas: the programs exported to Coq and proven against MathComp's definitions.

Each :class:`KernelTheorem` names a hand-written Coq file of ``coq/`` (``Transpose.v``...), the
theorems in it, the MathComp definition they are stated against, and the Python programs (built
over unbound sizes) it is about.  Its ``kernel`` obligation exports the programs with
:mod:`attnsim.proofs.coq` into ``Exports.v``, one generated library holding every kernel theorem's
programs (compiled once per process with the semantics and the general lemmas; a construction's
own ``programs`` in place of its defaults make a library of their own), then runs ``coqc`` once on
the theory file in a fresh build directory, then ``Print Assumptions`` of every theorem: proved
only when Coq accepts every file and no theorem depends on an axiom outside
:data:`ALLOWED_AXIOMS` (an ``Admitted`` proof is an axiom of the file's own name, so it fails), and
no hand-written file has a proof hole, undoes a definition (``Reset``, ``Back``) or defines an
exported program's name itself (the theorem must be about the exported term, which a file of its
own keeps out of the theory's reach).  Without ``coqc`` the obligation is unknown, "not run (coqc
not installed)": never proved.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from attnsim.lemmas.forms import consumer_matmul, gathered_transpose
from attnsim.lemmas.matmul import PAPER_REF as MATMUL_REF
from attnsim.lemmas.matmul import matmul
from attnsim.lemmas.maxmin import PAPER_REF as MAXMIN_REF
from attnsim.lemmas.maxmin import maxmin
from attnsim.lemmas.relu import PAPER_REF as RELU_REF
from attnsim.lemmas.relu import relu
from attnsim.lemmas.softmax import PAPER_REF as SOFTMAX_REF
from attnsim.lemmas.softmax import masked_softmax, softmax
from attnsim.lemmas.transpose import PAPER_REF as TRANSPOSE_REF
from attnsim.lemmas.transpose import transpose
from attnsim.proofs.coq import CoqProgram, export_program, module_text
from attnsim.proofs.obligation import Obligation, Outcome
from attnsim.rasp import core as C

# Axioms a kernel-checked theorem may rest on: those MathComp-analysis itself assumes (boolp) and
# the classical ones of Coq's standard library.  Anything else (an Admitted lemma, an Axiom of ours)
# makes the obligation fail.
ALLOWED_AXIOMS = frozenset(
    {
        "boolp.propositional_extensionality",
        "boolp.functional_extensionality_dep",
        "boolp.constructive_indefinite_description",
        "Classical_Prop.classic",
        "FunctionalExtensionality.functional_extensionality_dep",
        "ClassicalDedekindReals.sig_forall_dec",
        "ClassicalDedekindReals.sig_not_dec",
    }
)
HAND_WRITTEN = ("Semantics", "Lemmas")  # compiled before every export, in this order
EXPORTS = "Exports"  # the generated library of exported programs every theory imports
_FORBIDDEN = re.compile(r"\b(Admitted|admit|Axiom|Axioms|Parameter|Parameters|Conjecture|Reset|Back|BackTo)\b")
# vernacular that defines a name: a theory must not define an exported program's name itself
_DEFINING = (
    "Definition|Fixpoint|CoFixpoint|Let|Notation|Lemma|Theorem|Fact|Remark|Corollary|Proposition|Example|"
    "Instance|Inductive|CoInductive|Variant|Record|Structure|Class|Parameter|Axiom|Variable|Hypothesis|Context"
)


class KernelError(RuntimeError):
    """The Coq sources of coq/ cannot be found."""


@dataclass(frozen=True)
class KernelTheorem:
    """A hand-written Coq theory file, its theorems and the exported programs it proves them of."""

    construction: str
    paper_ref: str
    theory: str  # coq/<theory>.v
    theorems: tuple[str, ...]
    against: str  # the MathComp (or textbook) definition the theorems are stated against
    statement: str
    programs: Callable[[], list[CoqProgram]]


def _transpose_programs() -> list[CoqProgram]:
    r, c, h = C.Size("rows"), C.Size("cols"), C.Size("heads")
    return [export_program("transpose_heads_prog", transpose(r, c, h).program, ("rows", "cols", "heads"))]


def _matmul_programs() -> list[CoqProgram]:
    r, k, c, h = C.Size("rows"), C.Size("inner"), C.Size("cols"), C.Size("heads")
    prog = matmul(r, k, c, h).program
    return [export_program("matmul_heads_prog", prog, ("rows", "inner", "cols", "heads"))]


def _relu_programs() -> list[CoqProgram]:
    n, rows = C.Size("n"), C.Size("rows")
    return [export_program("relu_prog", relu(n, rows).program, ("n", "rows"))]


def _maxmin_programs() -> list[CoqProgram]:
    n, rows = C.Size("n"), C.Size("rows")
    return [export_program("maxmin_prog", maxmin(n, rows).program, ("n", "rows"))]


def _softmax_programs() -> list[CoqProgram]:
    r, c, h = C.Size("rows"), C.Size("cols"), C.Size("heads")
    return [export_program("softmax_heads_prog", softmax(r, c, h).program, ("rows", "cols", "heads"))]


def _masked_softmax_programs() -> list[CoqProgram]:
    r, c, h = C.Size("rows"), C.Size("cols"), C.Size("heads")
    prog = masked_softmax(r, c, h).program
    return [export_program("masked_softmax_heads_prog", prog, ("rows", "cols", "heads"))]


def _gathered_transpose_programs() -> list[CoqProgram]:
    r, c = C.Size("rows"), C.Size("cols")
    return [export_program("gathered_transpose_prog", gathered_transpose(r, c).program, ("rows", "cols"))]


def _consumer_matmul_programs() -> list[CoqProgram]:
    r, k, c, e = C.Size("rows"), C.Size("inner"), C.Size("cols"), C.Size("extra")
    prog = consumer_matmul(r, k, c, e).program
    return [export_program("consumer_matmul_prog", prog, ("rows", "inner", "cols", "extra"))]


THEOREMS = (
    KernelTheorem(
        "transpose",
        TRANSPOSE_REF,
        "Transpose",
        ("transpose_heads_trmx",),
        "trmx",
        "decode (eval (transpose_heads_prog r c h) x) t = trmx (A t) for every r, c, h and stack A held by x",
        _transpose_programs,
    ),
    KernelTheorem(
        "matmul",
        MATMUL_REF,
        "Matmul",
        ("matmul_heads_mulmx",),
        "mulmx",
        "decode (eval (matmul_heads_prog r k c h) x) t = A t *m B t for every r, k >= 1, c, h (any field)",
        _matmul_programs,
    ),
    KernelTheorem(
        "relu",
        RELU_REF,
        "Relu",
        ("relu_max0",),
        "Num.max x 0",
        "decode (eval (relu_prog n rows) x) = map_mx (fun v => Num.max v 0) A for every n, rows",
        _relu_programs,
    ),
    KernelTheorem(
        "maxmin",
        MAXMIN_REF,
        "MaxMin",
        ("maxmin_pairs",),
        "Num.max, Num.min",
        "for every even n and rows: entry (i, 2t) is Num.max of the pair, (i, 2t+1) its Num.min",
        _maxmin_programs,
    ),
    KernelTheorem(
        "softmax",
        SOFTMAX_REF,
        "Softmax",
        ("softmax_heads_rows", "softmax_heads_expR"),
        "expR (MathComp-analysis) and \\sum",
        "entry (t, i, j) = exp(A t i j) / sum_l exp(A t i l) for every r, c, h; for exp = expR over any realType",
        _softmax_programs,
    ),
    KernelTheorem(
        "softmax-masked",
        SOFTMAX_REF,
        "SoftmaxMasked",
        ("masked_softmax_heads_rows", "masked_softmax_heads_expR"),
        "expR (MathComp-analysis) and \\sum over l < m",
        "with m the token after the stack: entry (t, i, j) = exp(A t i j) / sum_{l < c, l < m} exp(A t i l) if j < m, "
        "else 0, for every r, c, h and m; for exp = expR over any realType",
        _masked_softmax_programs,
    ),
    KernelTheorem(
        "gathered-transpose",
        TRANSPOSE_REF,
        "GatheredTranspose",
        ("gathered_transpose_trmx",),
        "trmx",
        "the guarded gather onto a (cols, rows) grid: decode (eval (gathered_transpose_prog r c) x) = trmx A",
        _gathered_transpose_programs,
    ),
    KernelTheorem(
        "consumer-matmul",
        MATMUL_REF,
        "ConsumerMatmul",
        ("consumer_matmul_mulmx",),
        "mulmx",
        "entry (i, j, m) of the (rows, cols, extra) consumer grid = (A *m B) i j, every rows, inner >= 1, cols, extra",
        _consumer_matmul_programs,
    ),
)


def coq_sources() -> Path:
    """The directory of the hand-written Coq files: $ATTNSIM_COQ_DIR, the repository's coq/, or ./coq."""
    env = os.environ.get("ATTNSIM_COQ_DIR")
    candidates = [Path(env)] if env else []
    candidates += [Path(__file__).resolve().parents[2] / "coq", Path.cwd() / "coq"]
    for d in candidates:
        if (d / "Semantics.v").is_file():
            return d
    raise KernelError(f"the Coq sources (coq/Semantics.v) are not in any of {[str(d) for d in candidates]}")


@dataclass(frozen=True)
class CoqRun:
    """One coqc run over a build: which file failed (if any), the output, and the axioms found."""

    failed_file: str | None
    output: str
    axioms: tuple[str, ...]  # axioms the theorems depend on (all of them, allowed or not)


# OCaml's garbage collector for coqc: a 4 M-word minor heap and 32 M-word major increments (the
# defaults are 256 k words and 15 %).  Loading MathComp's .vo files and checking the proofs then
# collects less often: the 8 kernel obligations took 28.5-29.2 s instead of 30.7-35.5 s, one after
# another on the 2-core machine.  A user's own OCAMLRUNPARAM wins.  The check is the same.
COQC_GC = "s=4M,i=32M"


def _coqc(coqc: str, build: Path, name: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [coqc, "-w", "none", "-Q", ".", "Attnsim", f"{name}.v"],
        cwd=build,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={"OCAMLRUNPARAM": COQC_GC, **os.environ},
    )


def parse_assumptions(output: str) -> tuple[str, ...]:
    """The axiom names in ``Print Assumptions`` output (each starts a line, then `` :``)."""
    names: list[str] = []
    in_axioms = False
    for line in output.splitlines():
        if line.startswith("Axioms:"):
            in_axioms = True
            continue
        if "Closed under the global context" in line:
            in_axioms = False
            continue
        m = re.match(r"^([A-Za-z_][\w.']*) :", line)
        if in_axioms and m:
            names.append(m.group(1))
    return tuple(names)


_BASE: dict[tuple[str, str], Path] = {}  # (coqc, digest of the hand-written files) -> compiled copy


_BASE_PREFIX = "attnsim-coq-base-"
_BUILD_PREFIX = "attnsim-coq-build-"


def _remove_orphaned_bases(tmp: Path | None = None) -> list[Path]:
    """Delete the compiled bases and build directories of processes that are gone, and return them.

    A base is removed at its process's exit (``atexit``), but a process killed on a timeout or a
    Dask worker stopped by its nanny never runs ``atexit``: each such run left a directory behind
    (79 were found in /tmp after one day).  The owner's PID is in the name; a base whose owner no
    longer exists is an orphan.  A name without a PID (an older base) is left alone.
    """
    removed = []
    root = tmp or Path(tempfile.gettempdir())
    for path in sorted([*root.glob(f"{_BASE_PREFIX}*"), *root.glob(f"{_BUILD_PREFIX}*")]):
        prefix = _BASE_PREFIX if path.name.startswith(_BASE_PREFIX) else _BUILD_PREFIX
        pid = path.name[len(prefix) :].split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    """Whether a process with this PID exists (one we may not signal still exists)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _compiled_into(
    coqc: str, files: Sequence[tuple[str, bytes]], timeout: float, beside: Path | None = None
) -> Path | CoqRun:
    """A fresh directory (removed at exit) with the hand-written files compiled in ``beside`` copied
    in, then each of ``files`` (name, text) written and compiled in order; or the failed run."""
    lib = Path(tempfile.mkdtemp(prefix=f"{_BASE_PREFIX}{os.getpid()}-"))
    atexit.register(shutil.rmtree, lib, True)
    if beside is not None:
        for name in HAND_WRITTEN:
            for ext in (".v", ".vo"):
                shutil.copy(beside / f"{name}{ext}", lib / f"{name}{ext}")
    for name, text in files:
        (lib / f"{name}.v").write_bytes(text)
        res = _coqc(coqc, lib, name, timeout)
        if res.returncode != 0:
            return CoqRun(f"{name}.v", res.stdout + res.stderr, ())
    return lib


def _compiled_base(coqc: str, src: Path, timeout: float) -> Path | CoqRun:
    """A directory holding Semantics and Lemmas compiled (once per process and content), or the failed run."""
    texts = [(src / f"{n}.v").read_bytes() for n in HAND_WRITTEN]
    key = (coqc, hashlib.sha256(b"\0".join(texts)).hexdigest())
    if key not in _BASE:
        _remove_orphaned_bases()
        got = _compiled_into(coqc, list(zip(HAND_WRITTEN, texts, strict=True)), timeout)
        if isinstance(got, CoqRun):
            return got
        _BASE[key] = got
    return _BASE[key]


@functools.cache
def default_programs() -> tuple[CoqProgram, ...]:
    """Every kernel theorem's exported programs, once per process (the library's default text)."""
    return tuple(p for thm in THEOREMS for p in thm.programs())


def exports_text(programs: Sequence[CoqProgram]) -> str:
    """``Exports.v``: the default programs, each replaced by the one of ``programs`` of its name."""
    given = {p.name: p for p in programs}
    names = {p.name for p in default_programs()}
    return module_text(
        [given.get(p.name, p) for p in default_programs()] + [p for p in programs if p.name not in names]
    )


_EXPORTS: dict[tuple[str, str], Path] = {}  # (coqc, digest of the base and the export) -> compiled copy


def _compiled_exports(coqc: str, src: Path, text: str, timeout: float) -> Path | CoqRun:
    """A directory holding Semantics, Lemmas and Exports compiled (once per process and text)."""
    base = _compiled_base(coqc, src, timeout)
    if isinstance(base, CoqRun):
        return base
    key = (coqc, hashlib.sha256(str(base).encode() + b"\0" + text.encode()).hexdigest())
    if key not in _EXPORTS:
        got = _compiled_into(coqc, [(EXPORTS, text.encode())], timeout, beside=base)
        if isinstance(got, CoqRun):
            return got
        _EXPORTS[key] = got
    return _EXPORTS[key]


def run_coq(thm: KernelTheorem, programs: Sequence[CoqProgram], timeout: float, coqc: str) -> CoqRun:
    """Compile the theory (its theorems' ``Print Assumptions`` appended) against the compiled
    semantics, lemmas and export of ``programs`` (:func:`exports_text`), in a fresh directory: one
    coqc run per check, the export a library of its own (a theory cannot ``Reset`` it)."""
    src = coq_sources()
    lib = _compiled_exports(coqc, src, exports_text(programs), timeout)
    if isinstance(lib, CoqRun):
        return lib
    with tempfile.TemporaryDirectory(prefix=f"{_BUILD_PREFIX}{os.getpid()}-") as tmp:
        build = Path(tmp)
        for name in (*HAND_WRITTEN, EXPORTS):
            for ext in (".v", ".vo"):
                shutil.copy(lib / f"{name}{ext}", build / f"{name}{ext}")
        checks = "\n".join(f"Print Assumptions {t}." for t in thm.theorems)
        (build / f"{thm.theory}.v").write_text((src / f"{thm.theory}.v").read_text() + f"\n{checks}\n")
        res = _coqc(coqc, build, thm.theory, timeout)
        out = res.stdout + res.stderr
        if res.returncode != 0:
            return CoqRun(f"{thm.theory}.v", out, ())
        return CoqRun(None, out, parse_assumptions(out))


def forbidden_in_sources(thm: KernelTheorem) -> list[str]:
    """Hand-written files of ``thm`` that contain Admitted/admit/Axiom/Parameter (a proof hole) or
    Reset/Back (a definition undone)."""
    src = coq_sources()
    return [f"{n}.v" for n in (*HAND_WRITTEN, thm.theory) if _FORBIDDEN.search((src / f"{n}.v").read_text())]


def kernel_check(thm: KernelTheorem, programs: Sequence[CoqProgram] | None = None) -> Callable[[float], Outcome]:
    """The obligation's check: ``programs`` (default: the construction's own export) against the theory."""

    def check(timeout: float) -> Outcome:
        coqc = shutil.which("coqc")
        if coqc is None:
            return Outcome.unknown("not run (coqc not installed; see README: apt-get install coq libcoq-mathcomp-*)")
        try:
            holes = forbidden_in_sources(thm)
        except KernelError as exc:
            return Outcome.bad(str(exc))
        if holes:
            return Outcome.bad(
                f"proof holes or undone definitions (Admitted/admit/Axiom/Parameter/Reset) in {', '.join(holes)}"
            )
        progs = list(programs) if programs is not None else thm.programs()
        theory = (coq_sources() / f"{thm.theory}.v").read_text()
        shadowed = [p.name for p in progs if re.search(rf"\b({_DEFINING})\s+{p.name}\b", theory)]
        if shadowed:
            return Outcome.bad(f"{thm.theory}.v defines {', '.join(shadowed)} itself instead of using the export")
        try:
            run = run_coq(thm, progs, max(timeout, 60.0), coqc)
        except KernelError as exc:
            return Outcome.bad(str(exc))
        except subprocess.TimeoutExpired:
            return Outcome.unknown(f"coqc did not finish within {max(timeout, 60.0):.0f} s")
        if run.failed_file is not None:
            first = next((ln for ln in run.output.splitlines() if ln.startswith("Error")), "")
            return Outcome.bad(f"Coq rejects {run.failed_file}: {first or run.output.strip()[-300:]}")
        extra = sorted(set(run.axioms) - ALLOWED_AXIOMS)
        if extra:
            names = ", ".join(thm.theorems)
            return Outcome.bad(f"{names} depend(s) on axioms outside the allowed set: {', '.join(extra)}")
        axioms = ", ".join(sorted(set(run.axioms))) or "none (closed under the global context)"
        names = ", ".join(thm.theorems)
        return Outcome.good(f"Coq accepts {thm.theory}.v: {names} against {thm.against}; axioms: {axioms}")

    return check


def kernel_obligation(thm: KernelTheorem) -> Obligation:
    """``<construction>/kernel/<theory>``: the Coq kernel checks the theorems for all sizes."""
    return Obligation(
        f"{thm.construction}/kernel/{thm.theory}",
        thm.construction,
        thm.paper_ref,
        "kernel",
        kernel_check(thm),
        statement=thm.statement,
    )


def kernel_obligations() -> Iterable[Obligation]:
    """One kernel obligation per kernel-checked theorem file."""
    for thm in THEOREMS:
        yield kernel_obligation(thm)


__all__ = [
    "ALLOWED_AXIOMS",
    "THEOREMS",
    "CoqRun",
    "KernelError",
    "KernelTheorem",
    "coq_sources",
    "default_programs",
    "exports_text",
    "kernel_check",
    "kernel_obligation",
    "parse_assumptions",
    "run_coq",
]
