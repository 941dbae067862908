"""Proofs that a surviving mutant is equivalent, one level per module.

A mutant that no obligation kills counts as equivalent only with one of these proofs, tried in this
order: :mod:`.node` (each changed node equals the original), :mod:`.graph` (no changed node is
reachable), :mod:`.reader` (every reader of a changed map is unchanged), :mod:`.unread` (no changed
value reaches the output), :mod:`.output` (a SymPy proof on fixed programs), :mod:`.spec` (an
all-sizes proof against the independent spec).  Anything else is a survivor."""
