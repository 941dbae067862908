"""The kernel gate: what a theorem checked by Coq rests on, read from Coq's own output.

Three things decide that a kernel theorem holds as stated:

1. **The statement.**  A generated file defines the expected statement of each theorem
   (:mod:`attnsim.proofs.coq_statement`) without loading the theory; the gate file then defines
   ``attnsim_gate_<theorem> : <statement> := @Attnsim.<Theory>.<theorem>``, so the kernel accepts
   the gate only when the theorem's type is the generated statement (up to conversion): a vacuous
   premise, a weakened conclusion or a fixed size is a type error, whatever the theory file says.
2. **The assumptions.**  ``Print Assumptions`` of each gate definition, parsed by its structure
   (sections under a header line; one entry per line at column 0, its type at column 0 after
   `` : `` or indented below), each printed name resolved to its full path among the axioms
   ``coqchk`` lists for the same environment (exactly one full name must end with it), and the
   full paths compared with :data:`ALLOWED_AXIOMS`.  Anything in another section (a section
   variable, type-in-type, an unsafe fixpoint, an assumed positivity) is refused.
3. **Our own files.**  ``coqchk`` re-checks every library of the build with its own kernel; an
   axiom anywhere under the root ``Attnsim`` (an ``Axiom``, ``Parameter``, ``Hypothesis`` or
   ``Variable`` outside a closed section, ``Conjecture``, an ``Admitted`` proof: Coq makes each an
   axiom), used by a theorem or not, is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from attnsim.proofs.coq import coq_ident
from attnsim.proofs.coq_build import ROOT, Checked

# The axioms a kernel theorem may rest on, by full path: MathComp-analysis' own (its classical
# foundations, `boolp`).  Anything else fails the obligation.
ALLOWED_AXIOMS = frozenset(
    {
        "mathcomp.classical.boolp.propositional_extensionality",
        "mathcomp.classical.boolp.functional_extensionality_dep",
        "mathcomp.classical.boolp.constructive_indefinite_description",
    }
)
_CLOSED = "Closed under the global context"
# how Print Assumptions reports a definition that relies on a kernel check turned off
_UNSAFE = ("relies on definitional UIP", "relies on an unsafe hierarchy", "is assumed to be positive",
           "is assumed to be guarded", "relies on an unsafe fixpoint")  # fmt: skip


def gate_name(theorem: str) -> str:
    return f"attnsim_gate_{coq_ident(theorem)}"


def _marker(theorem: str) -> str:
    return f"attnsim_marker_{coq_ident(theorem)}"


_END = "attnsim_marker_end"


def gate_text(preamble: str, theory: str, theorems: Sequence[str]) -> str:
    """The gate file: ``preamble`` (its imports, the statements' module among them), the theory
    required (not imported), then per theorem its typed alias and ``Print Assumptions`` between
    markers."""
    lines = [preamble.rstrip(), f"From {ROOT} Require {coq_ident(theory)}.", ""]
    for t in (*theorems, "end"):
        name = _END if t == "end" else _marker(t)
        lines.append(f"Definition {name} := tt.")
    for t in theorems:
        lines.append(f"Definition {gate_name(t)} : {coq_ident(t)}_statement := @{ROOT}.{theory}.{coq_ident(t)}.")
    for t in theorems:
        lines += [f"Check {_marker(t)}.", f"Print Assumptions {gate_name(t)}."]
    lines.append(f"Check {_END}.")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Printed:
    """One theorem's ``Print Assumptions``: the names in its ``Axioms:`` section, as printed, and
    the entries of any other section (``Section Variables:``, ``... relying on type-in-type:``)."""

    axioms: tuple[str, ...]
    other: tuple[str, ...]


def parse_assumptions(text: str) -> Printed:
    """The structure of one ``Print Assumptions`` output (see :class:`Printed`).

    A header is a line at column 0 ending with ``:`` (and no `` : ``); an entry is any other line
    at column 0 (its name is the first word); indented lines continue the entry above."""
    axioms: list[str] = []
    other: list[str] = []
    section: str | None = None
    closed = False
    for line in text.splitlines():
        if not line.strip() or line[0].isspace():
            continue
        if line.strip() == _CLOSED:
            closed = True
            continue
        if line.endswith(":") and " : " not in line:
            section = line[:-1].strip()
            continue
        name = line.split(" : ", 1)[0].split()[0]
        if any(phrase in line for phrase in _UNSAFE):  # a flag Coq reports in the Axioms section
            other.append(line.strip())
        elif section == "Axioms":
            axioms.append(name)
        else:
            other.append(f"{section or 'no section'}: {name}")
    if not closed and section is None and not other:  # Coq prints one or the other, never nothing
        other.append(f"Print Assumptions printed neither {_CLOSED!r} nor a list of assumptions")
    return Printed(tuple(axioms), tuple(other))


def split_gate_output(output: str, theorems: Sequence[str]) -> dict[str, str]:
    """Each theorem's ``Print Assumptions`` text, cut out of the gate's output at its markers."""
    lines = output.splitlines()
    marks = [*(_marker(t) for t in theorems), _END]
    where = {}
    for i, ln in enumerate(lines):
        if ln.strip() in marks and ln.strip() not in where:
            where[ln.strip()] = i
    out: dict[str, str] = {}
    for t, a, b in zip(theorems, marks, marks[1:], strict=False):
        if a in where and b in where:
            # skip the marker's own type line ("     : unit")
            out[t] = "\n".join(lines[where[a] + 2 : where[b]])
    return out


@dataclass(frozen=True)
class Assumptions:
    """What one theorem rests on: each printed axiom with its full path (None when no axiom of the
    environment, or more than one, ends with the printed name), and what is not allowed."""

    theorem: str
    resolved: tuple[tuple[str, str | None], ...]
    refused: tuple[str, ...]

    @property
    def full(self) -> tuple[str, ...]:
        return tuple(sorted(f for _, f in self.resolved if f is not None))


def resolve(theorem: str, printed: Printed, environment: Sequence[str]) -> Assumptions:
    """Resolve a theorem's printed axioms among ``environment`` (coqchk's full names) and judge them."""
    pairs: list[tuple[str, str | None]] = []
    refused = [f"{o} (not an axiom section)" for o in printed.other]
    for p in printed.axioms:
        hits = [a for a in environment if a == p or a.endswith("." + p)]
        full = hits[0] if len(hits) == 1 else None
        pairs.append((p, full))
        if full is None:
            how = "no axiom of the environment" if not hits else f"{len(hits)} axioms ({', '.join(sorted(hits))})"
            refused.append(f"{p}: {how} has this name")
        elif full not in ALLOWED_AXIOMS:
            refused.append(full)
    return Assumptions(theorem, tuple(pairs), tuple(refused))


def own_axioms(checked: Checked) -> tuple[str, ...]:
    """The axioms coqchk found in our own libraries (under the root ``Attnsim``)."""
    return tuple(a for a in checked.axioms if a == ROOT or a.startswith(ROOT + "."))


__all__ = [
    "ALLOWED_AXIOMS",
    "Assumptions",
    "Printed",
    "gate_name",
    "gate_text",
    "own_axioms",
    "parse_assumptions",
    "resolve",
    "split_gate_output",
]
