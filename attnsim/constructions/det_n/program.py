"""General n x n determinant and inverse (beyond the paper, which stops at 3 x 3), exact over Q.

**Faddeev-LeVerrier** (``method="faddeev"``, the default)::

    M_1 = I,  c_{n-1} = -tr(A);   M_{k+1} = A M_k + c_{n-k} I,  c_{n-k-1} = -tr(A M_{k+1}) / (k+1)
    det A = (-1)^n c_0,   A^-1 = -M_n / c_0      (Cayley-Hamilton: A M_n + c_0 I = 0)

where det(xI - A) = x^n + c_{n-1} x^{n-1} + ... + c_0.  Every step is exact over the rationals
(products, sums, division by the constants k and, once, by c_0), and the program is composed
only of lemma forms: ``matmul_ref`` for A M_k (n - 2 products), ``transpose_ref`` for A^T (once),
and two small steps written here: ``trace_ref`` (n x mean over the diagonal keys) and
``frobenius_ref`` (sum of an entrywise product = (rows cols) x mean over the block), both
broadcast to every position by a key-only mask (the engine's fast path).  tr(A M_{k+1}) is
read as <A^T, M_{k+1}> (Frobenius), which needs no product and runs beside the next matmul.
**Depth** (exact, checked by the tests): ``depth(n)`` = 1 for n = 1 and **2n - 2** for n >= 2:
linear in n by design (a matmul is 2 layers, and M_{k+1} needs c_{n-k}).  <= 3 heads per layer,
n^3 positions (the matmul's spread products).

**Power sums** (``method="powers"``, Csanky's algorithm): A^2 .. A^(n-1) by doubling (n - 2
products, ``n/2`` in parallel per level), p_k = tr(A^k) as Frobenius sums, Newton's identities
in one MLP, Cayley-Hamilton for the inverse.  Depth ``powers_depth(n)`` = **2 ceil(log2(n-1)) + 1**
(n >= 3): 3 for n = 3, 9 for n = 16, 11 for n = 32; <= 4 heads per layer, but O(n) value channels
per layer and one generalized MLP of O(n) sequential primitives (Newton's recursion), which the
cost reports as ``mlp_depth``.

**Against Giannou et al. 2023** ("Looped Transformers as Programmable Computers"): their looped
transformer inverts *approximately* by Newton iterations X <- X(2I - AX), a constant depth per
iteration, but the number of iterations grows with the condition number and the accuracy wanted
(about log2 cond(A) + log2 log2(1/eps)), and the result is never exact.  Ours is exact over Q
for every invertible A, with a depth fixed by n alone (O(n), or O(log n) with ``powers``), not
by the condition number.

**Float64**: both algorithms are numerically unstable (the coefficients come from traces of
powers of A, cancelling heavily).  ``MEASURED_REL_ERROR`` lists the max relative error against
the exact result of the same float inputs on standard normal matrices (``measure(ns)``
re-measures): Faddeev 5e-16 at n = 3, 2e-13 at n = 8, 5e-12 at n = 16, 2e-7 at n = 32, while
NumPy's LU stays near 1e-14.  The numeric obligations assert ``NUMERIC_TOL`` (50-200x the
measurement; the three, with the obligations, in :mod:`attnsim.constructions.det_n.obligations`).
The exact backend has no such error: it returns the true det / inverse of the
given rationals (denominators grow with n; n = 16 takes tens of seconds).

**Stated float64 accuracy** (``FLOAT_TOL`` = 1e-6; checked on every ``run`` with the numpy backend,
so a wrong number is never returned silently): ``inverse(n).run(A)`` returns X with
``max |A X - I| <= 1e-6``, ``det(n).run(A)`` returns d with ``|d - det_LU| <= 1e-6 |det_LU|``
(NumPy's LU determinant as the yardstick), or raises :class:`InaccurateResultError` with the
measured residual and cond(A).  Measured on standard normal A (seed 0, 3 draws): max |A X - I|
1e-12 at n = 8, 2e-11 at n = 16, 5e-9 at n = 24, 1e-7 at n = 32, up to 6.5e-2 at n = 48 (refused);
the det's relative difference 2e-13 / 1e-12 / 3e-11 / 3e-9 / 3.5e-4.  Set ``con.float_tolerance``
to tighten or loosen the bound, or ``con.on_inaccurate = "warn"`` for an :class:`AccuracyWarning`
instead; ``backend="exact"`` has no error at all.  The check is :mod:`attnsim.constructions.det_n.float_accuracy`
(``FLOAT_TOL`` and both classes are importable from here too).
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from attnsim.constructions.construction import Construction, ConstructionError
from attnsim.constructions.det3.program import det_reference, inverse_reference, scalar_block
from attnsim.constructions.det_n.float_accuracy import FLOAT_TOL as FLOAT_TOL
from attnsim.constructions.det_n.float_accuracy import AccuracyWarning as AccuracyWarning
from attnsim.constructions.det_n.float_accuracy import CheckedDet, CheckedInverse
from attnsim.constructions.det_n.float_accuracy import InaccurateResultError as InaccurateResultError
from attnsim.constructions.matmul.program import matmul_ref
from attnsim.constructions.transpose.program import _check_sizes, transpose_ref
from attnsim.proofs.registry import ConstructionEntry
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.intent import Enumeration, Intent, K, Q
from attnsim.rasp.layout import Block, Layout, MatRef

PAPER_REF = "Lemma (inverse, determinant) generalized to n x n (Faddeev-LeVerrier; beyond the paper)"
PAPER_COST = {
    "layers": None,
    "note": "the paper has only 3x3 (det 4 layers, inverse 5); ours: 2n-2 (faddeev) or 2ceil(log2(n-1))+1 (powers)",
}


def depth(n: int) -> int:
    """Layers of ``det(n)`` and ``inverse(n)``: 1 for n = 1, 2n - 2 for n >= 2."""
    return 1 if n == 1 else 2 * n - 2


# -- small steps -------------------------------------------------------------------------------
def _same(u: E.Expr, v: E.Expr) -> bool:
    """The same size expression, or (all sizes bound) the same value."""
    if E.render(u) == E.render(v):
        return True
    return not (C.unbound_sizes(u) | C.unbound_sizes(v)) and int(u) == int(v)


def _require_square(blk: Block, name: str) -> None:
    """A square, single matrix: the same size expression for rows and cols (or equal bound values)."""
    if not blk.is_single:
        raise ConstructionError(f"{name}: trace of a stack is not supported")
    if _same(blk.rows, blk.cols):
        return
    raise ConstructionError(f"{name}: trace needs a square matrix, got {E.render(blk.rows)} x {E.render(blk.cols)}")


def trace_ref(a: MatRef, name: str = "trace") -> tuple[MatRef, list[Intent]]:
    """Composable form: tr(A) = n x mean over the diagonal keys, broadcast to every position."""
    blk = a.block
    if not blk.is_single:
        raise ConstructionError(f"{name}: trace of a stack is not supported")

    def flag(p: E.Expr) -> E.Expr:
        _, i, j = blk.coords(p)
        return blk.contains(p) & i.eq(j)  # a 0/1 flag

    sel = C.select(C.imap(flag, C.indices).named(f"{name}.mask"), C.full(1), "==").named(f"{name}.sum")
    mean = C.aggregate(sel, a.sop).named(f"{name}.mean")
    _require_square(blk, name)
    tr = C.apply("scale", mean, params=(blk.rows,)).named(name)  # n x mean, n a size expression
    _, ki, kj = blk.coords(K)
    intent = Intent(
        f"{name}.sum",
        sel,
        blk.contains(K) & ki.eq(kj),
        Q >= 0,
        f"every query selects exactly the n diagonal keys of {blk.name}",
        keys=Enumeration(key=lambda q, lv: blk.position(lv, lv), witness=lambda k: blk.coords(k)[1], count=blk.rows),
    )
    return MatRef(tr, scalar_block(name)), [intent]


def frobenius_ref(x: MatRef, y: MatRef, name: str = "frobenius") -> tuple[MatRef, list[Intent]]:
    """Composable form: sum_ij x[i,j] y[i,j] (x, y on the same positions), broadcast everywhere.

    With x = A^T this is tr(A y): the trace of a product without forming the product.
    """
    bx, by = x.block, y.block
    pairs = zip((bx.offset, bx.stack, bx.rows, bx.cols), (by.offset, by.stack, by.rows, by.cols), strict=True)
    if not all(_same(u, v) for u, v in pairs):
        raise ConstructionError(f"{name}: operands must occupy the same positions ({bx.name} vs {by.name})")
    if not bx.is_single:
        raise ConstructionError(f"{name}: the Frobenius product of a stack is not supported")
    prod = C.apply("mul", x.sop, y.sop).named(f"{name}.terms")
    mask = C.imap(lambda p: bx.contains(p), C.indices).named(f"{name}.mask")
    sel = C.select(mask, C.full(1), "==").named(f"{name}.sum")
    mean = C.aggregate(sel, prod).named(f"{name}.mean")
    total = C.apply("scale", mean, params=(bx.size_expr(),)).named(name)  # rows x cols x mean
    intent = Intent(
        f"{name}.sum",
        sel,
        bx.contains(K),
        Q >= 0,
        f"every query selects exactly the keys of the {bx.name} block",
        keys=Enumeration(
            key=lambda q, r, c: bx.position(r, c),
            witness=lambda k: (bx.coords(k)[1], bx.coords(k)[2]),
            count=(bx.rows, bx.cols),
        ),
    )
    return MatRef(total, scalar_block(name)), [intent]


def plus_identity(m: MatRef, c: C.SOp, name: str) -> MatRef:
    """M + c I, position-wise (an MLP step: the identity pattern is an index function)."""
    eye_sop = identity_ref(m.block, f"{name}.eye").sop
    out = C.apply("add", m.sop, C.apply("mul", c, eye_sop)).named(name)
    return MatRef(out, dataclasses.replace(m.block, name=name, channel=name))


def identity_ref(blk: Block, name: str) -> MatRef:
    """I on the positions of ``blk`` (structural: no attention)."""

    def eye(p: E.Expr) -> E.Expr:
        _, i, j = blk.coords(p)
        return blk.contains(p) & i.eq(j)  # 0/1

    return MatRef(C.imap(eye, C.indices).named(name), dataclasses.replace(blk, name=name, channel=name))


def _trace_of_product(
    a: MatRef,
    m: MatRef,
    transposes: dict[int, MatRef],
    name: str,
    label: str,
    intents: list[Intent],
    aux: list[Block],
) -> MatRef:
    """tr(A M) = <A^T, M>: A^T is placed once per offset of M (cached in ``transposes``)."""
    if m.block.start not in transposes:
        at, its = transpose_ref(a, offset=m.block.start, name=f"{name}.At{len(transposes) or ''}")
        transposes[m.block.start] = at
        intents += _tagged(its, f"{name}.transpose")
        aux.append(at.block)
    f, its = frobenius_ref(transposes[m.block.start], m, name=label)
    intents += [dataclasses.replace(i, name=f"{name}.frobenius.sum") for i in its]
    return f


def faddeev_iteration_ref(
    a: MatRef,
    m: MatRef | None,
    c: C.SOp,
    k: E.Expr,
    name: str,
    c_name: str,
    transposes: dict[int, MatRef],
    intents: list[Intent],
    aux: list[Block],
) -> tuple[MatRef, C.SOp]:
    """Step k of Faddeev-LeVerrier, the one form det(n)'s loop and ``faddeev_steps.iteration_step``
    share: M_{k+1} = A M_k + c I (A M_1 = A when ``m`` is None: no product), then
    c' = -tr(A M_{k+1}) / (k + 1) = -<A^T, M_{k+1}> / (k + 1) (``next_coefficient``)."""
    if m is None:
        p = a
    else:
        p, its = matmul_ref(a, m, name=f"{name}.P{_tag(k)}")
        intents += _tagged(its, f"{name}.matmul")
        aux += [*p.aux, p.block]
    m_next = plus_identity(p, c, f"{name}.M{_tag(k, 1)}")
    aux.append(m_next.block)
    f = _trace_of_product(a, m_next, transposes, name, f"{name}.tr{_tag(k, 1)}", intents, aux)
    return m_next, next_coefficient(f.sop, k, c_name)


def _tag(e: E.Expr, plus: int = 0) -> str:
    """A label suffix: the step's number (+ ``plus``) when it is one, else its expression."""
    return str(e.value + plus) if isinstance(e, E.Const) else E.render(e + plus if plus else e).replace(" ", "")


def next_coefficient(trace_am: C.SOp, k: E.Expr, name: str) -> C.SOp:
    """c_{n-k-1} = -tr(A M_{k+1}) / (k + 1): the constant is a size expression of the step index k,
    so that one symbolic-k step (``faddeev_steps.iteration_step``) covers every iteration of the loop."""
    return C.apply("scale", trace_am, params=(C.Ratio(E.Const(0) - 1, k + 1),)).named(name)


# -- Faddeev-LeVerrier ---------------------------------------------------------------------------
def faddeev_ref(
    a: MatRef, name: str = "faddeev", inverse: bool = True
) -> tuple[MatRef, MatRef | None, list[Intent], list[Block]]:
    """Composable form: (det A, A^-1) of a square ``a``; also the intents and auxiliary blocks.

    The inverse divides by c_0: a singular A makes it undefined (division by 0 on the exact
    backend, inf/nan in float64); det is always defined.
    """
    blk = a.block
    n = blk.shape[0]
    if not blk.is_single or blk.shape != (n, n):
        raise ConstructionError(f"{name}: det/inverse need a square matrix, got shape {blk.shape}")
    intents: list[Intent] = []
    aux: list[Block] = []
    tr, its = trace_ref(a, name=f"{name}.trA")
    intents += its
    c = C.apply("scale", tr.sop, params=(-1,)).named(f"{name}.c{n - 1}")  # c_{n-1}
    m: MatRef | None = None  # M_1 = I is only needed (as M_n) when n = 1
    transposes: dict[int, MatRef] = {}  # A^T, placed on the positions of each M_k (by offset)
    for k in range(1, n):  # the same step form faddeev_steps proves for every n and every k
        m, c = faddeev_iteration_ref(a, m, c, E.Const(k), name, f"{name}.c{n - k - 1}", transposes, intents, aux)
    det = (c if n % 2 == 0 else C.apply("neg", c)).named(f"{name}.det")
    det_ref = MatRef(det, scalar_block(f"{name}.det"))
    if not inverse:  # build nothing the det does not read
        return det_ref, None, _dedupe(intents), aux
    if m is None:
        m = identity_ref(Block.of("I", 0, blk.rows, blk.cols), f"{name}.M1")
    inv = C.apply("div", m.sop, C.apply("neg", c)).named(f"{name}.inverse")
    inv_blk = dataclasses.replace(m.block, name=f"{name}.inverse", channel=f"{name}.inverse")
    return det_ref, MatRef(inv, inv_blk), _dedupe(intents), aux


def powers_ref(  # noqa: C901
    a: MatRef, name: str = "csanky", inverse: bool = True
) -> tuple[MatRef, MatRef | None, list[Intent], list[Block]]:
    """Composable form, logarithmic depth: (det A, A^-1) from the power sums p_k = tr(A^k).

    A^2 .. A^(n-1) by doubling (level j multiplies A^(2^(j-1)) into every power <= 2^(j-1), in
    parallel: n - 2 products, 2 ceil(log2(n-1)) layers); p_1 = tr(A), p_k = <A^T, A^(k-1)> (one
    layer more); then one MLP solves Newton's identities  k e_k = sum_{i<=k} (-1)^(i-1) e_(k-i) p_i
    (exact over Q: divisions by the constants k only), det A = e_n, and Cayley-Hamilton gives
    A^-1 = -(1/c_0) sum_{k=1}^{n} c_k A^(k-1) with c_(n-k) = (-1)^k e_k (Csanky's algorithm).
    """
    blk = a.block
    n = blk.shape[0]
    if not blk.is_single or blk.shape != (n, n):
        raise ConstructionError(f"{name}: det/inverse need a square matrix, got shape {blk.shape}")
    intents: list[Intent] = []
    aux: list[Block] = []
    pw: dict[int, MatRef] = {1: a}  # A^k (k >= 2 on positions 0..n^2-1, the matmul output)
    top = 1
    while top < n - 1:
        for k in range(1, top + 1):
            if top + k > n - 1:
                break
            prod, its = matmul_ref(pw[top], pw[k], name=f"{name}.A{top + k}")
            intents += _tagged(its, f"{name}.matmul")
            aux += [*prod.aux, prod.block]
            pw[top + k] = prod
        top *= 2
    tr, its = trace_ref(a, name=f"{name}.trA")
    intents += its
    p: dict[int, C.SOp] = {1: tr.sop}
    transposes: dict[int, MatRef] = {}
    for k in range(2, n + 1):
        m = pw[k - 1]
        f = _trace_of_product(a, m, transposes, name, f"{name}.p{k}", intents, aux)
        p[k] = f.sop
    # Newton's identities (one MLP): e_0 = 1, k e_k = sum_{i=1}^{k} (-1)^(i-1) e_(k-i) p_i
    e: dict[int, C.SOp] = {}
    for k in range(1, n + 1):
        acc = p[k]  # the i = k term, e_0 p_k (sign (-1)^(k-1) applied below)
        acc = acc if k % 2 == 1 else C.apply("neg", acc)
        for i in range(k - 1, 0, -1):  # the newest e_(k-1) last: MLP depth 3 per k, O(n) in all
            term = C.apply("mul", e[k - i], p[i])
            acc = C.apply("add" if i % 2 == 1 else "sub", acc, term)
        e[k] = C.apply("scale", acc, params=(Fraction(1, k),)).named(f"{name}.e{k}")
    det = MatRef(C.apply("identity", e[n]).named(f"{name}.det"), scalar_block(f"{name}.det"))
    if not inverse:  # build nothing the det does not read
        return det, None, _dedupe(intents), aux
    pw[0] = identity_ref(Block.of("I", 0, blk.rows, blk.cols), f"{name}.I")
    if blk.start != 0:  # the sum needs every power on one place: A I brings A to 0 (parallel with A^2)
        pw[1], its = matmul_ref(a, pw[0], name=f"{name}.A1")
        intents += _tagged(its, f"{name}.matmul")
        aux += [*pw[1].aux, pw[1].block]
    # A^-1 = -(1/c_0) sum_{k=1}^{n} c_k A^(k-1),  c_(n-j) = (-1)^j e_j,  c_n = 1
    acc2: C.SOp = pw[n - 1].sop
    for k in range(1, n):
        j = n - k
        term2 = C.apply("mul", e[j], pw[k - 1].sop)
        acc2 = C.apply("add" if j % 2 == 0 else "sub", acc2, term2)
    c0 = e[n] if n % 2 == 0 else C.apply("neg", e[n])
    inv = C.apply("div", acc2, C.apply("neg", c0)).named(f"{name}.inverse")
    base = pw[n - 1].block
    inv_blk = dataclasses.replace(base, name=f"{name}.inverse", channel=f"{name}.inverse")
    return det, MatRef(inv, inv_blk), _dedupe(intents), aux


def powers_depth(n: int) -> int:
    """Layers of the power-sum variant: 1 (n = 1), 2 (n = 2), 2 ceil(log2(n - 1)) + 1 (n >= 3)."""
    if n <= 2:
        return n
    return 2 * (n - 2).bit_length() + 1


def _tagged(intents: list[Intent], prefix: str) -> list[Intent]:
    return [dataclasses.replace(i, name=f"{prefix}.{i.name}") for i in intents]


def _dedupe(intents: list[Intent]) -> list[Intent]:
    """One intent per structurally distinct selector (every iteration reuses the same patterns)."""
    seen: set[str] = set()
    out = []
    for it in intents:
        fp = it.selector.fingerprint
        if fp not in seen:
            seen.add(fp)
            out.append(it)
    return out


METHODS = ("faddeev", "powers")


def _make(n: int, what: str, method: str) -> Construction:
    _check_sizes(n=n)
    if method not in METHODS:
        raise ConstructionError(f"unknown method {method!r}; use one of {METHODS}")
    size = C.Size("n", n)
    a = MatRef(C.tokens, Block.of("A", 0, size, size))
    build = faddeev_ref if method == "faddeev" else powers_ref
    det, inv, intents, aux = build(a, name="f", inverse=what == "inverse")
    res = det if inv is None else inv
    out = dataclasses.replace(res.block, name="out", channel="out")
    intents = [_rename(i) for i in intents]
    layout = Layout.of(a.block, *_unique(aux), out)
    if what == "det":
        return CheckedDet(
            "det",
            PAPER_REF,
            res.sop,
            layout,
            ("A",),
            det_reference,
            out_shape=(),
            intents=intents,
            paper_cost={**PAPER_COST, "layers_3x3": 4},
        )
    return CheckedInverse(
        "inverse",
        PAPER_REF,
        res.sop,
        layout,
        ("A",),
        inverse_reference,
        intents=intents,
        paper_cost={**PAPER_COST, "layers_3x3": 5},
    )


def _rename(it: Intent) -> Intent:
    return dataclasses.replace(it, name=it.name.removeprefix("f."))


def _unique(blocks: list[Block]) -> list[Block]:
    out: list[Block] = []
    for b in blocks:
        if b.channel == "tokens" or any(o.name == b.name for o in out):
            continue
        out.append(b)
    return out


def det(n: int, method: str = "faddeev") -> Construction:
    """det(A) for A n x n, exact over Q (a 0-d result).

    ``method="faddeev"``: depth ``depth(n)`` = 2n - 2; ``"powers"``: depth ``powers_depth(n)``,
    about 2 log2 n (more channels, same n - 2 products, weaker in float64).
    """
    return _make(n, "det", method)


def inverse(n: int, method: str = "faddeev") -> Construction:
    """A^-1 for A n x n, exact over Q; singular A is a SingularMatrixError. ``method`` as for ``det``."""
    return _make(n, "inverse", method)


def det_ref(a: MatRef, name: str = "det", method: str = "faddeev") -> tuple[MatRef, list[Intent]]:
    """Composable form of ``det`` (a broadcast scalar)."""
    build = faddeev_ref if method == "faddeev" else powers_ref
    d, _, intents, _ = build(a, name=name, inverse=False)
    return d, intents


def inverse_ref(a: MatRef, name: str = "inverse", method: str = "faddeev") -> tuple[MatRef, list[Intent]]:
    """Composable form of ``inverse`` (auxiliary blocks in ``.aux``)."""
    build = faddeev_ref if method == "faddeev" else powers_ref
    _, inv, intents, aux = build(a, name=name)
    assert inv is not None
    return MatRef(inv.sop, inv.block, aux=tuple(_unique(aux))), intents


#: The constructions this module declares (registered by :mod:`attnsim.catalog`).
CONSTRUCTIONS = (
    ConstructionEntry("det", PAPER_REF, lambda: det(3)),
    ConstructionEntry("inverse", PAPER_REF, lambda: inverse(3)),
)
