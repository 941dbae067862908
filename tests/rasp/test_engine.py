"""The language's semantics (docs/semantics.md): averaging, empty default, fast paths, errors."""

import contextlib
import dataclasses
from collections.abc import Iterator
from fractions import Fraction
from unittest.mock import patch

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
    long_values,
    select,
    selector_width,
    tokens,
)
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.core import Map, Prim, Size
from attnsim.rasp.engine import Padded, StructuralMemo
from attnsim.rasp.kept_values import Chunked, NarrowArray
from attnsim.rasp.schedule import cost as C_cost
from attnsim.rasp.selector_plans import group_lookup, group_max


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
    """docs/semantics.md: the fast paths equal the dense semantics exactly (==, Fractions), and
    float64 and SymPy agree with the exact backend."""
    a = evaluate(prog, toks)  # type: ignore[arg-type]
    b = evaluate(prog, toks, "exact")  # type: ignore[arg-type]
    d = evaluate(prog, toks, "exact", dense_only=True)  # type: ignore[arg-type]
    c = evaluate(prog, toks, "sympy")  # type: ignore[arg-type]
    assert list(b) == list(d)
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


# -- StructuralMemo: position-only index maps kept across runs (U keeps one; Theorem 6's runs) --
def _memo_program() -> C.SOp:
    """A gather whose source position is a position-only index map over indices (as U's are)."""
    n = Size("n", 5)
    src = imap(lambda p: (p % n) * n + p // n, indices).named("src")
    inside = imap(lambda p: p < 20, src).named("inside")  # an index map of an index map
    return apply("mul", aggregate(select(indices, src, "=="), tokens), inside)


def test_memo_gives_the_same_values_and_is_read() -> None:
    prog = _memo_program()
    memo = StructuralMemo()
    toks = np.arange(25, dtype=np.float64) * 1.5
    plain = evaluate(prog, toks)
    first = evaluate(prog, toks, memo=memo)
    again = evaluate(prog, toks * 2, memo=memo)
    assert first.tolist() == plain.tolist() and again.tolist() == evaluate(prog, toks * 2).tolist()
    s = memo.summary()
    assert (s.kept, s.misses, s.hits) == (2, 2, 2)
    assert s.bytes == 2 * 25  # int8 arrays: the narrowest dtype holding positions 0..24
    # mutation: a tampered kept value changes the output, so runs do read the memo
    for node, form, _ in memo.stored.values():
        if node.label == "src":
            assert isinstance(form, Chunked) and isinstance(form.parts[0], NarrowArray)
            form.parts[0].values[:] = 0
    assert evaluate(prog, toks, memo=memo).tolist() != plain.tolist()


def test_memo_refuses_past_its_budget() -> None:
    prog = _memo_program()
    memo = StructuralMemo(budget_bytes=30)  # room for one of the two maps
    toks = np.arange(25, dtype=np.float64)
    assert evaluate(prog, toks, memo=memo).tolist() == evaluate(prog, toks).tolist()
    assert evaluate(prog, toks, memo=memo).tolist() == evaluate(prog, toks).tolist()
    s = memo.summary()
    assert (s.kept, s.refused, s.bytes) == (1, 1, 25) and s.bytes <= s.budget_bytes


@contextlib.contextmanager
def _streamed_in_pieces() -> Iterator[None]:
    """Values longer than 64 streamed in pieces of 128 (as U's long values are)."""
    with patch.object(long_values, "LAZY_MIN", 64), patch.object(long_values, "PIECE", 128):
        yield


def test_known_bounds_of_kept_queries_give_the_same_values_and_are_read() -> None:
    """Issue 29: a gather and a group mean whose queries are a kept index map read the map's
    bounds per piece from the memo and skip their range checks where every query lies in range
    (here the pieces after the first: positions below 100 read no source, -1).  The values are
    the run's without a memo; bounds tampered to claim the first piece in range change them."""
    src = imap(lambda p: E.if_(p < 100, -1, p - 100), indices).named("src")
    gathered = aggregate(select(indices, src, "=="), tokens).named("gathered")
    grp = imap(lambda p: E.if_(p < 100, -2, p % 16), indices).named("grp")
    means = aggregate(select(imap(lambda p: p % 16, indices), grp, "=="), tokens).named("means")
    prog = apply("add", gathered, means)
    toks = np.arange(600, dtype=np.float64) * 0.5
    with _streamed_in_pieces():
        plain = evaluate(prog, toks)
        memo = StructuralMemo()
        assert evaluate(prog, toks, memo=memo).tolist() == plain.tolist()
        assert evaluate(prog, toks * 3, memo=memo).tolist() == evaluate(prog, toks * 3).tolist()
        for key, (node, form, tail) in list(memo.stored.items()):
            assert isinstance(form, Chunked) and form.part_bounds is not None
            lying = ((0, form.part_bounds[0][1]), *form.part_bounds[1:])  # the first piece "in range"
            memo.stored[key] = (node, Chunked(form.chunk, form.parts, lying), tail)
        assert evaluate(prog, toks, memo=memo).tolist() != plain.tolist()


def test_a_regular_position_only_key_side_is_grouped_once_and_reused() -> None:
    """Issue 29: the groups of a position-only key side (block means over runs of 8) are found on
    the first run and kept in the memo; later runs read only the values.  A side that is not
    regular (p mod 7 over 256 positions) is kept as such and grouped by bincount."""
    blocks = imap(lambda p: p // 8, indices).named("block")
    cyclic = imap(lambda p: p % 7, indices).named("cyclic")
    prog = apply(
        "add",
        aggregate(select(blocks, blocks, "=="), tokens),
        aggregate(select(cyclic, cyclic, "=="), tokens),
    )
    memo = StructuralMemo()
    toks = np.random.default_rng(1).normal(size=256)
    plain = evaluate(prog, toks)
    for run in (toks, toks, toks * 3):
        with _streamed_in_pieces():  # the key sides streamed, as U's long ones are
            got = evaluate(prog, run, memo=memo)
        np.testing.assert_allclose(got, evaluate(prog, run), rtol=1e-13, atol=1e-13)
    kept = [reg for _, reg in memo.groupings.values()]
    regular = [r for r in kept if r is not None]
    assert len(kept) == 4 and len(regular) == 2  # two pieces of 128 keys per side
    assert all((r.m, r.period) == (8, 1) for r in regular)
    # mutation: a tampered kept shape changes the output, so runs do read it
    key = next(k for k, (_, r) in memo.groupings.items() if r is not None)
    node, reg = memo.groupings[key]
    memo.groupings[key] = (node, dataclasses.replace(reg, keys=reg.keys[::-1].copy()))
    with _streamed_in_pieces():
        assert not np.allclose(evaluate(prog, toks, memo=memo), plain)


def test_a_kept_entry_is_read_only_by_the_node_it_was_kept_for() -> None:
    """The memo keys entries by id(node); an entry kept for another node (a reused id, e.g. after
    a copy of U) is not read as this node's."""
    prog = _memo_program()
    memo = StructuralMemo()
    evaluate(prog, np.arange(25, dtype=np.float64), memo=memo)
    (key, (node, form, tail)), *_ = memo.stored.items()
    stranger = imap(lambda p: p + 1, indices)
    memo.stored[key] = (stranger, form, tail)
    assert memo.get(node, key[1]) is None
    memo.groupings[(id(node), 25, 0, 25)] = (stranger, None)
    assert memo.grouping(node, 25, 0, 25) == (False, None)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-50, 50), st.integers(0, 3), st.floats(-9, 9)), min_size=1, max_size=20),
    st.lists(st.integers(-60, 60), min_size=1, max_size=30),
    st.integers(0, 10**7),
)
def test_group_lookup_reads_each_querys_group_mean(
    groups: list[tuple[int, int, float]], qs: list[int], spread: int
) -> None:
    """The equality head's group read (table or binary search: ``spread`` widens the key range
    past the table's) gives sum / weight of the query's group, 0 for an absent or empty one."""
    table = {k * (1 + spread): (float(c), c * v) for k, c, v in dict((g[0], g) for g in groups).values()}
    uniq = np.array(sorted(table), dtype=np.int64)
    counts = np.array([table[k][0] for k in uniq])
    sums = np.array([table[k][1] for k in uniq])
    q = np.array([x * (1 + spread) for x in qs], dtype=np.int64)
    ok = np.arange(len(q)) % 3 != 1
    read = [o and x in table and table[x][0] > 0 for x, o in zip(q.tolist(), ok, strict=True)]
    want = [table[x][1] / table[x][0] if r else 0.0 for x, r in zip(q.tolist(), read, strict=True)]
    assert group_lookup(uniq, counts, sums)(q, ok).tolist() == want
    every = [table[x][1] / table[x][0] if x in table and table[x][0] > 0 else 0.0 for x in q.tolist()]
    assert group_lookup(uniq, counts, sums)(q, None).tolist() == every  # no query conditions


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 9), st.floats(allow_infinity=True, allow_nan=True)), min_size=1, max_size=40),
    st.sampled_from(["any", "sorted", "runs"]),
)
def test_group_max_equals_maximum_at(entries: list[tuple[int, float]], order: str) -> None:
    """The value-scored head's group maximum (by runs when the groups are sorted, or come in
    runs of 5 in any order, as U's row max does) is ``np.maximum.at``'s, NaN included."""
    if order == "sorted":
        entries = sorted(entries, key=lambda e: e[0])
    if order == "runs":
        entries = [(g, s - k) for g, s in entries for k in range(5)]
    groups = np.array([g for g, _ in entries], dtype=np.int64)
    scores = np.array([s for _, s in entries])
    got, want = np.full(10, -np.inf), np.full(10, -np.inf)
    with np.errstate(invalid="ignore"):
        group_max(got, groups, scores)
        np.maximum.at(want, groups, scores)
    assert np.array_equal(got, want, equal_nan=True)


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
