"""Values shared by the option cases of one proof run: a node's value that read no option.

A stage proof executes U's node once per 0/1 option case (:class:`~attnsim.universal.layerproof.stage_proof.CaseRun`).
The options enter the execution at one place only, a gate token
(:meth:`~attnsim.universal.layerproof.executor.LayerExecutor.token`, which counts each read in
``case_reads``): a node value whose computation read no gate token, directly or through a node
it read, and that was not computed under a gather's branch assumptions, is the same expression
in every case.  The first case that computes it keeps it (:class:`SharedValue`); a later case
takes it instead of executing the node again, and replays what computing it would have done
there, so the proof reports the same steps as without sharing: the nodes it read that this case
has not computed yet are taken first (each the same way), then its own proven steps and padding
reads.  The Z3 answers under those steps were proven when the value was first computed, at the
same premises (one run, one entry), and its summation variables have the names this case would
give them (derived from the computation, :mod:`attnsim.symbolic.summation_names`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from attnsim.rasp import core as C
from attnsim.rasp import expr as E

Key = tuple[int, str]  # (id of the node, its position rendered): the executor's memo key


@dataclass(frozen=True)
class SharedValue:
    """A node value that read no option, and what computing it did besides its children's part."""

    value: sp.Expr
    reads: tuple[Key, ...]  # the nodes it read, in order (each shared too)
    steps: tuple[str, ...]  # its own proven steps (its children's not included)
    padding_reads: int  # its own reads of a cut's padding values


@dataclass
class _Frame:
    """A value being computed: where its steps start and what its children did."""

    steps0: int
    padding0: int
    case_reads0: int
    reads: list[Key] = field(default_factory=list)
    child_steps: list[tuple[int, int]] = field(default_factory=list)  # the children's step ranges
    child_padding: int = 0


class CaseSharing:
    """The executor's value memo extended across the option cases of a run (a mixin of
    :class:`~attnsim.universal.layerproof.executor.LayerExecutor`, whose fields below it reads)."""

    shared: dict[Key, SharedValue] | None
    case_reads: int
    padding_reads: int
    assumed: list[E.Expr]
    steps: list[str]
    _memo: dict[Key, sp.Expr]
    _tainted: set[Key]
    _frames: list[_Frame]

    def value(self, node: C.SOp, pos: E.Expr) -> sp.Expr:
        if self.shared is None:
            return super().value(node, pos)  # type: ignore[misc]
        if self.assumed:  # on a gather's branch: kept apart (and its readers are not shared)
            self.case_reads += 1
            return super().value(node, pos)  # type: ignore[misc]
        key = (id(node), E.render(pos))
        parent = self._frames[-1] if self._frames else None
        start, pad0 = len(self.steps), self.padding_reads
        got = self._value_of(key, node, pos)
        if parent is not None:
            parent.reads.append(key)
            parent.child_steps.append((start, len(self.steps)))
            parent.child_padding += self.padding_reads - pad0
        return got

    def _value_of(self, key: Key, node: C.SOp, pos: E.Expr) -> sp.Expr:
        assert self.shared is not None
        if key in self._memo:
            if key in self._tainted:
                self.case_reads += 1
            return self._memo[key]
        hit = self.shared.get(key)
        if hit is not None and self._replayable(hit):
            self._replay(key, hit)
            return hit.value
        frame = _Frame(len(self.steps), self.padding_reads, self.case_reads)
        self._frames.append(frame)
        try:
            got: sp.Expr = super().value(node, pos)  # type: ignore[misc]
        finally:
            self._frames.pop()
        if self.case_reads != frame.case_reads0:
            self._tainted.add(key)
            return got
        covered = {i for a, b in frame.child_steps for i in range(a, b)}
        own = tuple(s for i, s in enumerate(self.steps[frame.steps0 :], frame.steps0) if i not in covered)
        self.shared[key] = SharedValue(
            got,
            tuple(frame.reads),
            own,
            self.padding_reads - frame.padding0 - frame.child_padding,
        )
        return got

    def _replayable(self, hit: SharedValue) -> bool:
        """Every node the value read is computed in this case or shared (else it is computed)."""
        assert self.shared is not None
        todo, seen = list(hit.reads), set()
        while todo:
            child = todo.pop()
            if child in seen or child in self._memo:
                continue
            seen.add(child)
            got = self.shared.get(child)
            if got is None:
                return False
            todo.extend(got.reads)
        return True

    def _replay(self, key: Key, hit: SharedValue) -> None:
        """Take a shared value as computing it here would: its unread children first, then its own part."""
        assert self.shared is not None
        for child in hit.reads:
            if child not in self._memo:
                self._replay(child, self.shared[child])
        self.steps.extend(hit.steps)
        self.padding_reads += hit.padding_reads
        self._memo[key] = hit.value


__all__ = ["CaseSharing", "SharedValue"]
