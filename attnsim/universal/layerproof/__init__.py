"""U's layer proof: one pass of U equals the encoder layer's specification, for every capacity and size.

U (:mod:`attnsim.universal.universal`) is built over unbound capacity sizes N, D, H, K, F; the
simulated layer has true sizes n <= N, d <= D, hh <= H, k <= K, f <= F.  A stage's value is
computed by symbolic execution of U's own program at a symbolic entry of the grid where U holds
it, and compared with the statement written from the specification's own intermediate quantities
by the Sum normal form (``simplify`` is never called).  The proof is split by concern:

- :mod:`.encoder_spec`: the true sizes' symbols, eps, the option cases, the spec's parts;
- :mod:`.cut`: a stage's proven statement (:class:`Cut`), read by later stages, and its padding values;
- :mod:`.executor`: the executor (:class:`LayerExecutor`), tokens read through the input map, with
  its mixins :mod:`.case_sharing` (values the option cases share), :mod:`.gather_cases`,
  :mod:`.truncation`, :mod:`.divisors` and :mod:`attnsim.symbolic.key_listing` (key listings
  through intents, shared with the lemmas' proofs);
- :mod:`.activation`: the FFN's activations as the executor reads them;
- :mod:`.flags`: products of 0/1 flags and the flag form of U's value;
- :mod:`.stage_proof`: the stage proof (:func:`prove_stage`);
- :mod:`.padding`: the padding rows (:func:`prove_padding`);
- :mod:`.refutation`: counterexamples for a stage that did not go through;
- :mod:`.stages`: the stages scores -> attention -> ffn -> output -> write, chained by :mod:`.stages.chain`;
- :mod:`.frame` and :mod:`.stack`: the frame lemma of a pass and the stack induction (depth by looping).
"""
