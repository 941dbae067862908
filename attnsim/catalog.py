"""The catalogue: every construction and every proof obligation of attnsim, registered here.

One explicit place, read top to bottom (after CrossHair's ``make_registrations``): the modules
below declare their constructions (``CONSTRUCTIONS``) and the functions that yield their
obligations; nothing registers itself on import.  The order here is the order of
``attnsim verify``'s rows.  A new construction or obligation module gets its line here, and its
row in ``paper_map.md`` (``attnsim audit`` checks both directions).
"""

from __future__ import annotations

from attnsim.compile import obligations as compiled
from attnsim.constructions import coq_evaluator, kernel
from attnsim.constructions.det3 import obligations as det3
from attnsim.constructions.det3 import program as cofactor
from attnsim.constructions.det_n import obligations as det_n
from attnsim.constructions.det_n import program as faddeev
from attnsim.constructions.det_n import steps as faddeev_steps
from attnsim.constructions.efficient import obligations as efficient
from attnsim.constructions.efficient import program as efficient_program
from attnsim.constructions.forms import obligations as forms
from attnsim.constructions.forms import program as forms_program
from attnsim.constructions.input_domain import input_domain_obligations
from attnsim.constructions.lipschitz import obligations as lipschitz
from attnsim.constructions.lipschitz import program as lipschitz_program
from attnsim.constructions.match2 import obligations as match2
from attnsim.constructions.match2 import program as match2_program
from attnsim.constructions.matmul import obligations as matmul
from attnsim.constructions.matmul import program as matmul_program
from attnsim.constructions.maxmin import obligations as maxmin
from attnsim.constructions.maxmin import program as maxmin_program
from attnsim.constructions.parity import obligations as parity
from attnsim.constructions.parity import program as parity_program
from attnsim.constructions.relu import obligations as relu
from attnsim.constructions.relu import program as relu_program
from attnsim.constructions.softmax import obligations as softmax
from attnsim.constructions.softmax import program as softmax_program
from attnsim.constructions.transpose import obligations as transpose
from attnsim.constructions.transpose import program as transpose_program
from attnsim.proofs import language, registry
from attnsim.universal import all_sizes as simulator_all_sizes
from attnsim.universal import kernel_stages
from attnsim.universal import obligations as simulator
from attnsim.verify import spec_check


def make_registrations() -> None:
    """Register every construction and obligation provider, in ``verify``'s order."""
    # the lemmas (Lemma transpose, matmul, Lemma 3 softmax, ReLU, MaxMin, determinant, inverse)
    registry.register(cofactor.CONSTRUCTIONS, det3.cofactor_obligations)
    registry.register(faddeev.CONSTRUCTIONS, det_n.faddeev_obligations)
    registry.register((), faddeev_steps.faddeev_step_obligations)
    registry.register(
        (*transpose_program.CONSTRUCTIONS, *matmul_program.CONSTRUCTIONS, *forms_program.CONSTRUCTIONS),
        transpose.transpose_obligations,
        matmul.matmul_obligations,
        forms.forms_obligations,
    )
    registry.register(softmax_program.CONSTRUCTIONS, softmax.softmax_obligations, softmax.masked_softmax_obligations)
    registry.register(maxmin_program.CONSTRUCTIONS, maxmin.maxmin_obligations)
    registry.register(relu_program.CONSTRUCTIONS, relu.relu_obligations)
    # the lemmas again, kernel-checked: Coq proofs against MathComp's definitions (coq/)
    registry.register((), kernel.kernel_obligations, coq_evaluator.evaluator_obligations)
    # the language's own lemmas (GAHAT-RASP semantics)
    registry.register((), language.obligations)
    # the applications (Match2, k-PARITY, linear attention, Linformer, Lipschitz approximation)
    registry.register(
        (
            *match2_program.CONSTRUCTIONS,
            *parity_program.CONSTRUCTIONS,
            *efficient_program.CONSTRUCTIONS,
            *lipschitz_program.CONSTRUCTIONS,
        ),
        match2.match2_obligations,
        parity.parity_obligations,
        efficient.efficient_obligations,
        lipschitz.lipschitz_obligations,
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
    # U's stages in Coq's kernel against coq/EncoderLayer.v (Theorem 6 in the kernel: one stage so far)
    registry.register((), kernel_stages.universal_kernel_obligations)
    # every specification against an independent textbook formula (what the all-sizes proofs trust)
    registry.register((), spec_check.spec_obligations)


def load() -> None:
    """Register the catalogue once per process (idempotent)."""
    if not registry.loaded():
        make_registrations()
