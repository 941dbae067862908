"""Lowering, the heads: selectors as attention scores, aggregates as heads, widths read out exactly.

A selector becomes a score that is 0 exactly on selected keys and <= -m elsewhere (a sum of terms
for an AND): equality of numbers ``-(k - q)^2`` (m = smallest squared gap of the domains), a
condition on keys or queries alone ``I - 1`` (m = 1), any other predicate over finite domains its
table between a key one-hot and a query table row (m = 1).  BOS scores ``-m/2`` for ``aggregate``
(empty selection -> BOS alone -> 0) and ``0`` for ``selector_width`` (value ``one`` averages to
w/(w+1), read out exactly by a lookup).  A value-scored aggregate is one head whose logit adds
the key's score (``scored_head``).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from attnsim.compile.lookups import Lookups
from attnsim.compile.model import CompileError
from attnsim.compile.residual import BOS, ONE, Form, HeadB, Realized, lin, unit
from attnsim.rasp import core as C
from attnsim.rasp import domain as D
from attnsim.rasp import expr as E

TABLE_CAP = 1 << 16  # largest predicate table (key points x query points) of a selector

_CMP: dict[str, Callable[[Any, Any], bool]] = {
    **E.COMPARATORS,
    "TRUE": lambda a, b: True,
    "FALSE": lambda a, b: False,
}
_NEG = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">", "TRUE": "FALSE", "FALSE": "TRUE"}


class Heads(Lookups):
    """Selectors as score columns (``atoms``, ``terms``, ``table_terms``) and the heads that use them."""

    def atoms(self, sel: C.Selector, neg: bool = False) -> list[C.Select] | None:
        """The selector as an AND of (possibly negated) atoms, or None."""
        if isinstance(sel, C.Select):
            return [C.Select(sel.keys, sel.queries, _NEG[sel.cmp]) if neg else sel]
        if isinstance(sel, C.SelectNot):
            return self.atoms(sel.a, not neg)
        if isinstance(sel, C.SelectAnd) and not neg:
            a, b = self.atoms(sel.a), self.atoms(sel.b)
            return None if a is None or b is None else a + b
        if isinstance(sel, C.SelectOr) and neg:  # not(a or b) = not a and not b
            a, b = self.atoms(sel.a, True), self.atoms(sel.b, True)
            return None if a is None or b is None else a + b
        return None

    def terms(self, sel: C.Selector) -> tuple[list[tuple[Form, Form]], Fraction, list[str]]:
        """Score columns (query form, key form), margin m and a description per term."""
        atoms = self.atoms(sel)
        cols: list[tuple[Form, Form]] = []
        margins: list[Fraction] = []
        forms: list[str] = []
        one = unit(ONE)
        if atoms is None:
            return self.table_terms(sel)
        for at in atoms:
            kc, qc = isinstance(at.keys, C.Full), isinstance(at.queries, C.Full)
            cmp = at.cmp
            if cmp == "TRUE" or (kc and qc and _CMP[cmp](Fraction(at.keys.value), Fraction(at.queries.value))):  # type: ignore[attr-defined]
                forms.append("always true (no term)")
                continue
            if cmp == "FALSE" or (kc and qc):
                cols.append((one, lin((-1, one))))
                margins.append(Fraction(1))
                forms.append("never (constant -1)")
                continue
            if qc:
                c = Fraction(at.queries.value)  # type: ignore[attr-defined]
                ind = self.feature(at.keys, f"[k{cmp}{c}]", lambda v, c=c, cmp=cmp: int(_CMP[cmp](v, c)))
                cols.append((one, lin((1, ind), (-1, one))))
                margins.append(Fraction(1))
                forms.append(f"key condition {self.name(at.keys)} {cmp} {c}: indicator lookup (margin 1)")
                continue
            if kc:
                c = Fraction(at.keys.value)  # type: ignore[attr-defined]
                ind = self.feature(at.queries, f"[{c}{cmp}q]", lambda v, c=c, cmp=cmp: int(_CMP[cmp](c, v)))
                cols.append((lin((1, ind), (-1, one)), one))
                margins.append(Fraction(1))
                forms.append(f"query condition {c} {cmp} {self.name(at.queries)}: indicator lookup (margin 1)")
                continue
            kr, qr = self.realize(at.keys), self.realize(at.queries)
            kn, qn = self.name(at.keys), self.name(at.queries)
            if cmp == "==":
                gap = D.min_gap(kr.domain, qr.domain)
                if gap is None:
                    bad = kn if not kr.domain.finite else qn
                    raise CompileError(
                        f"selector {self.name(sel)}: {kn} == {qn} compares real values ({bad} has no finite domain): "
                        "no attention score separates equal from unequal keys with a margin "
                        "(the nearest key would win); pass vocab= or domains="
                    )
                ksq = self.feature(at.keys, "sq", lambda v: v * v)
                qsq = self.feature(at.queries, "sq", lambda v: v * v)
                cols += [(lin((2, qr.form)), kr.form), (lin((-1, one)), ksq), (lin((-1, qsq)), one)]
                margins.append(gap * gap)
                forms.append(f"equality {kn} == {qn} as numbers: -(k-q)^2 (margin {gap * gap})")
                continue
            c2, m2, f2 = self.table_terms(C.Select(at.keys, at.queries, cmp))
            cols += c2
            margins.append(m2)
            forms += f2
        return cols, (min(margins) if margins else Fraction(1)), forms

    def table_terms(self, sel: C.Selector) -> tuple[list[tuple[Form, Form]], Fraction, list[str]]:  # noqa: C901
        """Any predicate of ONE key SOp and ONE query SOp over finite domains: its table."""
        leaves: list[C.Select] = []
        stack: list[C.RASPExpr] = [sel]
        while stack:
            s = stack.pop()
            if isinstance(s, C.Select):
                leaves.append(s)
            else:
                stack += list(s.children())
        ks = {x.keys.fingerprint: x.keys for x in leaves if not isinstance(x.keys, C.Full)}
        qs = {x.queries.fingerprint: x.queries for x in leaves if not isinstance(x.queries, C.Full)}
        if len(ks) > 1 or len(qs) > 1 or not ks or not qs:
            raise CompileError(
                f"selector {self.name(sel)}: an OR/NOT over {len(ks)} key SOps and {len(qs)} query SOps is not "
                "compiled (write it as an AND of conditions, or over one key SOp and one query SOp)"
            )
        k, q = next(iter(ks.values())), next(iter(qs.values()))
        kr, qr = self.realize(k), self.realize(q)
        try:
            kp = kr.domain.require_points(f"keys {self.name(k)}")
            qp = qr.domain.require_points(f"queries {self.name(q)}")
        except D.DomainError as exc:
            raise CompileError(
                f"selector {self.name(sel)}: {exc}; a predicate other than == needs finite key and query domains "
                "(its table between one-hot codes); pass vocab= or domains="
            ) from None

        if len(kp) * len(qp) > TABLE_CAP:
            raise CompileError(
                f"selector {self.name(sel)}: its predicate table would have {len(kp)} x {len(qp)} entries "
                f"(> {TABLE_CAP}); keys {self.name(k)} and queries {self.name(q)} take too many values"
            )

        def truth(s: C.Selector, kv: Fraction, qv: Fraction) -> bool:
            if isinstance(s, C.Select):
                a = Fraction(s.keys.value) if isinstance(s.keys, C.Full) else kv
                b = Fraction(s.queries.value) if isinstance(s.queries, C.Full) else qv
                return bool(_CMP[s.cmp](a, b))
            if isinstance(s, C.SelectAnd):
                return truth(s.a, kv, qv) and truth(s.b, kv, qv)
            if isinstance(s, C.SelectOr):
                return truth(s.a, kv, qv) or truth(s.b, kv, qv)
            assert isinstance(s, C.SelectNot)
            return not truth(s.a, kv, qv)

        tag = sel.fingerprint
        cols: list[tuple[Form, Form]] = []
        for v in kp:
            oh = self.feature(k, f"=={v}", lambda x, v=v: int(x == v))
            row = self.feature(q, f"T[{v},q]@{tag}", lambda w, v=v: int(truth(sel, v, w)))
            if oh and row:
                cols.append((row, oh))
        cols.append((lin((-1, unit(ONE))), unit(ONE)))
        return (
            cols,
            Fraction(1),
            [f"table {self.name(k)} x {self.name(q)} ({len(kp)} x {len(qp)}): one-hot key . table row (margin 1)"],
        )

    def _head(self, sel: C.Selector, layer: int, kind: str, hname: str) -> HeadB:
        key = (layer, f"{kind}:{sel.fingerprint}")
        if key in self.heads:
            return self.heads[key]
        cols, margin, forms = self.terms(sel)
        for qf, kf in cols:
            for d in (*qf, *kf):
                if self.pos[d][0] >= layer:
                    raise CompileError(
                        f"internal: head {hname} at layer {layer} reads {self.dims[d]} of layer {self.pos[d][0]}"
                    )
        bos_q: Form = {BOS: Fraction(1)}
        if kind == "aggregate":
            bos_q[ONE] = -margin / 2
        cols.append((bos_q, {BOS: Fraction(1)}))
        hb = HeadB(hname, kind, layer, cols, margin, forms)
        self.heads[key] = hb
        return hb

    def agg_head(self, sel: C.Selector, layer: int, value: Form, name: str) -> int:
        hb = self._head(sel, layer, "aggregate", self.name(sel))
        for dv in value:
            if self.pos[dv][0] >= layer:
                raise CompileError(f"internal: head {hb.name} at layer {layer} reads {self.dims[dv]} as a value")
        d = self.new_dim(name, (layer, 0))
        hb.values.append((value, d))
        return d

    def scored_head(self, node: C.Aggregate, layer: int, value: Form, score: Realized, name: str) -> int:
        """A value-scored head, exact under average hard attention: logit(q, k) = lam S(q, k) + s(k) -
        (lo - 1) on token keys, with S the selector's score (0 selected, <= -m otherwise), s the key's
        score in [lo, hi], lam = 2 (hi - lo + 2) / m; BOS scores -lam m / 2.  Selected keys then score
        in [1, hi - lo + 1], BOS below them (< 0), every other key below BOS (<= -lam m + hi - lo + 1
        = -lam m / 2 - 1): the maximal keys are the selected keys of maximal score, BOS when none is
        selected (value 0).  The head's gap is min(g_s, 1), g_s the smallest spacing of the score's
        domain (docs/semantics.md, "Value-scored heads")."""
        dom = score.domain
        if dom.lo is None or dom.hi is None:
            raise CompileError(
                f"value-scored head {name}: its score {self.name(node.score) if node.score else '?'} has no bounds "
                f"({dom.describe()}); pass domains={{label: Interval(lo, hi)}} or a finite domain"
            )
        cols, margin, forms = self.terms(node.selector)
        lam = 2 * (dom.hi - dom.lo + 2) / margin
        cols = [({k: lam * v for k, v in qf.items()}, kf) for qf, kf in cols]
        kscore = lin((1, score.form), (-(dom.lo - 1), unit(ONE)))
        cols.append((unit(ONE), kscore))
        cols.append(({BOS: Fraction(1), ONE: -lam * margin / 2}, {BOS: Fraction(1)}))
        for qf, kf in cols:
            for dv in (*qf, *kf, *value):
                if self.pos[dv][0] >= layer:
                    raise CompileError(f"internal: head {name} at layer {layer} reads {self.dims[dv]} of a later layer")
        # the gap a softmax version needs: the score's spacing (0 for reals in an interval: exact
        # under hard attention only, and the soft bound is then vacuous)
        spacing = D.min_gap(dom, dom) if dom.finite else Fraction(0)
        gap = min(spacing if spacing is not None else Fraction(1), Fraction(1))
        forms = [*forms, f"score {self.name(node.score) if node.score else '?'} in [{dom.lo}, {dom.hi}], lam {lam}"]
        hb = HeadB(f"{self.name(node.selector)}|scored:{name}", "scored", layer, cols, gap, forms)
        if not dom.finite:  # a real interval: the run checks every key's score lies in it
            hb.bound = (score.form, dom.lo, dom.hi, self.name(node.score) if node.score else name)
        self.heads[(layer, f"scored:{id(node)}")] = hb
        d = self.new_dim(name, (layer, 0))
        hb.values.append((value, d))
        return d

    def width_head(self, sel: C.Selector, layer: int, name: str) -> Form:
        hb = self._head(sel, layer, "width", self.name(sel) if name != "length" else "length")
        if hb.values:
            return unit(hb.values[0][1])
        d = self.new_dim(f"{name}:w/(w+1)", (layer, 0))
        hb.values.append((unit(ONE), d))
        return unit(d)
