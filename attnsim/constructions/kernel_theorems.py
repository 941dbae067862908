"""The kernel theorems: for each hand-written theory of ``attnsim/coq/``, the construction it is
about and what each of its theorems concludes.

A :class:`KernelTheorem` names the theory, the construction's factory (called over unbound sizes),
the exported definition's name and parameters, and per theorem its conclusion in MathComp's terms
(``trmx (A t)``, ``A t *m B t``, ``invmx A``...) with any premise the layout does not give.  Its
statements are generated from the construction (:mod:`attnsim.proofs.coq_statement`); the checks
are in :mod:`attnsim.constructions.kernel` and :mod:`attnsim.constructions.coq_evaluator`.
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from attnsim.constructions.construction import Construction, ConstructionError
from attnsim.constructions.det3.program import PAPER_REF as COFACTOR_REF
from attnsim.constructions.det3.program import cofactor3, det3, inverse3
from attnsim.constructions.det_n import steps
from attnsim.constructions.det_n.program import PAPER_REF as DET_N_REF
from attnsim.constructions.forms.program import consumer_matmul, gathered_transpose
from attnsim.constructions.matmul.program import PAPER_REF as MATMUL_REF
from attnsim.constructions.matmul.program import matmul
from attnsim.constructions.maxmin.program import PAPER_REF as MAXMIN_REF
from attnsim.constructions.maxmin.program import maxmin
from attnsim.constructions.relu.program import PAPER_REF as RELU_REF
from attnsim.constructions.relu.program import relu
from attnsim.constructions.softmax.program import PAPER_REF as SOFTMAX_REF
from attnsim.constructions.softmax.program import masked_softmax, softmax
from attnsim.constructions.transpose.program import PAPER_REF as TRANSPOSE_REF
from attnsim.constructions.transpose.program import transpose
from attnsim.proofs.coq import CoqProgram, export_program
from attnsim.proofs.coq_statement import KernelStatement, Operand
from attnsim.rasp import core as C

DET_N_ID = "det"  # det(n)'s construction: the identity makes its chain of kernel-checked steps compute det


class KernelError(RuntimeError):
    """The Coq sources cannot be found (``$ATTNSIM_COQ_DIR`` names a directory without them)."""



@dataclass(frozen=True)
class Theorem:
    """One theorem of a theory: its name, its conclusion (a MathComp term for output matrix ``t``),
    further premises in Coq, the structure ``R`` ranges over and the meaning of ``exp`` (None: any)."""

    name: str
    conclusion: str
    premises: tuple[str, ...] = ()
    field: str = "realFieldType"
    exp: str | None = None


def _sizes(*names: str) -> tuple[C.Size, ...]:
    return tuple(C.Size(n) for n in names)


def _cases(names: str, *values: tuple[int, ...]) -> tuple[dict[str, int], ...]:
    """Size bindings: ``_cases("rows cols", (1, 2), (3, 1))``."""
    keys = names.split()
    return tuple(dict(zip(keys, v, strict=True)) for v in values)


@dataclass(frozen=True)
class KernelTheorem:
    """A hand-written theory, the construction its theorems are about, and how to test its program.

    ``make``: the construction over unbound sizes (None for a theory about mathematics only, whose
    theorems' ``conclusion`` is their whole statement, over the Coq ``definitions`` declared here);
    ``sizes``: the exported definition's parameters (every unbound size of the program and layout,
    in this order); ``registered``: the catalogue's own construction over unbound sizes (rebuilt
    from its example), or None when the theory is about a variant the catalogue does not register;
    ``cases``: size bindings for the differential runs."""

    construction: str
    paper_ref: str
    theory: str
    against: str
    statement: str
    make: Callable[[], Construction] | None
    program: str
    sizes: tuple[str, ...]
    theorems: tuple[Theorem, ...]
    cases: tuple[Mapping[str, int], ...]
    registered: Callable[[], Construction] | None = None
    definitions: str = ""  # Coq definitions the statements use (a theorem about mathematics only)

    @property
    def theorem_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.theorems)

    def build(self) -> Construction:
        """The construction over unbound sizes (refused for a theory about mathematics only)."""
        if self.make is None:
            raise KernelError(f"{self.theory}: a theory about mathematics only has no construction")
        return self.make()

    def programs(self) -> list[CoqProgram]:
        if self.make is None:
            return []
        return [export_program(self.program, self.make().program, self.sizes)]

    def statement_texts(self) -> list[tuple[str, str]]:
        """Each theorem's statement as Coq text, by the name of its ``Prop`` definition."""
        if self.make is None:
            return [(f"{t.name}_statement", t.conclusion) for t in self.theorems]
        return [(name, st.text()) for name, st in self.statements()]

    def statements(self) -> list[tuple[str, KernelStatement]]:
        """Each theorem's generated statement (see :mod:`attnsim.proofs.coq_statement`)."""
        con = self.build()
        free = sorted(con.free_sizes)
        if sorted(self.sizes) != free:
            raise KernelError(f"{self.theory}: parameters {list(self.sizes)} are not the program's sizes {free}")
        _check_disjoint(self.theory, con)
        nat = {name: (lo, up) for name, lo, up, _ in con.scalars}
        operands = tuple(
            Operand(n, "nat", nat[n][0], nat[n][1]) if n in nat else Operand(n) for n in con.inputs
        )
        return [
            (
                f"{t.name}_statement",
                KernelStatement(
                    self.program,
                    self.sizes,
                    con.layout,
                    operands,
                    con.output,
                    t.conclusion,
                    minimums=tuple(con.minimums.items()),
                    preconditions=con.preconditions,
                    premises=t.premises,
                    field=t.field,
                    exp=t.exp,
                ),
            )
            for t in self.theorems
        ]


def _check_disjoint(theory: str, con: Construction) -> None:
    """The operands' blocks do not overlap (an overlap would make the statement equate operands), at
    every size 1..3 of each size."""
    free = sorted(con.free_sizes)
    for values in itertools.product((1, 2, 3), repeat=len(free)):
        point = dict(zip(free, values, strict=True))
        try:
            bound = con.bind(**point)
        except ConstructionError:
            continue
        spans = sorted((bound.layout[n].start, bound.layout[n].end, n) for n in con.inputs)
        for (_, end, a), (start, _, b) in itertools.pairwise(spans):
            if start < end:
                raise KernelError(f"{theory}: operands {a} and {b} overlap at sizes {point}")


def _example(declared_in: str, name: str) -> Callable[[], Construction]:
    """The catalogue's construction ``name`` (declared in ``module``'s ``CONSTRUCTIONS``) over
    unbound sizes: its example's factory called again with the example's own arguments (its sizes
    unbound), or the example itself when it has none."""

    def make() -> Construction:
        entry = next(e for e in importlib.import_module(declared_in).CONSTRUCTIONS if e.name == name)
        con: Construction = entry.example()
        if con.built_by is None:
            return con
        module, fn, args = con.built_by
        factory = getattr(importlib.import_module(module), fn)
        return factory(**dict(args))

    return make


_EXP_LAW = ("(forall a b : R, expf (a - b) = expf a / expf b)", "(forall a : R, expf a != 0)")
_SOFTMAX = "\\matrix_(i, j) ({e} (A t i j) / \\sum_(l < cols) {e} (A t i l))"
_MASKED = "\\matrix_(i, j) (if (j < n)%nat then {e} (A t i j) / \\sum_(l < cols | (l < n)%nat) {e} (A t i l) else 0)"
_EXPR = "expR (MathComp-analysis)"


def _softmax_theorems(prefix: str, template: str, stable: bool) -> tuple[Theorem, ...]:
    """The theorem for any exp (with the exponential's law when max-shifted) and its expR form."""
    law = _EXP_LAW if stable else ()
    return (
        Theorem(f"{prefix}_rows", template.format(e="expf"), law),
        Theorem(f"{prefix}_expR", template.format(e="expR"), field="realType", exp="(@expR R)"),
    )


# det(n) and inverse(n)'s loop (attnsim.constructions.det_n.program.faddeev_ref), in Coq: step k gives (M_k, c_(n-k));
# step 0 holds M_0 = 0 and c_n = 1, so that step 1 gives M_1 = I and c_(n-1) = -tr A.
FL_LOOP = """Fixpoint fl_step {R : numFieldType} {n : nat} (A : 'M[R]_n) (k : nat) : 'M[R]_n * R :=
  if k is k'.+1 then
    let: (M, c) := fl_step A k' in
    let M' := A *m M + c%:M in
    (M', - \\tr (A *m M') / k%:R)
  else (0, 1).
Definition fl_M {R : numFieldType} {n : nat} (A : 'M[R]_n) (k : nat) := (fl_step A k).1.
Definition fl_c {R : numFieldType} {n : nat} (A : 'M[R]_n) (k : nat) := (fl_step A k).2.
"""
_FL = "forall (R : numFieldType) (n : nat) (A : 'M[R]_n) "

S = C.Size
THEOREMS: tuple[KernelTheorem, ...] = (
    KernelTheorem(
        "transpose",
        TRANSPOSE_REF,
        "Transpose",
        "trmx",
        "decode (eval (transpose_heads_prog r c h) x) t = trmx (A t) for every r, c, h and stack A held by x",
        lambda: transpose(*_sizes("rows", "cols", "heads")),
        "transpose_heads_prog",
        ("rows", "cols", "heads"),
        (Theorem("transpose_heads_trmx", "trmx (A t)"),),
        _cases("rows cols heads", (1, 1, 1), (2, 3, 1), (3, 2, 2), (1, 5, 3), (4, 4, 2)),
        _example("attnsim.constructions.transpose.program", "transpose"),
    ),
    KernelTheorem(
        "matmul",
        MATMUL_REF,
        "Matmul",
        "mulmx",
        "decode (eval (matmul_heads_prog r k c h) x) t = A t *m B t for every r, k, c, h (any field)",
        lambda: matmul(*_sizes("rows", "inner", "cols", "heads")),
        "matmul_heads_prog",
        ("rows", "inner", "cols", "heads"),
        (Theorem("matmul_heads_mulmx", "A t *m B t"),),
        _cases("rows inner cols heads", (1, 1, 1, 1), (2, 3, 2, 1), (2, 2, 1, 2), (1, 4, 3, 2), (3, 1, 2, 1)),
        _example("attnsim.constructions.matmul.program", "matmul"),
    ),
    KernelTheorem(
        "relu",
        RELU_REF,
        "Relu",
        "Num.max x 0",
        "decode (eval (relu_prog n rows) x) = map_mx (fun v => Num.max v 0) A for every n, rows",
        lambda: relu(*_sizes("n", "rows")),
        "relu_prog",
        ("n", "rows"),
        (Theorem("relu_max0", "map_mx (fun v => Num.max v 0) A"),),
        _cases("n rows", (1, 1), (3, 2), (4, 3), (7, 1)),
        _example("attnsim.constructions.relu.program", "relu"),
    ),
    KernelTheorem(
        "maxmin",
        MAXMIN_REF,
        "MaxMin",
        "Num.max, Num.min",
        "for every even n and rows: entry (i, 2t) is Num.max of the pair, (i, 2t+1) its Num.min",
        lambda: maxmin(*_sizes("n", "rows")),
        "maxmin_prog",
        ("n", "rows"),
        (
            Theorem(
                "maxmin_pairs",
                "\\matrix_(i, j) if odd j then Num.min (A i j) (A i (insubd j j.-1)) "
                "else Num.max (A i j) (A i (insubd j j.+1))",
            ),
        ),
        _cases("n rows", (2, 1), (4, 2), (6, 3), (8, 1)),
        _example("attnsim.constructions.maxmin.program", "maxmin"),
    ),
    KernelTheorem(
        "softmax",
        SOFTMAX_REF,
        "Softmax",
        "exp(x_ij) / sum_l exp(x_il); " + _EXPR,
        "entry (t, i, j) = exp(A t i j) / sum_l exp(A t i l) for every r, c, h; for exp = expR over any realType",
        lambda: softmax(*_sizes("rows", "cols", "heads")),
        "softmax_heads_prog",
        ("rows", "cols", "heads"),
        _softmax_theorems("softmax_heads", _SOFTMAX, stable=False),
        _cases("rows cols heads", (1, 1, 1), (2, 3, 1), (2, 2, 2), (3, 1, 2)),
        _example("attnsim.constructions.softmax.program", "softmax"),
    ),
    KernelTheorem(
        "softmax",
        SOFTMAX_REF,
        "SoftmaxStable",
        "exp(x_ij) / sum_l exp(x_il), max-shifted; " + _EXPR,
        "the max-shifted program: entry (t, i, j) = exp(A t i j) / sum_l exp(A t i l) for every r, c, h, for any "
        "exp with exp(a - b) = exp a / exp b and exp a != 0; for exp = expR over any realType",
        lambda: softmax(*_sizes("rows", "cols", "heads"), stable=True),
        "softmax_stable_heads_prog",
        ("rows", "cols", "heads"),
        _softmax_theorems("softmax_stable_heads", _SOFTMAX, stable=True),
        _cases("rows cols heads", (1, 1, 1), (2, 3, 1), (2, 2, 2), (3, 1, 2)),
    ),
    KernelTheorem(
        "softmax-masked",
        SOFTMAX_REF,
        "SoftmaxMaskedStable",
        "exp(x_ij) / sum_{l < n} exp(x_il), max-shifted; " + _EXPR,
        "the max-shifted program, with 1 <= n <= c the token after the stack: entry (t, i, j) = exp(A t i j) / "
        "sum_{l < n} exp(A t i l) if j < n, else 0, for every r, c, h; for exp = expR over any realType",
        lambda: masked_softmax(*_sizes("rows", "cols", "heads"), stable=True),
        "masked_softmax_stable_heads_prog",
        ("rows", "cols", "heads"),
        _softmax_theorems("masked_softmax_stable_heads", _MASKED, stable=True),
        _cases("rows cols heads", (1, 1, 1), (2, 3, 1), (2, 3, 2), (1, 4, 2)),
        _example("attnsim.constructions.softmax.program", "softmax-masked"),
    ),
    KernelTheorem(
        "softmax-masked",
        SOFTMAX_REF,
        "SoftmaxMasked",
        "exp(x_ij) / sum_{l < n} exp(x_il); " + _EXPR,
        "the plain program, with 1 <= n <= c the token after the stack: entry (t, i, j) = exp(A t i j) / "
        "sum_{l < n} exp(A t i l) if j < n, else 0, for every r, c, h; for exp = expR over any realType",
        lambda: masked_softmax(*_sizes("rows", "cols", "heads")),
        "masked_softmax_heads_prog",
        ("rows", "cols", "heads"),
        _softmax_theorems("masked_softmax_heads", _MASKED, stable=False),
        _cases("rows cols heads", (1, 1, 1), (2, 3, 1), (2, 3, 2)),
    ),
    KernelTheorem(
        "gathered-transpose",
        TRANSPOSE_REF,
        "GatheredTranspose",
        "trmx",
        "the guarded gather onto a (cols, rows) grid: decode (eval (gathered_transpose_prog r c) x) = trmx A",
        lambda: gathered_transpose(*_sizes("rows", "cols")),
        "gathered_transpose_prog",
        ("rows", "cols"),
        (Theorem("gathered_transpose_trmx", "trmx A"),),
        _cases("rows cols", (1, 1), (2, 3), (3, 2), (1, 4)),
        _example("attnsim.constructions.forms.program", "gathered-transpose"),
    ),
    KernelTheorem(
        "consumer-matmul",
        MATMUL_REF,
        "ConsumerMatmul",
        "mulmx",
        "entry (i, j, m) of the (rows, cols, extra) consumer grid = (A *m B) i j, every rows, inner, cols, extra",
        lambda: consumer_matmul(*_sizes("rows", "inner", "cols", "extra")),
        "consumer_matmul_prog",
        ("rows", "inner", "cols", "extra"),
        (Theorem("consumer_matmul_mulmx", "\\matrix_(j, m) (A *m B) t j"),),
        _cases("rows inner cols extra", (1, 1, 1, 1), (2, 2, 1, 3), (1, 3, 2, 2), (2, 1, 3, 1)),
        _example("attnsim.constructions.forms.program", "consumer-matmul"),
    ),
    KernelTheorem(
        "cofactor3",
        COFACTOR_REF,
        "Cofactor3",
        "cofactor",
        "entry (i, j) = cofactor A i j (MathComp's signed cofactor) for every 3 x 3 A",
        cofactor3,
        "cofactor3_prog",
        (),
        (Theorem("cofactor3_cofactor", "\\matrix_(i, j) cofactor A i j"),),
        ({}, {}, {}),
        _example("attnsim.constructions.det3.program", "cofactor3"),
    ),
    KernelTheorem(
        "det3",
        COFACTOR_REF,
        "Det3",
        "\\det",
        "the value at position 0 = \\det A (MathComp's determinant) for every 3 x 3 A",
        det3,
        "det3_prog",
        (),
        (Theorem("det3_det", "(\\det A)%:M"),),
        ({}, {}, {}),
        _example("attnsim.constructions.det3.program", "det3"),
    ),
    KernelTheorem(
        "inverse3",
        COFACTOR_REF,
        "Inverse3",
        "invmx",
        "the output block = invmx A (MathComp's inverse) for every invertible 3 x 3 A (A \\in unitmx)",
        inverse3,
        "inverse3_prog",
        (),
        (Theorem("inverse3_invmx", "invmx A", ("A \\in unitmx",)),),
        ({}, {}, {}),
        _example("attnsim.constructions.det3.program", "inverse3"),
    ),
    KernelTheorem(
        steps.STEPS_ID,
        steps.STEPS_REF,
        "FaddeevTrace",
        "\\tr (mxtrace)",
        "the value at position 0 = \\tr A for every n x n A at any offset, any padding",
        steps.trace_step,
        "faddeev_trace_prog",
        ("n", "offset", "pad"),
        (Theorem("faddeev_trace", "(\\tr A)%:M"),),
        _cases("n offset pad", (1, 0, 0), (2, 1, 0), (3, 0, 2), (4, 2, 1)),
        steps.trace_step,  # registered: the factory of its catalogue obligations (STEPS)
    ),
    KernelTheorem(
        steps.STEPS_ID,
        steps.STEPS_REF,
        "FaddeevFrobenius",
        "\\sum",
        "the value at position 0 = sum_ij A_ij (2 A_ij + 1) for every rows x cols A at any offset, any padding",
        steps.frobenius_step,
        "faddeev_frobenius_prog",
        ("rows", "cols", "offset", "pad"),
        (Theorem("faddeev_frobenius", "(\\sum_(i < rows) \\sum_(j < cols) A i j * (2%:R * A i j + 1))%:M"),),
        _cases("rows cols offset pad", (1, 1, 0, 0), (2, 3, 1, 0), (3, 2, 0, 2)),
        steps.frobenius_step,  # registered: the factory of its catalogue obligations (STEPS)
    ),
    KernelTheorem(
        steps.STEPS_ID,
        steps.STEPS_REF,
        "FaddeevFirstStep",
        "\\tr, scalar_mx",
        "M_2 = A - (tr A) I for every n x n A at any offset, any padding",
        steps.first_step,
        "faddeev_first_step_prog",
        ("n", "offset", "pad"),
        (Theorem("faddeev_first_step", "A - (\\tr A)%:M"),),
        _cases("n offset pad", (1, 0, 0), (2, 1, 0), (3, 0, 2)),
        steps.first_step,  # registered: the factory of its catalogue obligations (STEPS)
    ),
    KernelTheorem(
        steps.STEPS_ID,
        steps.STEPS_REF,
        "FaddeevGeneralStep",
        "mulmx, scalar_mx",
        "M' = A M + c I for every n x n A, M and scalar c at any offset, any padding",
        steps.general_step,
        "faddeev_general_step_prog",
        ("n", "offset", "pad"),
        (Theorem("faddeev_general_step", "A *m M + (c 0 0)%:M"),),
        _cases("n offset pad", (1, 0, 0), (2, 1, 0), (3, 0, 2)),
        steps.general_step,  # registered: the factory of its catalogue obligations (STEPS)
    ),
    KernelTheorem(
        steps.STEPS_ID,
        steps.STEPS_REF,
        "FaddeevCoefficientStep",
        "\\tr, mulmx",
        "the value at position 0 = tr (A M) for every n x n A, M at any offset, any padding",
        steps.coefficient_step,
        "faddeev_coefficient_step_prog",
        ("n", "offset", "pad"),
        (Theorem("faddeev_coefficient_step", "(\\tr (A *m M))%:M"),),
        _cases("n offset pad", (1, 0, 0), (2, 1, 0), (3, 0, 2)),
        steps.coefficient_step,  # registered: the factory of its catalogue obligations (STEPS)
    ),
    KernelTheorem(
        steps.STEPS_ID,
        steps.STEPS_REF,
        "FaddeevIteration",
        "\\tr, mulmx, scalar_mx",
        "one iteration k of det(n)'s loop: the value at position 0 = -tr(A (A M + c I)) / (k + 1), every n, k",
        steps.iteration_step,
        "faddeev_iteration_prog",
        ("n", "k", "offset", "pad"),
        (Theorem("faddeev_iteration", "(- \\tr (A *m (A *m M + (c 0 0)%:M)) / (k + 1)%:R)%:M"),),
        _cases("n k offset pad", (1, 1, 0, 0), (2, 1, 1, 0), (3, 2, 0, 2)),
        steps.iteration_step,  # registered: the factory of its catalogue obligations (STEPS)
    ),
    KernelTheorem(
        DET_N_ID,
        DET_N_REF,
        "FaddeevLeVerrier",
        "char_poly, \\det, invmx",
        "the loop det(n) and inverse(n) run computes c_(n-k) = the coefficients of char_poly A, "
        "\\det A = (-1)^n c_0 and, for A \\in unitmx, invmx A = - M_n / c_0, for every n",
        None,
        "",
        (),
        (
            Theorem("fl_M1", "forall (R : numFieldType) (n : nat) (A : 'M[R]_n), fl_M A 1 = 1%:M"),
            Theorem("fl_c1", "forall (R : numFieldType) (n : nat) (A : 'M[R]_n), fl_c A 1 = - \\tr A"),
            Theorem("fl_MS", _FL + "(k : nat), fl_M A k.+1 = A *m fl_M A k + (fl_c A k)%:M"),
            Theorem("fl_cS", _FL + "(k : nat), fl_c A k.+1 = - \\tr (A *m fl_M A k.+1) / k.+1%:R"),
            Theorem("fl_c_char_poly", _FL + "(k : nat), (k <= n)%nat -> fl_c A k = (char_poly A)`_(n - k)"),
            Theorem("det_fl", _FL + ", \\det A = (-1) ^+ n * fl_c A n"),
            Theorem("invmx_fl", _FL + ", A \\in unitmx -> invmx A = - (fl_c A n)^-1 *: fl_M A n"),
        ),
        (),
        definitions=FL_LOOP,
    ),
)


__all__ = ["THEOREMS", "KernelError", "KernelTheorem", "Theorem"]
