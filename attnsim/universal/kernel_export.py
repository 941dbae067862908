"""U's program exported to Coq, node by node, and Coq's evaluator on it against the engine.

Theorem 6 in the kernel starts from U's own program: :func:`export_universal` prints the program
:class:`~attnsim.universal.universal.UniversalSimulator` builds over the unbound capacity N, D, H,
K, F, one Coq definition per node (:func:`attnsim.proofs.coq.export_nodes`: unfolded, U is a tree
of about 3.5e5 nodes), the last one ``U_compact`` / ``U_shallow`` of type ``sop``.  The library
(:func:`universal_files`) is generated at every build from the Python object, never committed, so
the term Coq reads is the one the Python program builds.

:func:`differential_check` ties the engine to that term: Coq evaluates ``U_<variant> 1 1 1 1 1``
(``vm_compute`` over MathComp's rationals) on encoded inputs <T, X> and a lemma per input states
that the result equals the engine's exact run at every position.  The generalized primitives are
the Coq evaluator's rational stand-ins on both sides (:data:`attnsim.constructions.coq_evaluator.STANDINS`)
and a division by 0 is 0 on both sides (MathComp's field convention; U divides by 0 only at
positions no output reads, where the Python backends give an error or NaN).  MathComp's rationals
are unary, and Coq's evaluator is the semantics' naive recursion (every position re-evaluates its
subtree), so the inputs are capacity 1 with small integer entries, and a case whose run holds a
numerator or denominator above :data:`MAGNITUDE` is refused before Coq runs (it would exhaust the
memory, not the CPU budget); at capacity (2, 1, 1, 1, 1) one input takes 150 CPU seconds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from attnsim.constructions.coq_evaluator import DIFF_HEADER, _StandinExact
from attnsim.constructions.kernel import COQ_BUDGET, coq_sources, first_error
from attnsim.proofs import coq_build as B
from attnsim.proofs.coq import CoqProgram, export_nodes, module_text
from attnsim.proofs.obligation import Outcome
from attnsim.rasp import primitives as P
from attnsim.rasp.core import built_once
from attnsim.rasp.engine import trace
from attnsim.universal.layer import TransformerLayer
from attnsim.universal.program import VARIANTS
from attnsim.universal.universal import UniversalSimulator

SIZES = ("N", "D", "H", "K", "F")  # the exported definitions' parameters: U's capacity, in this order
MAGNITUDE = 10**4  # the largest numerator or denominator a differential case may hold anywhere


def program_name(variant: str) -> str:
    """The Coq name of U's pass: ``U_compact`` or ``U_shallow``."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; use one of {', '.join(VARIANTS)}")
    return f"U_{variant}"


def library_name(variant: str) -> str:
    """The Coq library holding U's export: ``UniversalCompact`` or ``UniversalShallow``."""
    return "Universal" + variant.capitalize()


@built_once
def export_universal(variant: str) -> CoqProgram:
    """U's program over the unbound capacity, one definition per node (see the module doc)."""
    U = UniversalSimulator.over_symbolic_capacity(variant)
    return export_nodes(program_name(variant), U.program, SIZES)


def universal_files(variant: str, program: CoqProgram | None = None) -> list[B.CoqFile]:
    """The build of U's export: the semantics and the library ``Universal<Variant>`` (``program``
    instead of U's own export when given: a mutant)."""
    src = coq_sources()
    lib = module_text([program or export_universal(variant)])
    return [
        B.CoqFile("Semantics", (src / "Semantics.v").read_text()),
        B.CoqFile(library_name(variant), lib, ("Semantics",)),
    ]


class _TotalStandinExact(_StandinExact):
    """The Coq evaluator's stand-ins, and a division by 0 that is 0 (MathComp's ``x / 0 = 0``);
    ``swap`` (primitive -> primitive) reads a primitive with another's stand-in (to show that a
    case observes the primitive)."""

    def __init__(self, swap: dict[str, str] | None = None) -> None:
        super().__init__()
        self.swap = swap or {}

    def _apply(self, prim: P.Primitive, params: tuple[Any, ...], args: list[np.ndarray]) -> np.ndarray:
        if prim.name in self.swap:
            return super()._apply(P.get(self.swap[prim.name]), params, args)
        if prim.name in ("div", "reciprocal"):
            num = args[0] if prim.name == "div" else np.full(len(args[0]), Fraction(1), dtype=object)
            den = args[1] if prim.name == "div" else args[0]
            out = np.empty(len(den), dtype=object)
            pairs = zip(num, den, strict=True)
            out[:] = [Fraction(0) if Fraction(b) == 0 else Fraction(a) / Fraction(b) for a, b in pairs]
            return out
        return super()._apply(prim, params, args)


@dataclass(frozen=True)
class UniversalCase:
    """One differential input: the layer's options, the tokens <T, X> and the engine's exact output."""

    options: str
    tokens: tuple[Fraction, ...]
    exact: tuple[Fraction, ...]


# each variant's inputs: T's options, so that both variants and every gate (norm none / pre / post,
# ReLU / GELU / tanh-GELU, residual or not, FFN or not) are run by at least one case.  A case whose
# activation is a GELU form must observe it: its output changes when the primitive is read as the
# other form.  At capacity 1 exp and sqrt are not observable (a softmax over one key is 1 whatever
# exp is; LayerNorm over one feature multiplies 0 by its root).
CASES: dict[str, tuple[dict[str, Any], ...]] = {
    "compact": (
        {"residual": True, "norm": "pre", "activation": "gelu"},
        {"residual": False, "norm": "none", "activation": "relu"},
    ),
    "shallow": (
        {"residual": True, "norm": "none", "activation": "gelu_tanh"},
        {"residual": True, "norm": "post", "activation": None},
    ),
}
_OTHER_FORM = {"gelu": "gelu_tanh", "gelu_tanh": "gelu"}


def _integer_layer(seed: int, options: dict[str, Any]) -> TransformerLayer:
    """A capacity-1 layer whose every weight is an integer in [-2, 2] other than 0, eps 1/4, scale 1/2."""
    rng = np.random.default_rng(seed)
    act = options["activation"]
    T = TransformerLayer.random(1, 1, 1, None if act is None else 1, seed=seed, residual=options["residual"],
                                norm=options["norm"], activation=act or "relu")  # fmt: skip
    fields = ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o", "w1", "b1", "w2", "b2",
              "ln1_weight", "ln1_bias", "ln2_weight", "ln2_bias")  # fmt: skip
    small = lambda a: None if a is None else rng.choice([-2.0, -1.0, 1.0, 2.0], size=np.shape(a))
    return T.with_options(**{f: small(getattr(T, f)) for f in fields}, eps=0.25, scale=0.5)


def _magnitude(values: Any) -> int:
    out = 0
    for v in np.asarray(values, dtype=object).ravel():
        f = Fraction(v)
        out = max(out, abs(f.numerator), f.denominator)
    return out


def diff_cases(variant: str, seed: int = 0) -> list[UniversalCase]:
    """The differential inputs of ``variant`` at capacity 1 (:data:`CASES`), each with the engine's
    exact run; a draw holding a number past :data:`MAGNITUDE` anywhere in the run is drawn again."""
    U = UniversalSimulator(1, 1, 1, 1, 1, variant=variant)
    out = []
    for i, options in enumerate(CASES[variant]):
        for attempt in range(20):
            s = seed + 100 * i + attempt
            T = _integer_layer(s, options)
            X = np.random.default_rng(s).choice([-2.0, -1.0, 1.0, 2.0], size=(1, 1))
            x = np.array([Fraction(float(v)) for v in U.encode(T, X)], dtype=object)
            run = trace(U.program, x, _TotalStandinExact())
            if max(_magnitude(v) for v in run.values.values()) > MAGNITUDE:
                continue
            y = run.values[run.order[-1]]
            act = options["activation"]
            if act in _OTHER_FORM:
                swapped = trace(U.program, x, _TotalStandinExact({act: _OTHER_FORM[act]}))
                if list(swapped.values[swapped.order[-1]]) == list(y):
                    continue  # this draw does not observe its activation
            name = ", ".join(f"{k}={v}" for k, v in options.items())
            out.append(UniversalCase(name, tuple(x), tuple(Fraction(v) for v in y)))
            break
        else:
            raise RuntimeError(
                f"{variant}: no input of {options} in 20 draws keeps its run below {MAGNITUDE} "
                "and observes its activation"
            )
    return out


def _q(v: Fraction) -> str:
    return f"(q ({v.numerator})%Z ({v.denominator})%Z)"


def _seq(vs: Sequence[Fraction]) -> str:
    return "[:: " + "; ".join(_q(v) for v in vs) + "]"


def diff_text(variant: str, cases: Sequence[UniversalCase]) -> tuple[str, dict[int, int]]:
    """``<Library>Diff.v``: per case ``run (U_<variant> 1 1 1 1 1) tokens == outputs``, by
    ``vm_compute``; and the case of each line of a lemma."""
    lib = library_name(variant)
    head = DIFF_HEADER.replace("Require Import Semantics Exports.", f"Require Import Semantics {lib}.")
    lines = head.splitlines()
    where: dict[int, int] = {}
    call = f"({program_name(variant)} {' '.join('1%Z' for _ in SIZES)})"
    for i, c in enumerate(cases):
        where[len(lines) + 1] = where[len(lines) + 2] = i
        lines.append(f"Lemma agrees{i} : (run {call} {_seq(c.tokens)} == {_seq(c.exact)}) = true.")
        lines.append("Proof. vm_compute. reflexivity. Qed.")
    return "\n".join(lines) + "\n", where


def differential_check(variant: str, program: CoqProgram | None = None) -> Callable[[float], Outcome]:
    """Coq's evaluation of U's export (or ``program``) equals the engine's exact run at every case."""

    def check(timeout: float) -> Outcome:
        _ = timeout  # coqc runs on its own CPU budget (COQ_BUDGET)
        tools = B.CoqTools.find()
        if tools is None:
            return Outcome.unknown("not run (coqc not installed)")
        cases = diff_cases(variant)
        text, where = diff_text(variant, cases)
        files = [*universal_files(variant, program), B.CoqFile(f"{library_name(variant)}Diff", text,
                                                              ("Semantics", library_name(variant)))]  # fmt: skip
        built = B.build(files, tools, COQ_BUDGET)
        failed = built.failed
        name = program_name(variant)
        if failed is None:
            return Outcome.good(
                f"Coq's evaluation of {name} 1 1 1 1 1 (vm_compute over rat; stand-ins for exp, sqrt, gelu, "
                f"gelu_tanh; x / 0 = 0 on both sides) equals the engine's exact run at every position, "
                f"{len(cases)} inputs: {'; '.join(c.options for c in cases)}"
            )
        if failed.status == "over budget":
            return Outcome.unknown(f"coqc stopped on {failed.name}.v: {failed.output.strip()[-200:]}")
        m = re.search(r"line (\d+)", failed.output)
        case = where.get(int(m.group(1))) if m and failed.name.endswith("Diff") else None
        if case is not None:
            what = cases[case].options
            return Outcome.bad(f"Coq's evaluation of {name} differs from the engine's exact run ({what})")
        return Outcome.bad(f"{failed.name}.v: Coq rejects it: {first_error(failed.output)}")

    return check


__all__ = [
    "CASES",
    "MAGNITUDE",
    "SIZES",
    "UniversalCase",
    "diff_cases",
    "diff_text",
    "differential_check",
    "export_universal",
    "library_name",
    "program_name",
    "universal_files",
]
