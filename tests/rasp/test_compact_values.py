"""The engine's compact values (Tail): a value constant after some position keeps its head only."""

import numpy as np

from attnsim import TransformerLayer, UniversalSimulator, evaluate
from attnsim.rasp import expr as E
from attnsim.rasp.engine import Run, Tail, arithmetic
from attnsim.rasp.long_values import tail_of


def test_constant_from_is_sound_on_guarded_maps() -> None:
    p = E.var("p")
    env: dict[str, int] = {}
    guarded = E.if_((p >= 3) & (p < 10), p * 2, -1)
    s = E.constant_from(guarded, "p", env)
    assert s is not None and s >= 10
    vals = [guarded.evaluate({"p": q}) for q in range(s, s + 50)]
    assert len(set(vals)) == 1
    assert E.constant_from(p % 3, "p", env) is None
    assert E.constant_from(E.if_(p.eq(4), 1, 0), "p", env) == 5


def test_tail_roundtrip() -> None:
    a = np.array([1.0, 2.0, 0.0, 0.0, 0.0])
    t = tail_of(a)
    assert len(t.head) == 2 and np.array_equal(t.full(5), a)
    assert np.array_equal(Tail(np.array([3, 4]), np.array([7])).at(np.array([0, 1, 2, 4])), [3, 4, 7, 7])


def test_compact_run_equals_the_plain_run_on_shallow_u() -> None:
    """The same program, compact values on and off (a tracking run keeps full arrays): equal outputs."""
    u = UniversalSimulator(3, 3, 2, 2, 3, variant="shallow")
    T = TransformerLayer.random(3, 2, 2, 3, seed=2, residual=True, norm="pre", activation="gelu")
    seq = u.encode(T, np.random.default_rng(0).normal(size=(3, 3)))
    run = Run([u.program], seq, arithmetic("numpy"))
    assert run.compact
    a = np.asarray(evaluate(u.program, seq))
    plain = Run([u.program], seq, arithmetic("numpy"), track=True)
    assert not plain.compact
    plain.execute()
    b = plain.value(u.program)
    assert np.max(np.abs(a - b)) <= 1e-13
