"""Compile a GAHAT-RASP program to explicit transformer weights (no approximation).

Residual layout: ``bos``, ``one`` (1 on tokens, 0 on BOS), ``tokens``, ``indices``, then one
dimension per non-linear SOp and per derived feature.  Every SOp is held as a *linear form*
over these dimensions: affine maps (identity, neg, scale, affine, add, sub, and index maps that
are affine on their domain) cost nothing, they fold into the forms that read them.

* **Lookups.**  A function g on a finite point set t_0 < ... < t_n is the piecewise-linear
  interpolant ``g(t_0) relu(one) + sum_i c_i relu(x - t_i one)`` (c_i the slope changes):
  exact at every point, one hidden unit per kink.  Index maps, finite-domain primitives, the
  squares, one-hots and indicators that selectors need, and the count read-outs of
  ``selector_width``/``length`` are lookups.  A lookup of a lookup composes (same hidden bank).
  Functions of several integer SOps read the mixed-radix code ``z = sum_i stride_i (x_i - lo_i)``.
  Lookups of ``indices`` alone become position-embedding columns.
* **ReLU-exact primitives** (relu, abs, max, min) are exact ReLU units on all reals.
* **Generalized primitives** (exp, mul, div, ...) on values without a small finite domain are
  explicit function nodes, reported by ``summary()``.
* **Selectors** become a score that is 0 exactly on selected keys and <= -m elsewhere (sum of
  terms for an AND): equality of numbers ``-(k - q)^2`` (m = smallest squared gap of the
  domains), a condition on keys or queries alone ``I - 1`` (m = 1), any other predicate over
  finite domains its table between a key one-hot and a query table row (m = 1).  BOS scores
  ``-m/2`` for ``aggregate`` (empty selection -> BOS alone -> 0) and ``0`` for
  ``selector_width`` (value ``one`` averages to w/(w+1), read out exactly by a lookup).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from attnsim.compile.model import (
    CompiledTransformer,
    CompileError,
    FnNode,
    Head,
    Layer,
    ReluStage,
    ScoreBound,
    Stage,
    as_number,
    obj,
)
from attnsim.rasp import core as C
from attnsim.rasp import domain as D
from attnsim.rasp import expr as E
from attnsim.rasp import hints as H
from attnsim.rasp import primitives as P
from attnsim.rasp.schedule import layer_of

Form = dict[int, Fraction]
LOOKUP_CAP = 1 << 16  # largest lookup table (points) for a generalized primitive on finite domains
CODE_CAP = 1 << 20  # largest mixed-radix code domain for a multi-argument index map
TABLE_CAP = 1 << 16  # largest predicate table (key points x query points) of a selector

_CMP: dict[str, Callable[[Any, Any], bool]] = {
    **E.COMPARATORS,
    "TRUE": lambda a, b: True,
    "FALSE": lambda a, b: False,
}
_NEG = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">", "TRUE": "FALSE", "FALSE": "TRUE"}
_LINEAR = ("identity", "neg", "scale", "affine", "add", "sub")
_RELU = ("relu", "abs", "max", "min")

BOS, ONE, TOK, IDX = 0, 1, 2, 3


@dataclass
class Origin:
    """The SOp equals ``table[i]`` when the source form equals ``points[i]`` (None: undefined there)."""

    src: Form
    points: tuple[Fraction, ...]
    table: tuple[Fraction | None, ...]


@dataclass
class Realized:
    form: Form
    domain: D.Domain
    origin: Origin | None = None


@dataclass
class ReluItem:
    layer: int
    depth: int
    units: list[Form]
    outs: list[tuple[int, list[tuple[int, Fraction]]]]
    note: str


@dataclass
class FnItem:
    layer: int
    depth: int
    prim: str
    params: tuple[Fraction, ...]
    args: list[Form]
    out: int
    note: str


@dataclass
class HeadB:
    name: str
    kind: str
    layer: int
    cols: list[tuple[Form, Form]]
    margin: Fraction
    forms: list[str]
    values: list[tuple[Form, int]] = field(default_factory=list)
    bound: tuple[Form, Fraction, Fraction, str] | None = None  # a scored head's score form, lo, hi, label


def _fkey(f: Form) -> tuple[tuple[int, Fraction], ...]:
    return tuple(sorted((k, v) for k, v in f.items() if v != 0))


def _lin(*terms: tuple[Fraction | int, Form]) -> Form:
    out: Form = {}
    for c, f in terms:
        for k, v in f.items():
            out[k] = out.get(k, Fraction(0)) + Fraction(c) * v
    return {k: v for k, v in out.items() if v != 0}


def _unit(d: int) -> Form:
    return {d: Fraction(1)}


class Compiler:
    """One compilation: realizes every node, then assembles the matrices."""

    def __init__(
        self, program: C.SOp, max_len: int, vocab: Iterable[Any] | None, domains: dict[str, Iterable[Any]] | None
    ) -> None:
        if not isinstance(program, C.SOp):
            raise CompileError(f"compile() takes one SOp (the program's output), got {type(program).__name__}")
        if not isinstance(max_len, int) or isinstance(max_len, bool) or max_len < 1:
            raise CompileError(f"max_len must be a positive int, got {max_len!r}")
        self.program = program
        self.N = max_len
        self.vocab = None if vocab is None else D.Domain.of(Fraction(v) for v in vocab)
        self.hints = {
            k: vs.domain() if isinstance(vs, D.Interval) else D.Domain.of(Fraction(v) for v in vs)
            for k, vs in (domains or {}).items()
        }
        self.dims: list[str] = ["bos", "one", "tokens", "indices"]
        self.pos: list[tuple[int, int]] = [(0, 0)] * 4
        self.emb: dict[int, list[Fraction]] = {}
        self.items: list[ReluItem | FnItem] = []
        self.heads: dict[tuple[int, str], HeadB] = {}
        self.real: dict[str, Realized] = {}
        self.feat_cache: dict[tuple[str, str], Form] = {}
        self.lookup_cache: dict[Any, Form] = {}
        self.layer = layer_of([program])
        self.notes: dict[str, list[str]] = {"lookups": [], "folded": []}
        self.label_of: dict[str, str] = {}

    # -- dims ---------------------------------------------------------------------------------
    def new_dim(self, name: str, where: tuple[int, int]) -> int:
        base, n = name, 1
        while name in self.dims:
            n += 1
            name = f"{base}#{n}"
        self.dims.append(name)
        self.pos.append(where)
        return len(self.dims) - 1

    def place(self, forms: Sequence[Form], min_layer: int = 0) -> tuple[int, int]:
        """(layer, depth) for an MLP item reading ``forms``."""
        ds = [d for f in forms for d in f if d != ONE]
        layer = max([min_layer, *(self.pos[d][0] for d in ds)])
        depth = 1 + max([0, *(self.pos[d][1] for d in ds if self.pos[d][0] == layer)])
        return layer, depth

    # -- lookups ------------------------------------------------------------------------------
    def lookup(self, src: Form, points: Sequence[Fraction], table: Sequence[Fraction | None], name: str) -> Form:
        """A form equal to table[i] whenever src == points[i] (exact at the points)."""
        pts = [as_number(p) for p in points]  # Python ints where possible: much faster than Fractions
        vals = [0 if v is None else as_number(v) for v in table]
        if not pts:
            return {}
        key = (_fkey(src), tuple(pts), tuple(vals))
        if key in self.lookup_cache:
            return self.lookup_cache[key]
        defined = [(p, v) for p, v, t in zip(pts, vals, table, strict=True) if t is not None]
        if len(defined) <= 1 or _affine(defined):
            (p0, v0) = defined[0] if defined else (0, 0)
            slope = Fraction(defined[1][1] - v0) / (defined[1][0] - p0) if len(defined) > 1 else Fraction(0)
            out = _lin((v0 - slope * p0, _unit(ONE)), (slope, src))
            self.lookup_cache[key] = out
            return out
        if _fkey(src) == ((IDX, Fraction(1)),):
            d = self.new_dim(name, (0, 0))
            col = [Fraction(0)] * self.N
            for p, v in zip(pts, vals, strict=True):
                if isinstance(p, int) and 0 <= p < self.N:
                    col[p] = Fraction(v)
            self.emb[d] = col
            self.lookup_cache[key] = _unit(d)
            return _unit(d)
        layer, depth = self.place([src])
        d = self.new_dim(name, (layer, depth))
        units: list[Form] = [_unit(ONE)]
        coefs: list[tuple[int, Fraction]] = [(0, Fraction(vals[0]))]
        prev: Fraction | int = 0
        for i in range(len(pts) - 1):
            dv, dp = vals[i + 1] - vals[i], pts[i + 1] - pts[i]
            sl = dv // dp if isinstance(dv, int) and isinstance(dp, int) and dv % dp == 0 else Fraction(dv) / dp
            c = sl - prev
            prev = sl
            if c != 0:
                units.append(_lin((1, src), (-pts[i], _unit(ONE))))
                coefs.append((len(units) - 1, Fraction(c)))
        self.items.append(ReluItem(layer, depth, units, [(d, coefs)], f"lookup {name}: {len(pts)} points"))
        self.lookup_cache[key] = _unit(d)
        return _unit(d)

    def source(
        self, node: C.SOp, integer_only: bool = False
    ) -> tuple[Form, tuple[Fraction, ...], list[Fraction | None]]:
        """(form, points, value of the node at each point) to look functions of ``node`` up from."""
        r = self.realize(node)
        if r.origin is not None:
            vals = list(r.origin.table)
            if integer_only:
                vals = [v if v is not None and v.denominator == 1 else None for v in vals]
            return r.origin.src, r.origin.points, vals
        what = f"{self.name(node)}"
        if integer_only:
            pts: tuple[Fraction, ...] = tuple(Fraction(p) for p in r.domain.integer_points(what))
        else:
            pts = r.domain.require_points(what)
        return r.form, pts, list(pts)

    def feature(self, node: C.SOp, tag: str, g: Callable[..., Any], integer_only: bool = False) -> Form:
        """A form equal to g(node) (a lookup composed on the node's source)."""
        key = (node.fingerprint, tag)
        if key in self.feat_cache:
            return self.feat_cache[key]
        try:
            src, pts, vals = self.source(node, integer_only)
        except D.DomainError as exc:
            raise CompileError(f"{exc} (needed for {tag} of {self.name(node)}; pass vocab= or domains=)") from None
        table = [None if v is None else Fraction(g(v)) for v in vals]
        out = self.lookup(src, pts, table, f"{self.name(node)}:{tag}")
        self.feat_cache[key] = out
        return out

    # -- nodes --------------------------------------------------------------------------------
    def name(self, node: C.RASPExpr) -> str:
        return self.label_of.get(node.fingerprint, node.label)

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
        return r

    def _realize(self, node: C.SOp) -> Realized:
        N = self.N
        if isinstance(node, C.Tokens):
            dom = self.vocab if self.vocab is not None else self.hints.get(node.label, D.REAL)
            return Realized(_unit(TOK), dom)
        if isinstance(node, C.Indices):
            return Realized(_unit(IDX), D.integers(0, N - 1))
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
                    return Realized(_unit(d), D.Domain.of([Fraction(0), *vals.domain.points]))
                return Realized(_unit(d), D.means(vals.domain, N))
            d = self.agg_head(node.selector, lyr, vals.form, self.name(node))
            return Realized(_unit(d), D.means(vals.domain, N))
        if isinstance(node, (C.Map, C.SequenceMap)):
            args = node.args if isinstance(node, C.SequenceMap) else (node.inner,)
            if isinstance(node.fn, C.IndexFn):
                return self.index_map(node, node.fn, list(args))
            return self.prim_map(node, node.fn, list(args))
        raise CompileError(f"cannot compile node {node!r}")

    # -- maps ---------------------------------------------------------------------------------
    def index_map(self, node: C.SOp, fn: C.IndexFn, args: list[C.SOp]) -> Realized:
        nm = self.name(node)
        if len(args) == 1:
            try:
                src, pts, vals = self.source(args[0], integer_only=True)
            except D.DomainError as exc:
                raise CompileError(f"index map {nm}: {exc} (pass vocab= or domains=)") from None
            table = _eval_index(fn, [[None if v is None else int(v) for v in vals]])
            form = self.lookup(src, pts, table, nm)
            self.notes["lookups"].append(f"{nm}: {_how(form, self)} over {len(pts)} points")
            dom = D.Domain.of(v for v in table if v is not None)
            return Realized(form, dom, Origin(src, pts, tuple(table)))
        reals = [self.realize(a) for a in args]
        try:
            grids = [r.domain.integer_points(f"{self.name(a)}") for a, r in zip(args, reals, strict=True)]
        except D.DomainError as exc:
            raise CompileError(f"index map {nm}: {exc} (pass vocab= or domains=)") from None
        grids = [g if g else (0,) for g in grids]
        los = [g[0] for g in grids]
        spans = [g[-1] - g[0] + 1 for g in grids]
        size = int(np.prod(spans))
        if size > CODE_CAP:
            raise CompileError(f"index map {nm} over {len(args)} arguments needs a {size}-entry lookup (> {CODE_CAP})")
        mesh = np.meshgrid(*(np.arange(lo, lo + s) for lo, s in zip(los, spans, strict=True)), indexing="ij")
        cols = [m.reshape(-1).tolist() for m in mesh]
        table = _eval_index(fn, cols)
        dom = D.Domain.of(v for v in table if v is not None)
        # affine in the arguments on the grid?  then fold
        fold = _affine_grid(mesh, table)
        if fold is not None:
            b, coefs = fold
            form = _lin((b, _unit(ONE)), *((c, r.form) for c, r in zip(coefs, reals, strict=True)))
            self.notes["folded"].append(f"{nm}: affine in its {len(args)} arguments, folded into a linear form")
            return Realized(form, dom)
        strides = [int(np.prod(spans[i + 1 :])) for i in range(len(spans))]
        z = _lin(
            *((st, r.form) for st, r in zip(strides, reals, strict=True)),
            (-sum(s * lo for s, lo in zip(strides, los, strict=True)), _unit(ONE)),
        )
        pts = tuple(Fraction(i) for i in range(size))
        form = self.lookup(z, pts, table, nm)
        self.notes["lookups"].append(f"{nm}: lookup over a {' x '.join(map(str, spans))} = {size}-point code")
        return Realized(form, dom, Origin(z, pts, tuple(table)))

    def prim_map(self, node: C.SOp, fn: C.Prim, args: list[C.SOp]) -> Realized:
        nm = self.name(node)
        prim = fn.primitive
        reals = [self.realize(a) for a in args]
        dom = _prim_domain(prim, fn.params, [r.domain for r in reals])
        forms = [r.form for r in reals]
        if fn.name in _LINEAR:
            ps = fn.params
            if fn.name == "identity":
                form = forms[0]
            elif fn.name == "neg":
                form = _lin((-1, forms[0]))
            elif fn.name == "scale":
                form = _lin((ps[0], forms[0]))
            elif fn.name == "affine":
                form = _lin((ps[0], forms[0]), (ps[1], _unit(ONE)))
            elif fn.name == "add":
                form = _lin((1, forms[0]), (1, forms[1]))
            else:
                form = _lin((1, forms[0]), (-1, forms[1]))
            origin = None
            if len(args) == 1 and reals[0].origin is not None:
                o = reals[0].origin
                table = tuple(None if v is None else Fraction(prim.exact(v, *ps)) for v in o.table)  # type: ignore[misc]
                origin = Origin(o.src, o.points, table)
            return Realized(form, dom, origin)
        if fn.name in _RELU:
            x = forms[0]
            y = forms[1] if len(forms) > 1 else {}
            if fn.name == "relu":
                units, outs = [x], [(0, Fraction(1))]
            elif fn.name == "abs":
                units, outs = [x, _lin((-1, x))], [(0, Fraction(1)), (1, Fraction(1))]
            elif fn.name == "max":  # y + relu(x - y)
                units = [_lin((1, x), (-1, y)), y, _lin((-1, y))]
                outs = [(0, Fraction(1)), (1, Fraction(1)), (2, Fraction(-1))]
            else:  # min: x - relu(x - y)
                units = [_lin((1, x), (-1, y)), x, _lin((-1, x))]
                outs = [(0, Fraction(-1)), (1, Fraction(1)), (2, Fraction(-1))]
            layer, depth = self.place(forms)
            d = self.new_dim(nm, (layer, depth))
            self.items.append(ReluItem(layer, depth, units, [(d, outs)], f"{fn.name} {nm}: {len(units)} ReLU units"))
            return Realized(_unit(d), dom)
        # generalized: exact lookup on a small finite domain, else an explicit function node
        if prim.exact is not None and all(r.domain.points is not None for r in reals):
            size = int(np.prod([len(r.domain.points or ()) for r in reals]))
            if size <= LOOKUP_CAP and _total(prim, fn.params, [r.domain for r in reals]):
                return self.prim_lookup(node, fn, args, reals, dom)
        layer, depth = self.place(forms)
        d = self.new_dim(nm, (layer, depth))
        note = f"{fn.fingerprint}({', '.join(self.name(a) for a in args)}) -> {nm}"
        self.items.append(FnItem(layer, depth, fn.name, fn.params, forms, d, note))
        return Realized(_unit(d), dom)

    def prim_lookup(self, node: C.SOp, fn: C.Prim, args: list[C.SOp], reals: list[Realized], dom: D.Domain) -> Realized:
        nm = self.name(node)
        prim = fn.primitive
        assert prim.exact is not None

        def val(*xs: Fraction) -> Fraction | None:
            try:
                return Fraction(prim.exact(*xs, *fn.params))  # type: ignore[misc]
            except (P.PrimitiveError, ZeroDivisionError, ValueError):
                return None

        if len(args) == 1:
            src, pts, vals = self.source(args[0])
            table = [None if v is None else val(v) for v in vals]
            form = self.lookup(src, pts, table, nm)
            self.notes["lookups"].append(f"{nm}: {fn.name} on a finite domain, exact lookup over {len(pts)} points")
            return Realized(form, dom, Origin(src, pts, tuple(table)))
        codes: list[Form] = []
        sizes: list[int] = []
        for a, r in zip(args, reals, strict=True):
            pts_a = r.domain.points or ()
            codes.append(self.feature(a, "code", lambda v, p=pts_a: p.index(v) if v in p else 0))
            sizes.append(len(pts_a))
        strides = [int(np.prod(sizes[i + 1 :])) for i in range(len(sizes))]
        z = _lin(*((s, c) for s, c in zip(strides, codes, strict=True)))
        grid = np.meshgrid(*(np.arange(s) for s in sizes), indexing="ij")
        table2 = []
        for ix in zip(*(g.reshape(-1) for g in grid), strict=True):
            table2.append(val(*((r.domain.points or ())[i] for r, i in zip(reals, ix, strict=True))))
        pts2 = tuple(Fraction(i) for i in range(len(table2)))
        form = self.lookup(z, pts2, table2, nm)
        self.notes["lookups"].append(f"{nm}: {fn.name} on finite domains, exact lookup over {len(pts2)} codes")
        return Realized(form, dom, Origin(z, pts2, tuple(table2)))

    # -- selectors ----------------------------------------------------------------------------
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
        one = _unit(ONE)
        if atoms is None:
            return self.table_terms(sel)
        for at in atoms:
            kc, qc = isinstance(at.keys, C.Full), isinstance(at.queries, C.Full)
            cmp = at.cmp
            if cmp == "TRUE" or (kc and qc and _CMP[cmp](Fraction(at.keys.value), Fraction(at.queries.value))):  # type: ignore[attr-defined]
                forms.append("always true (no term)")
                continue
            if cmp == "FALSE" or (kc and qc):
                cols.append((one, _lin((-1, one))))
                margins.append(Fraction(1))
                forms.append("never (constant -1)")
                continue
            if qc:
                c = Fraction(at.queries.value)  # type: ignore[attr-defined]
                ind = self.feature(at.keys, f"[k{cmp}{c}]", lambda v, c=c, cmp=cmp: int(_CMP[cmp](v, c)))
                cols.append((one, _lin((1, ind), (-1, one))))
                margins.append(Fraction(1))
                forms.append(f"key condition {self.name(at.keys)} {cmp} {c}: indicator lookup (margin 1)")
                continue
            if kc:
                c = Fraction(at.keys.value)  # type: ignore[attr-defined]
                ind = self.feature(at.queries, f"[{c}{cmp}q]", lambda v, c=c, cmp=cmp: int(_CMP[cmp](c, v)))
                cols.append((_lin((1, ind), (-1, one)), one))
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
                cols += [(_lin((2, qr.form)), kr.form), (_lin((-1, one)), ksq), (_lin((-1, qsq)), one)]
                margins.append(gap * gap)
                forms.append(f"equality {kn} == {qn} as numbers: -(k-q)^2 (margin {gap * gap})")
                continue
            c2, m2, f2 = self.table_terms(C.Select(at.keys, at.queries, cmp))
            cols += c2
            margins.append(m2)
            forms += f2
        return cols, (min(margins) if margins else Fraction(1)), forms

    def table_terms(self, sel: C.Selector) -> tuple[list[tuple[Form, Form]], Fraction, list[str]]:
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
        cols.append((_lin((-1, _unit(ONE))), _unit(ONE)))
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
        kscore = _lin((1, score.form), (-(dom.lo - 1), _unit(ONE)))
        cols.append((_unit(ONE), kscore))
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
            return _unit(hb.values[0][1])
        d = self.new_dim(f"{name}:w/(w+1)", (layer, 0))
        hb.values.append((_unit(ONE), d))
        return _unit(d)

    # -- assembly -----------------------------------------------------------------------------
    def build(self) -> CompiledTransformer:
        out = self.realize(self.program)
        d = len(self.dims)
        n_layers = max([0, *self.layer.values()])

        def vec(f: Form) -> np.ndarray:
            v = obj((d,))
            for k, c in f.items():
                v[k] = as_number(c)
            return v

        pos = obj((self.N + 1, d))
        pos[0, BOS] = 1
        for p in range(self.N):
            pos[p + 1, ONE] = 1
            pos[p + 1, IDX] = p
            for dim, col in self.emb.items():
                pos[p + 1, dim] = as_number(col[p])
        tok = obj((d,))
        tok[TOK] = 1
        layers: list[Layer] = []
        for li in range(n_layers + 1):
            heads = []
            for (lyr, _), hb in self.heads.items():
                if lyr != li:
                    continue
                wq, wk = obj((d, len(hb.cols))), obj((d, len(hb.cols)))
                for j, (qf, kf) in enumerate(hb.cols):
                    wq[:, j], wk[:, j] = vec(qf), vec(kf)
                wv, wo = obj((d, len(hb.values))), obj((len(hb.values), d))
                for j, (vf, od) in enumerate(hb.values):
                    wv[:, j] = vec(vf)
                    wo[j, od] = 1
                gap = hb.margin / 2 if hb.kind == "aggregate" else hb.margin  # scored: its margin is its gap
                bound = None
                if hb.bound is not None:
                    bform, lo, hi, label = hb.bound
                    bound = ScoreBound(vec(bform), lo, hi, label)
                heads.append(Head(hb.name, hb.kind, wq, wk, wv, wo, hb.margin, gap, hb.forms, bound))
            stages = []
            depths = sorted({it.depth for it in self.items if it.layer == li})
            for dp in depths:
                relus = [it for it in self.items if isinstance(it, ReluItem) and it.layer == li and it.depth == dp]
                fns = [it for it in self.items if isinstance(it, FnItem) and it.layer == li and it.depth == dp]
                stage_relu = None
                if relus:
                    ukeys: dict[Any, int] = {}
                    cols: list[Form] = []
                    entries: list[tuple[int, int, Fraction]] = []
                    for it in relus:
                        local = []
                        for u in it.units:
                            k = _fkey(u)
                            if k not in ukeys:
                                ukeys[k] = len(cols)
                                cols.append(u)
                            local.append(ukeys[k])
                        for od, cs in it.outs:
                            entries += [(local[ui], od, c) for ui, c in cs]
                    w1, w2 = obj((d, len(cols))), obj((len(cols), d))
                    for j, u in enumerate(cols):
                        w1[:, j] = vec(u)
                    for h, od, c in entries:
                        w2[h, od] = as_number(Fraction(w2[h, od]) + c)
                    stage_relu = ReluStage(w1, w2, [it.note for it in relus])
                fnodes = []
                for fi in fns:
                    w_in = obj((d, len(fi.args)))
                    for j, f in enumerate(fi.args):
                        w_in[:, j] = vec(f)
                    fnodes.append(FnNode(fi.prim, fi.params, w_in, fi.out, fi.note))
                stages.append(Stage(stage_relu, fnodes))
            layers.append(Layer(heads, stages))
        vocab = self.vocab.points if self.vocab is not None else None
        notes: dict[str, Any] = {k: v for k, v in self.notes.items() if v}
        sizes = [
            int(it.note.rsplit(": ", 1)[1].split()[0])
            for it in self.items
            if isinstance(it, ReluItem) and it.note.startswith("lookup")
        ]
        hidden = sum(len(it.units) for it in self.items if isinstance(it, ReluItem) and it.note.startswith("lookup"))
        notes["lookup tables"] = (
            f"{len(sizes)} in MLPs (largest {max(sizes, default=0)} points, {hidden} hidden units before sharing), "
            f"{len(self.emb)} as position-embedding columns ({self.N} rows each)"
        )
        ct = CompiledTransformer(
            self.dims, self.N, pos, tok, layers, vec(out.form), vocab, notes, self.name(self.program)
        )
        ct.program = self.program
        return ct


# -- helpers ------------------------------------------------------------------------------------
def _affine(pairs: list[tuple[Any, Any]]) -> bool:
    """All points on the line through the first two (cross-multiplied: no division)."""
    (p0, v0), (p1, v1) = pairs[0], pairs[1]
    dv, dp = v1 - v0, p1 - p0
    return all((v - v0) * dp == dv * (p - p0) for p, v in pairs)


def _affine_grid(mesh: Sequence[np.ndarray], table: list[Fraction | None]) -> tuple[Fraction, list[Fraction]] | None:
    if any(v is None for v in table):
        return None
    t = np.array([int(v) if v is not None else 0 for v in table], dtype=object).reshape(mesh[0].shape)
    origin = tuple(0 for _ in mesh)
    b0 = Fraction(t[origin])
    coefs = []
    for i in range(len(mesh)):
        if mesh[i].shape[i] > 1:
            ix = list(origin)
            ix[i] = 1
            coefs.append(Fraction(t[tuple(ix)]) - b0)
        else:
            coefs.append(Fraction(0))
    pred = b0 + sum(
        (c * (m - m[origin]) for c, m in zip(coefs, mesh, strict=True)), np.zeros(mesh[0].shape, dtype=object)
    )
    if not all(Fraction(a) == Fraction(b) for a, b in zip(np.ravel(pred), np.ravel(t), strict=True)):
        return None
    b = b0 - sum(c * int(m[origin]) for c, m in zip(coefs, mesh, strict=True))
    return Fraction(b), coefs


def _eval_index(fn: C.IndexFn, cols: Sequence[Sequence[int | None]]) -> list[Fraction | None]:
    n = len(cols[0])
    ok = [all(c[i] is not None for c in cols) for i in range(n)]
    arrs = [np.array([c[i] if ok[i] else 0 for i in range(n)], dtype=np.int64) for c in cols]
    try:
        with np.errstate(all="ignore"):
            res = np.broadcast_to(np.asarray(fn.evaluate(*arrs), dtype=np.int64), (n,))
        return [Fraction(int(r)) if o else None for r, o in zip(res, ok, strict=True)]
    except E.ExprError:
        out: list[Fraction | None] = []
        for i in range(n):
            if not ok[i]:
                out.append(None)
                continue
            try:
                out.append(Fraction(int(fn.evaluate(*(int(a[i]) for a in arrs)))))
            except E.ExprError:
                out.append(None)
        return out


def _prim_domain(prim: P.Primitive, params: tuple[Fraction, ...], doms: list[D.Domain]) -> D.Domain:
    if prim.exact is None or any(d.points is None for d in doms):
        return D.REAL
    size = int(np.prod([len(d.points or ()) for d in doms]))
    if size > D.CAP:
        return D.REAL
    vals = set()
    grid = np.meshgrid(*(np.arange(len(d.points or ())) for d in doms), indexing="ij")
    for ix in zip(*(g.reshape(-1) for g in grid), strict=True):
        try:
            vals.add(Fraction(prim.exact(*((d.points or ())[i] for d, i in zip(doms, ix, strict=True)), *params)))
        except (P.PrimitiveError, ZeroDivisionError, ValueError):
            continue
    return D.Domain.of(vals)


def _total(prim: P.Primitive, params: tuple[Fraction, ...], doms: list[D.Domain]) -> bool:
    """True when the primitive has a rational value at every point of the product domain.

    Otherwise (sqrt(2), 1/0...) a lookup could not reproduce the interpreter (an irrational
    value, or inf/nan in float64): the primitive stays an explicit function node.
    """
    assert prim.exact is not None
    grid = np.meshgrid(*(np.arange(len(d.points or ())) for d in doms), indexing="ij")
    for ix in zip(*(g.reshape(-1) for g in grid), strict=True):
        try:
            prim.exact(*((d.points or ())[i] for d, i in zip(doms, ix, strict=True)), *params)
        except (P.PrimitiveError, ZeroDivisionError, ValueError):
            return False
    return True


def _how(form: Form, comp: Compiler) -> str:
    if len(form) == 1 and next(iter(form)) >= 4 and comp.pos[next(iter(form))] == (0, 0):
        return "position-embedding column"
    if all(k in (ONE, TOK, IDX) for k in form) or len(form) != 1:
        return "folded (affine)"
    return "exact lookup"


def compile_program(
    program: C.SOp,
    max_len: int,
    vocab: Iterable[Any] | None = None,
    domains: dict[str, Iterable[Any]] | None = None,
) -> CompiledTransformer:
    """Compile ``program`` for sequences of length <= ``max_len`` (see the module docstring).

    ``vocab``: the finite token set (categorical programs); ``domains``: finite value sets the
    caller asserts for labelled SOps.  Raises :class:`CompileError` naming the node that cannot
    be compiled exactly.
    """
    try:
        return Compiler(program, max_len, vocab, domains).build()
    except (D.DomainError, C.ProgramError) as exc:
        raise CompileError(str(exc)) from None
