"""What a decoding query names: the variables decoded through layout blocks, and the sizes and free
variables of its formulas.

:class:`Decode` is the input of :func:`~attnsim.proofs.decoding.prover.prove` that says which
variable stands for a position and through which blocks it is decoded (the case split);
``_sizes_of`` and ``_free_vars`` read the names a formula uses.  They sit below every other module
of the prover (the answer cache keys a query by them, the premise check and the Z3 query bound
them), so that none of those needs the prover itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.layout import Block


@dataclass(frozen=True)
class Decode:
    """Decode variable ``var`` through ``blocks``: one case per block, plus "outside" unless ``cover``.

    With ``cover`` the claim is about values of ``var`` inside one of the blocks only (membership
    is a hypothesis of the claim: :func:`~attnsim.proofs.decoding.prover.prove_intent` sets it only
    when the query condition contains that block's membership test).  ``ranges`` are assumptions on
    ``var`` that the membership implies (dropped inside a block, kept outside).
    """

    var: str
    blocks: tuple[Block, ...]
    cover: bool = False
    ranges: tuple[E.Expr, ...] = ()


def _sizes_of(*exprs: E.Expr) -> set[str]:
    out: set[str] = set()
    for e in exprs:
        out |= {n.name for n in E.nodes(e) if isinstance(n, C.Size)}
    return out


def _free_vars(*exprs: E.Expr) -> set[str]:
    out: set[str] = set()
    for e in exprs:
        out |= set(e.variables())
    return out


__all__ = ["Decode"]
