"""Lemma (inverse, determinant; the paper's fixed-order 3 x 3 construction).

With x1 = (x+1) % 3, x2 = (x+2) % 3 (same for y) four gather heads fetch A[x2,y2], A[x1,y1],
A[x2,y1], A[x1,y2], and the MLP forms the signed cofactor C[x,y] = A[x2,y2]A[x1,y1] - A[x2,y1]A[x1,y2]
(the cyclic order makes the sign (-1)^(x+y) come for free).

* ``cofactor3``: position (i, j) computes C[i, j]. 1 layer, 4 heads.
* ``det3``: the cofactor block sits on A's own positions, so position (0, j) holds A[0, j] as its
  token and C[0, j]; one key-masked head (keys = row 0, no query condition: every position gets
  it) averages the three products; det = 3 x mean (first-row expansion). 2 layers, heads 4 / 1.
* ``inverse3``: position (i, j) computes the *transposed* cofactor C[j, i] = adj(A)[i, j] directly,
  a fifth head (the transpose lemma) brings A[j, i] beside it, the det head averages column 0
  (adj[j, 0] A[0, j] = C[0, j] A[0, j]) and the MLP divides: 2 layers, heads 5 / 1.
The paper spends 4 layers on det and 5 on the inverse (heads 1 / 4 / 1 / 1 / 1).

A zero determinant is a :class:`SingularMatrixError`: exact division by zero on the exact
backend, a non-finite result on NumPy (float64 det evaluated to 0), 1/0 on SymPy. A float64
det that is tiny but not 0 gives large finite entries, as ``numpy.linalg.inv`` does.
The obligations are in :mod:`attnsim.constructions.det3.obligations`, the checks det(n) and
inverse(n) share with these in :mod:`attnsim.constructions.det_checks`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from attnsim.constructions.construction import Construction, ConstructionError, NonFiniteResultError
from attnsim.constructions.transpose.program import transpose_ref
from attnsim.proofs.registry import ConstructionEntry
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.intent import Intent, K, Q
from attnsim.rasp.layout import Block, Layout, MatRef

if TYPE_CHECKING:
    from sympy.polys.matrices import DomainMatrix

PAPER_REF = "Lemma (inverse, determinant: 3x3 fixed order)"
PAPER_COST = {
    "cofactor3": {"layers": 2, "heads": [1, 4], "note": "length; 4 gathers (the first two layers of the inverse)"},
    "det3": {"layers": 4, "heads": [1, 4, 1, 1], "note": "length; 4 gathers; first-row expansion"},
    "inverse3": {"layers": 5, "heads": [1, 4, 1, 1, 1], "note": "length; 4 gathers; det; transpose; divide"},
}


class SingularMatrixError(ConstructionError):
    """The matrix is singular (det = 0): no inverse."""


# -- the gathers -----------------------------------------------------------------------------
def scalar_block(name: str) -> Block:
    """Where a broadcast scalar is read: position 0 (every position holds it; no layout choice)."""
    zero, one = E.Const(0), E.Const(1)
    return Block(name, zero, one, one, one, name)


def _cofactor_sop(a: MatRef, out: Block, name: str, transposed: bool) -> tuple[C.SOp, list[Intent]]:
    """At position (i, j) of ``out``: C[x, y] with (x, y) = (j, i) if ``transposed`` else (i, j)."""
    blk = a.block
    _require_3x3(blk, name)
    q, k = Q, K
    _, kx, ky = blk.coords(k)
    factors: list[C.SOp] = []
    intents: list[Intent] = []
    for tag, dx, dy in (("a22", 2, 2), ("a11", 1, 1), ("a21", 2, 1), ("a12", 1, 2)):
        src = _source(blk, out, dx, dy, transposed)
        sel = C.select(C.indices, C.imap(src, C.indices).named(f"{name}.{tag}_src"), "==").named(f"{name}.{tag}")
        factors.append(C.aggregate(sel, a.sop).named(f"{name}.{tag}"))
        _, qi, qj = out.coords(q)
        x, y = (qj, qi) if transposed else (qi, qj)
        who = "C[j, i]" if transposed else "C[i, j]"
        intents.append(
            Intent(
                f"{name}.{tag}",
                sel,
                blk.contains(k) & kx.eq((x + dx) % 3) & ky.eq((y + dy) % 3),
                out.contains(q),
                f"query (i, j) (computing {who} = C[x, y]) selects exactly the key holding "
                f"A[(x+{dx}) mod 3, (y+{dy}) mod 3]",
            )
        )
    a22, a11, a21, a12 = factors
    cof = C.apply("sub", C.apply("mul", a22, a11), C.apply("mul", a21, a12)).named(name)
    return cof, intents


def _source(blk: Block, out: Block, dx: int, dy: int, transposed: bool) -> Callable[[E.Expr], E.Expr]:
    """Position p = (i, j) of ``out`` -> the position of A[(x+dx) % 3, (y+dy) % 3] in ``blk``."""

    def src(p: E.Expr) -> E.Expr:
        _, i, j = out.coords(p)
        x, y = (j, i) if transposed else (i, j)
        return blk.position((x + dx) % 3, (y + dy) % 3)

    return src


def _require_3x3(blk: Block, name: str) -> None:
    if blk.shape != (3, 3):
        raise ConstructionError(f"{name}: the fixed-order construction needs a 3x3 matrix, got shape {blk.shape}")


def cofactor3_ref(a: MatRef, offset: E.Expr | int = 0, name: str = "cofactor") -> tuple[MatRef, list[Intent]]:
    """Composable form: the signed cofactor matrix C of a 3x3 ``a``, new channel at ``offset``."""
    out = Block.of(name, offset, 3, 3, channel=name)
    cof, intents = _cofactor_sop(a, out, name, transposed=False)
    return MatRef(cof, out), intents


def adjugate3_ref(a: MatRef, offset: E.Expr | int = 0, name: str = "adjugate") -> tuple[MatRef, list[Intent]]:
    """Composable form: adj(A) = C^T, each entry computed in place (no transpose layer)."""
    out = Block.of(name, offset, 3, 3, channel=name)
    adj, intents = _cofactor_sop(a, out, name, transposed=True)
    return MatRef(adj, out), intents


def _row_or_col_sum(blk: Block, values: C.SOp, name: str, col: bool) -> tuple[C.SOp, Intent]:
    """3 x mean of ``values`` over row 0 (or column 0) of ``blk``, broadcast to every position."""
    k = K
    _, ki, kj = blk.coords(k)
    line = kj if col else ki

    def flag(p: E.Expr) -> E.Expr:
        _, i, j = blk.coords(p)
        return blk.contains(p) & (j if col else i).eq(0)  # a 0/1 flag

    sel = C.select(C.imap(flag, C.indices).named(f"{name}.mask"), C.full(1), "==").named(f"{name}.sum")
    mean = C.aggregate(sel, values).named(f"{name}.mean")
    total = C.apply("scale", mean, params=(3,)).named(name)
    what = "column 0" if col else "row 0"
    intent = Intent(
        f"{name}.sum",
        sel,
        blk.contains(k) & line.eq(0),
        Q >= 0,
        f"every query selects exactly the 3 keys of {what} of the {blk.name} block",
    )
    return total, intent


def det3_ref(a: MatRef, name: str = "det") -> tuple[MatRef, list[Intent]]:
    """Composable form: det(A) (a 1x1 block, the value broadcast to every position).

    The cofactors sit on A's own positions, so the token there is the matching A entry.
    """
    cof, intents = cofactor3_ref(a, offset=a.block.offset, name=f"{name}.cofactor")
    prod = C.apply("mul", a.sop, cof.sop).named(f"{name}.terms")
    det, it = _row_or_col_sum(cof.block, prod, name, col=False)
    out = scalar_block(name)
    return MatRef(det, out, aux=(cof.block,)), [*intents, it]


def inverse3_ref(a: MatRef, name: str = "inverse") -> tuple[MatRef, list[Intent]]:
    """Composable form: A^-1 = adj(A) / det(A), 2 layers."""
    adj, intents = adjugate3_ref(a, offset=0, name=f"{name}.adj")
    at, t_intents = transpose_ref(a, offset=0, name=f"{name}.at")
    # adj[j, 0] = C[0, j] and A^T[j, 0] = A[0, j]: column 0 carries the first-row expansion
    prod = C.apply("mul", at.sop, adj.sop).named(f"{name}.terms")
    det, it = _row_or_col_sum(adj.block, prod, f"{name}.det", col=True)
    inv = C.apply("div", adj.sop, det).named(name)
    out = dataclasses.replace(adj.block, name=name, channel=name)  # the quotient sits where adj(A) is
    t_intents = [dataclasses.replace(i, name=f"{name}.at") for i in t_intents]
    return MatRef(inv, out, aux=(adj.block, at.block)), [*intents, *t_intents, it]


# -- references and the singular guard ---------------------------------------------------------
def exact_matrix(a: np.ndarray) -> DomainMatrix:
    """An object array of Fractions (or SymPy rationals) as a DomainMatrix over QQ."""
    import sympy as sp
    from sympy.polys.matrices import DomainMatrix

    rows = [[sp.Rational(Fraction(x).numerator, Fraction(x).denominator) for x in row] for row in a.tolist()]
    return DomainMatrix.from_list_sympy(len(rows), len(rows[0]), rows).convert_to(sp.QQ)


def _to_fraction(x: Any) -> Fraction:
    return Fraction(int(x.numerator), int(x.denominator))


def det_reference(a: np.ndarray, backend: str = "numpy") -> Any:
    """det(A): NumPy's LU det, SymPy's det over QQ (exact), or the symbolic det."""
    if backend == "numpy":
        return np.linalg.det(a)
    if backend == "exact":
        return _to_fraction(exact_matrix(a).det())
    import sympy as sp

    return sp.Matrix(a.tolist()).det(method="berkowitz")


def inverse_reference(a: np.ndarray, backend: str = "numpy") -> Any:
    """A^-1: ``numpy.linalg.inv``, exact over QQ, or adj(A)/det(A) on symbols."""
    if backend == "numpy":
        try:
            return np.linalg.inv(a)
        except np.linalg.LinAlgError:
            raise SingularMatrixError("singular matrix: det = 0 (numpy.linalg.inv)") from None
    if backend == "exact":
        dm = exact_matrix(a)
        if dm.det() == 0:
            raise SingularMatrixError("singular matrix: det = 0")
        inv = dm.inv().to_Matrix()
        return np.array([[_to_fraction(x) for x in row] for row in inv.tolist()], dtype=object)
    import sympy as sp

    m = sp.Matrix(a.tolist())
    d = m.det(method="berkowitz")
    if d == 0:
        raise SingularMatrixError("singular matrix: det = 0")
    return np.array((m.adjugate(method="berkowitz") / d).tolist(), dtype=object)


def cofactor_reference(a: np.ndarray, backend: str = "numpy") -> Any:
    """The signed cofactor matrix: (-1)^(i+j) times the (i, j) minor."""
    n = a.shape[0]
    out = np.empty((n, n), dtype=np.float64 if backend == "numpy" else object)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, axis=0), j, axis=1)
            out[i, j] = (-1) ** (i + j) * det_reference(minor, backend)
    return out


class DividingConstruction(Construction):
    """A construction that divides by det(A): a zero det is a clear SingularMatrixError, never inf."""

    def run(self, *operands: Any, backend: str = "numpy") -> np.ndarray:
        try:
            out = super().run(*operands, backend=backend)
        except SingularMatrixError:
            raise
        except NonFiniteResultError as exc:
            why = str(exc).removeprefix(f"{self.name}: ")
            raise SingularMatrixError(
                f"{self.name}: singular matrix: the float64 det evaluated to 0 (result has inf/nan; {why})"
            ) from None
        except ConstructionError as exc:
            if "division by 0" in str(exc) or "reciprocal of 0" in str(exc):
                raise SingularMatrixError(f"{self.name}: singular matrix: det = 0 (exact division by zero)") from None
            raise
        if backend == "numpy":
            if not np.all(np.isfinite(out)):
                raise SingularMatrixError(
                    f"{self.name}: singular matrix: the float64 det evaluated to 0 (result has inf/nan)"
                )
        elif backend == "sympy" and _has_infinity(out):
            raise SingularMatrixError(f"{self.name}: singular matrix: det = 0 (division by zero)")
        return out


def _has_infinity(out: np.ndarray) -> bool:
    """Whether a SymPy result holds a complex infinity, NaN or an infinity (a division by zero)."""
    import sympy as sp

    return any(sp.sympify(x).has(sp.zoo, sp.nan, sp.oo, -sp.oo) for x in out.flat)


def _short(intents: list[Intent], prefix: str = "out.") -> list[Intent]:
    """Intent names without the construction's output prefix (obligation ids stay short)."""
    return [dataclasses.replace(i, name=i.name.removeprefix(prefix)) for i in intents]


def _input() -> MatRef:
    return MatRef(C.tokens, Block.of("A", 0, 3, 3))


def cofactor3() -> Construction:
    """The signed cofactor matrix of a 3x3 A (1 layer, 4 heads)."""
    a = _input()
    res, intents = cofactor3_ref(a, name="out")
    return Construction(
        "cofactor3",
        PAPER_REF,
        res.sop,
        Layout.of(a.block, res.block),
        ("A",),
        cofactor_reference,
        intents=_short(intents),
        paper_cost=PAPER_COST["cofactor3"],
    )


def det3() -> Construction:
    """det(A) of a 3x3 A, a 0-d result (2 layers, heads 4 / 1)."""
    a = _input()
    res, intents = det3_ref(a, name="out")
    return Construction(
        "det3",
        PAPER_REF,
        res.sop,
        Layout.of(a.block, *res.aux, res.block),
        ("A",),
        det_reference,
        out_shape=(),
        intents=_short(intents),
        paper_cost=PAPER_COST["det3"],
    )


def inverse3() -> Construction:
    """A^-1 of a 3x3 A (2 layers, heads 5 / 1); singular A is a SingularMatrixError."""
    a = _input()
    res, intents = inverse3_ref(a, name="out")
    return DividingConstruction(
        "inverse3",
        PAPER_REF,
        res.sop,
        Layout.of(a.block, *res.aux, res.block),
        ("A",),
        inverse_reference,
        intents=_short(intents),
        paper_cost=PAPER_COST["inverse3"],
    )


#: The constructions this module declares (registered by :mod:`attnsim.catalog`).
CONSTRUCTIONS = (
    ConstructionEntry("cofactor3", PAPER_REF, cofactor3),
    ConstructionEntry("det3", PAPER_REF, det3),
    ConstructionEntry("inverse3", PAPER_REF, inverse3),
)
