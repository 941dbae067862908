"""The language's semantics (docs/semantics.md): averaging, empty default, fast paths, errors."""

from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st

from attnsim import evaluate
from attnsim.rasp import (
    BackendError,
    NonFiniteError,
    PrimitiveError,
    ProgramError,
    aggregate,
    apply,
    full,
    imap,
    indices,
    select,
    selector_width,
    tokens,
)
from attnsim.rasp import core as C
from attnsim.rasp.core import Map, Prim, Size
from attnsim.rasp.engine import Padded, StructuralMemo
from attnsim.rasp.schedule import cost as C_cost


def test_aggregate_is_mean_of_selected_keys() -> None:
    prog = aggregate(select(indices, full(2), "<"), tokens)  # keys 0, 1 for every query
    out = evaluate(prog, [4, 6, 100], "exact")
    assert list(out) == [5, 5, 5]


def test_empty_selection_gives_zero() -> None:
    prog = aggregate(select(indices, full(0), "<"), tokens)
    assert list(evaluate(prog, [1.0, 2.0])) == [0.0, 0.0]


def test_selector_width_counts() -> None:
    prog = selector_width(select(indices, indices, "<="))
    assert list(evaluate(prog, [0, 0, 0, 0], "exact")) == [1, 2, 3, 4]


def test_transpose_index_function() -> None:
    n = Size("n", 3)
    refl = imap(lambda p: (p % n) * n + p // n, indices)
    out = evaluate(aggregate(select(indices, refl, "=="), tokens), np.arange(9.0))
    assert np.array_equal(out, np.arange(9.0).reshape(3, 3).T.reshape(-1))


def test_three_backends_same_shape_and_types() -> None:
    prog = apply("mul", tokens, aggregate(select(indices, full(1), "<="), tokens))
    a = evaluate(prog, [1, 2, 3])
    b = evaluate(prog, [1, 2, 3], "exact")
    x = sp.symbols("x0:3")
    c = evaluate(prog, list(x), "sympy")
    assert a.dtype == np.float64 and b.dtype == object and c.dtype == object
    assert a.shape == b.shape == c.shape == (3,)
    assert isinstance(b[0], Fraction)
    assert sp.simplify(c[2] - x[2] * (x[0] + x[1]) / 2) == 0


def test_exp_has_no_exact_value() -> None:
    with pytest.raises(BackendError, match=r"exp.*sympy"):
        evaluate(apply("exp", tokens), [1, 2], "exact")


@pytest.mark.parametrize("bad", [[1.0, float("nan")], [float("inf")]])
def test_nonfinite_tokens_rejected(bad: list[float]) -> None:
    with pytest.raises(BackendError, match="NaN/inf"):
        evaluate(tokens, bad)
    assert np.isnan(evaluate(tokens, [float("nan")], allow_nonfinite=True)[0])


def test_unknown_primitive_and_wrong_input() -> None:
    with pytest.raises(PrimitiveError, match="unknown primitive 'cosh'"):
        Map(Prim("cosh"), tokens)
    with pytest.raises(BackendError, match="1-D"):
        evaluate(tokens, np.zeros((2, 2)))
    with pytest.raises(ProgramError, match="needs an SOp"):
        Map(Prim("neg"), "tokens")  # type: ignore[arg-type]
    foreign = apply("neg", tokens)
    object.__setattr__(foreign, "inner", "tokens")
    with pytest.raises(ProgramError, match="foreign node"):
        evaluate(foreign, [1])


def test_cycle_is_detected() -> None:
    a = apply("neg", tokens)
    b = apply("neg", a)
    object.__setattr__(a, "inner", b)
    with pytest.raises(ProgramError, match="cycle"):
        evaluate(b, [1])


CMPS = ["==", "<", "<=", "!=", ">", ">="]


@st.composite
def atoms(draw: st.DrawFn) -> C.Selector:
    """One Select: keys and queries each an index map, the tokens or a constant, so that the
    engine's fast path meets key conditions (constant queries), query conditions (constant
    keys), equalities and constant-constant atoms."""
    keys = [indices, imap(lambda p: p // 2, indices), tokens, full(draw(st.integers(-1, 4)))]
    queries = [indices, imap(lambda p: 3 - p, indices), tokens, full(draw(st.integers(-1, 4)))]
    return select(draw(st.sampled_from(keys)), draw(st.sampled_from(queries)), draw(st.sampled_from(CMPS)))


@st.composite
def selectors(draw: st.DrawFn) -> C.Selector:
    """An atom combined with further atoms by &, | and ~ (and-chains of masks take the fast path,
    | and ~ the dense one)."""
    sel: C.Selector = draw(atoms())
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["&key", "&query", "&", "|", "~"]))
        if op == "&key":  # a key condition: Select(keys, Full(c), cmp)
            sel = sel & select(indices, full(draw(st.integers(0, 4))), draw(st.sampled_from(CMPS)))
        elif op == "&query":  # a query condition: Select(Full(c), queries, cmp)
            sel = sel & select(full(draw(st.integers(0, 4))), indices, draw(st.sampled_from(CMPS)))
        elif op == "&":
            sel = sel & draw(atoms())
        elif op == "|":
            sel = sel | draw(atoms())
        else:
            sel = ~sel
    return sel


@st.composite
def programs(draw: st.DrawFn) -> object:
    """Random small programs over tokens, indices, constants and combined selectors."""
    pool = [tokens, apply("affine", tokens, params=(2, 1))]
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["agg", "map", "width"]))
        sel = draw(selectors())
        v = draw(st.sampled_from(pool))
        if kind == "agg":
            pool.append(aggregate(sel, v))
        elif kind == "width":
            pool.append(apply("identity", selector_width(sel)))
        else:
            pool.append(apply(draw(st.sampled_from(["add", "mul", "sub", "max"])), v, draw(st.sampled_from(pool))))
    return pool[-1]


@settings(max_examples=150, deadline=None)
@given(programs(), st.lists(st.integers(-3, 3), min_size=1, max_size=6))
# a query condition (constant key) beside a key condition; an | with a ~ (dense path)
@example(aggregate(select(full(1), indices, "<=") & select(indices, full(3), "<"), tokens), [3, -1, 2, 0, 1])
@example(aggregate(select(tokens, indices, ">") | ~select(full(2), tokens, "=="), tokens), [2, 0, -3, 2])
def test_backends_agree_and_fast_equals_dense(prog: object, toks: list[int]) -> None:
    """docs/semantics.md: the numeric executor (float64) and the reference interpreter in SymPy
    agree with the reference interpreter in exact arithmetic."""
    a = evaluate(prog, toks)  # type: ignore[arg-type]
    b = evaluate(prog, toks, "exact")  # type: ignore[arg-type]
    c = evaluate(prog, toks, "sympy")  # type: ignore[arg-type]
    # float64 against exact: |error| / max(1, |exact|) measured <= 2.2e-16 over 3,000 draws (exact
    # values up to ~4e3), so both a relative and an absolute part are meant: each 1e-14 (~45x)
    np.testing.assert_allclose(a, np.array([float(x) for x in b]), rtol=1e-14, atol=1e-14)
    assert all(sp.Rational(x.numerator, x.denominator) == y for x, y in zip(b, c, strict=True))


@pytest.mark.parametrize("name", ["q!", "k!", "k!1"])
def test_a_size_may_not_take_a_proof_variables_name(name: str) -> None:
    """The key/query positions of selector proofs are k!, q!: a size of that name would be them; refused."""
    from attnsim.rasp.core import ProgramError

    with pytest.raises(ProgramError, match="reserved"):
        Size(name, 2)


def test_a_size_named_k_is_not_the_key_position() -> None:
    """Linformer's size k was once the key variable of its selector proofs; now the two are apart."""
    from attnsim.proofs import z3sel

    assert Size("k").name != z3sel.K.name and Size("q").name != z3sel.Q.name


# -- non-finite float64 values (docs/semantics.md, "Non-finite values") -------------------------
def test_exp_overflow_at_a_read_position_names_node_and_primitive() -> None:
    """The NumPy backend never returns a non-finite value the caller reads: the error names the
    node and primitive where the value first stopped being finite (here exp overflows)."""
    e = apply("exp", tokens).named("e")
    prog = apply("sub", e, e).named("d")  # inf - inf = nan downstream: the origin is still exp
    with pytest.raises(
        NonFiniteError,
        match=r"^output position 1 is nan \(1 read position\(s\) not finite\): it comes from node 'e' "
        r"\(primitive exp\), which gave inf at position 1 \(overflow\)$",
    ):
        evaluate(prog, [1.0, 1000.0], finite=True)
    assert np.isnan(evaluate(prog, [1.0, 1000.0])[1])  # no check asked: the denotation, NaN included


def test_zero_over_zero_and_the_check_is_scoped_to_read_positions() -> None:
    """0/0 is an invalid operation on finite values; a position the caller does not read may
    hold it (values outside a result block are unspecified)."""
    prog = apply("div", tokens, tokens).named("q")
    with pytest.raises(NonFiniteError, match=r"node 'q' \(primitive div\), which gave nan at position 1 \(invalid"):
        evaluate(prog, [2.0, 0.0], finite=np.array([True, True]))
    out = evaluate(prog, [2.0, 0.0], finite=[0])
    assert out[0] == 1.0 and np.isnan(out[1])


def test_non_finite_values_are_followed_through_aggregates() -> None:
    """An aggregate reading a non-finite key passes the origin on; a mean that overflows on its
    own finite values is its own origin."""
    e = apply("exp", tokens).named("e")
    moved = aggregate(select(indices, imap(lambda p: 1 - p, indices), "=="), e).named("swap")
    with pytest.raises(NonFiniteError, match=r"output position 0 is inf .* node 'e' \(primitive exp\), .* position 1"):
        evaluate(moved, [0.0, 800.0], finite=True)
    mean = aggregate(select(indices, full(0), ">="), tokens).named("m")
    with pytest.raises(NonFiniteError, match=r"node 'm' \(aggregate: the mean of the selected values\)"):
        evaluate(mean, [1.7e308, 1.7e308], finite=True)


def test_finite_positions_are_checked() -> None:
    with pytest.raises(BackendError, match=r"finite: positions must lie in \[0, 2\), got 0\.\.2"):
        evaluate(tokens, [1.0, 2.0], finite=[0, 2])
    with pytest.raises(BackendError, match=r"finite: a boolean mask needs shape \(2,\)"):
        evaluate(tokens, [1.0, 2.0], finite=np.array([True]))


def test_cost_reports_mlp_depth_and_generalized_primitives_per_layer() -> None:
    """Cost (docs/semantics.md): per MLP (0 = before any attention) its depth in primitives and
    the generalized primitives it carries, next to layers and heads; existing keys kept."""
    e = apply("exp", tokens)
    m = aggregate(select(indices, full(0), ">="), e)
    prog = apply("div", m, apply("mul", m, apply("relu", m)))
    c = C_cost(prog)
    assert (c.layers, c.heads, c.mlp_depth, c.mlp_primitives) == (1, [1], [1, 3], [1, 3])
    assert c.mlp_generalized == [{"exp": 1}, {"div": 1, "mul": 1}]
    assert c.generalized == ["div", "exp", "mul"]
    keys = set(c.as_dict())
    assert {"layers", "heads", "aggregates", "mlp_primitives", "mlp_depth", "generalized", "mlp_generalized"} <= keys


# -- StructuralMemo: a program's plans kept across its runs (U keeps one; Theorem 6's runs) -------
def _memo_program() -> C.SOp:
    """A gather whose source position is a position-only index map over indices (as U's are)."""
    n = Size("n", 5)
    src = imap(lambda p: (p % n) * n + p // n, indices).named("src")
    inside = imap(lambda p: p < 20, src).named("inside")  # an index map of an index map
    return apply("mul", aggregate(select(indices, src, "=="), tokens), inside)


def test_the_memo_keeps_the_plan_and_gives_the_same_values() -> None:
    prog = _memo_program()
    memo = StructuralMemo()
    x = np.arange(40, dtype=np.float64)
    first = evaluate(prog, x, memo=memo)
    again = evaluate(prog, x, memo=memo)
    s = memo.summary()
    assert np.array_equal(first, again) and np.array_equal(first, evaluate(prog, x))
    assert s.kept >= 2 and s.hits == s.misses == s.kept and 0 < s.bytes <= s.budget_bytes


def test_the_memo_refuses_a_plan_past_its_budget() -> None:
    prog = _memo_program()
    memo = StructuralMemo(budget_bytes=0)
    x = np.arange(40, dtype=np.float64)
    assert np.array_equal(evaluate(prog, x, memo=memo), evaluate(prog, x))
    assert memo.summary().kept == 0 and memo.summary().refused == 1 and memo.used_bytes == 0


def test_padded_input_and_output_equal_the_full_ones() -> None:
    """A Padded sequence (head, then padding) runs as its full array would, on every backend;
    a padded output gives the same values without its padding stored."""
    prog = _memo_program()
    head = np.arange(1, 11, dtype=np.float64)
    seq = Padded(head, 25, 0.0)
    full = seq.full()
    assert full.tolist() == [*head.tolist(), *[0.0] * 15]
    assert evaluate(prog, seq).tolist() == evaluate(prog, full).tolist()
    assert evaluate(prog, seq, "exact").tolist() == evaluate(prog, full, "exact").tolist()
    out = evaluate(prog, seq, padded_output=True)
    assert isinstance(out, Padded) and out.length == 25 and len(out.head) < 25
    assert out.full().tolist() == evaluate(prog, full).tolist()
    # mutation: other padding is another input, and the run sees it
    assert evaluate(prog, Padded(head, 25, 1.0)).tolist() != evaluate(prog, full).tolist()


def test_padded_sequences_reject_bad_shapes_in_one_line() -> None:
    with pytest.raises(BackendError, match=r"^a padded sequence needs 1 <= len\(head\) <= length, got 5, 3$"):
        Padded(np.zeros(5), 3)
    with pytest.raises(BackendError, match="1-D token sequence"):
        Padded(np.zeros((2, 2)), 9)


def test_non_finite_padding_is_reported_at_its_first_position() -> None:
    prog = apply("reciprocal", tokens)
    with pytest.raises(NonFiniteError, match=r"^output position 3 is inf \(2 read position\(s\) not finite\)"):
        evaluate(prog, Padded(np.ones(3), 5, 0.0), finite=True, padded_output=True)


def test_outputs_never_share_memory_with_each_other_or_the_input() -> None:
    """A value passed on unchanged (the taken branch of a ``where`` on a constant flag is the
    array it reads) is an output of its own: writing one output changes neither another output
    nor the caller's input."""
    y = apply("add", tokens, imap(lambda p: p, indices))
    flagged = apply("where", full(1), y, tokens)
    x = np.arange(6, dtype=np.float64)
    o1, o2 = evaluate([flagged, y], x)
    assert o1.tolist() == o2.tolist() and not np.shares_memory(o1, o2)
    head = np.arange(4, dtype=np.float64)
    out = evaluate(apply("where", full(1), tokens, y), Padded(head, 4))
    assert out.tolist() == head.tolist() and not np.shares_memory(out, head)


def test_progress_is_told_each_node_done() -> None:
    """evaluate(..., progress=f) calls f(k, m) after each of the program's m nodes, k = 1..m in order."""
    prog = aggregate(select(indices, indices, "=="), apply("relu", tokens))
    calls: list[tuple[int, int]] = []
    out = evaluate(prog, np.array([1.0, -2.0, 3.0]), progress=lambda k, m: calls.append((k, m)))
    assert np.array_equal(out, [1.0, 0.0, 3.0])
    m = len(C.topological([prog]))
    assert calls == [(k, m) for k in range(1, m + 1)] and m >= 4
