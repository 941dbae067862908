"""The catalogue: every construction and every proof obligation of attnsim, registered here.

One explicit place, read top to bottom (after CrossHair's ``make_registrations``): the modules
below declare their constructions (``CONSTRUCTIONS``) and the functions that yield their
obligations; nothing registers itself on import.  The order here is the order of
``attnsim verify``'s rows.  A new construction or obligation module gets its line here, and its
row in ``paper_map.md`` (``attnsim audit`` checks both directions).
"""

from __future__ import annotations

from attnsim.compile import obligations as compiled
from attnsim.constructions import application_obligations as applications
from attnsim.constructions import coq_evaluator, det_inverse_obligations, kernel
from attnsim.constructions import lemma_obligations as lemmas
from attnsim.constructions.det3 import program as cofactor
from attnsim.constructions.det_n import program as faddeev
from attnsim.constructions.det_n import steps as faddeev_steps
from attnsim.constructions.input_domain import input_domain_obligations
from attnsim.constructions.maxmin.program import (
    CONSTRUCTIONS as MAXMIN,  # by name: the package re-exports the functions
)
from attnsim.constructions.maxmin.program import maxmin_obligations
from attnsim.constructions.relu.program import CONSTRUCTIONS as RELU
from attnsim.constructions.relu.program import relu_obligations
from attnsim.constructions.softmax.program import CONSTRUCTIONS as SOFTMAX
from attnsim.proofs import language, registry
from attnsim.universal import all_sizes as simulator_all_sizes
from attnsim.universal import obligations as simulator
from attnsim.verify import spec_check


def make_registrations() -> None:
    """Register every construction and obligation provider, in ``verify``'s order."""
    # the lemmas (Lemma transpose, matmul, Lemma 3 softmax, ReLU, MaxMin, determinant, inverse)
    registry.register(cofactor.CONSTRUCTIONS, det_inverse_obligations.cofactor_obligations)
    registry.register(faddeev.CONSTRUCTIONS, det_inverse_obligations.faddeev_obligations)
    registry.register((), faddeev_steps.faddeev_step_obligations)
    registry.register(
        lemmas.CONSTRUCTIONS, lemmas.transpose_obligations, lemmas.matmul_obligations, lemmas.forms_obligations
    )
    registry.register(SOFTMAX, lemmas.softmax_obligations, lemmas.masked_softmax_obligations)
    registry.register(MAXMIN, maxmin_obligations)
    registry.register(RELU, relu_obligations)
    # the lemmas again, kernel-checked: Coq proofs against MathComp's definitions (coq/)
    registry.register((), kernel.kernel_obligations, coq_evaluator.evaluator_obligations)
    # the language's own lemmas (GAHAT-RASP semantics)
    registry.register((), language.obligations)
    # the applications (Match2, k-PARITY, linear attention, Linformer, Lipschitz approximation)
    registry.register(
        applications.CONSTRUCTIONS,
        applications.match2_obligations,
        applications.parity_obligations,
        applications.efficient_obligations,
        applications.lipschitz_obligations,
    )
    # every declared operand domain (a premise of an all-sizes proof) enforced by the run's input check
    registry.register((), input_domain_obligations)
    # executable extraction: every registered construction compiled to weights
    registry.register((), compiled.compile_obligations)
    # the universal simulator U (Theorem 6, Corollary 6.1, Theorem 9, Corollary 9.1, hierarchy, stacks)
    registry.register(
        simulator.CONSTRUCTIONS,
        simulator_all_sizes.frame_obligations,
        simulator.simulator_obligations,
        simulator.shallow_obligations,
    )
    # every specification against an independent textbook formula (what the all-sizes proofs trust)
    registry.register((), spec_check.spec_obligations)


def load() -> None:
    """Register the catalogue once per process (idempotent)."""
    if not registry.loaded():
        make_registrations()
