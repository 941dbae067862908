"""Every specification checked on its own (issue 26): ``<construction>/numeric/spec-independent``.

An all-sizes proof shows program == spec; a wrong factor written into the program *and* its spec
is proved equal.  Each obligation here evaluates a spec of :mod:`attnsim.symbolic.specs` (its own
entry formula, :meth:`~attnsim.symbolic.specs.BoundSpec.evaluate`) on random operands and compares
it with the textbook NumPy formula of :mod:`attnsim.verify.spec_references`, which shares no code
with it, at

* every size 1, and small random sizes;
* each size in turn at a random large value (up to 128 where the spec is cheap), the others small;
* each size in turn at every constant the spec compares a size with (found by evaluating it with
  sizes that record their comparisons, :class:`TracedSize`) or a program proved against it
  compares a size expression with (:func:`attnsim.symbolic.counterexample.program_constants`),
  and at +-1 around each.

The method is ``numeric`` (float64, within the stated tolerance; integer-valued specs on integer
operands are compared with tolerance 0).  The spec is read from :mod:`attnsim.symbolic.specs` when
the check runs, so a spec replaced there (a test's wrong factor) is the one checked.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnsim.applications import efficient, kparity
from attnsim.lemmas import faddeev_steps, forms
from attnsim.lemmas.matmul import matmul
from attnsim.lemmas.maxmin import maxmin
from attnsim.lemmas.relu import relu
from attnsim.lemmas.softmax import masked_softmax, softmax
from attnsim.lemmas.transpose import transpose
from attnsim.proofs.obligation import Obligation, Outcome
from attnsim.rasp import core as C
from attnsim.symbolic import specs
from attnsim.symbolic.counterexample import program_constants
from attnsim.verify import spec_references as ref

Sizes = dict[str, int]
OperandMaker = Callable[[Mapping[str, int], np.random.Generator, int], dict[str, np.ndarray]]


def _plain(o: Any) -> Any:
    """A traced size as its plain int (so that comparing two traced sizes records nothing)."""
    return int(o) if isinstance(o, TracedSize) else o


class TracedSize(int):
    """An int size that records every plain int it is compared with (where a spec may branch on it).

    Arithmetic keeps the tracing (``inner - 1 > 70`` records 70); a comparison with another traced
    size records nothing."""

    seen: set[int]

    def __new__(cls, value: int, seen: set[int]) -> TracedSize:
        obj = super().__new__(cls, value)
        obj.seen = seen
        return obj

    def _keep(self, v: Any) -> Any:
        return TracedSize(v, self.seen) if isinstance(v, int) and not isinstance(v, bool) else v

    def _note(self, other: Any) -> None:
        if isinstance(other, int) and not isinstance(other, (bool, TracedSize)):
            self.seen.add(int(other))

    def __add__(self, o: Any) -> Any:
        return self._keep(int(self) + o)

    __radd__ = __add__

    def __sub__(self, o: Any) -> Any:
        return self._keep(int(self) - o)

    def __rsub__(self, o: Any) -> Any:
        return self._keep(o - int(self))

    def __mul__(self, o: Any) -> Any:
        return self._keep(int(self) * o)

    __rmul__ = __mul__

    def __floordiv__(self, o: Any) -> Any:
        return self._keep(int(self) // o)

    def __mod__(self, o: Any) -> Any:
        return self._keep(int(self) % o)

    def __neg__(self) -> Any:
        return self._keep(-int(self))

    def __lt__(self, o: Any) -> bool:
        self._note(o)
        return int(self) < _plain(o)

    def __le__(self, o: Any) -> bool:
        self._note(o)
        return int(self) <= _plain(o)

    def __gt__(self, o: Any) -> bool:
        self._note(o)
        return int(self) > _plain(o)

    def __ge__(self, o: Any) -> bool:
        self._note(o)
        return int(self) >= _plain(o)

    def __eq__(self, o: object) -> bool:
        self._note(o)
        return int(self) == _plain(o)

    def __ne__(self, o: object) -> bool:
        self._note(o)
        return int(self) != _plain(o)

    __hash__ = int.__hash__


@dataclass(frozen=True)
class SpecCase:
    """One specification, how to make its operands, its textbook reference, and what to try.

    ``large``: per size, the largest value tried (what stays cheap: a spec is evaluated entry by
    entry in Python); ``valid``: the sizes the spec is stated for (MaxMin: an even width);
    ``makers``: the symbolic builds proved against this spec (their programs' size constants)."""

    construction: str
    paper_ref: str
    spec_attr: str  # the name of the spec in attnsim.symbolic.specs, read when the check runs
    reference: Callable[[Mapping[str, np.ndarray], Mapping[str, int]], np.ndarray]
    operands: OperandMaker
    large: Mapping[str, int]
    makers: Sequence[Callable[[], Any]] = ()
    valid: Callable[[Mapping[str, int]], bool] = lambda sz: True
    repair: Callable[[Sizes], Sizes] = lambda sz: sz  # an assignment outside ``valid`` moved into it
    extra_small: int = 0  # further small random assignments (the encoder layer: every option combination)
    rtol: float = 0.0
    atol: float = 0.0
    small: int = 3
    extra_ids: str = ""

    @property
    def spec(self) -> specs.Spec:
        found = getattr(specs, self.spec_attr)
        assert isinstance(found, specs.Spec)
        return found

    @property
    def id(self) -> str:
        return f"{self.construction}/numeric/spec-independent{self.extra_ids}"


# -- operands ------------------------------------------------------------------------------------
def _ints(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.integers(-5, 6, size=shape).astype(np.float64)


def _reals(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.normal(0.0, 1.5, size=shape)


def _stacked(
    fill: Callable[..., np.ndarray], shapes: Mapping[str, Callable[[Mapping[str, int]], tuple[int, ...]]]
) -> OperandMaker:
    def make(sz: Mapping[str, int], rng: np.random.Generator, trial: int) -> dict[str, np.ndarray]:
        return {name: fill(rng, *shape(sz)) for name, shape in shapes.items()}

    return make


def _masked_operands(sz: Mapping[str, int], rng: np.random.Generator, trial: int) -> dict[str, np.ndarray]:
    """A and the operand n: 1, cols and a random value in between, in turn."""
    cols = sz["cols"]
    n = (1, cols, int(rng.integers(1, cols + 1)))[trial % 3]
    return {"A": _reals(rng, sz["heads"], sz["rows"], cols), "n": np.array([[float(n)]])}


def _scalar_c(base: OperandMaker) -> OperandMaker:
    def make(sz: Mapping[str, int], rng: np.random.Generator, trial: int) -> dict[str, np.ndarray]:
        return {**base(sz, rng, trial), "c": _ints(rng, 1, 1)}

    return make


def _parity_operands(sz: Mapping[str, int], rng: np.random.Generator, trial: int) -> dict[str, np.ndarray]:
    return {"x": rng.integers(0, 2, size=(1, sz["length"])).astype(np.float64)}


#: every combination of ENCODER_LAYER's options: residual, norm (none, pre, post), activation
#: (relu, gelu, gelu_tanh), ffn
_ENCODER_OPTIONS = list(itertools.product((1, 0), ((0, 0), (1, 0), (0, 1)), ((0, 0), (1, 0), (0, 1)), (1, 0)))


def _encoder_operands(sz: Mapping[str, int], rng: np.random.Generator, trial: int) -> dict[str, np.ndarray]:
    """T's parameters in torch's layout, every option combination in turn, masks with every row's
    own key left unblocked (the spec's premise: a row has an unblocked key)."""
    n, d, hh, k, f = (sz[s] for s in ("n", "d", "hh", "k", "f"))
    residual, (pre, post), (gelu, gelu_tanh), ffn = _ENCODER_OPTIONS[trial % len(_ENCODER_OPTIONS)]

    def w(*shape: int) -> np.ndarray:
        return np.asarray(rng.normal(0.0, 0.5, size=shape))

    blocked = (rng.random((n, n)) < 0.3).astype(np.float64)
    np.fill_diagonal(blocked, 0.0)
    one = lambda v: np.array([[float(v)]])
    return {
        "X": w(n, d),
        "in_proj_weight": w(3 * hh * k, d),
        "in_proj_bias": w(1, 3 * hh * k),
        "out_proj_weight": w(d, hh * k),
        "out_proj_bias": w(1, d),
        "linear1_weight": w(f, d),
        "linear1_bias": w(1, f),
        "linear2_weight": w(d, f),
        "linear2_bias": w(1, d),
        "norm1_weight": 1 + w(1, d),
        "norm1_bias": w(1, d),
        "norm2_weight": 1 + w(1, d),
        "norm2_bias": w(1, d),
        "additive": w(n, n),
        "blocked": blocked,
        "residual": one(residual),
        "pre": one(pre),
        "post": one(post),
        "gelu": one(gelu),
        "gelu_tanh": one(gelu_tanh),
        "ffn": one(ffn),
        "scale": one(1 / np.sqrt(k)),
        "eps": one(1e-5),
    }


# -- the cases -------------------------------------------------------------------------------------
S = C.Size


def _cases() -> list[SpecCase]:
    """One case per specification of :mod:`attnsim.symbolic.specs` (the test checks none is left out)."""
    hrc = lambda sz: (sz["heads"], sz["rows"], sz["cols"])
    steps_ref, steps = faddeev_steps.STEPS_REF, faddeev_steps.STEPS_ID
    square = lambda sz: (sz["n"], sz["n"])
    return [
        SpecCase(
            "transpose",
            "Lemma (transpose)",
            "TRANSPOSE",
            ref.transpose,
            _stacked(_ints, {"A": hrc}),
            {"rows": 128, "cols": 128, "heads": 16},
            (
                lambda: transpose(S("rows"), S("cols"), heads=S("heads")),
                lambda: forms.gathered_transpose(S("rows"), S("cols")),
            ),
        ),
        SpecCase(
            "matmul",
            "Lemma (matmul)",
            "MATMUL",
            ref.matmul,
            _stacked(
                _ints,
                {
                    "A": lambda sz: (sz["heads"], sz["rows"], sz["inner"]),
                    "B": lambda sz: (sz["heads"], sz["inner"], sz["cols"]),
                },
            ),
            {"rows": 100, "inner": 128, "cols": 100, "heads": 8},
            (lambda: matmul(S("rows"), S("inner"), S("cols"), heads=S("heads")),),
        ),
        SpecCase(
            "gathered-permute",
            "Lemma (matmul), Lemma (transpose)",
            "PERMUTE3",
            ref.permute3,
            _stacked(_ints, {"A": lambda sz: (sz["d0"], sz["d1"], sz["d2"])}),
            {"d0": 64, "d1": 64, "d2": 64},
            (lambda: forms.gathered_permute(S("d0"), S("d1"), S("d2")),),
        ),
        SpecCase(
            "broadcast-gather",
            "Lemma (matmul), Lemma (transpose)",
            "BROADCAST_ROW",
            ref.broadcast_row,
            _stacked(_ints, {"A": lambda sz: (sz["depth"], sz["cols"])}),
            {"depth": 100, "rows": 100, "cols": 100},
            (lambda: forms.broadcast_gather(S("depth"), S("rows"), S("cols")),),
        ),
        SpecCase(
            "consumer-matmul",
            "Lemma (matmul), Lemma (transpose)",
            "CONSUMER_MATMUL",
            ref.consumer_matmul,
            _stacked(_ints, {"A": lambda sz: (sz["rows"], sz["inner"]), "B": lambda sz: (sz["inner"], sz["cols"])}),
            {"rows": 40, "inner": 100, "cols": 40, "extra": 40},
            (lambda: forms.consumer_matmul(S("rows"), S("inner"), S("cols"), S("extra")),),
        ),
        SpecCase(
            "two-axis-sum",
            "Lemma (matmul), Lemma (transpose)",
            "TWO_AXIS_SUM",
            ref.two_axis_sum,
            _stacked(_ints, {"A": lambda sz: (sz["depth"], sz["rows"], sz["width"])}),
            {"depth": 64, "rows": 64, "width": 64, "cols": 64},
            (lambda: forms.two_axis_sum(S("depth"), S("rows"), S("width"), S("cols")),),
        ),
        SpecCase(
            "softmax",
            "Lemma 3 (softmax)",
            "SOFTMAX",
            ref.softmax,
            _stacked(_reals, {"A": hrc}),
            {"rows": 100, "cols": 128, "heads": 8},
            (
                lambda: softmax(S("rows"), S("cols"), S("heads")),
                lambda: softmax(S("rows"), S("cols"), S("heads"), stable=True),
            ),
            rtol=1e-9,
            atol=1e-12,
        ),
        SpecCase(
            "softmax-masked",
            "Lemma 3 (softmax)",
            "MASKED_SOFTMAX",
            ref.masked_softmax,
            _masked_operands,
            {"rows": 100, "cols": 128, "heads": 8},
            (
                lambda: masked_softmax(S("rows"), S("cols"), S("heads")),
                lambda: masked_softmax(S("rows"), S("cols"), S("heads"), stable=True),
            ),
            rtol=1e-9,
            atol=1e-12,
        ),
        SpecCase(
            "relu",
            "Activation ReLU",
            "RELU",
            ref.relu,
            _stacked(_ints, {"A": lambda sz: (sz["rows"], sz["n"])}),
            {"rows": 128, "n": 128},
            (lambda: relu(S("n"), S("rows")),),
        ),
        SpecCase(
            "maxmin",
            "Activation MaxMin (GroupSort, groups of 2)",
            "MAXMIN",
            ref.maxmin,
            _stacked(_ints, {"A": lambda sz: (sz["rows"], sz["n"])}),
            {"rows": 128, "n": 128},
            (lambda: maxmin(S("n"), S("rows")),),
            valid=lambda sz: sz["n"] % 2 == 0,
            repair=lambda sz: {**sz, "n": sz["n"] + sz["n"] % 2},  # an odd width: the next even one
        ),
        SpecCase(
            steps,
            steps_ref,
            "TRACE",
            ref.trace,
            _stacked(_ints, {"A": square}),
            {"n": 128},
            (lambda: faddeev_steps.trace_step(S("n")),),
            extra_ids="-trace",
        ),
        SpecCase(
            steps,
            steps_ref,
            "FROBENIUS",
            ref.frobenius,
            _stacked(_ints, {"A": lambda sz: (sz["rows"], sz["cols"])}),
            {"rows": 100, "cols": 100},
            (lambda: faddeev_steps.frobenius_step(S("rows"), S("cols")),),
            extra_ids="-frobenius",
        ),
        SpecCase(
            steps,
            steps_ref,
            "FIRST_STEP",
            ref.first_step,
            _stacked(_ints, {"A": square}),
            {"n": 64},
            (lambda: faddeev_steps.first_step(S("n")),),
            extra_ids="-first-step",
        ),
        SpecCase(
            steps,
            steps_ref,
            "GENERAL_STEP",
            ref.general_step,
            _scalar_c(_stacked(_ints, {"A": square, "M": square})),
            {"n": 24},
            (lambda: faddeev_steps.general_step(S("n")),),
            extra_ids="-general-step",
        ),
        SpecCase(
            steps,
            steps_ref,
            "COEFFICIENT_STEP",
            ref.coefficient_step,
            _stacked(_ints, {"A": square, "M": square}),
            {"n": 64},
            (lambda: faddeev_steps.coefficient_step(S("n")),),
            extra_ids="-coefficient-step",
        ),
        SpecCase(
            steps,
            steps_ref,
            "ITERATION",
            ref.iteration,
            _scalar_c(_stacked(_ints, {"A": square, "M": square})),
            {"n": 16, "k": 128},
            (lambda: faddeev_steps.iteration_step(S("n"), S("k")),),
            rtol=1e-12,  # one division by k + 1: not an integer
            extra_ids="-iteration",
        ),
        SpecCase(
            "linear_attention",
            efficient.LINEAR_REF,
            "LINEAR_ATTENTION",
            ref.linear_attention,
            _stacked(
                _reals,
                {
                    "Q": lambda sz: (sz["n"], sz["d"]),
                    "K": lambda sz: (sz["n"], sz["d"]),
                    "V": lambda sz: (sz["n"], sz["dv"]),
                },
            ),
            {"n": 40, "d": 64, "dv": 64},
            (lambda: efficient.linear_attention(S("n"), S("d"), S("dv")),),
            rtol=1e-9,
            atol=1e-12,
        ),
        SpecCase(
            "linformer",
            efficient.LINFORMER_REF,
            "LINFORMER",
            ref.linformer,
            _stacked(
                _reals,
                {
                    "Q": lambda sz: (sz["n"], sz["d"]),
                    "K": lambda sz: (sz["n"], sz["d"]),
                    "V": lambda sz: (sz["n"], sz["dv"]),
                    "E": lambda sz: (sz["kp"], sz["n"]),
                    "F": lambda sz: (sz["kp"], sz["n"]),
                },
            ),
            {"n": 24, "d": 24, "dv": 24, "kp": 8},
            (lambda: efficient.linformer(S("n"), S("d"), S("dv"), S("kp")),),
            rtol=1e-9,
            atol=1e-12,
        ),
        SpecCase(
            "parity",
            kparity.PAPER_REF,
            "PARITY",
            ref.parity,
            _parity_operands,
            {"length": 128},
            (lambda: kparity.parity(S("length")),),
        ),
        SpecCase(
            "simulator",
            "Theorem 6",
            "ENCODER_LAYER",
            ref.encoder_layer,
            _encoder_operands,
            {"n": 16, "d": 16, "hh": 4, "k": 8, "f": 32},
            (),  # U's program over symbolic capacity: its size comparisons are with the capacity, not constants
            rtol=1e-9,
            atol=1e-9,
            extra_small=len(_ENCODER_OPTIONS),
            extra_ids="-encoder-layer",
        ),
    ]


CASES: tuple[SpecCase, ...] = tuple(_cases())


# -- the check -------------------------------------------------------------------------------------
def spec_constants(case: SpecCase, sizes: Iterable[Mapping[str, int]], rounds: int = 3) -> set[int]:
    """Every plain int the spec compares a size with, evaluated at ``sizes`` (then again at the
    constants found, +-1, so that a comparison inside a branch first taken there is found too)."""
    spec = case.spec
    seen: set[int] = set()
    todo = [dict(s) for s in sizes]
    done: set[tuple[tuple[str, int], ...]] = set()
    rng = np.random.default_rng(0)
    for _ in range(rounds):
        before = set(seen)
        for sz in todo:
            key = tuple(sorted(sz.items()))
            if key in done or not case.valid(sz):
                continue
            done.add(key)
            traced = {k: TracedSize(v, seen) for k, v in sz.items()}
            plain = case.operands(sz, rng, 0)
            ops = {k: (a.reshape((1, *a.shape)) if a.ndim == 2 else a) for k, a in plain.items()}
            alg = specs.ConcreteAlg("numpy")
            shape = tuple(int(x) for x in spec.shape(dict(sz)))
            for h, i, j in itertools.islice(np.ndindex(*shape), 64):
                spec.entry(alg, ops, h, i, j, traced)
        new = seen - before
        if not new:
            break
        base = dict(todo[0])
        todo = [{**base, s: v} for s in base for c in new for v in (c - 1, c, c + 1) if v >= 1]
    return seen


def _near(values: Iterable[int]) -> set[int]:
    return {w for v in values for w in (v - 1, v, v + 1) if w >= 1}


def size_plan(case: SpecCase, constants: set[int], rng: np.random.Generator) -> list[Sizes]:
    """The size assignments tried: all 1, small random, each size large in turn, each size at each
    constant (+-1) in turn; only those the spec is stated for (``case.valid``)."""
    names = case.spec.sizes
    small = lambda: {s: int(rng.integers(1, case.small + 1)) for s in names}
    plan: list[Sizes] = [dict.fromkeys(names, 1), small(), small()]
    plan += [small() for _ in range(case.extra_small)]
    plan.append({s: int(rng.integers(1, max(2, case.large[s] // 4) + 1)) for s in names})  # all sizes at once
    for s in names:
        lo = max(1, case.large[s] // 2)
        plan.append({**small(), s: int(rng.integers(lo, case.large[s] + 1))})
        plan.append({**small(), s: case.large[s]})
    for s in names:
        for v in sorted(_near(constants)):
            plan.append({**small(), s: v})
    out: list[Sizes] = []
    for sz in plan:
        if not case.valid(sz):
            sz = case.repair(sz)
        if case.valid(sz) and sz not in out:
            out.append(sz)
    return out


@dataclass(frozen=True)
class SpecComparison:
    """What a spec check found: how many size assignments and entries agreed (``largest``: each size's
    largest value among them), the constants tried, or the first mismatch."""

    assignments: int
    entries: int
    largest: Sizes
    constants: tuple[int, ...]
    mismatch: str = ""


def compare(case: SpecCase, seed: int = 0) -> SpecComparison:
    """Evaluate the spec and its textbook reference on the same random operands at every assignment
    of :func:`size_plan`; stop at the first entry where they differ."""
    rng = np.random.default_rng(seed)
    found = spec_constants(case, [dict.fromkeys(case.spec.sizes, 2), dict.fromkeys(case.spec.sizes, 3)])
    for make in case.makers:
        found |= program_constants(make())
    constants = tuple(sorted(v for v in found if v >= 0))
    plan = size_plan(case, set(constants), rng)
    entries = 0
    largest: Sizes = {}
    for trial, sz in enumerate(plan):
        ops = case.operands(sz, rng, trial)
        try:
            got = case.spec.at(**sz).evaluate(ops, int)
        except (specs.SpecError, IndexError, ValueError, ZeroDivisionError) as exc:
            return SpecComparison(trial, entries, largest, constants, f"the spec fails to evaluate at {sz}: {exc}")
        want = case.reference(ops, sz)
        where = ", ".join(f"{k}={v}" for k, v in sz.items())
        if got.shape != want.shape:
            shapes = f"at {where} the spec's shape is {got.shape}, the reference's {want.shape}"
            return SpecComparison(trial, entries, largest, constants, shapes)
        bad = np.argwhere(~np.isclose(got, want, rtol=case.rtol, atol=case.atol))
        if len(bad):
            ix = tuple(int(x) for x in bad[0])
            return SpecComparison(
                trial,
                entries,
                largest,
                constants,
                f"at {where}, entry {list(ix)}: the spec gives {got[ix]!r}, the textbook reference {want[ix]!r} "
                f"({len(bad)} of {got.size} entries differ)",
            )
        entries += got.size
        largest = {k: max(v, largest.get(k, 0)) for k, v in sz.items()}
    return SpecComparison(len(plan), entries, largest, constants)


def spec_check(case: SpecCase) -> Callable[[float], Outcome]:
    """The obligation's check: ``compare`` as an Outcome."""

    def check(timeout: float) -> Outcome:
        res = compare(case)
        name = case.spec.name
        if res.mismatch:
            return Outcome.bad(f"spec {name} is not the textbook formula: {res.mismatch}")
        big = ", ".join(f"{k}={v}" for k, v in res.largest.items())
        tol = "exactly (tolerance 0, integer operands)" if case.rtol == case.atol == 0 else (
            f"within rtol {case.rtol:g}, atol {case.atol:g}"
        )
        return Outcome.good(
            f"spec {name} == its textbook NumPy formula {tol}: {res.assignments} size assignments "
            f"({res.entries} entries), each size up to {big}; constants compared with a size: "
            f"{list(res.constants) or 'none'} (each +-1)"
        )

    return check


def spec_obligations() -> Iterable[Obligation]:
    """One ``numeric`` obligation per specification."""
    for case in CASES:
        yield Obligation(
            case.id,
            case.construction,
            case.paper_ref,
            "numeric",
            spec_check(case),
            statement=f"the spec {case.spec.name} ({case.spec.statement[:120]}) equals an independent NumPy "
            "formula at random large sizes and at every size constant +-1",
        )


__all__ = [
    "CASES",
    "SpecCase",
    "SpecComparison",
    "TracedSize",
    "compare",
    "size_plan",
    "spec_constants",
    "spec_obligations",
]
