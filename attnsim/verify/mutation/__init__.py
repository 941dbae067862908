"""Mutation testing: break every construction on purpose and check that its obligations notice.

A *mutant* is one small source-level change to the code that builds a construction, applied while
the program is built; each runs in its own process against its construction's obligations, and a
survivor counts only with a proof that it is equivalent.  By concern:

* :mod:`.sites`: where a node is created (the site a mutant changes);
* :mod:`.generate`: the mutations of a node and the hook that records or applies them;
* :mod:`.run`: one mutant, its obligations cheapest first, the kill rule;
* :mod:`.equivalence`: the proofs that a surviving mutant is equivalent;
* :mod:`.plan`, :mod:`.pool`, :mod:`.report`: which mutants run, the forked pool, the CLI output."""
