"""Scheduling a program onto transformer layers, and its cost.

Counting rules (chosen to match the paper's, see docs/semantics.md):

* a layer is an attention sublayer followed by an MLP sublayer;
* an attention op (Aggregate, SelectorWidth, and ``length``, which costs one attention
  layer as in the paper) sits at layer 1 + the deepest layer among what it reads;
* a Map sits in the MLP of the deepest layer it reads (layer 0 = an MLP before any attention);
  a chain of Maps inside one MLP is one position-wise function whose depth in primitives is
  reported as ``mlp_depth``; ``mlp_generalized`` lists, per MLP, the generalized primitives
  (exp, 1/x, x/y, x*y, sqrt, gelu...: those a ReLU network only approximates) it carries, with
  the number of Maps applying each;
* heads in a layer = distinct selectors (by structure) used there: one attention pattern can
  carry several value channels; ``aggregates`` counts the attention ops themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from attnsim.rasp import core as C


@dataclass
class Cost:
    """Layers, heads per layer, MLP work per layer, positions and residual channels.

    Per-layer lists: ``heads``/``aggregates`` for layers 1..layers; ``mlp_primitives``,
    ``mlp_depth`` and ``mlp_generalized`` for MLPs 0..layers (MLP 0 runs before any attention)."""

    layers: int
    heads: list[int]
    aggregates: list[int]
    mlp_primitives: list[int]
    mlp_depth: list[int]
    positions: int | None
    channels: int
    generalized: list[str] = field(default_factory=list)
    mlp_generalized: list[dict[str, int]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        h = "/".join(str(x) for x in self.heads) or "-"
        layers = f"{self.layers} layer{'' if self.layers == 1 else 's'}"
        return f"{layers}, heads {h}, positions {self.positions}, channels {self.channels}"


def layer_of(outputs: Sequence[C.SOp]) -> dict[int, int]:
    """Layer index of every SOp node (by id) reachable from ``outputs``."""
    layer: dict[int, int] = {}
    for node in C.topological(list(outputs)):
        if isinstance(node, C.Selector):
            continue
        if isinstance(node, C.Length):
            layer[id(node)] = 1
        elif isinstance(node, (C.Aggregate, C.SelectorWidth)):
            reads = [s for s in _leaves(node)]
            layer[id(node)] = 1 + max((layer[id(s)] for s in reads), default=0)
        elif isinstance(node, (C.Map, C.SequenceMap)):
            layer[id(node)] = max((layer[id(a)] for a in node.args), default=0)
        else:
            layer[id(node)] = 0
    return layer


def _leaves(node: C.SOp) -> list[C.SOp]:
    if isinstance(node, C.Aggregate):
        return [*node.reads(), *C.selector_leaves(node.selector)]
    if isinstance(node, C.SelectorWidth):
        return C.selector_leaves(node.selector)
    return []


def cost(program: C.SOp | Sequence[C.SOp], positions: int | None = None) -> Cost:
    """The cost of a program (``positions``: the sequence length it runs on, if known)."""
    outs = [program] if isinstance(program, C.SOp) else list(program)
    layer = layer_of(outs)
    order = [n for n in C.topological(outs) if isinstance(n, C.SOp)]
    n_layers = max(layer.values(), default=0)
    heads: list[set[str]] = [set() for _ in range(n_layers + 1)]
    aggs = [0] * (n_layers + 1)
    prims = [0] * (n_layers + 1)
    depth_in: dict[int, int] = {}
    mdepth = [0] * (n_layers + 1)
    generalized: set[str] = set()
    per_mlp: list[dict[str, int]] = [{} for _ in range(n_layers + 1)]
    for node in order:
        lyr = layer[id(node)]
        if isinstance(node, (C.Aggregate, C.SelectorWidth)):
            score = getattr(node, "score", None)
            # a value-scored head's scores are its attention logits: another score, another head
            heads[lyr].add(node.selector.fingerprint + ("" if score is None else f"|{score.fingerprint}"))
            aggs[lyr] += 1
        elif isinstance(node, C.Length):
            heads[lyr].add("length")
            aggs[lyr] += 1
        elif isinstance(node, (C.Map, C.SequenceMap)):
            prims[lyr] += 1
            d = 1 + max(
                (
                    depth_in.get(id(a), 0)
                    for a in node.args
                    if layer[id(a)] == lyr and isinstance(a, (C.Map, C.SequenceMap))
                ),
                default=0,
            )
            depth_in[id(node)] = d
            mdepth[lyr] = max(mdepth[lyr], d)
            if node.fn.realization == "generalized":
                generalized.add(node.fn.fingerprint)
                name = node.fn.name if isinstance(node.fn, C.Prim) else node.fn.fingerprint
                per_mlp[lyr][name] = per_mlp[lyr].get(name, 0) + 1
    return Cost(
        layers=n_layers,
        heads=[len(h) for h in heads[1:]],
        aggregates=aggs[1:],
        mlp_primitives=prims,
        mlp_depth=mdepth,
        positions=positions,
        channels=len(order),
        generalized=sorted(generalized),
        mlp_generalized=[dict(sorted(m.items())) for m in per_mlp],
    )
