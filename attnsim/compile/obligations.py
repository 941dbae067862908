"""Equivalence obligations: the compiled weights compute what the interpreter computes.

* ``compile/exact/<lemma>``: every registered construction, compiled and run in exact
  arithmetic (ints/Fractions, no irrational primitive) on random rational operands, equals the
  exact interpreter with ``==`` at every position of the sequence;
* ``compile/numeric/<lemma>``, ``compile/numeric/U-...``: float64 forward within the stated
  rounding bound ``FLOAT_TOL * max(1, max|reference|)`` of the float64 interpreter, with the
  same non-finite positions (both evaluate the same rational functions; they differ only in
  summation order, an attention mean as weights 1/|K| times values, and the interpolation of
  exact lookups, each a few ulps amplified by at most the lookups' slopes);
* ``compile/exact/exhaustive-<program>-len<L>-sym<V>``: every input of every length <= L over V
  symbols of the classic categorical programs, exact ``==``;
* ``compile/numeric/soft-<program>``: with softmax at the beta derived from each head's score
  gap, every head's output is within eta of hard attention;
* ``compile/exact/save-load``: the .npz round trip restores the weights exactly.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable, Iterable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from attnsim.compile import classic, soft
from attnsim.compile.compiler import compile_program
from attnsim.compile.model import CompiledTransformer
from attnsim.constructions.checks import rational_operands
from attnsim.constructions.construction import Construction, ConstructionError
from attnsim.constructions.matmul.program import matmul
from attnsim.proofs.obligation import Obligation, Outcome
from attnsim.proofs.registry import constructions
from attnsim.rasp.engine import evaluate
from attnsim.rasp.schedule import cost
from attnsim.universal.layer import TransformerLayer
from attnsim.universal.universal import UniversalSimulator

PAPER_REF = "executable extraction: concrete weights for every construction"
FLOAT_TOL = 1e-9
SOFT_ETA = 1e-6


# constructions whose tokens are integers from a finite set (the compiled model needs it), and
# SOps whose finite domain a construction guarantees but the compiler cannot derive
TOKEN_DOMAINS: dict[str, tuple[int, ...]] = {
    "match2": tuple(range(-6, 7)),
    "softmax-masked": tuple(range(-3, 4)),  # the stable form's max head needs a bounded score (its logits)
    "parity": (0, 1),
    "sparse_parity": (0, 1),
}
NOT_LEMMAS = ("simulator", "simulator-frame", "simulator-stages")  # all three are U: checked by the U obligation below


def compile_construction(name: str, con: Construction) -> CompiledTransformer:
    """Compile a registered construction's program for its sequence length (token domain if known)."""
    return compile_program(con.program, max_len=con.layout.total, vocab=TOKEN_DOMAINS.get(name))


def _lemma_sequence(
    con: Construction, rng: np.random.Generator, exact: bool, vocab: tuple[int, ...] | None = None
) -> np.ndarray:
    """A valid encoded input for a construction: random rationals (or normals), else small integers."""

    backend = "exact" if exact else "numpy"
    ops: list[Any]
    for attempt in range(6):
        if vocab is not None:
            ops = [rng.choice(np.array(vocab), size=con.layout[n].shape) for n in con.inputs]
            if exact:
                ops = [np.vectorize(Fraction, otypes=[object])(o) for o in ops]
        elif attempt == 0:
            ops = rational_operands(con, rng) if exact else [rng.normal(size=con.layout[n].shape) for n in con.inputs]
        else:
            ops = [rng.integers(1, 4, size=con.layout[n].shape) for n in con.inputs]
            if exact:
                ops = [np.vectorize(Fraction, otypes=[object])(o) for o in ops]
            else:
                ops = [o.astype(np.float64) + rng.normal(size=o.shape) * (0 if attempt < 3 else 1e-3) for o in ops]
        try:
            return np.asarray(con.encode(*ops, backend=backend))
        except ConstructionError:
            continue
    raise ValueError(f"{con.name}: no valid random operands found")


def exact_equal(ct: CompiledTransformer, program: Any, seqs: Iterable[np.ndarray]) -> Outcome:
    """Exact compiled forward == exact interpreter at every position, for every sequence."""
    n = 0
    for seq in seqs:
        got = ct.forward(seq, exact=True)
        want = evaluate(program, seq, "exact")
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            if a != b:
                return Outcome.bad(f"input {list(seq)}: position {i}: compiled {a} != interpreter {b}")
        n += 1
    return Outcome.good(f"{n} inputs: compiled == interpreter (exact, every position)")


def float_close(ct: CompiledTransformer, program: Any, seqs: Iterable[np.ndarray]) -> Outcome:
    """float64 compiled forward within FLOAT_TOL * max(1, |reference|) and with the same non-finite positions."""
    worst, n = 0.0, 0
    for seq in seqs:
        s = np.asarray(seq, dtype=np.float64)
        got = np.asarray(ct.forward(s, exact=False), dtype=np.float64)
        want = np.asarray(evaluate(program, s, "numpy", allow_nonfinite=False), dtype=np.float64)
        fin = np.isfinite(want)
        if not np.array_equal(np.isfinite(got), fin):
            bad_c, bad_i = np.flatnonzero(~np.isfinite(got)), np.flatnonzero(~fin)
            return Outcome.bad(f"non-finite positions differ: compiled {bad_c}, interpreter {bad_i}")
        scale = max(1.0, float(np.max(np.abs(want[fin]))) if fin.any() else 1.0)
        err = float(np.max(np.abs(got[fin] - want[fin]))) / scale if fin.any() else 0.0
        worst = max(worst, err)
        n += 1
    if worst <= FLOAT_TOL:
        return Outcome.good(f"{n} inputs: max relative error {worst:.3g} <= {FLOAT_TOL:g}")
    return Outcome.bad(f"max relative error {worst:.3g} > {FLOAT_TOL:g}")


def _lemma_check(name: str, make: Callable[[], Any], exact: bool, trials: int = 2) -> Callable[[float], Outcome]:
    def check(timeout: float) -> Outcome:
        con = make()
        ct = compile_construction(name, con)
        rng = np.random.default_rng(0)
        seqs = [_lemma_sequence(con, rng, exact, TOKEN_DOMAINS.get(name)) for _ in range(trials)]
        layers = cost(con.program).layers
        if ct.n_layers != layers:
            return Outcome.bad(f"compiled to {ct.n_layers} layer(s), the interpreter's cost says {layers}")
        return exact_equal(ct, con.program, seqs) if exact else float_close(ct, con.program, seqs)

    return check


def exhaustive_check(name: str, max_len: int, vocab: int, min_len: int = 1) -> Callable[[float], Outcome]:
    """Every input of every length min_len..max_len over ``vocab`` symbols, exact ==."""

    def check(timeout: float) -> Outcome:
        prog = classic.PROGRAMS[name]()
        ct = compile_program(prog, max_len=max_len, vocab=range(vocab))
        total = 0
        for n in range(min_len, max_len + 1):
            batch = np.array(list(itertools.product(range(vocab), repeat=n)), dtype=np.int64)
            got = ct.forward(batch, exact=True)
            for x, y in zip(batch, got, strict=True):
                want = evaluate(prog, x, "exact")
                if not all(a == b for a, b in zip(y, want, strict=True)):
                    return Outcome.bad(f"input {x.tolist()}: compiled {list(y)} != interpreter {list(want)}")
            total += len(batch)
        return Outcome.good(
            f"all {total} inputs (lengths {min_len}..{max_len}, {vocab} symbols): compiled == interpreter"
        )

    return check


def soft_check(ct_factory: Callable[[], tuple[CompiledTransformer, list[np.ndarray]]]) -> Callable[[float], Outcome]:
    """Every head, at its derived beta, is within SOFT_ETA of hard attention on every input."""

    def check(timeout: float) -> Outcome:
        ct, inputs = ct_factory()
        worst, heads = 0.0, 0
        for x in inputs:
            for g in soft.observed_gaps(ct, x):
                if g["observed_gap"] is not None and g["observed_gap"] < min(g["stated_gap"], 1):
                    return Outcome.bad(
                        f"head {g['head']}: observed score gap {g['observed_gap']} < stated {g['stated_gap']}"
                    )
            for row in soft.head_check(ct, x, SOFT_ETA):
                heads += 1
                if row["error"] > SOFT_ETA:
                    return Outcome.bad(
                        f"head {row['head']} at beta {row['beta']:.3g}: error {row['error']:.3g} > {SOFT_ETA:g}"
                    )
                worst = max(worst, row["error"])
        return Outcome.good(
            f"{heads} head runs: score gaps >= stated; max |soft - hard| {worst:.3g} <= eta {SOFT_ETA:g} "
            "at the derived beta"
        )

    return check


def universal_factory(
    max_len: int = 2, d_model: int = 2, n_heads: int = 1, d_head: int = 2, d_ff: int = 2, stack: int = 1
) -> Any:
    """(U, compiled U) at a capacity, for inputs <T_1..T_stack, X>.

    U's row max is a value-scored head: its score (the attention logits) needs a bound
    (``U.compile_domains()``: |logit| <= 1e4).
    """

    u = UniversalSimulator(max_len=max_len, d_model=d_model, n_heads=n_heads, d_head=d_head, d_ff=d_ff)
    return u, compile_program(u.program, max_len=u.positions(stack), domains=u.compile_domains())


def universal_check(capacity: tuple[int, int, int, int, int]) -> Callable[[float], Outcome]:
    """Compiled U == interpreted U (float bound) on random layers T, smaller ones included; and ~ T(X)."""

    def check(timeout: float) -> Outcome:
        u, ct = universal_factory(*capacity)
        if ct.n_layers != cost(u.program).layers:
            return Outcome.bad(f"compiled U has {ct.n_layers} layer(s), its cost says {cost(u.program).layers}")
        n_max, d_max, h_max, k_max, f_max = capacity
        rng = np.random.default_rng(0)
        cases = []
        opts = [
            ("none", False, "relu"),
            ("pre", True, "gelu"),
            ("post", True, "relu"),
            ("none", True, "gelu"),
            ("post", True, "gelu_tanh"),
        ]
        for seed, (norm, residual, act) in enumerate(opts):
            d = d_max if seed % 2 == 0 else max(1, d_max - 1)
            h, k, f = (h_max, k_max, f_max) if seed % 2 == 0 else (1, max(1, k_max - 1), max(1, f_max - 1))
            n = n_max if seed < 2 else max(1, n_max - 1)
            t = TransformerLayer.random(d, h, k, f, seed=seed, norm=norm, residual=residual, activation=act)
            x = rng.normal(size=(n, d))
            cases.append((t, x, u.encode(t, x)))
        res = float_close(ct, u.program, [c[2] for c in cases])
        if not res.ok:
            return res
        worst = 0.0
        for t, x, seq in cases:
            got = u.decode(np.asarray(ct.forward(seq, exact=False), dtype=np.float64), x.shape[0], t.d_model)
            want = np.asarray(t(x), dtype=np.float64)
            worst = max(worst, float(np.max(np.abs(got - want))) / max(1.0, float(np.max(np.abs(want)))))
        if worst > FLOAT_TOL:
            return Outcome.bad(f"decoded compiled U differs from T(X) by {worst:.3g} (relative)")
        return Outcome.good(f"{res.detail}; decoded output within {worst:.3g} of T(X)")

    return check


def universal_stack_check(timeout: float) -> Outcome:
    """Depth by looping: the compiled U run twice on <T1, T2, X> == the interpreted U run twice, ~ T2(T1(X))."""

    u, ct = universal_factory(2, 2, 1, 2, 2, stack=2)
    t1 = TransformerLayer.random(2, 1, 2, 2, seed=1, norm="pre", residual=True)
    t2 = TransformerLayer.random(2, 1, 2, 2, seed=2, norm="post", residual=True, activation="gelu")
    x = np.random.default_rng(0).normal(size=(2, 2))
    got = want = u.encode([t1, t2], x)
    for _ in range(2):
        res = float_close(ct, u.program, [want])
        if not res.ok:
            return res
        got = np.asarray(ct.forward(got, exact=False), dtype=np.float64)
        want = np.asarray(evaluate(u.program, want), dtype=np.float64)
    fin = np.isfinite(want)
    err = float(np.max(np.abs(got[fin] - want[fin])))
    dec = float(np.max(np.abs(u.decode(got, 2, 2) - t2(t1(x)))))
    if err > FLOAT_TOL or dec > FLOAT_TOL or not np.array_equal(np.isfinite(got), fin):
        return Outcome.bad(f"two passes: compiled vs interpreted {err:.3g}, decoded vs T2(T1(X)) {dec:.3g}")
    return Outcome.good(f"two passes: compiled vs interpreted {err:.3g}, decoded vs T2(T1(X)) {dec:.3g}")


def save_load_check(timeout: float) -> Outcome:
    con = matmul(2, 2, 2)
    for prog, n, vocab in ((classic.reverse(), 6, range(4)), (con.program, con.layout.total, None)):
        ct = compile_program(prog, max_len=n, vocab=vocab)
        with tempfile.TemporaryDirectory() as d:
            back = CompiledTransformer.load(ct.save(Path(d) / "m.npz"))
        for (na, a), (nb, b) in zip(ct.matrices(), back.matrices(), strict=True):
            if (
                na != nb
                or a.shape != b.shape
                or not all(x == y for x, y in zip(a.reshape(-1), b.reshape(-1), strict=True))
            ):
                return Outcome.bad(f"matrix {na} not restored exactly")
        if back.dims != ct.dims or back.summary() != ct.summary():
            return Outcome.bad("residual layout or summary changed in the round trip")
    return Outcome.good("weights, residual layout and summary restored exactly (reverse, matmul 2x2x2)")


def _classic_soft() -> tuple[CompiledTransformer, list[np.ndarray]]:
    rng = np.random.default_rng(1)
    ct = compile_program(classic.sort_unique(), max_len=8, vocab=range(4))
    return ct, [rng.integers(0, 4, size=int(rng.integers(1, 9))) for _ in range(10)]


def _reverse_soft() -> tuple[CompiledTransformer, list[np.ndarray]]:
    rng = np.random.default_rng(2)
    ct = compile_program(classic.reverse(), max_len=10, vocab=range(10))
    return ct, [rng.integers(0, 10, size=int(rng.integers(1, 11))) for _ in range(10)]


def _matmul_soft() -> tuple[CompiledTransformer, list[np.ndarray]]:
    con = matmul(2, 3, 2)
    rng = np.random.default_rng(3)
    ct = compile_program(con.program, max_len=con.layout.total)
    return ct, [con.encode(rng.normal(size=(2, 3)), rng.normal(size=(3, 2))) for _ in range(3)]


def compile_obligations() -> Iterable[Obligation]:
    """Every lemma compiled (exact and float64), the classic programs, and U compiled."""
    yield from _lemma_obligations(PAPER_REF)
    yield from _classic_obligations(PAPER_REF)
    yield from _simulator_obligations()


def _lemma_obligations(ref: str) -> Iterable[Obligation]:
    """Every registered lemma compiled: exact (when rational) and float64 against its interpreter."""
    for name, (_, make) in sorted(constructions().items()):
        if name in NOT_LEMMAS:
            continue
        con = make()
        exact_ok = getattr(con, "exact", True)
        if exact_ok:
            yield Obligation(
                f"compile/exact/{name}",
                "compile",
                ref,
                "exact",
                _lemma_check(name, make, True),
                f"compiled {name} in exact arithmetic == the exact interpreter at every position (2 random inputs)",
            )
        yield Obligation(
            f"compile/numeric/{name}",
            "compile",
            ref,
            "numeric",
            _lemma_check(name, make, False),
            f"compiled {name} in float64 within {FLOAT_TOL:g} (relative) of the float64 interpreter",
        )


def _classic_obligations(ref: str) -> Iterable[Obligation]:
    """The classic programs: exhaustive inputs, soft attention's gap, and save/load."""
    for prog in ("length", "reverse", "histogram", "sort_unique", "frac_prevs"):
        yield Obligation(
            f"compile/exact/exhaustive-{prog}-len5-sym4",
            "compile",
            ref,
            "exact",
            exhaustive_check(prog, 5, 4),
            f"every input of length <= 5 over 4 symbols: compiled {prog} == interpreter (exact)",
        )
        yield Obligation(
            f"compile/exact/exhaustive-{prog}-len6-sym4",
            "compile",
            ref,
            "exact",
            exhaustive_check(prog, 6, 4, min_len=6),
            f"every input of length 6 over 4 symbols (with len5: every input of length <= 6): compiled {prog} "
            "== interpreter (exact)",
            deep=True,
        )
    for tag, fac in (("sort_unique", _classic_soft), ("reverse", _reverse_soft), ("matmul", _matmul_soft)):
        yield Obligation(
            f"compile/numeric/soft-{tag}",
            "compile",
            ref,
            "numeric",
            soft_check(fac),
            "every head's observed score gap >= its stated gap, and softmax at beta = ln(2 V (T-1) / eta) / gap "
            f"keeps every head within eta = {SOFT_ETA:g} of hard attention",
        )
    yield Obligation(
        "compile/exact/save-load",
        "compile",
        ref,
        "exact",
        save_load_check,
        "save/load restores every weight (as a rational), the residual layout and the summary",
    )


def _simulator_obligations() -> Iterable[Obligation]:
    """U compiled at three capacities and looped twice, against the interpreted U (when importable)."""
    try:
        import attnsim.universal.universal  # noqa: F401
    except ImportError:
        return
    for cap in ((2, 2, 1, 2, 2), (3, 3, 2, 2, 3), (4, 4, 2, 2, 4)):
        tag = "-".join(f"{c}{v}" for c, v in zip("NDHKF", cap, strict=True))
        yield Obligation(
            f"compile/numeric/U-{tag}",
            "compile",
            "executable extraction (compiled U): Theorem 6, Corollary 6.1, Theorem 9, hierarchy",
            "numeric",
            universal_check(cap),
            f"compiled U ({tag}) within {FLOAT_TOL:g} of the interpreted U, and its decoded output of T(X), "
            "on 5 random layers T (norm none/pre/post, relu/gelu/gelu_tanh, smaller n, d, h, d_head, d_ff included)",
            deep=cap[0] > 3,
        )
    yield Obligation(
        "compile/numeric/U-stack2-N2-D2-H1-K2-F2",
        "compile",
        "executable extraction (compiled U): stacks",
        "numeric",
        universal_stack_check,
        f"compiled U looped twice on <T1, T2, X> within {FLOAT_TOL:g} of the interpreted U looped, and of T2(T1(X))",
    )
