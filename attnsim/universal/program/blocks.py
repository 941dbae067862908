"""The building blocks of U's program: its grids, gathers, sums, 0/1 masks and LayerNorm pieces.

:class:`ProgramBlocks` holds what every stage of U's program shares (the capacity sizes, the
input map of the record, and the three lists a build writes: the lemma intents each gather and
sum carries, the 0/1 masks, and the stage grids) and the operations the stages are written in.
The stages (:mod:`.attention`, :mod:`.output`) build on it; :mod:`.driver` runs them in order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from attnsim.constructions.forms.contraction import Coords, contract, gather_onto
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp import hints
from attnsim.rasp.intent import Intent
from attnsim.rasp.layout import Grid, GridRef, value_of
from attnsim.universal.record import GATES, InputMap


@dataclass(frozen=True)
class Mask:
    """A 0/1 MLP mask: ``sop`` at the positions of ``grid`` is 1 iff ``intent(coords, sizes)``."""

    name: str
    sop: C.SOp
    grid: Grid
    intent: Callable[[dict[str, int], dict[str, int]], bool]


def mul(a: C.SOp, b: C.SOp) -> C.SOp:
    return C.apply("mul", a, b)


def add(a: C.SOp, b: C.SOp) -> C.SOp:
    return C.apply("add", a, b)


def sub(a: C.SOp, b: C.SOp) -> C.SOp:
    return C.apply("sub", a, b)


def where(c: C.SOp, a: C.SOp, b: C.SOp) -> C.SOp:
    return C.apply("where", c, a, b)


class ProgramBlocks:
    """The capacity sizes N, D, H, K, F, the record's input map, and the operations stages use.

    A build appends to ``intents`` (one per gather and sum: what its selector must select),
    ``masks`` (the 0/1 MLP masks and what each must equal) and ``stage_grids`` (the grids U
    holds its intermediate values on)."""

    def __init__(self, sizes: dict[str, E.Expr]) -> None:
        self.N, self.D, self.H, self.K, self.F = (sizes[s] for s in "NDHKF")
        self.map = InputMap.of(sizes)
        self.intents: list[tuple[str, Intent]] = []
        self.masks: list[Mask] = []
        self.stage_grids: list[Grid] = []

    def _grid(self, name: str, **dims: E.Expr | int) -> Grid:
        g = Grid.of(name, 0, channel=name, **dims)
        self.stage_grids.append(g)
        return g

    def _gather(
        self,
        name: str,
        src: Grid,
        onto: Grid | None,
        coords: Callable[[Coords], Coords],
        *,
        when: Callable[[Coords], E.Expr] | None = None,
        otherwise: tuple[Grid, Callable[[Coords], Coords]] | None = None,
    ) -> C.SOp:
        sop, it = gather_onto(GridRef(C.tokens, src), onto, coords, name, when=when, otherwise=otherwise)
        self.intents.append((f"{name}.gather", it))
        return sop

    def _sum(
        self, name: str, prod: GridRef, over: tuple[str, ...], onto: Grid, group: Callable[[Coords], Coords]
    ) -> C.SOp:
        sop, it = contract(prod, over, onto, group, name)
        self.intents.append((f"{name}.sum", it))
        return sop

    def _indicator(self, name: str, grid: Grid, test: Callable[[Coords], E.Expr] | None = None) -> C.SOp:
        """1 at the grid's positions (whose coordinates pass ``test``), else 0: index arithmetic only."""

        def ind(p: E.Expr) -> E.Expr:
            inside = grid.contains(p)
            return E.if_(inside if test is None else inside & test(grid.coords(p)), 1, 0)

        return C.imap(ind, C.indices).named(name)

    def _below(
        self,
        name: str,
        grid: Grid,
        coord: Callable[[Coords], E.Expr],
        bound: C.SOp,
        intent: Callable[[dict[str, int], dict[str, int]], bool],
    ) -> C.SOp:
        """A 0/1 mask: 1 where coord(x) < bound (a size token broadcast), inside the grid."""
        c = C.imap(lambda p: E.if_(grid.contains(p), coord(grid.coords(p)), -1), C.indices).named(f"{name}.coord")
        inside = self._indicator(f"{name}.inside", grid)
        m = C.apply("mul", C.apply("lt", c, bound), inside).named(name)
        self.masks.append(Mask(name, m, grid, intent))
        return m

    # -- shared by every stage -----------------------------------------------------------------
    def _common(self) -> None:
        """The sizes and gates broadcast to every position, X, the record's grids."""
        N, D = self.N, self.D
        im = self.map

        def bcast(pos: E.Expr, name: str) -> C.SOp:
            one = Grid.of(f"{name}@", pos, s=1)
            return self._gather(name, one, None, lambda cs: {"s": E.Const(0)})

        self._n_b = hints.declare(bcast(im.header_position("n"), "n"), lambda max_len: range(1, value_of(N) + 1))
        self._d_b = hints.declare(bcast(im.header_position("d"), "d"), lambda max_len: range(1, value_of(D) + 1))
        self._g = {nm: bcast(im.gate_position(nm), nm) for nm in GATES}
        self._tok2 = C.apply("square", C.tokens).named("tokens_sq")
        self._rec = {gr.name: gr for gr in im.record}

    def _rows_mean(self, name: str, onto: Grid, row: Callable[[Coords], E.Expr], values: C.SOp) -> C.SOp:
        """(1/d) sum_{l < D} values[X entry (row(x), l)] (padding is 0: the sum is over the true d)."""
        s = self._sum(name, GridRef(values, self.map.x), ("l",), onto, lambda cs: {"i": row(cs)})
        return C.apply("div", s, self._d_b).named(f"{name}.per_d")

    def _layer_norm_of(self, mean: C.SOp, meansq: C.SOp, name: str) -> C.SOp:
        var = sub(meansq, C.apply("square", mean))
        return C.apply("reciprocal", C.apply("sqrt", add(var, self._g["eps"]))).named(f"{name}.rstd")

    def _z(
        self,
        x_at: C.SOp,
        onto: Grid,
        row: Callable[[Coords], E.Expr],
        feat: Callable[[Coords], E.Expr],
        name: str,
        when: Callable[[Coords], E.Expr] | None = None,
    ) -> C.SOp:
        """Z = LayerNorm 1 (X) (pre-norm) or X at the grid's positions: x_at is X[row(x), feat(x)]."""
        rec, g = self._rec, self._g
        mu = self._rows_mean(f"{name}.mean", onto, row, C.tokens)
        sq = self._rows_mean(f"{name}.meansq", onto, row, self._tok2)
        g1 = self._gather(f"{name}.g1", rec["g1"], onto, lambda cs: {"e": feat(cs)}, when=when)
        be1 = self._gather(f"{name}.be1", rec["be1"], onto, lambda cs: {"e": feat(cs)}, when=when)
        z_norm = add(mul(mul(sub(x_at, mu), self._layer_norm_of(mu, sq, name)), g1), be1)
        return where(g["pre"], z_norm, x_at)
