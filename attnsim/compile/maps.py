"""Lowering, the maps: index maps and primitives as linear forms, lookups, ReLU units or function nodes.

Affine maps (identity, neg, scale, affine, add, sub, and index maps that are affine on their
domain) cost nothing: they fold into the forms that read them.  Other index maps and primitives
on small finite domains are exact lookups (:mod:`.lookups`); functions of several integer SOps
read the mixed-radix code ``z = sum_i stride_i (x_i - lo_i)``.  ReLU-exact primitives (relu, abs,
max, min) are exact ReLU units on all reals; generalized primitives (exp, mul, div, ...) on values
without a small finite domain are explicit function nodes, reported by ``summary()``.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from attnsim.compile.lookups import Lookups
from attnsim.compile.model import CompileError
from attnsim.compile.residual import IDX, ONE, TOK, FnItem, Form, LoweringState, Origin, Realized, ReluItem, lin, unit
from attnsim.rasp import core as C
from attnsim.rasp import domain as D
from attnsim.rasp import expr as E
from attnsim.rasp import primitives as P

LOOKUP_CAP = 1 << 16  # largest lookup table (points) for a generalized primitive on finite domains
CODE_CAP = 1 << 20  # largest mixed-radix code domain for a multi-argument index map
_LINEAR = ("identity", "neg", "scale", "affine", "add", "sub")
_RELU = ("relu", "abs", "max", "min")


class Maps(Lookups):
    """Index maps (``index_map``) and primitives (``prim_map``, ``prim_lookup``)."""

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
            form = lin((b, unit(ONE)), *((c, r.form) for c, r in zip(coefs, reals, strict=True)))
            self.notes["folded"].append(f"{nm}: affine in its {len(args)} arguments, folded into a linear form")
            return Realized(form, dom)
        strides = [int(np.prod(spans[i + 1 :])) for i in range(len(spans))]
        z = lin(
            *((st, r.form) for st, r in zip(strides, reals, strict=True)),
            (-sum(s * lo for s, lo in zip(strides, los, strict=True)), unit(ONE)),
        )
        pts = tuple(Fraction(i) for i in range(size))
        form = self.lookup(z, pts, table, nm)
        self.notes["lookups"].append(f"{nm}: lookup over a {' x '.join(map(str, spans))} = {size}-point code")
        return Realized(form, dom, Origin(z, pts, tuple(table)))

    def prim_map(self, node: C.SOp, fn: C.Prim, args: list[C.SOp]) -> Realized:  # noqa: C901, PLR0912
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
                form = lin((-1, forms[0]))
            elif fn.name == "scale":
                form = lin((ps[0], forms[0]))
            elif fn.name == "affine":
                form = lin((ps[0], forms[0]), (ps[1], unit(ONE)))
            elif fn.name == "add":
                form = lin((1, forms[0]), (1, forms[1]))
            else:
                form = lin((1, forms[0]), (-1, forms[1]))
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
                units, outs = [x, lin((-1, x))], [(0, Fraction(1)), (1, Fraction(1))]
            elif fn.name == "max":  # y + relu(x - y)
                units = [lin((1, x), (-1, y)), y, lin((-1, y))]
                outs = [(0, Fraction(1)), (1, Fraction(1)), (2, Fraction(-1))]
            else:  # min: x - relu(x - y)
                units = [lin((1, x), (-1, y)), x, lin((-1, x))]
                outs = [(0, Fraction(-1)), (1, Fraction(1)), (2, Fraction(-1))]
            layer, depth = self.place(forms)
            d = self.new_dim(nm, (layer, depth))
            self.items.append(ReluItem(layer, depth, units, [(d, outs)], f"{fn.name} {nm}: {len(units)} ReLU units"))
            return Realized(unit(d), dom)
        # generalized: exact lookup on a small finite domain, else an explicit function node
        if prim.exact is not None and all(r.domain.points is not None for r in reals):
            size = int(np.prod([len(r.domain.points or ()) for r in reals]))
            if size <= LOOKUP_CAP and _total(prim, fn.params, [r.domain for r in reals]):
                return self.prim_lookup(node, fn, args, reals, dom)
        layer, depth = self.place(forms)
        d = self.new_dim(nm, (layer, depth))
        note = f"{fn.fingerprint}({', '.join(self.name(a) for a in args)}) -> {nm}"
        self.items.append(FnItem(layer, depth, fn.name, fn.params, forms, d, note))
        return Realized(unit(d), dom)

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
        z = lin(*((s, c) for s, c in zip(strides, codes, strict=True)))
        grid = np.meshgrid(*(np.arange(s) for s in sizes), indexing="ij")
        table2 = []
        for ix in zip(*(g.reshape(-1) for g in grid), strict=True):
            table2.append(val(*((r.domain.points or ())[i] for r, i in zip(reals, ix, strict=True))))
        pts2 = tuple(Fraction(i) for i in range(len(table2)))
        form = self.lookup(z, pts2, table2, nm)
        self.notes["lookups"].append(f"{nm}: {fn.name} on finite domains, exact lookup over {len(pts2)} codes")
        return Realized(form, dom, Origin(z, pts2, tuple(table2)))


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


def _how(form: Form, comp: LoweringState) -> str:
    if len(form) == 1 and next(iter(form)) >= 4 and comp.pos[next(iter(form))] == (0, 0):
        return "position-embedding column"
    if all(k in (ONE, TOK, IDX) for k in form) or len(form) != 1:
        return "folded (affine)"
    return "exact lookup"
