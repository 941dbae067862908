"""The engine answers to the kernel: Coq's evaluator on each exported term against the Python engine.

For every kernel theorem (:mod:`attnsim.constructions.kernel_theorems`), two default obligations:

* ``<construction>/exact/coq-evaluator-<Theory>``: the exported term evaluated by Coq
  (``vm_compute`` over MathComp's rationals) equals the engine's exact run at every position, one
  lemma per input, at the theorem's size bindings (a size 1 and non-square shapes among them);
  ``exp``, ``sqrt``, ``gelu`` and ``gelu_tanh`` (the evaluator's parameters ``expf``, ``sqrtf``,
  ``geluf``, ``gelu_tanhf``) are the same rational stand-ins on both sides (:data:`STANDINS`);
* ``.../numeric/coq-evaluator-<Theory>``: the engine's float64 run is within 1e-12 (relative to the
  largest entry) of that exact run.

So a bug in the engine's execution (a gather reading one position early) fails the default run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from attnsim.constructions.construction import Construction, ConstructionError
from attnsim.constructions.kernel import COQ_BUDGET, EXPORTS, coq_sources, exports_text, first_error
from attnsim.constructions.kernel_theorems import THEOREMS, KernelError, KernelTheorem
from attnsim.proofs import coq_build as B
from attnsim.proofs.coq import CoqProgram
from attnsim.proofs.obligation import Obligation, Outcome
from attnsim.rasp import primitives as P
from attnsim.rasp.engine import evaluate
from attnsim.rasp.exact import ExactArith
from attnsim.rasp.layout import value_of
from attnsim.rasp.numeric import NumpyArith

# Semantics.v's evaluator takes the generalized primitives as parameters; both sides instantiate
# them with the same rational functions, each a different polynomial (a swapped primitive shows),
# exp and sqrt positive everywhere so that every row sum and every LayerNorm root is >= 1.
STANDINS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "exp": ("(fun v : rat => v * v + 1)", lambda v: v * v + 1),
    "sqrt": ("(fun v : rat => v * v + 2)", lambda v: v * v + 2),
    "gelu": ("(fun v : rat => v * v / 2%:R + v)", lambda v: v * v / 2 + v),
    "gelu_tanh": ("(fun v : rat => v * v / 3%:R - v)", lambda v: v * v / 3 - v),
}
EXP_STANDIN_COQ = STANDINS["exp"][0]
STANDINS_COQ = " ".join(STANDINS[name][0] for name in ("exp", "sqrt", "gelu", "gelu_tanh"))


def exp_standin(x: Any) -> Any:
    return STANDINS["exp"][1](x)


class _StandinExact(ExactArith):
    """Exact arithmetic with the generalized primitives replaced by their stand-ins."""

    def _apply(self, prim: P.Primitive, params: tuple[Any, ...], args: list[np.ndarray]) -> np.ndarray:
        if prim.name in STANDINS:
            fn = STANDINS[prim.name][1]
            out = np.empty(len(args[0]), dtype=object)
            out[:] = [fn(Fraction(v)) for v in args[0]]
            return out
        return super()._apply(prim, params, args)


class _StandinFloat(NumpyArith):
    """float64 arithmetic with the generalized primitives replaced by their stand-ins."""

    def _apply(self, prim: P.Primitive, params: tuple[Any, ...], args: list[np.ndarray]) -> np.ndarray:
        if prim.name in STANDINS:
            return np.asarray(STANDINS[prim.name][1](np.asarray(args[0], dtype=np.float64)), dtype=np.float64)
        return super()._apply(prim, params, args)


@dataclass(frozen=True)
class DiffCase:
    """One differential input: the sizes, the token sequence and the engine's exact output."""

    sizes: Mapping[str, int]
    tokens: tuple[Fraction, ...]
    exact: tuple[Fraction, ...]


def _operands(con: Construction, rng: np.random.Generator, case: int) -> list[np.ndarray]:
    """Random halves in [-3, 3] for each operand; a declared integer operand at an inner value, its
    lower or its upper bound (by the case's number), so that every branch of its range is reached."""
    nat = {name: (lo, up) for name, lo, up, _ in con.scalars}
    out = []
    for name in con.inputs:
        shape = con.layout[name].shape
        if name in nat:
            lo, hi = nat[name][0], value_of(nat[name][1])
            pick = ((lo + hi) // 2, lo, hi)[case % 3]
            out.append(np.full(shape, Fraction(pick), dtype=object))
        else:
            vals = rng.integers(-6, 7, size=shape)
            out.append(np.vectorize(lambda v: Fraction(int(v), 2), otypes=[object])(vals))
    return out


def diff_cases(thm: KernelTheorem, seed: int = 0) -> list[DiffCase]:
    """The differential inputs of ``thm``: one per size binding, the engine's exact run on each. An
    input the construction's own domain check refuses (a singular matrix) is drawn again; an error of
    the engine is not caught (the obligation fails with it)."""
    out = []
    for i, sizes in enumerate(thm.cases):
        con = thm.build().bind(**sizes)
        rng = np.random.default_rng(seed + i)
        for _ in range(50):
            ops = _operands(con, rng, i)
            try:
                x = con.encode(*ops, backend="exact")
            except ConstructionError:
                continue
            y = evaluate(con.program, x, _StandinExact())
            out.append(DiffCase(dict(sizes), tuple(Fraction(v) for v in x), tuple(Fraction(v) for v in y)))
            break
        else:
            raise KernelError(f"{thm.theory}: no input in 50 draws is in the domain at sizes {dict(sizes)}")
    return out


def _q(v: Fraction) -> str:
    return f"(q ({v.numerator})%Z ({v.denominator})%Z)"


def _seq(vs: Iterable[Fraction]) -> str:
    return "[:: " + "; ".join(_q(v) for v in vs) + "]"


DIFF_HEADER = """From mathcomp Require Import all_ssreflect all_algebra.
From Coq Require Import ZArith.
From Attnsim Require Import Semantics Exports.
Local Open Scope ring_scope.
Definition q (n d : Z) : rat := zR rat_realFieldType n / zR rat_realFieldType d.
Definition run (p : sop) (x : seq rat) : seq rat :=
  [seq eval (R := rat_realFieldType) """ + STANDINS_COQ + """ p x i | i <- iota 0 (size x)].
"""


def diff_text(thm: KernelTheorem, cases: Sequence[DiffCase]) -> tuple[str, dict[int, int]]:
    """``<Theory>Diff.v``: one lemma per case, ``run (prog sizes) tokens == outputs``, proved by
    ``vm_compute``; and the case of each line of a lemma."""
    lines = DIFF_HEADER.splitlines()
    where: dict[int, int] = {}
    for i, c in enumerate(cases):
        args = " ".join(f"{c.sizes[s]}%Z" for s in thm.sizes)
        call = f"({thm.program} {args})" if args else thm.program
        where[len(lines) + 1] = where[len(lines) + 2] = i  # its statement's line and its proof's
        lines.append(f"Lemma agrees{i} : (run {call} {_seq(c.tokens)} == {_seq(c.exact)}) = true.")
        lines.append("Proof. vm_compute. reflexivity. Qed.")
    return "\n".join(lines) + "\n", where


def differential_check(thm: KernelTheorem, programs: Sequence[CoqProgram] = ()) -> Callable[[float], Outcome]:
    """The engine's exact run equals Coq's evaluation of the exported term at every case."""

    def check(timeout: float) -> Outcome:
        _ = timeout
        tools = B.CoqTools.find()
        if tools is None:
            return Outcome.unknown("not run (coqc not installed)")
        try:
            cases = diff_cases(thm)
        except KernelError as exc:
            return Outcome.bad(str(exc))
        if not cases:
            return Outcome.bad(f"{thm.theory}: no input to compare on (a comparison of nothing proves nothing)")
        text, where = diff_text(thm, cases)
        src = coq_sources()
        files = [
            B.CoqFile("Semantics", (src / "Semantics.v").read_text()),
            B.CoqFile(EXPORTS, exports_text(programs), ("Semantics",)),
            B.CoqFile(f"{thm.theory}Diff", text, ("Semantics", EXPORTS)),
        ]
        built = B.build(files, tools, COQ_BUDGET)
        failed = built.failed
        if failed is None:
            sizes = ", ".join("(" + ", ".join(str(c.sizes[s]) for s in thm.sizes) + ")" for c in cases)
            return Outcome.good(
                f"Coq's evaluation of {thm.program} (vm_compute over rat, exp := v^2 + 1 and the other stand-ins on "
                f"both sides) equals the "
                f"engine's exact run at every position, {len(cases)} inputs, sizes ({', '.join(thm.sizes)}) in {sizes}"
            )
        if failed.status == "over budget":
            return Outcome.unknown(f"coqc stopped on {failed.name}.v: {failed.output.strip()[-200:]}")
        m = re.search(r'line (\d+)', failed.output)
        case = where.get(int(m.group(1))) if m and failed.name.endswith("Diff") else None
        if case is not None:
            at = dict(cases[case].sizes)
            return Outcome.bad(f"Coq's evaluation of {thm.program} differs from the engine's exact run at sizes {at}")
        return Outcome.bad(f"{failed.name}.v: Coq rejects it: {first_error(failed.output)}")

    return check


def float_check(thm: KernelTheorem, rtol: float = 1e-12) -> Callable[[float], Outcome]:
    """The engine's float64 run is within ``rtol`` (relative to the largest entry) of its exact run
    at the differential cases (the exact run being the one Coq's evaluator is compared with)."""

    def check(timeout: float) -> Outcome:
        _ = timeout
        worst = 0.0
        try:
            cases = diff_cases(thm)
        except KernelError as exc:
            return Outcome.bad(str(exc))
        for c in cases:
            con = thm.build().bind(**c.sizes)
            x = np.array([float(v) for v in c.tokens])
            y = evaluate(con.program, x, _StandinFloat())
            exact = np.array([float(v) for v in c.exact])
            scale = max(1.0, float(np.max(np.abs(exact))))
            err = float(np.max(np.abs(y - exact))) / scale
            worst = max(worst, err)
            if not err <= rtol:
                at = dict(c.sizes)
                return Outcome.bad(f"float64 run off by {err:.3g} (relative) at sizes {at}; tolerance {rtol:g}")
        return Outcome.good(
            f"float64 within {worst:.2g} (relative to the largest entry; tolerance {rtol:g}) of the exact run"
        )

    return check


def differential_obligations(thm: KernelTheorem) -> list[Obligation]:
    """``<construction>/exact/coq-evaluator-<theory>`` and ``.../numeric/coq-evaluator-<theory>``."""
    exact_id = f"{thm.construction}/exact/coq-evaluator-{thm.theory}"
    return [
        Obligation(
            exact_id,
            thm.construction,
            thm.paper_ref,
            "exact",
            differential_check(thm),
            statement=f"Coq's evaluator on {thm.program} == the engine's exact run at {len(thm.cases)} sizes",
            tools=("coqc",),
        ),
        Obligation(
            f"{thm.construction}/numeric/coq-evaluator-{thm.theory}",
            thm.construction,
            thm.paper_ref,
            "numeric",
            float_check(thm),
            statement=f"the engine's float64 run of {thm.program} within 1e-12 of the exact run Coq agrees with",
            requires=(exact_id,),
            tools=("coqc",),
        ),
    ]


def evaluator_obligations() -> Iterable[Obligation]:
    """The two Coq-evaluator obligations of every kernel theorem."""
    for thm in THEOREMS:
        if thm.make is not None:  # a theorem about mathematics only has no program to evaluate
            yield from differential_obligations(thm)


__all__ = [
    "EXP_STANDIN_COQ",
    "STANDINS",
    "STANDINS_COQ",
    "DiffCase",
    "diff_cases",
    "diff_text",
    "differential_check",
    "differential_obligations",
    "evaluator_obligations",
    "float_check",
]
