"""Stages and cuts: a stage's proven statement about one node of U, read by later stages.

The layer is proven stage by stage (:mod:`attnsim.universal.layerproof.stages`): a stage proves one node of U
equal to its statement (:class:`Cut`) at every entry of its grid in a region
(:func:`attnsim.universal.layerproof.stage_proof.prove_stage`); a later stage reads that node as an opaque
function (its proof holds for every value of it) inside the region and as an unknown outside, and
states its own claim in the opaque functions, which is checked to be the spec's once they are
unfolded (``Cut.unfold``, in :func:`~attnsim.universal.layerproof.stage_proof.prove_stage`) -- or,
with ``spec_over``, is the spec's own intermediate built
over the cuts (:func:`statement_over_cuts`: refused unless every opaque function in it is a proven
cut stating that intermediate).  A cut proven on the padding rows too (``Cut.padded``,
:func:`attnsim.universal.layerproof.padding.prove_padding`) is read there as one value per name
(:mod:`attnsim.universal.layerproof.cut`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp

from attnsim.rasp.layout import Grid
from attnsim.universal.layerproof.encoder_spec import SIZE, spec_parts
from attnsim.universal.layerproof.flags import flag
from attnsim.universal.spec import ENCODER_LAYER, given_parts


@dataclass(frozen=True)
class Cut:
    """A stage's statement about one node of U, proven once and read by later stages.

    At the positions of ``grid`` whose coordinates ``a`` satisfy ``a < t`` for each ``(a, t)`` in
    ``below`` (t a true size), U's node ``label`` equals ``statement(coords)``: the 0/1 flags
    ``[a < t]`` of ``guard`` times ``spec(coords)`` (a SymPy expression in
    ENCODER_LAYER's operands, the options left as operands).  A later stage reads it as the opaque
    ``name(args)`` (an uninterpreted function: its proof then holds for every value, in particular
    the spec's; nodes with one statement share the name), and outside the region as
    ``pad[label]`` (nothing known, one unknown per node): a later stage that needs a value outside
    the proven region cannot be proven."""

    label: str
    grid: Grid
    below: tuple[tuple[str, str], ...]
    spec: Callable[[dict[str, Any]], Any]
    name: str
    args: tuple[str, ...]
    stage: str
    guard: tuple[tuple[str, str], ...] = ()  # 0/1 flags [a < t] the statement carries outside spec
    # the spec's intermediate (encoder_layer_parts) that spec(cs) is, at (cs[a] for a in args); "" if
    # none (build such a cut with part_cut: then the two agree by construction)
    part: str = ""
    # the name of the value the node holds at the padding rows i >= n (the row axis "i" past n, the
    # other coordinates in the region), one value shared by every node whose cut has this name and
    # read as ``padded(args)`` times the guard flags; proven by :func:`prove_padding` (the stage
    # that proves the cut); "" if not proven there (then ``pad[label]``: nothing known)
    padded: str = ""

    def flags(self, cs: dict[str, Any]) -> Any:
        return sp.Mul(*(flag(sp.Lt(cs[a], SIZE[t])) for a, t in self.guard))

    def statement(self, cs: dict[str, Any]) -> Any:
        """What the stage proves at coordinates ``cs`` in the region: the guard flags times spec."""
        return self.flags(cs) * self.spec(cs)

    def opaque(self, cs: dict[str, Any]) -> Any:
        """How later stages read it: the guard flags (visible to truncation) times name(args)."""
        return self.flags(cs) * sp.Function(self.name)(*(cs[a] for a in self.args))

    def pad(self, cs: dict[str, Any]) -> Any:
        return sp.Function(f"pad[{self.label}]")(*(cs[a] for a in self.grid.axes))  # one unknown per node

    def unfold(self, e: Any) -> Any:
        """``e`` with every opaque ``name(args)`` replaced by the statement it stands for."""
        f = sp.Function(self.name)
        return sp.sympify(e).replace(
            lambda x: getattr(x, "func", None) == f,
            lambda x: self.spec(dict(zip(self.args, x.args, strict=True))),
        )


def part_cut(
    label: str,
    grid: Grid,
    below: tuple[tuple[str, str], ...],
    part: str,
    name: str,
    args: tuple[str, ...],
    stage: str,
    guard: tuple[tuple[str, str], ...] = (),
    padded: str = "",
) -> Cut:
    """A cut whose statement is the spec's intermediate ``part`` at its arguments, times the guard
    flags: spec and ``part`` agree by construction (what :func:`statement_over_cuts` relies on)."""
    spec = lambda cs: spec_parts()[part](*(cs[a] for a in args))
    return Cut(label, grid, below, spec, name, args, stage, guard, part=part, padded=padded)


def statement_over_cuts(
    goal: Cut, spec_over: Mapping[str, str], cuts: Mapping[str, Cut]
) -> tuple[Callable[[dict[str, Any]], Any] | None, str]:
    """The goal's statement written over proven cuts: the spec's intermediate ``goal.part`` with each
    intermediate of ``spec_over`` (spec part -> opaque name) given as that opaque function
    (:func:`attnsim.universal.spec.given_parts`), times the goal's guard flags; and "" -- or
    (None, why) when refused: a name that is no cut's, a cut that states another intermediate (or
    none), a goal that is no intermediate, an opaque function in the statement that is no cut's.
    Each cut named states exactly its intermediate (``Cut.part``, with the same arguments), so the
    statement unfolded is ``goal.spec`` by construction of ``encoder_layer_parts``: the whole spec
    (slow to build: the layer up to the cuts) is never built."""
    by_name: dict[str, list[Cut]] = {}
    for c in cuts.values():
        by_name.setdefault(c.name, []).append(c)
    if not goal.part:
        return None, f"spec_over refused: {goal.label}'s statement names no intermediate of the spec"
    for part, name in spec_over.items():
        holders = by_name.get(name, [])
        if not holders:
            return None, (
                f"spec_over refused: {name} (given for the spec's {part}) is not a proven cut's name "
                f"(cuts: {', '.join(sorted(by_name)) or 'none'})"
            )
        wrong = [c for c in holders if c.part != part]
        if wrong:
            return None, (
                f"spec_over refused: the cut {wrong[0].label} named {name} states "
                f"{wrong[0].part or 'no intermediate'}, not the spec's {part}"
            )
    given = {part: sp.Function(name) for part, name in spec_over.items()}
    if goal.part in given:  # the goal's own intermediate is given: nothing of the spec to build
        parts: Mapping[str, Callable[..., Any]] = {goal.part: given[goal.part]}
    else:
        ops = {nm: sp.IndexedBase(nm) for nm in ENCODER_LAYER.operands}
        try:
            parts = given_parts(ops, SIZE, given)
        except ValueError as exc:
            return None, f"spec_over refused: {exc}"
    stmt = lambda cs: goal.flags(cs) * parts[goal.part](*(cs[a] for a in goal.args))
    probe = sp.sympify(stmt({a: sp.Symbol(f"{a}!", integer=True) for a in goal.grid.axes}))
    foreign = sorted({str(x.func) for x in probe.atoms(sp.core.function.AppliedUndef)} - set(by_name))
    if foreign:
        return None, f"spec_over refused: the statement reads {', '.join(foreign)}, no proven cut's name"
    return stmt, ""


__all__ = ["Cut", "part_cut", "statement_over_cuts"]


def reads_padding(e: Any) -> bool:
    """Whether ``e`` holds a padding value (an opaque ``name~(...)``)."""
    return any(str(x.func).endswith("~") for x in sp.sympify(e).atoms(sp.core.function.AppliedUndef))

