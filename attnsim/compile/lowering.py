"""Lowering, the pass over nodes: every SOp realized as a linear form over the residual dimensions.

:class:`Lowering` realizes a node once (by structure) and dispatches on its kind: tokens,
indices and constants are residual dims or forms; ``length`` and ``selector_width`` width heads
read out by a lookup; aggregates heads (:mod:`.heads`); maps index maps or primitives
(:mod:`.maps`).  A label in ``domains=`` or the builder's own declaration (:mod:`attnsim.rasp.hints`)
sets the realized value domain.  What lowering writes is listed in :mod:`.residual`.
"""

from __future__ import annotations

from fractions import Fraction

from attnsim.compile.heads import Heads
from attnsim.compile.maps import Maps
from attnsim.compile.model import CompileError
from attnsim.compile.residual import IDX, ONE, TOK, Origin, Realized, unit
from attnsim.rasp import core as C
from attnsim.rasp import domain as D
from attnsim.rasp import hints as H


class Lowering(Maps, Heads):
    """One compilation's lowering: ``realize(node)`` for every node the output reads."""

    def realize(self, node: C.SOp) -> Realized:
        fp = node.fingerprint
        if fp in self.real:
            return self.real[fp]
        self.label_of.setdefault(fp, node.label)
        r = self._realize(node)
        if node.label in self.hints:
            r = Realized(r.form, self.hints[node.label], r.origin)
        else:
            known = H.declared(node, self.N)  # the builder's own declaration (U's pointer...)
            bounds = H.declared_bounds(node)  # or its bounds (U's attention logits)
            if known is not None:
                r = Realized(r.form, D.Domain.of(known), r.origin)
            elif bounds is not None:
                r = Realized(r.form, D.Interval(*bounds).domain(), r.origin)
        self.real[fp] = r
        if self.progress is not None:
            self.progress("lowering", min(len(self.real), self.nodes), self.nodes)
        return r

    def _realize(self, node: C.SOp) -> Realized:  # noqa: C901
        N = self.N
        if isinstance(node, C.Tokens):
            dom = self.vocab if self.vocab is not None else self.hints.get(node.label, D.REAL)
            return Realized(unit(TOK), dom)
        if isinstance(node, C.Indices):
            return Realized(unit(IDX), D.integers(0, N - 1))
        if isinstance(node, C.Full):
            v = Fraction(node.value)
            return Realized({ONE: v} if v else {}, D.Domain.of([v]))
        if isinstance(node, C.Length):
            lyr = self.layer[id(node)]
            a = self.width_head(C.Select(C.tokens, C.tokens, "TRUE"), lyr, "length")
            pts = tuple(Fraction(n, n + 1) for n in range(1, N + 1))
            table = tuple(Fraction(n) for n in range(1, N + 1))
            form = self.lookup(a, pts, table, self.name(node))
            self.notes["lookups"].append(f"{self.name(node)}: L = lookup of L/(L+1), {N} points")
            return Realized(form, D.integers(1, N), Origin(a, pts, table))
        if isinstance(node, C.SelectorWidth):
            lyr = self.layer[id(node)]
            a = self.width_head(node.selector, lyr, self.name(node))
            pts = tuple(Fraction(w, w + 1) for w in range(N + 1))
            table = tuple(Fraction(w) for w in range(N + 1))
            form = self.lookup(a, pts, table, self.name(node))
            self.notes["lookups"].append(f"{self.name(node)}: w = lookup of w/(w+1), {N + 1} points")
            return Realized(form, D.integers(0, N), Origin(a, pts, table))
        if isinstance(node, C.Aggregate):
            lyr = self.layer[id(node)]
            vals = self.realize(node.values)
            if node.score is not None:
                sc = self.realize(node.score)
                d = self.scored_head(node, lyr, vals.form, sc, self.name(node))
                if node.score is node.values and vals.domain.points is not None:  # a max head: a value, or 0
                    return Realized(unit(d), D.Domain.of([Fraction(0), *vals.domain.points]))
                return Realized(unit(d), D.means(vals.domain, N))
            d = self.agg_head(node.selector, lyr, vals.form, self.name(node))
            return Realized(unit(d), D.means(vals.domain, N))
        if isinstance(node, (C.Map, C.SequenceMap)):
            args = node.args if isinstance(node, C.SequenceMap) else (node.inner,)
            if isinstance(node.fn, C.IndexFn):
                return self.index_map(node, node.fn, list(args))
            return self.prim_map(node, node.fn, list(args))
        raise CompileError(f"cannot compile node {node!r}")
