"""The mutation-testing names under their former module: see :mod:`attnsim.proofs.mutation`.

Kept so that ``from attnsim.proofs import mutants`` (the tests, older notebooks) still works; the
code lives in the modules of :mod:`attnsim.proofs.mutation`, one concern each.
"""

from attnsim.proofs import z3sel
from attnsim.proofs.mutation.equivalence.graph import unreachable
from attnsim.proofs.mutation.equivalence.node import domain_of, prove_equivalent
from attnsim.proofs.mutation.equivalence.output import output_equivalent
from attnsim.proofs.mutation.equivalence.reader import consumers_equivalent
from attnsim.proofs.mutation.equivalence.selector import prove_same_selector, token_selector_expr
from attnsim.proofs.mutation.equivalence.spec import spec_equivalent
from attnsim.proofs.mutation.equivalence.unread import unread_changes
from attnsim.proofs.mutation.equivalence.z3_proofs import BOUNDED_SIZE
from attnsim.proofs.mutation.generate import (
    COMMUTATIVE,
    EXPR_FLIPS,
    SELECT_FLIPS,
    Applied,
    MisplacedBlock,
    Mutant,
    MutationError,
    Mutator,
    Recorder,
    expr_mutations,
    mutants_of,
    mutate_expr,
    node_mutations,
)
from attnsim.proofs.mutation.plan import DEFAULT_MAX_MUTANTS, Job, mutant_budget, plan, sample
from attnsim.proofs.mutation.pool import confirm_killers, run_jobs
from attnsim.proofs.mutation.report import run_cli, summarize
from attnsim.proofs.mutation.run import MutantResult, _child, _collect_constructions, order_obligations, run_mutant
from attnsim.proofs.mutation.sites import Site

__all__ = [
    "BOUNDED_SIZE",
    "COMMUTATIVE",
    "DEFAULT_MAX_MUTANTS",
    "EXPR_FLIPS",
    "SELECT_FLIPS",
    "Applied",
    "Job",
    "MisplacedBlock",
    "Mutant",
    "MutantResult",
    "MutationError",
    "Mutator",
    "Recorder",
    "Site",
    "_child",
    "_collect_constructions",
    "confirm_killers",
    "consumers_equivalent",
    "domain_of",
    "expr_mutations",
    "mutant_budget",
    "mutants_of",
    "mutate_expr",
    "node_mutations",
    "order_obligations",
    "output_equivalent",
    "plan",
    "prove_equivalent",
    "prove_same_selector",
    "run_cli",
    "run_jobs",
    "run_mutant",
    "sample",
    "spec_equivalent",
    "summarize",
    "token_selector_expr",
    "unreachable",
    "unread_changes",
    "z3sel",
]
