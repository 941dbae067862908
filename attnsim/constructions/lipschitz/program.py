"""Application (approximation): a MaxMin (GroupSort) network, simulated by our transformer
program, approximating an L-Lipschitz function on a box within epsilon.

No universality theorem is invoked; two elementary constructions, each proven here.
Let f be L-Lipschitz for some l_p norm (hence for l_1, as ||.||_p <= ||.||_1) on a box
B = prod_a [lo_a, hi_a] in R^d, and G a grid with spacing at most h per axis (end points included).

**Interpolation (d = 1, method "interpolation").** The piecewise-linear interpolant g of f on
G satisfies |f - g| <= L h / 2: for x = (1 - t) x_0 + t x_1, |f(x) - g(x)| <= (1 - t) L t h + t L (1 - t) h.
g(x) = f_0 + s_0 (x - x_0) + sum_k (s_k - s_(k-1)) relu(x - x_k), and relu(z) = max(z, 0) is one
MaxMin pair (z, 0): linear, MaxMin, linear -- **5 layers for every epsilon**, width 2 n + 2.

**McShane/Whitney midpoint (any d, method "mcshane").** With f_k = f(y_k),
lower(x) = max_k (f_k - L ||x - y_k||_1) <= f(x) <= upper(x) = min_k (f_k + L ||x - y_k||_1) and, with
y* the nearest node (||x - y*||_1 <= d h / 2), f - lower <= L d h and upper - f <= L d h, so
g = (lower + upper) / 2 has |f - g| <= L d h / 2.  Network: |z| = max(z, -z) is one MaxMin pair and
a max or min of two is one MaxMin pair:
1. M_1: for every axis a and node coordinate g the pair (x_a - g, g - x_a); MaxMin -> |x_a - g|;
2. M_2: lower_k = f_k - L sum_a |x_a - y_k,a| and upper_k = f_k + L sum_a |.|, in pairs;
3. c = ceil(log2 N) tree levels: MaxMin (max of lower pairs, min of upper pairs), then a 0/1
   matrix re-pairs the winners; the last matrix outputs (lower + upper) / 2.
2 + c matmuls (2 layers each) and 1 + c MaxMins (1 layer each): **layers = 5 + 3 c**.

In both, h = 2 epsilon / (L d), so sup |f - g| <= epsilon, with n_a = ceil((hi_a - lo_a) / h) + 1
nodes per axis, N = prod n_a (d = 1: N = ceil(L (hi - lo) / (2 epsilon)) + 1; d = 2:
N = (ceil(L (hi - lo) / epsilon) + 1)^2).  Biases ride on a constant pair (1, 1) that MaxMin leaves
unchanged.  Rows are points: a linear layer is H @ M (our ``matmul_ref``, M a weight block in the
input sequence, as the simulator's weights are) and the activation is our ``maxmin_ref`` on each
row.  Positions = the longest of the weights (in the tokens) and the product blocks
(batch x m_t x m_(t+1)).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from attnsim.constructions.construction import Construction, ConstructionError
from attnsim.constructions.matmul.program import matmul_ref
from attnsim.constructions.maxmin.program import maxmin_ref
from attnsim.proofs.registry import ConstructionEntry
from attnsim.rasp import core as C
from attnsim.rasp.guards import complex_entry
from attnsim.rasp.intent import Intent
from attnsim.rasp.layout import Block, Layout, MatRef, as_array

PAPER_REF = "Application (approximation of Lipschitz functions)"
MAX_NODES = 20000


@dataclass(repr=False)  # Construction's one-line repr (not the weights)
class LipschitzNetwork(Construction):
    """The program plus the GroupSort network it evaluates; ``run(x)`` takes only the points."""

    weights: list[np.ndarray] = field(default_factory=list)
    dim: int = 1
    batch: int = 1
    bound: float = 0.0
    spacing: float = 0.0
    nodes_per_axis: tuple[int, ...] = ()
    method: str = "mcshane"
    domain: tuple[tuple[float, float], ...] = ()

    def check_domain(self, points: np.ndarray) -> None:
        """Refuse points outside the domain: sup |f - g| <= epsilon holds only there.

        Outside, g extrapolates (sin on [-pi, pi] gave -6.86 at x = 10), so such a point is an
        error, not a number.  Symbolic coordinates are not checked.
        """
        if not self.domain:
            return
        pts = np.asarray(points).reshape(-1, self.dim)
        for k, (lo, hi) in enumerate(self.domain):
            for v in pts[:, k]:
                try:
                    fv = float(v)
                except TypeError:
                    continue
                if not lo <= fv <= hi:
                    raise ConstructionError(
                        # repr, not :g: pi + 1e-9 against the bound pi printed 3.14159 twice
                        f"{self.name}: point coordinate {k} = {fv!r} is outside the domain [{float(lo)!r}, "
                        f"{float(hi)!r}] where the approximation holds"
                    )

    def without_domain(self) -> LipschitzNetwork:
        """A copy that runs at any point: to check program == network beyond the domain (it holds
        everywhere, while the epsilon bound holds only on the domain)."""
        return dataclasses.replace(self, domain=())

    def _operands(self, operands: Sequence[Any], backend: str) -> list[np.ndarray]:
        if len(operands) == 1:
            x = as_array(operands[0])
            bad_complex = complex_entry(x)
            if bad_complex:
                raise ConstructionError(f"{self.name}: points: {bad_complex}")
            try:
                xf = np.asarray(x, dtype=np.float64) if backend == "numpy" else x
            except (TypeError, ValueError):
                raise ConstructionError("points must be real numbers") from None
            want = (self.batch, self.dim)
            if (x.shape == (self.dim,) and self.batch == 1) or (x.shape == (self.dim * self.batch,) and self.dim == 1):
                x = x.reshape(want)
            if x.shape != want:
                raise ConstructionError(f"{self.name}: points must have shape {want}, got {x.shape}")
            if backend == "numpy" and not np.all(np.isfinite(xf)):
                raise ConstructionError(f"{self.name}: points contain NaN or inf")
            self.check_domain(x)
            ones = np.ones((self.batch, 1), dtype=object if x.dtype == object else np.float64)
            operands = [np.concatenate([x, ones], axis=1), *self.weights]
        return super()._operands(operands, backend)

    def network(self, points: Any) -> np.ndarray:
        """The GroupSort network in float64 on many points (shape (m, dim)): what the program computes."""
        bad_complex = complex_entry(points)
        if bad_complex:
            raise ConstructionError(f"{self.name}: points: {bad_complex}")
        x = np.asarray(points, dtype=np.float64).reshape(-1, self.dim)
        if not np.all(np.isfinite(x)):
            raise ConstructionError(f"{self.name}: points contain NaN or inf")
        self.check_domain(x)
        h = np.concatenate([x, np.ones((len(x), 1))], axis=1)
        return np.asarray(_forward(h, self.weights, "numpy"), dtype=np.float64)[:, 0]

    def size(self) -> dict[str, Any]:
        """Layers, heads, positions, nodes and widths of this instance."""
        c = self.cost()
        return {
            "layers": c.layers,
            "heads": c.heads,
            "positions": self.layout.total,
            "nodes": int(np.prod(self.nodes_per_axis)),
            "widths": [int(m.shape[1]) for m in self.weights],
            "matmuls": len(self.weights),
            "maxmins": len(self.weights) - 1,
            "parameters": int(sum(m.size for m in self.weights)),
            "method": self.method,
        }


def _maxmin_rows(p: np.ndarray, backend: str) -> np.ndarray:
    a, b = p[:, 0::2], p[:, 1::2]
    out = np.empty_like(p)
    if backend == "numpy":
        out[:, 0::2], out[:, 1::2] = np.maximum(a, b), np.minimum(a, b)
    else:
        out[:, 0::2] = np.vectorize(max, otypes=[object])(a, b)
        out[:, 1::2] = np.vectorize(min, otypes=[object])(a, b)
    return out


def _forward(h: np.ndarray, weights: Sequence[np.ndarray], backend: str) -> np.ndarray:
    """Linear, MaxMin, linear, ..., linear (rows are points)."""
    for t, m in enumerate(weights):
        h = h @ m
        if t < len(weights) - 1:
            h = _maxmin_rows(h, backend)
    return h


def _weights(grid: list[np.ndarray], fvals: np.ndarray, lip: float) -> list[np.ndarray]:
    """M_1 (abs pairs), M_2 (envelopes), tree re-pairings and the final average (float64)."""
    d = len(grid)
    # M_1: input (x_1..x_d, 1) -> pairs (x_a - g, g - x_a) for every node coordinate, then (1, 1)
    coords = [(a, g) for a in range(d) for g in grid[a]]
    m1 = np.zeros((d + 1, 2 * len(coords) + 2))
    for c, (a, g) in enumerate(coords):
        m1[a, 2 * c], m1[d, 2 * c] = 1.0, -g
        m1[a, 2 * c + 1], m1[d, 2 * c + 1] = -1.0, g
    m1[d, -2:] = 1.0
    # M_2: after MaxMin, slot 2c holds |x_a - g_c|; lower_k at 2t, upper_k at 2t + 1 of pair block
    offsets = np.cumsum([0] + [len(g) for g in grid])
    nodes = list(itertools.product(*(range(len(g)) for g in grid)))
    n = len(nodes)
    npad = n + (n % 2)
    m2 = np.zeros((m1.shape[1], 2 * npad + 2))
    for k in range(npad):
        kk = min(k, n - 1)  # padding repeats the last node: max(a, a) = a
        node = nodes[kk]
        col_l, col_u = k, npad + k  # lower block then upper block, consecutive pairs inside each
        for a, t in enumerate(node):
            slot = 2 * (offsets[a] + t)
            m2[slot, col_l] = -lip
            m2[slot, col_u] = lip
        m2[-1, col_l] = fvals[kk]
        m2[-1, col_u] = fvals[kk]
    m2[-1, -2:] = 1.0
    mats = [m1, m2]
    count = npad  # lower values, in pairs at 0..count-1; upper at count..2 count-1
    while True:
        half = count // 2  # winners: lower max at 2i, upper min at count + 2i + 1
        if half == 1:
            last = np.zeros((2 * count + 2, 1))
            last[0, 0], last[count + 1, 0] = 0.5, 0.5
            mats.append(last)
            return mats
        nxt = half + (half % 2)
        m = np.zeros((2 * count + 2, 2 * nxt + 2))
        for i in range(nxt):
            ii = min(i, half - 1)
            m[2 * ii, i] = 1.0
            m[count + 2 * ii + 1, nxt + i] = 1.0
        m[-1, -2:] = 1.0
        mats.append(m)
        count = nxt


def _grid(domain: Sequence[tuple[float, float]], h: float) -> list[np.ndarray]:
    out = []
    for lo, hi in domain:
        n = math.ceil((hi - lo) / h - 1e-12) + 1
        out.append(np.linspace(lo, hi, max(n, 2)))
    return out


def _parse_domain(domain: Any) -> list[tuple[float, float]]:
    try:
        arr = np.asarray(domain, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConstructionError(f"domain must be (lo, hi) or ((lo1, hi1), (lo2, hi2)), got {domain!r}") from None
    if arr.shape == (2,):
        arr = arr.reshape(1, 2)
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] < 1:
        raise ConstructionError(f"domain must be (lo, hi) or ((lo1, hi1), (lo2, hi2)), got {domain!r}")
    if not np.all(np.isfinite(arr)) or np.any(arr[:, 0] >= arr[:, 1]):
        raise ConstructionError(f"domain intervals must be finite with lo < hi, got {arr.tolist()}")
    return [(float(a), float(b)) for a, b in arr]


def lipschitz_approximator(
    f: Callable[..., float],
    lipschitz_constant: float,
    epsilon: float,
    domain: Any,
    *,
    batch: int = 1,
    check_lipschitz: bool = True,
    method: str = "auto",
) -> LipschitzNetwork:
    """A transformer program evaluating a GroupSort network g with sup |f - g| <= epsilon on ``domain``.

    ``f`` takes d floats (d = 1 for ``domain=(lo, hi)``, d = 2 for a square/box) and must be
    ``lipschitz_constant``-Lipschitz for some l_p norm.  ``batch`` points are evaluated per run.
    ``method``: "interpolation" (d = 1 only: constant depth), "mcshane" (any d), "auto" (the first
    when d = 1).
    """
    lip, eps = float(lipschitz_constant), float(epsilon)
    if not (np.isfinite(lip) and lip > 0):
        raise ConstructionError(f"lipschitz_constant must be a positive finite number, got {lipschitz_constant!r}")
    if not (np.isfinite(eps) and eps > 0):
        raise ConstructionError(f"epsilon must be a positive finite number, got {epsilon!r}")
    if not callable(f):
        raise ConstructionError(f"f must be callable, got {f!r}")
    dom = _parse_domain(domain)
    d = len(dom)
    method = _method(method, d)
    h = 2 * eps / (lip * d)
    n_est = math.prod(math.ceil((hi - lo) / h) + 1 for lo, hi in dom)
    if n_est > MAX_NODES:
        raise ConstructionError(f"the grid would need {n_est} nodes (> {MAX_NODES}); raise epsilon")
    grid = _grid(dom, h)
    nodes = list(itertools.product(*grid))
    fvals = np.array([float(f(*pt)) for pt in nodes])
    if not np.all(np.isfinite(fvals)):
        raise ConstructionError("f is not finite at some grid node")
    if check_lipschitz:
        _check_lipschitz(grid, fvals, lip)
    weights = _weights(grid, fvals, lip) if method == "mcshane" else _interp_weights(grid[0], fvals)
    net = _program(
        weights,
        d,
        batch,
        bound=lip * d * max(float(g[1] - g[0]) for g in grid) / 2,
        spacing=max(float(g[1] - g[0]) for g in grid),
        nodes=tuple(len(g) for g in grid),
    )
    net.method = method
    net.domain = tuple(dom)
    return net


def _method(method: str, d: int) -> str:
    if method == "auto":
        return "interpolation" if d == 1 else "mcshane"
    if method not in ("interpolation", "mcshane"):
        raise ConstructionError(f"method must be 'auto', 'interpolation' or 'mcshane', got {method!r}")
    if method == "interpolation" and d != 1:
        raise ConstructionError(f"method 'interpolation' is 1-D only; the domain has {d} dimensions")
    return method


def _interp_weights(x: np.ndarray, fv: np.ndarray) -> list[np.ndarray]:
    """1-D piecewise-linear interpolation g(x) = f_0 + s_0 (x - x_0) + sum_k (s_k - s_(k-1)) relu(x - x_k).

    Hidden pairs: (x - x_k, 0) for interior knots (MaxMin -> relu), (x - x_0, x - x_0) and (1, 1)
    (MaxMin leaves equal pairs unchanged)."""
    n = len(x)
    slopes = np.diff(fv) / np.diff(x)
    inner = n - 2
    m1 = np.zeros((2, 2 * inner + 4))
    m2 = np.zeros((2 * inner + 4, 1))
    for k in range(1, n - 1):
        c = 2 * (k - 1)
        m1[0, c], m1[1, c] = 1.0, -x[k]
        m2[c, 0] = slopes[k] - slopes[k - 1]
    c = 2 * inner
    m1[0, c : c + 2], m1[1, c : c + 2] = 1.0, -x[0]
    m2[c, 0] = slopes[0]
    m1[1, -2:] = 1.0
    m2[-2, 0] = fv[0]
    return [m1, m2]


def _check_lipschitz(grid: list[np.ndarray], fvals: np.ndarray, lip: float) -> None:
    shape = tuple(len(g) for g in grid)
    v = fvals.reshape(shape)
    for a, g in enumerate(grid):
        step = np.diff(g)
        dv = np.abs(np.diff(v, axis=a))
        lim = lip * step.reshape([-1 if b == a else 1 for b in range(len(grid))])
        if np.any(dv > lim * (1 + 1e-9) + 1e-12):
            raise ConstructionError(f"f is not {lip}-Lipschitz: neighbouring grid nodes on axis {a} differ by more")


def _program(
    weights: list[np.ndarray], d: int, batch: int, bound: float, spacing: float, nodes: tuple[int, ...]
) -> LipschitzNetwork:
    if not isinstance(batch, int) or batch < 1:
        raise ConstructionError(f"batch must be a positive int, got {batch!r}")
    x_blk = Block.of("x", 0, batch, d + 1)
    blocks = [x_blk]
    off = x_blk.end_expr()
    w_blks = []
    for t, m in enumerate(weights):
        b = Block.of(f"M{t + 1}", off, int(m.shape[0]), int(m.shape[1]))
        w_blks.append(b)
        off = b.end_expr()
    blocks += w_blks
    h = MatRef(C.tokens, x_blk)
    intents: list[Intent] = []
    for t, wb in enumerate(w_blks):
        p, its = matmul_ref(h, MatRef(C.tokens, wb), name=f"lin{t + 1}" if t < len(w_blks) - 1 else "out")
        intents += [dataclasses.replace(it, name=f"lin{t + 1}-{it.name}") for it in its]
        blocks += [*p.aux, p.block]
        if t < len(w_blks) - 1:
            h, its = maxmin_ref(p, name=f"act{t + 1}")
            intents += [dataclasses.replace(it, name=f"act{t + 1}-{it.name}") for it in its]
            blocks.append(h.block)
        else:
            h = p
    layout = Layout.of(*blocks)

    def reference(x: np.ndarray, *ms: np.ndarray, backend: str = "numpy") -> Any:
        return _forward(x, ms, backend)

    return LipschitzNetwork(
        "lipschitz",
        PAPER_REF,
        h.sop,
        layout,
        ("x", *(b.name for b in w_blks)),
        reference,
        out_shape=(batch, 1),
        intents=intents,
        paper_cost={"layers": None, "heads": None, "note": "claimed (Lipschitz/Holder), no sizes given"},
        weights=weights,
        dim=d,
        batch=batch,
        bound=bound,
        spacing=spacing,
        nodes_per_axis=nodes,
    )


def size_formula(lipschitz_constant: float, epsilon: float, domain: Any, method: str = "auto") -> dict[str, int]:
    """The closed-form size (no program built): nodes, tree depth c, matmuls, MaxMins, layers."""
    dom = _parse_domain(domain)
    d = len(dom)
    method = _method(method, d)
    h = 2 * float(epsilon) / (float(lipschitz_constant) * d)
    n = math.prod(max(math.ceil((hi - lo) / h - 1e-12) + 1, 2) for lo, hi in dom)
    if method == "interpolation":
        return {"nodes": n, "tree_levels": 0, "matmuls": 2, "maxmins": 1, "layers": 5}
    c = math.ceil(math.log2(n))
    return {"nodes": n, "tree_levels": c, "matmuls": 2 + c, "maxmins": 1 + c, "layers": 5 + 3 * c}


def exact_points(net: LipschitzNetwork, count: int, seed: int = 0) -> list[np.ndarray]:
    """Random rational points in [-2, 2]^d (program == network holds everywhere, not only on the box:
    run them on ``net.without_domain()``)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        pts = np.empty((net.batch, net.dim), dtype=object)
        for ix in np.ndindex(*pts.shape):
            pts[ix] = Fraction(int(rng.integers(-400, 401)), 200)
        out.append(pts)
    return out


def sawtooth(x: float) -> float:
    """A triangle wave of slope +-3 (3-Lipschitz): 3 x distance from x to the nearest multiple of 0.77
    (kinks at multiples of 0.385, off the grids used here)."""
    return float(3 * abs(x - 0.77 * np.round(x / 0.77)))


def cone(x: float, y: float) -> float:
    """The 2-D cone ||(x, y)||_2 (1-Lipschitz)."""
    return float(np.hypot(x, y))


EXAMPLES: dict[str, tuple[Callable[..., float], float, Any]] = {
    "abs": (abs, 1.0, (-1.0, 1.0)),
    "sin": (math.sin, 1.0, (-math.pi, math.pi)),
    "sawtooth": (sawtooth, 3.0, (0.0, 2.0)),
    "cone": (cone, 1.0, ((-1.0, 1.0), (-1.0, 1.0))),
}


def sup_error(net: LipschitzNetwork, f: Callable[..., float], domain: Any, points_per_axis: int) -> float:
    """max |f - network| on a uniform grid of ``points_per_axis`` per axis (the network in float64)."""
    dom = _parse_domain(domain)
    axes = [np.linspace(lo, hi, points_per_axis) for lo, hi in dom]
    pts = np.array(list(itertools.product(*axes)))
    fv = np.array([f(*p) for p in pts])
    return float(np.max(np.abs(net.network(pts) - fv)))


def error_table(epsilons: Sequence[float], fine: tuple[int, int] = (20001, 401)) -> list[dict[str, Any]]:
    """Per example function, method and epsilon: size and the achieved sup error on a fine grid."""
    rows = []
    for name, (f, lip, dom) in EXAMPLES.items():
        d = np.reshape(dom, (-1, 2)).shape[0]
        for method in ("interpolation", "mcshane") if d == 1 else ("mcshane",):
            for eps in epsilons:
                net = lipschitz_approximator(f, lip, eps, dom, method=method)
                err = sup_error(net, f, dom, fine[0] if d == 1 else fine[1])
                rows.append({"function": name, "L": lip, "epsilon": eps, "sup_error": err, **net.size()})
    return rows


def small_network() -> LipschitzNetwork:
    """The catalogue's example: |x| on [-1, 1], L = 1, epsilon = 0.5, McShane's extension."""
    return lipschitz_approximator(abs, 1.0, 0.5, (-1.0, 1.0), method="mcshane")


#: The constructions this module declares (registered by :mod:`attnsim.catalog`).
CONSTRUCTIONS = (
    ConstructionEntry("lipschitz", PAPER_REF, small_network),
)


__all__ = [
    "EXAMPLES",
    "LipschitzNetwork",
    "cone",
    "error_table",
    "exact_points",
    "lipschitz_approximator",
    "sawtooth",
    "size_formula",
    "sup_error",
]
