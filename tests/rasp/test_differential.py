"""The float64 engine against the reference interpreter, on random programs from a grammar.

The float64 engine is ``evaluate``, which runs the numeric executor (:mod:`attnsim.numeric`).
The grammar draws every selector and aggregate shape the executor's planner distinguishes:
equalities (one, two, or none), key conditions (a constant query) and query conditions (a constant key) on short
and long sides, ANDs, ORs and negations of them, constant selectors, value-scored heads (max and
argmax), selector widths, gathers (keys = indices), index maps that are constant after a
position (a short head) or over other integer values, and tokens with a constant tail.  Each
program runs on the float64 engine and on the oracle (:mod:`attnsim.rasp.interpreter`); the
values must agree within rounding (a mean's sum may be added in another order), non-finite
values at the same positions, and an error on one side must be an error on the other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, example, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from attnsim.numeric import executor, heads
from attnsim.numeric.values import Val
from attnsim.proofs import registry
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.arith import BackendError
from attnsim.rasp.engine import evaluate
from attnsim.rasp.interpreter import Interpreter
from attnsim.rasp.layout import value_of
from attnsim.rasp.numeric import NumpyArith
from attnsim.universal.layer import TransformerLayer
from attnsim.universal.program import VARIANTS
from attnsim.universal.universal import UniversalSimulator

MAX_LEN = 20
CMPS = ("==", "!=", "<", "<=", ">", ">=")


@dataclass
class Pool:
    """What a random program has built so far: integer-valued SOps (positions, index maps,
    widths, integer constants, the integer tokens) and real-valued ones."""

    ints: list[C.SOp] = field(default_factory=list)
    reals: list[C.SOp] = field(default_factory=list)

    def all(self) -> list[C.SOp]:
        return self.ints + self.reals


def _index_fn(draw: st.DrawFn, L: int) -> Callable[[E.Expr], E.Expr]:
    """An index function of a position: affine, div/mod, a grid decoding, or one of those up to a
    position and a constant after it (a short head)."""
    a, b = draw(st.integers(1, 4)), draw(st.integers(-3, 3))
    m = draw(st.integers(0, L + 1))
    c = draw(st.integers(-2, 3))
    shapes: list[Callable[[E.Expr], E.Expr]] = [
        lambda p: p * a + b,
        lambda p: p // a,
        lambda p: p % a,
        lambda p: (p % a) * 3 + p // a,
        lambda p: b - p,
        lambda p: E.if_(p < m, p // a, c),
        lambda p: E.if_(p < m, p % a, c),
        lambda p: E.if_((p >= m) & (p < m + a), p - m, c),
        lambda p: E.emin(p, m),
        lambda p: E.if_(p.eq(m), 1, 0),
    ]
    return draw(st.sampled_from(shapes))


def _select(draw: st.DrawFn, pool: Pool, depth: int) -> C.Selector:
    """A selector: an atom (equality, key condition, query condition, comparison of two values,
    constant) or an AND, OR or negation of selectors; two equalities ANDed are drawn often."""
    if depth > 0 and draw(st.integers(0, 2)) == 0:
        kind = draw(st.sampled_from(("and", "or", "not", "and-two-eq")))
        if kind == "not":
            return ~_select(draw, pool, depth - 1)
        if kind == "and-two-eq":
            return _atom(draw, pool, "eq") & _atom(draw, pool, "eq")
        a, b = _select(draw, pool, depth - 1), _select(draw, pool, depth - 1)
        return a & b if kind == "and" else a | b
    return _atom(draw, pool, draw(st.sampled_from(("eq", "eq", "key", "key", "query", "pair", "const", "short"))))


def _atom(draw: st.DrawFn, pool: Pool, kind: str) -> C.Selector:
    side = lambda: draw(st.sampled_from(pool.all()))
    const = lambda: C.full(draw(st.integers(-2, 4)))
    if kind == "eq":
        return C.select(side(), side(), "==")
    if kind == "key":
        return C.select(side(), const(), draw(st.sampled_from(CMPS)))
    if kind == "query":
        return C.select(const(), side(), draw(st.sampled_from(CMPS)))
    if kind == "short":  # an equality on a short key side, with a key condition false on its tail
        m, t = draw(st.integers(0, 6)), draw(st.integers(-2, 2))
        keys = C.imap(lambda p: E.if_(p < m, p % 3, t), C.indices)
        cond = C.select(keys, C.full(t), draw(st.sampled_from(("!=", "<", ">"))))
        return C.select(keys, side(), "==") & cond
    if kind == "pair":
        return C.select(side(), side(), draw(st.sampled_from(CMPS)))
    return C.select(side(), side(), draw(st.sampled_from(("TRUE", "FALSE"))))


def _step(draw: st.DrawFn, pool: Pool, L: int) -> None:  # noqa: C901
    """Add one node to the pool."""
    kind = draw(st.sampled_from(("imap", "imap", "imap-of", "prim", "prim", "agg", "agg", "agg", "width", "full")))
    if kind == "imap":
        pool.ints.append(C.imap(_index_fn(draw, L), C.indices))
    elif kind == "imap-of":
        x = draw(st.sampled_from(pool.ints))
        a, c = draw(st.integers(1, 3)), draw(st.integers(-2, 2))
        fn = draw(st.sampled_from([lambda v: v % (a + 1), lambda v: v + c, lambda v: E.if_(v < c, v, c)]))
        pool.ints.append(C.imap(fn, x))
    elif kind == "full":
        pool.reals.append(C.full(draw(st.sampled_from((0, 1, -2, 0.5)))))
    elif kind == "prim":
        name = draw(st.sampled_from(("add", "sub", "mul", "neg", "affine", "where", "max", "lt", "relu", "square")))
        arity = {"neg": 1, "affine": 1, "relu": 1, "square": 1, "where": 3}.get(name, 2)
        args = [draw(st.sampled_from(pool.all())) for _ in range(arity)]
        params = (draw(st.integers(-2, 2)), draw(st.integers(-2, 2))) if name == "affine" else ()
        pool.reals.append(C.apply(name, *args, params=params))
    elif kind == "agg":
        sel = _select(draw, pool, 2)
        values = draw(st.sampled_from(pool.all()))
        if draw(st.booleans()):  # a real value with a short head
            values = C.apply("affine", draw(st.sampled_from(pool.ints)), params=(1, draw(st.sampled_from((0, 0.5)))))
        scored = draw(st.sampled_from(("mean", "mean", "gather", "max", "argmax")))
        if scored == "gather":  # keys = indices, ==: a gather, with a key or query condition maybe
            sel = C.select(C.indices, draw(st.sampled_from(pool.ints)), "==")
            if draw(st.booleans()):
                sel = sel & _atom(draw, pool, draw(st.sampled_from(("key", "query"))))
            pool.reals.append(C.aggregate(sel, values))
        elif scored == "max":
            pool.reals.append(C.maximum(sel, values))
        elif scored == "argmax":
            pool.reals.append(C.argmax_aggregate(sel, draw(st.sampled_from(pool.all())), values))
        else:
            pool.reals.append(C.aggregate(sel, values))
    else:
        pool.ints.append(C.selector_width(_select(draw, pool, 2)))


@st.composite
def programs(draw: st.DrawFn) -> tuple[list[C.SOp], np.ndarray]:
    """A random program (its last nodes as outputs) and integer tokens with a constant tail."""
    L = draw(st.integers(1, MAX_LEN))
    head = draw(st.integers(0, L))
    toks = [draw(st.integers(-2, 3)) for _ in range(head)] + [draw(st.integers(-1, 1))] * (L - head)
    pool = Pool(ints=[C.indices, C.tokens, C.full(draw(st.integers(-1, 3)))], reals=[])
    for _ in range(draw(st.integers(1, 7))):
        _step(draw, pool, L)
    nodes = pool.all()
    outs = [nodes[-1], *draw(st.lists(st.sampled_from(nodes), max_size=2))]
    return outs, np.array(toks, dtype=np.float64)


def oracle(outs: list[C.SOp], tokens: np.ndarray) -> list[np.ndarray]:
    arith = NumpyArith()
    return Interpreter(arith, arith.from_input(tokens, False)).run(outs)


def agree(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal within rounding; non-finite values at the same positions."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=1e-9, atol=1e-9, equal_nan=True))


def differs(run: Callable[[list[C.SOp], np.ndarray], list[np.ndarray]], outs: list[C.SOp], tokens: np.ndarray) -> Any:
    """None when ``run`` agrees with the oracle on this program, else what differs."""
    try:
        want: Any = oracle(outs, tokens)
    except (BackendError, ValueError) as exc:
        want = type(exc)
    try:
        got: Any = run(outs, tokens)
    except (BackendError, ValueError) as exc:
        got = type(exc)
    if isinstance(want, type) or isinstance(got, type):
        return None if isinstance(want, type) and isinstance(got, type) else (got, want)
    bad = [(i, g, w) for i, (g, w) in enumerate(zip(got, want, strict=True)) if not agree(g, w)]
    return bad or None


def engine(outs: list[C.SOp], tokens: np.ndarray) -> list[np.ndarray]:
    """The float64 engine: ``evaluate``, which runs the numeric executor."""
    return list(evaluate(outs, tokens))


def _condition_on_a_head() -> list[C.SOp]:
    """A key condition (==) on a value read by a head whose own selector is an equality: the
    condition's parts are its own atoms, not the atoms the value was computed from."""
    inner = C.aggregate(C.select(C.indices, C.tokens, "=="), C.tokens)
    return [C.aggregate(C.select(inner, C.full(0), "=="), C.tokens)]


def _issue_46_shapes() -> list[tuple[list[C.SOp], np.ndarray]]:
    """The two shapes issue 46 names: an AND of two equalities between non-constant values, and a
    short key side (constant after position 1) whose key condition is false on its tail."""
    i = C.indices
    two = C.aggregate(C.select(i, i, "==") & C.select(i, C.tokens, "=="), i)
    k = C.imap(lambda p: E.if_(p < 1, p % 3, 0), i)
    short = C.aggregate(C.select(k, i, "==") & C.select(k, C.full(0), "!="), C.full(1))
    return [([two], np.zeros(2)), ([short], np.zeros(2))]


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=programs())
@example(case=(_condition_on_a_head(), np.array([0.0, 1.0, 0.0])))
@example(case=_issue_46_shapes()[0])
@example(case=_issue_46_shapes()[1])
def test_agrees_with_the_oracle_on_random_programs(case: tuple[list[C.SOp], np.ndarray]) -> None:
    outs, tokens = case
    assert differs(engine, outs, tokens) is None


def _operands(con: Any, rng: np.random.Generator) -> np.ndarray:
    """A token sequence for a construction: random operands within their declared domains."""
    arrays = {}
    for name in con.inputs:
        shape = con.layout[name].shape
        if name in con.binary:
            arrays[name] = rng.integers(0, 2, size=shape).astype(float)
        elif any(s[0] == name for s in con.scalars):
            lo, up = next((s[1], s[2]) for s in con.scalars if s[0] == name)
            arrays[name] = np.full(shape, float(rng.integers(lo, value_of(up) + 1)))
        else:
            arrays[name] = rng.normal(size=shape)
    return np.asarray(con.layout.encode(arrays), dtype=np.float64)


def _catalogue() -> list[tuple[str, list[C.SOp], np.ndarray]]:
    rng = np.random.default_rng(0)
    out = []
    for name, (_, make) in registry.constructions().items():
        con = make()
        if isinstance(con, UniversalSimulator):
            continue
        out.append((name, [con.program], _operands(con, rng)))
    for variant in VARIANTS:  # U, both builds, at a capacity the oracle runs in seconds
        u = UniversalSimulator(3, 3, 2, 2, 3, variant=variant)
        T = TransformerLayer.random(3, 2, 2, 3, seed=1, residual=True, norm="post")
        out.append((f"U-{variant}", [u.program], u.encode(T, rng.normal(size=(3, 3)))))
    return out


def test_agrees_with_the_oracle_on_every_catalogue_construction_and_u() -> None:
    for name, outs, tokens in _catalogue():
        assert differs(engine, outs, tokens) is None, name


def _first_difference(run: Callable[[list[C.SOp], np.ndarray], list[np.ndarray]]) -> Any:
    """A random program on which ``run`` and the oracle differ (None if 3,000 draws show none; the
    first found, not shrunk)."""
    try:
        once = settings(max_examples=3000, phases=[Phase.generate], database=None)
        return find(programs(), lambda case: differs(run, *case) is not None, settings=once)
    except NoSuchExample:
        return None


def test_a_dropped_second_equality_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation: an AND of two equalities planned as its first one alone."""

    def first_only(sel: C.Selector) -> heads.HeadPlan:
        plan = heads.plan_head(sel)
        plan.eqs = plan.eqs[:1]
        return plan

    monkeypatch.setattr(executor, "plan_head", first_only)
    assert _first_difference(engine) is not None


def test_tail_keys_counted_whatever_the_key_condition_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation: the positions after a short key side counted even where the key condition is false."""
    groups = heads.groups

    def counting_tails(keys: list[Val], kmask: Val | None, *rest: Any) -> heads.Groups:
        if kmask is not None:
            kmask = Val(kmask.head, kmask.shape, np.True_) if kmask.m else Val.const(np.True_)
        return groups(keys, kmask, *rest)

    monkeypatch.setattr(executor, "groups", counting_tails)
    assert _first_difference(engine) is not None
