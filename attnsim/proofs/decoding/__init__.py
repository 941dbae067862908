"""Compositional Z3 proofs of selector intents, for all sizes, by decoding positions.

Z3 alone often answers ``unknown`` on selector intents: symbolic sizes make the index
arithmetic nonlinear, and div/mod by a symbolic divisor is hard.  We first rewrite the question
into the matrix coordinates the layout gives it, using only instances of proven lemmas
(:data:`LEMMAS`, registered as ``rasp/z3-parametric/<name>`` by :mod:`attnsim.proofs.language`):

1. **decode** (``block-decode``, ``block-position``): a position constrained to a
   :class:`Block` is replaced by ``block.position(i, j, h)`` over fresh coordinates with
   ``0 <= coord < extent``; a key position is case-split into "inside block B" (decoded
   likewise) for every block whose membership test the intent uses, and "outside all of them";
   the case decides those membership tests;
2. **div/mod** (``decode-position``): ``(X d + Y) div d -> X`` and ``mod -> Y`` once
   ``d >= 1`` and ``0 <= Y < d`` are shown by interval bounds (d a monomial in the sizes, or a
   sum such as ``D + 1``: X and Y then by polynomial division in one of its sizes, X with
   integer coefficients, X d + Y checked to expand to the dividend);
3. **refine** (``divmod-recompose``, ``row-bound``): a coordinate ``v`` in ``[0, M d)`` that is
   divided by ``d`` becomes ``a d + b`` with ``0 <= a < M``, ``0 <= b < d``;
4. **digits** (``divmod-unique``): ``X1 d + Y1 = X2 d + Y2`` with both ``Y`` in ``[0, d)``
   becomes ``X1 = X2 and Y1 = Y2``; ``(P div d) = t`` becomes ``t d <= P < t d + d``
   (``div-characterization``);
5. **bounds**: every compared polynomial T over coordinates gets the facts ``lb <= T <= ub``.

*Interval bounds* are a sound procedure, not a lemma: every coordinate lies in
``[0, extent)``, every size is ``>= its minimum``, a term with a positive coefficient is at most
its value at the coordinates' maxima (and >= 0), and a polynomial in the sizes is non-negative
when all its coefficients are after shifting each size by its minimum.

Each case left is a small Z3 query, first with every product of unknowns abstracted to a fresh
variable (linear: ``unsat`` there is ``unsat`` here), then in full.  Every case ``unsat`` ->
proved for all sizes; a ``sat`` model (shrunk to sizes <= 2, 3, 4 or 8 when possible) is
re-evaluated on the original, unrewritten formulas and, when it really violates them, reported
as a counterexample in matrix coordinates; anything else is ``unknown``, never proved.

The prover, by concern: :mod:`~attnsim.proofs.decoding.prover` (``prove``, ``prove_intent``: the
premises, the case split, each case rewritten and asked), :mod:`~attnsim.proofs.decoding.rewriting`
(steps 2-5: one case's rewriting and interval bounds), :mod:`~attnsim.proofs.decoding.index_lemmas`
(``LEMMAS``), :mod:`~attnsim.proofs.decoding.query` (``Decode``: step 1's input),
:mod:`~attnsim.proofs.decoding.premises` (the premises shown satisfiable first),
:mod:`~attnsim.proofs.decoding.z3_query` (one case asked of Z3, linear abstraction first),
:mod:`~attnsim.proofs.decoding.refutation` (a model re-evaluated on the original formulas;
``refuted_at``), :mod:`~attnsim.proofs.decoding.answers` (one proof's decided answers by exact query)
and :mod:`~attnsim.proofs.decoding.selectors` (the blocks an intent names; a counterexample in matrix
coordinates).  This package exports the public names of each.
"""

from attnsim.proofs.decoding.answers import query_key
from attnsim.proofs.decoding.index_lemmas import LEMMAS, Lemma, lemma_outcome
from attnsim.proofs.decoding.prover import prove, prove_intent
from attnsim.proofs.decoding.query import Decode
from attnsim.proofs.decoding.refutation import refuted_at
from attnsim.proofs.decoding.rewriting import normalize
from attnsim.proofs.decoding.selectors import describe_position, key_blocks, query_block, selector_explainer

__all__ = [
    "LEMMAS",
    "Decode",
    "Lemma",
    "describe_position",
    "key_blocks",
    "lemma_outcome",
    "normalize",
    "prove",
    "prove_intent",
    "query_block",
    "query_key",
    "refuted_at",
    "selector_explainer",
]
