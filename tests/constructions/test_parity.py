"""Application (k-PARITY): parity and sparse parity in one layer, proven exhaustively and by Z3."""

import itertools
from pathlib import Path

import numpy as np
import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from attnsim import applications
from attnsim.constructions.application_checks import _parity_mod2_check
from attnsim.constructions.checks import intent_obligations
from attnsim.constructions.construction import ConstructionError
from attnsim.constructions.parity.program import parity
from attnsim.constructions.parity.reference import parity_spec
from attnsim.constructions.z3prog import prove_for_all_inputs
from attnsim.proofs import registry
from attnsim.rasp import core as C
from attnsim.verify.runner import SmtOptions, run_inline


def test_parity_public_api_and_cost() -> None:
    con = applications.parity(5)
    assert list(con.run([1, 0, 1, 1, 0])) == [1] * 5
    assert list(con.run([1, 0, 1, 0, 0], backend="exact")) == [0] * 5
    for n in (1, 100, 5000):
        c = applications.parity(n).cost()
        assert c.layers == 1 and c.heads == [1]
    assert applications.sparse_parity(50, range(0, 50, 7)).cost().layers == 1


def test_exhaustive_small_exact() -> None:
    for n in range(1, 7):
        con = applications.parity(n)
        for x in itertools.product((0, 1), repeat=n):
            assert all(v == sum(x) % 2 for v in con.run(list(x), backend="exact"))
    sub = (0, 3, 5)
    con = applications.sparse_parity(7, sub)
    for x in itertools.product((0, 1), repeat=7):
        assert all(v == (x[0] + x[3] + x[5]) % 2 for v in con.run(list(x), backend="exact"))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 1), min_size=1, max_size=200), st.data())
def test_sparse_parity_random(x: list[int], data: st.DataObject) -> None:
    sub = data.draw(st.sets(st.integers(0, len(x) - 1), min_size=1))
    got = applications.sparse_parity(len(x), sub).run(x)
    assert np.array_equal(got, np.full(len(x), parity_spec(x, sub)))
    assert np.array_equal(applications.parity(len(x)).run(x), np.full(len(x), sum(x) % 2))


def test_z3_parametric_pieces_and_their_failure() -> None:
    for ob in intent_obligations("parity", "x", lambda: applications.sparse_parity(9, (1, 4))):
        assert ob.check(20.0).ok is True
    assert _parity_mod2_check(lambda: applications.parity(4))(20.0).ok is True

    def broken() -> object:
        con = applications.parity(4)
        con.program = C.imap(lambda c: (c + 1) % 2, con.program.inner)  # type: ignore[attr-defined]
        return con

    assert _parity_mod2_check(broken)(20.0).ok is False  # type: ignore[arg-type]


def test_z3_unrolling_proves_and_refutes() -> None:
    binary = lambda x: z3.Or(x == 0, x == 1)
    prog = applications.parity(5).program
    assert prove_for_all_inputs(prog, 5, lambda xs: [z3.Sum(xs) % 2] * 5, binary).ok is True
    assert prove_for_all_inputs(prog, 5, lambda xs: [(z3.Sum(xs) + 1) % 2] * 5, binary).ok is False


def test_bad_inputs() -> None:
    with pytest.raises(ConstructionError, match="binary"):
        applications.parity(3).run([0, 2, 1])
    with pytest.raises(ConstructionError, match="subset"):
        applications.sparse_parity(3, [0, 3])
    with pytest.raises(ConstructionError, match="subset"):
        applications.sparse_parity(3, [])
    with pytest.raises(ConstructionError, match="length"):
        applications.parity(0)


def test_parity_program_equals_spec_for_every_length() -> None:
    """k-PARITY: (sum of the bits) mod 2 for every length: the count is an indicator sum over the input
    block's keys (hint proven by Z3), and [x == 1] is x for the binary input."""
    from attnsim.rasp import core as C
    from attnsim.symbolic.program_equals_spec import prove_program_equals_spec

    out = prove_program_equals_spec(parity(C.Size("length")))
    assert out.ok is True, out.detail


def test_wrong_parity_is_refuted() -> None:
    """Counting zeros instead of ones (equal parity only for even lengths), or mod 3: refuted."""
    import dataclasses

    from attnsim.rasp import core as C
    from attnsim.symbolic.program_equals_spec import prove_program_equals_spec

    con = parity(C.Size("length"))
    nodes = {x.label: x for x in C.topological([con.program])}
    zeros = C.select(C.tokens, C.full(0), "==")
    count = C.selector_width(zeros & nodes["parity.in_subset"])  # type: ignore[operator]
    for prog in (C.imap(lambda c: c % 2, count), C.imap(lambda c: c % 3, nodes["parity.count"])):
        out = prove_program_equals_spec(dataclasses.replace(con, program=prog))
        assert out.ok is False and "counterexample" in out.detail, out.detail


def test_parity_spec_matches_the_reference() -> None:
    for bits in ([1, 0, 1, 1, 0], [0, 0, 0], [1]):
        con = parity(len(bits))
        assert np.array_equal(con.spec(np.array(bits), backend="exact"), con.reference(np.array(bits), backend="exact"))


def test_the_bounded_z3_obligation_exports_its_queries(tmp_path: Path) -> None:
    """parity/z3-bounded/unrolled reaches the second solver (issue 26, item 9: it exported nothing):
    per length a premise check (the binary domain is not empty) and the deciding query."""
    (ob,) = registry.select("parity/z3-bounded/unrolled")
    r = run_inline(ob, 60, SmtOptions(tmp_path))
    assert r.status == "proved" and r.second_solver is not None, r.detail
    assert (r.second_solver.exported, r.second_solver.premise_checks) == (12, 6)
    texts = [f.read_text() for f in tmp_path.glob("*.smt2")]
    assert sum(t.startswith("; expected: unsat") for t in texts) == 6 and len(texts) == 12
