"""The all-sizes proof's first step: its premises decided satisfiable, empty or unknown (issue 26, item 4).

Backs every ``all-sizes`` obligation of paper_map.md (the proofs against specifications row)."""

from __future__ import annotations

import dataclasses

from attnsim import lemmas
from attnsim.constructions.construction import Construction
from attnsim.proofs import z3sel
from attnsim.proofs.intents import Intent
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.symbolic.execute import Executor
from attnsim.symbolic.program_equals_spec import _premises, prove_program_equals_spec

R, CC = C.Size("r"), C.Size("c")


def _with_premise(premise: E.Expr) -> Construction:
    """transpose(r, c) with one more declared size premise (through a trivially true intent)."""
    base = lemmas.transpose(R, CC)
    sel = C.select(C.indices, C.indices, "==")
    it = Intent("dummy", sel, z3sel.K.eq(z3sel.Q), E.Const(1).eq(1), "x", assumptions=(premise,))
    return dataclasses.replace(base, intents=[*base.intents, it])


def test_plainly_empty_premises_are_vacuous_not_not_vacuous() -> None:
    """r < 0 with r >= 1: the premise check is unsat and the proof fails "vacuous" at its first step
    (the old check proved 0 == 1 under them, got "vacuous" back, and read that as "not vacuous")."""
    con = _with_premise(R < 0)
    assert _premises(Executor(con, 10.0)).status == "unsat"
    out = prove_program_equals_spec(con)
    assert out.ok is False and out.detail.startswith("vacuous"), out.detail


def test_satisfiable_premises_carry_a_model_and_the_proof_goes_on() -> None:
    con = _with_premise(R > 2)
    pc = _premises(Executor(con, 10.0))
    assert pc.status == "sat" and dict(pc.model)["r"] > 2
    assert prove_program_equals_spec(con).ok is True
