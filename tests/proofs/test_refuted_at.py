"""decoding.refuted_at: a goal false at a point of the premises is never proven, so the executor's
``holds`` answers False there without Z3; every other point gives no conclusion."""

from __future__ import annotations

import pytest

from attnsim.proofs import decoding
from attnsim.proofs.decoding import prover
from attnsim.rasp import core as C
from attnsim.rasp import expr as E

N = C.Size("N")
i, x = E.Var("i!"), E.Var("x")
COORDS = {"i!": N}


def test_a_goal_false_at_a_point_of_the_premises_is_refuted_and_z3_agrees() -> None:
    goal = i < 3  # false at i = 3 < N = 5
    env = {"N": 5, "i!": 3}
    assert decoding.refuted_at(goal, [], COORDS, {}, env)
    assert decoding.prove(goal, [], coords=COORDS).ok is not True


@pytest.mark.parametrize(
    ("why", "goal", "assumptions", "minimum", "env"),
    [
        ("the goal holds there", i < N, [], {}, {"N": 5, "i!": 3}),
        ("the coordinate is past its extent", i < 3, [], {}, {"N": 5, "i!": 5}),
        ("a negative coordinate", i < 0, [], {}, {"N": 5, "i!": -1}),
        ("the size is below its minimum", i < 3, [], {"N": 6}, {"N": 5, "i!": 3}),
        ("an assumption is false there", i < 3, [i < 2], {}, {"N": 5, "i!": 3}),
        ("a variable is unbound", (i + x) < 3, [], {}, {"N": 5, "i!": 3}),
        ("the size is unbound", i < 3, [], {}, {"i!": 3}),
        ("a divisor is 0 there", (i // x) < 0, [], {}, {"N": 5, "i!": 3, "x": 0}),
        ("an assumption divides by 0", i < 3, [(i // x) >= 0], {}, {"N": 5, "i!": 3, "x": 0}),
    ],
)
def test_no_conclusion_off_the_premises_or_where_the_goal_holds(
    why: str, goal: E.Expr, assumptions: list[E.Expr], minimum: dict[str, int], env: dict[str, int]
) -> None:
    assert not decoding.refuted_at(goal, assumptions, COORDS, minimum, env), why


def test_every_refuted_goal_is_one_z3_does_not_prove() -> None:
    """Goals over a coordinate and a size, each refuted at some point of a small grid: Z3 does not
    prove any of them; the goals that hold are refuted at no point."""
    a = E.Var("a")
    goals = [i < 3, (i + 1) < N, i.eq(0), (i // 2) < 1, E.Not(i.eq(N - 1)), (i * a) < N, i >= 0, i < N, (i % N).eq(i)]
    assumptions = [a >= 0, a < 2]
    for g in goals:
        hit = any(
            decoding.refuted_at(g, assumptions, COORDS, {}, {"N": n, "i!": k, "a": av})
            for n in range(1, 5)
            for k in range(n)
            for av in range(2)
        )
        proven = decoding.prove(g, assumptions, coords=COORDS).ok is True
        assert not (hit and proven), E.render(g)
        assert hit or proven, E.render(g)  # each is decided one way here (the grid covers the refutations)


def test_holds_does_not_ask_z3_for_a_goal_false_at_a_sample_point(monkeypatch: pytest.MonkeyPatch) -> None:
    """The executor's holds: False without a Z3 call where a sample point refutes the goal; a goal
    that holds is still proven by Z3."""
    from attnsim import UniversalSimulator
    from attnsim.universal.layerproof.executor import LayerExecutor
    from attnsim.universal.layerproof.stage_proof import setup

    u = UniversalSimulator.over_symbolic_capacity()
    con, caps = setup(u)
    ex = LayerExecutor(con, 60, sources=u.map.sources(), capacity=caps)
    ex.coords.update({"i!": u.N})
    asked: list[str] = []
    real = prover.prove  # where the executor looks it up

    def counting(goal: E.Expr, *a: object, **k: object) -> object:
        asked.append(E.render(goal))
        return real(goal, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(prover, "prove", counting)
    assert not ex.holds(i < 1)  # false at the sample i = N - 1 (N >= 2 there)
    assert not ex.holds(i.eq(0) & E.Not(i.eq(0)))
    assert asked == []
    assert ex.holds(i < u.N)
    assert asked == [E.render(i < u.N)]
