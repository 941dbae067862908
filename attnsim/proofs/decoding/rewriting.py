"""The decoding prover's rewriting: one case's formulas over block coordinates, div/mod rewritten
away by instances of proven lemmas before Z3 sees them.

``_Ctx`` holds one case's symbols (sizes with their minimum, coordinates with their extent, opaque
atoms) and rewrites bottom-up (:meth:`_Ctx.norm`): div/mod by a divisor shown >= 1 once interval
bounds put the remainder in range (decode-position), an equality of polynomials split into digits
(divmod-unique), a quotient compared with a term turned into two inequalities
(div-characterization); :meth:`_Ctx.bound_facts` then gives every compared polynomial its interval
bounds.  A coordinate that must first be split raises ``_Refine`` (the prover splits it and starts
again).  :func:`normalize` is the same rewriting without a proof (symbolic execution normalizes its
index terms with it).

``_Ctx`` stays one class in one module: its methods call one another (norm, compare, eq_parts,
split, bound, nonneg) over the same memo tables.  No solver re-checks this step
(docs/trusted-base.md); tests/proofs/test_decode_rules.py tests each rule on its own.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import sympy as sp
import sympy.tensor.tensor  # SymPy imports it lazily on the first Add (0.4 s): do it once, at import

from attnsim.rasp import core as C
from attnsim.rasp import expr as E


# -- expressions <-> SymPy polynomials ---------------------------------------------------------
class _Refine(Exception):
    """Restart with coordinate ``var`` split as ``a * d + b``."""

    def __init__(self, var: str, d: sp.Expr) -> None:
        super().__init__(var)
        self.var, self.d = var, d


def _times_coordinate(powers: dict[Any, Any], extents: dict[str, Any]) -> bool:
    """True when a monomial multiplies a coordinate (its bound scales with the sizes' sign)."""
    return any(getattr(b, "name", None) in extents for b in powers)


def _integer_polynomial(p: sp.Expr) -> bool:
    """p (expanded) is a polynomial with integer coefficients in its symbols (integer-valued)."""
    for t in sp.Add.make_args(p):
        coeff, rest = t.as_coeff_Mul()
        powers = rest.as_powers_dict() if rest != 1 else {}
        if not coeff.is_Integer or not all(b.is_Symbol and e.is_Integer and e >= 1 for b, e in powers.items()):
            return False
    return True


@functools.lru_cache(maxsize=4096)
def _split_by_sum(a: sp.Expr, d: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    """:meth:`_Ctx.split_by_sum` of an expanded ``a`` (a pure function of the two expressions,
    kept for the most recent 4096: the same positions are divided by the same grid extents in
    query after query)."""
    for s in sorted(d.free_symbols, key=sp.default_sort_key):
        x, y = (sp.expand(v) for v in sp.div(a, d, s))
        if x != 0 and _integer_polynomial(x) and sp.expand(x * d + y - a) == 0:
            return x, y
    return sp.Integer(0), a


@dataclass
class _Ctx:
    """Symbols of one case: sizes (with minimum), coordinates (with extent), opaque atoms."""

    minimum: dict[str, int]
    sizes: dict[str, E.Expr] = field(default_factory=dict)  # name -> Size node
    extents: dict[str, sp.Expr] = field(default_factory=dict)  # coordinate -> exclusive upper bound
    atoms: dict[str, E.Expr] = field(default_factory=dict)  # fingerprint -> node
    atom_syms: dict[str, sp.Symbol] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)
    rewrites: int = 0
    memo: dict[int, E.Expr] = field(default_factory=dict)
    interned: dict[tuple[Any, ...], E.Expr] = field(default_factory=dict)
    sides: dict[sp.Expr, sp.Expr] = field(default_factory=dict)
    nonneg_memo: dict[sp.Expr, bool] = field(default_factory=dict)
    sym_memo: dict[int, sp.Expr] = field(default_factory=dict)
    keep: list[E.Expr] = field(default_factory=list)

    def sym(self, name: str) -> sp.Symbol:
        return sp.Symbol(name, integer=True)

    def to_sym(self, e: E.Expr) -> sp.Expr:
        got = self.sym_memo.get(id(e))
        if got is None:
            got = self.sym_memo[id(e)] = self._to_sym(e)
            self.keep.append(e)
        return got

    def _to_sym(self, e: E.Expr) -> sp.Expr:
        if isinstance(e, C.Size):
            self.sizes[e.name] = e
            return self.sym(e.name)
        if isinstance(e, E.Var):
            return self.sym(e.name)
        if isinstance(e, E.Const):
            return sp.Integer(e.value)
        if isinstance(e, E.BinOp) and e.op in ("+", "-", "*"):
            a, b = self.to_sym(e.a), self.to_sym(e.b)
            return sp.expand(a + b if e.op == "+" else a - b if e.op == "-" else a * b)
        fp = E.render(e)
        if fp not in self.atom_syms:
            s = sp.Symbol(f"atom{len(self.atom_syms)}", integer=True)
            self.atom_syms[fp] = s
            self.atoms[s.name] = e
        return self.atom_syms[fp]

    def to_expr(self, s: sp.Expr) -> E.Expr:  # noqa: C901
        s = sp.expand(s)
        if s.is_Integer:
            return E.Const(int(s))
        if s.is_Symbol:
            name = s.name
            if name in self.atoms:
                return self.atoms[name]
            if name in self.sizes:
                return self.sizes[name]
            return E.Var(name)
        if s.is_Add:
            terms = [self.to_expr(t) for t in s.args]
            out = terms[0]
            for t in terms[1:]:
                out = out + t
            return out
        if s.is_Mul:
            facs = [self.to_expr(t) for t in s.args]
            out = facs[0]
            for f in facs[1:]:
                out = out * f
            return out
        if s.is_Pow and s.exp.is_Integer and int(s.exp) >= 1:
            base = self.to_expr(s.base)
            out = base
            for _ in range(int(s.exp) - 1):
                out = out * base
            return out
        raise ValueError(f"cannot turn {s} into an index expression")

    # interval bounds ---------------------------------------------------------------------
    def bound(self, p: sp.Expr, upper: bool) -> sp.Expr | None:  # noqa: C901
        """A polynomial in the sizes bounding ``p`` from above (or below), or None.

        Sound for the sizes it multiplies only when those are >= 0: a term with a size whose
        minimum is negative gets no bound (its sign is unknown), so the caller asks Z3 instead."""
        p = sp.expand(p)
        out = sp.Integer(0)
        for t in sp.Add.make_args(p):
            coeff, rest = t.as_coeff_Mul()
            if not coeff.is_Rational:
                return None
            powers = rest.as_powers_dict() if rest != 1 else {}
            coords = {}
            size_part = sp.Integer(1)
            for base, ex in powers.items():
                if not (base.is_Symbol and ex.is_Integer and int(ex) >= 1):
                    return None
                if base.name in self.extents:
                    coords[base] = int(ex)
                elif base.name in self.sizes:
                    if self.minimum.get(base.name, 1) < 0 and _times_coordinate(powers, self.extents):
                        return None  # a possibly negative size times a coordinate: no interval bound
                    size_part *= base**ex
                else:
                    return None  # an atom or a free variable: no bound
            if not coords:
                out += coeff * size_part
                continue
            if (coeff > 0) == upper:
                val = sp.Integer(1)
                for v, ex in coords.items():
                    val *= (self.extents[v.name] - 1) ** ex
                out += coeff * size_part * val
            # else: the term has the sign opposite to the bound sought; 0 bounds it
        return sp.expand(out)

    def nonneg(self, p: sp.Expr) -> bool:
        """p (a polynomial in the sizes) >= 0 whenever every size >= its minimum (sufficient test)."""
        p = sp.expand(p)
        got = self.nonneg_memo.get(p)
        if got is None:
            got = self.nonneg_memo[p] = self._nonneg(p)
        return got

    def _nonneg(self, p: sp.Expr) -> bool:
        if p.is_Number:
            return bool(p >= 0)
        subs = {}
        for s in p.free_symbols:
            if s.name not in self.sizes:
                return False
            subs[s] = sp.Symbol(f"shift_{s.name}", nonnegative=True) + self.minimum.get(s.name, 1)
        q = sp.expand(p.xreplace(subs))
        return all(c.is_Number and c >= 0 for c in q.as_coefficients_dict().values())

    def in_range(self, y: sp.Expr, d: sp.Expr) -> bool:
        """0 <= y <= d - 1, by interval bounds."""
        lo, hi = self.bound(y, upper=False), self.bound(y, upper=True)
        return lo is not None and hi is not None and self.nonneg(lo) and self.nonneg(d - 1 - hi)

    # div / mod -----------------------------------------------------------------------------
    def split(self, a: sp.Expr, d: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
        """a = X d + Y with X the terms divisible by the monomial d (integer coefficients)."""
        x, y = sp.Integer(0), sp.Integer(0)
        dc, dm = d.as_coeff_Mul()
        dpow = dm.as_powers_dict() if dm != 1 else {}
        if not dc.is_Integer or int(dc) == 0:
            return x, sp.expand(a)
        for t in sp.Add.make_args(sp.expand(a)):
            tc, tm = t.as_coeff_Mul()
            tpow = tm.as_powers_dict() if tm != 1 else {}
            if tc.is_Integer and all(tpow.get(b, 0) >= ex for b, ex in dpow.items()):
                quo, rem = divmod(int(tc), int(dc))
                rest = sp.Mul(*[b ** (ex - dpow.get(b, 0)) for b, ex in tpow.items()])
                if dpow and rem:  # symbolic divisor: the coefficient must divide exactly
                    y += t
                    continue
                x += quo * rest
                y += rem * rest
            else:
                y += t
        return sp.expand(x), sp.expand(y)

    def split_by_sum(self, a: sp.Expr, d: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
        """a = X d + Y for a divisor d that is a sum of monomials in the sizes (a grid extent such
        as D + 1): X, Y the quotient and remainder of dividing a by d as polynomials in one size of
        d (the other symbols coefficients), kept when X has integer coefficients and X d + Y
        expands to a; else X = 0, Y = a.  Like :meth:`split`, any such pair is an instance of
        decode-position once the caller shows 0 <= Y < d."""
        return _split_by_sum(sp.expand(a), d)

    def divmod(self, op: str, a: E.Expr, d: E.Expr) -> E.Expr | None:
        sa, sd = self.to_sym(a), self.to_sym(d)
        if sd.is_Integer and int(sd) < 1:
            return None
        if not (sd.is_Integer or self.nonneg(sd - 1)):
            return None
        x, y = self.split_by_sum(sa, sd) if sd.is_Add else self.split(sa, sd)
        if self.in_range(y, sd):
            self.used.add("decode-position")
            self.rewrites += 1
            return self.to_expr(x if op == "div" else y)
        # a coordinate v in [0, M d) divided by d: split it and start again
        for t in sp.Add.make_args(y):
            if t.is_Symbol and t.name in self.extents:
                m = sp.cancel(self.extents[t.name] / sd)
                _, den = sp.fraction(m)
                if den == 1 and m.is_polynomial() and m != 1 and sd != 1:
                    raise _Refine(t.name, sd)
        return None

    # comparisons ---------------------------------------------------------------------------
    def poly(self, e: E.Expr) -> sp.Expr | None:
        """e as a polynomial free of opaque atoms, or None."""
        s = self.to_sym(e)
        return None if any(x.name in self.atoms for x in s.free_symbols) else s

    def side(self, p: sp.Expr) -> E.Expr:
        """A comparison operand in canonical (expanded) form, remembered for the bound facts."""
        p = sp.expand(p)
        self.sides.setdefault(p, p)
        return self.intern_tree(self.to_expr(p))

    def intern_tree(self, e: E.Expr) -> E.Expr:
        if isinstance(e, E.BinOp):
            return self.intern(E.BinOp(e.op, self.intern_tree(e.a), self.intern_tree(e.b)))
        return self.intern(e)

    def size_divisors(self, *ps: sp.Expr) -> list[sp.Expr]:
        """Monomials in the sizes dividing some term of the polynomials (candidate radices)."""
        out: dict[sp.Expr, int] = {}
        for p in ps:
            for t in sp.Add.make_args(p):
                pw = [(b, int(x)) for b, x in t.as_powers_dict().items() if b.is_Symbol and b.name in self.sizes]
                for exps in itertools.product(*[range(x + 1) for _, x in pw]):
                    m = sp.Mul(*[b**x for (b, _), x in zip(pw, exps, strict=True)])
                    if m != 1:
                        out.setdefault(m, sum(exps))
        return sorted(out, key=lambda m: (out[m], sp.default_sort_key(m)))

    def eq_parts(self, p: sp.Expr, q: sp.Expr, depth: int = 0) -> list[tuple[sp.Expr, sp.Expr]]:
        """p == q as a conjunction of equalities of digits (divmod-unique), as far as bounds allow."""
        dp, dq = sp.expand(p).as_coefficients_dict(), sp.expand(q).as_coefficients_dict()
        common = sum((m * c for m, c in dp.items() if dq.get(m) == c), sp.Integer(0))
        p, q = sp.expand(p - common), sp.expand(q - common)
        if p == q:
            return []
        if depth < 8:
            for d in self.size_divisors(p, q):
                if not self.nonneg(d - 1):
                    continue
                x1, y1 = self.split(p, d)
                x2, y2 = self.split(q, d)
                if (x1 != 0 or x2 != 0) and self.in_range(y1, d) and self.in_range(y2, d):
                    self.used.add("divmod-unique")
                    self.rewrites += 1
                    return self.eq_parts(x1, x2, depth + 1) + self.eq_parts(y1, y2, depth + 1)
        return [(p, q)]

    def canon(self, e: E.Expr) -> E.Expr:
        """An integer term in expanded form (opaque atoms kept), so equal terms look equal to Z3."""
        return self.intern_tree(self.to_expr(self.to_sym(e)))

    def compare(self, op: str, a: E.Expr, b: E.Expr) -> E.Expr | None:
        pa, pb = self.poly(a), self.poly(b)
        if pa is not None and pb is not None:
            if op in ("==", "!="):
                parts = self.eq_parts(pa, pb)
                conj: E.Expr = E.Const(1)
                for x, y in parts:
                    atom = self.intern(E.BinOp("==", self.side(x), self.side(y)))
                    conj = atom if isinstance(conj, E.Const) else self.intern(E.BinOp("and", conj, atom))
                return conj if op == "==" else self.intern(E.Not(conj))
            return self.intern(E.BinOp(op, self.side(pa), self.side(pb)))
        if op == "==":
            # (X div d) == t  <->  t d <= X < t d + d   (div-characterization, d >= 1)
            for u, v in ((a, b), (b, a)):
                pv = self.poly(v)
                if isinstance(u, E.BinOp) and u.op == "div" and pv is not None:
                    pd, px = self.poly(u.b), self.poly(u.a)
                    if pd is not None and px is not None and self.nonneg(pd - 1):
                        self.used.add("div-characterization")
                        self.rewrites += 1
                        lo = self.intern(E.BinOp("<=", self.side(pv * pd), self.side(px)))
                        hi = self.intern(E.BinOp("<", self.side(px), self.side(pv * pd + pd)))
                        return self.intern(E.BinOp("and", lo, hi))
        sa = self.side(pa) if pa is not None else self.canon(a)
        sb = self.side(pb) if pb is not None else self.canon(b)
        return self.intern(E.BinOp(op, sa, sb))

    def bound_facts(self) -> list[E.Expr]:
        """lb <= T <= ub for every compared polynomial T over coordinates (interval bounds)."""
        out: list[E.Expr] = []
        for p in self.sides.values():
            if not any(s.name in self.extents for s in p.free_symbols):
                continue
            t = self.intern_tree(self.to_expr(p))
            lo, hi = self.bound(p, upper=False), self.bound(p, upper=True)
            if lo is not None:
                out.append(t >= self.to_expr(lo))
            if hi is not None:
                out.append(t <= self.to_expr(hi))
        return out

    def norm(self, e: E.Expr) -> E.Expr:
        """Rewrite every div/mod that the bounds allow, bottom-up (shared sub-trees once)."""
        got = self.memo.get(id(e))
        if got is None:
            got = self.memo[id(e)] = self._norm(e)
            self.keep.append(e)
        return got

    def intern(self, e: E.Expr) -> E.Expr:
        """One object per structure among rewritten nodes (children are already interned)."""
        if isinstance(e, E.Var):
            key: tuple[Any, ...] = ("v", e.name, type(e).__name__)
        elif isinstance(e, E.Const):
            key = ("c", e.value)
        elif isinstance(e, E.BinOp):
            key = ("b", e.op, id(e.a), id(e.b))
        elif isinstance(e, E.Not):
            key = ("n", id(e.a))
        else:
            assert isinstance(e, E.If)
            key = ("i", id(e.cond), id(e.a), id(e.b))
        return self.interned.setdefault(key, e)

    def _norm(self, e: E.Expr) -> E.Expr:
        return self.intern(self._norm1(e))

    def _norm1(self, e: E.Expr) -> E.Expr:  # noqa: C901, PLR0912
        if isinstance(e, (E.Var, E.Const)):
            return e
        if isinstance(e, E.Not):
            na = self.norm(e.a)
            return E.Const(int(na.value == 0)) if isinstance(na, E.Const) else E.Not(na)
        if isinstance(e, E.If):
            c = self.norm(e.cond)
            if isinstance(c, E.Const):
                return self.norm(e.a) if c.value else self.norm(e.b)
            return E.If(c, self.norm(e.a), self.norm(e.b))
        assert isinstance(e, E.BinOp)
        a, b = self.norm(e.a), self.norm(e.b)
        if e.op in ("div", "mod"):
            key = ("dm", e.op, id(a), id(b))
            if key not in self.interned:
                r = self.divmod(e.op, a, b)
                self.interned[key] = r if r is not None else E.BinOp(e.op, self.canon(a), self.canon(b))
            return self.interned[key]
        if e.op in ("==", "!=", "<", "<=", ">", ">="):
            r = self.compare(e.op, a, b)
            if r is not None:
                return r
        if e.op in ("min", "max"):
            a, b = self.canon(a), self.canon(b)
        ca = a.value if isinstance(a, E.Const) else None
        cb = b.value if isinstance(b, E.Const) else None
        if e.op == "and" and (ca == 0 or cb == 0):
            return E.Const(0)
        if e.op == "or" and ((ca is not None and ca != 0) or (cb is not None and cb != 0)):
            return E.Const(1)
        if e.op in ("and", "or") and ca is not None:  # 1 and X = truth(X): X itself only when X is 0/1
            return b if E.is_truth_valued(b) else E.BinOp("!=", b, E.Const(0))
        if e.op in ("and", "or") and cb is not None:
            return a if E.is_truth_valued(a) else E.BinOp("!=", a, E.Const(0))
        if ca is not None and cb is not None:
            return E.Const(int(E.BinOp(e.op, a, b).evaluate({})))
        return E.BinOp(e.op, a, b)


def normalize(
    e: E.Expr, coords: Mapping[str, E.Expr], minimum: Mapping[str, int] | None = None
) -> tuple[E.Expr, frozenset[str]] | None:
    """``e`` with every div/mod the coordinates' extents allow rewritten away, and the lemmas used.

    The rewrites are the decoding prover's (instances of :data:`LEMMAS`, bounds by intervals);
    None when a coordinate would first have to be split (the caller then reports unknown)."""
    ctx = _Ctx(dict(minimum or {}))
    for name, ext in coords.items():
        ctx.extents[name] = ctx.to_sym(ext)
    try:
        out = ctx.norm(e)
    except _Refine:
        return None
    return out, frozenset(ctx.used)


__all__ = ["normalize"]
