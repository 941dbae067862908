"""Independent specifications: each construction's textbook statement, in matrix coordinates.

This module imports nothing from :mod:`attnsim.rasp` nor any layout: a specification says what
entry (h, i, j) of the result is, from the operands' entries and the sizes, the way a textbook
does (out[h, i, j] = A[h, j, i]; sum_{l < k} A[h, i, l] B[h, l, j]; ...).  The all-sizes proof
compares a program with its specification at a symbolic entry and symbolic sizes
(:mod:`attnsim.symbolic.execute`); :meth:`BoundSpec.evaluate` runs the very same definition on
concrete operands, and the tests compare that with the NumPy reference, so a wrong spec fails on
its own.

A definition is a function ``entry(alg, ops, h, i, j, sz)``: ``ops[name][h, i, j]`` reads an
operand (stack index first, 0 for a single matrix), ``sz[name]`` a size, and ``alg`` supplies
the operations whose meaning differs between the symbolic and the concrete reading (a sum over
``l < upper``, exp, max, min, erf, tanh, sqrt, and ``if_true`` for a 0/1 option operand: an ``Ite``
symbolically, a Python branch concretely).

:data:`ENCODER_LAYER` states one whole encoder layer T(X) (attention with masks, residual,
LayerNorm none / pre / post, ReLU, GELU or tanh-GELU FFN) in torch's parameter layout.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp

from attnsim.symbolic.if_then_else import ite


class SpecError(ValueError):
    """A specification was evaluated on something it is not defined for."""


class SymbolicAlg:
    """Sums as SymPy ``Sum`` over a fresh bound variable; exp, max, min as SymPy functions."""

    def __init__(self, prefix: str = "s!") -> None:
        self._n = itertools.count()
        self.prefix = prefix  # two instances whose statements meet need two prefixes (no capture)

    def sum(self, body: Callable[[Any], Any], upper: Any) -> Any:
        var = sp.Symbol(f"{self.prefix}{next(self._n)}", integer=True)  # "!": never a size's name
        return sp.Sum(body(var), (var, 0, upper - 1))

    def exp(self, x: Any) -> Any:
        return sp.exp(x)

    def max(self, a: Any, b: Any) -> Any:
        return sp.Max(a, b)

    def min(self, a: Any, b: Any) -> Any:
        return sp.Min(a, b)

    def if_even(self, j: Any, even: Callable[[], Any], odd: Callable[[], Any]) -> Any:
        return ite(sp.Eq(sp.Mod(j, 2), 0), even(), odd())

    def if_less(self, a: Any, b: Any, then: Callable[[], Any], other: Callable[[], Any]) -> Any:
        return ite(sp.Lt(a, b), then(), other())

    def delta(self, i: Any, j: Any) -> Any:
        return ite(sp.Eq(i, j), 1, 0)

    def elu1(self, x: Any) -> Any:
        return ite(x > 0, x + 1, sp.exp(x))

    def sqrt(self, x: Any) -> Any:
        return sp.sqrt(x)

    def mod(self, x: Any, m: int) -> Any:
        return sp.Mod(x, m)

    def if_true(self, flag: Any, then: Callable[[], Any], other: Callable[[], Any]) -> Any:
        """``then`` where the 0/1 operand ``flag`` is 1, else ``other`` (an ``Ite``, never a Piecewise)."""
        return ite(sp.Eq(flag, 1), then(), other())

    def erf(self, x: Any) -> Any:
        return sp.erf(x)

    def tanh(self, x: Any) -> Any:
        return sp.tanh(x)

    def pi(self) -> Any:
        return sp.pi

    def rational(self, p: int, q: int) -> Any:
        return sp.Rational(p, q)

    def rsqrt(self, x: Any) -> Any:
        """1 / sqrt(x), left unevaluated: evaluating the power of a large sum asks SymPy's assumptions
        about every Sum in it (minutes for one encoder layer)."""
        return sp.Pow(x, -sp.S.Half, evaluate=False)

    def relu(self, x: Any) -> Any:
        """max(x, 0) as (x + |x|) / 2: SymPy's Max and x > 0 refuse a large argument its assumptions
        wrongly call non-real (a product of a real power and a Sum of operands)."""
        return (x + sp.Abs(x)) / 2


@dataclass
class ConcreteAlg:
    """Sums as Python sums over ``range(upper)``; exp per backend (numpy float, SymPy; none exact)."""

    backend: str

    def sum(self, body: Callable[[int], Any], upper: Any) -> Any:
        terms = [body(v) for v in range(int(upper))]
        return sum(terms[1:], terms[0]) if terms else 0

    def exp(self, x: Any) -> Any:
        if self.backend == "numpy":
            try:
                return math.exp(x)
            except OverflowError:  # IEEE float64, as np.exp: e^x > max float is inf (1 / inf = 0)
                return math.inf
        if self.backend == "sympy":
            return sp.exp(x)
        raise SpecError("exp has no exact (Fraction) value; use backend='sympy' or 'numpy'")

    def max(self, a: Any, b: Any) -> Any:
        return sp.Max(a, b) if self.backend == "sympy" else max(a, b)

    def min(self, a: Any, b: Any) -> Any:
        return sp.Min(a, b) if self.backend == "sympy" else min(a, b)

    def if_even(self, j: int, even: Callable[[], Any], odd: Callable[[], Any]) -> Any:
        return even() if j % 2 == 0 else odd()

    def if_less(self, a: Any, b: Any, then: Callable[[], Any], other: Callable[[], Any]) -> Any:
        return then() if a < b else other()

    def delta(self, i: int, j: int) -> int:
        return 1 if i == j else 0

    def elu1(self, x: Any) -> Any:
        if self.backend == "sympy":
            return x + 1 if x > 0 else sp.exp(x)
        return x + 1 if x > 0 else self.exp(x)

    def sqrt(self, x: Any) -> Any:
        return sp.sqrt(x) if self.backend == "sympy" else math.sqrt(x)

    def mod(self, x: Any, m: int) -> Any:
        return x % m

    def if_true(self, flag: Any, then: Callable[[], Any], other: Callable[[], Any]) -> Any:
        if flag == 1:
            return then()
        if flag == 0:
            return other()
        raise SpecError(f"a 0/1 option operand is {flag}, not 0 or 1")

    def erf(self, x: Any) -> Any:
        return sp.erf(x) if self.backend == "sympy" else math.erf(x)

    def tanh(self, x: Any) -> Any:
        return sp.tanh(x) if self.backend == "sympy" else math.tanh(x)

    def pi(self) -> Any:
        return sp.pi if self.backend == "sympy" else math.pi

    def rational(self, p: int, q: int) -> Any:
        """p / q: exact in SymPy, the nearest float64 otherwise."""
        return sp.Rational(p, q) if self.backend == "sympy" else p / q

    def relu(self, x: Any) -> Any:
        return self.max(x, 0)

    def rsqrt(self, x: Any) -> Any:
        return 1 / sp.sqrt(x) if self.backend == "sympy" else 1 / math.sqrt(x)


Entry = Callable[[Any, Mapping[str, Any], Any, Any, Any, Mapping[str, Any]], Any]


@dataclass(frozen=True)
class Spec:
    """A named textbook statement: output shape (stack, rows, cols) and entry formula."""

    name: str
    operands: tuple[str, ...]
    sizes: tuple[str, ...]
    shape: Callable[[Mapping[str, Any]], tuple[Any, Any, Any]]
    entry: Entry
    statement: str

    def at(self, /, **sizes: Any) -> BoundSpec:
        """The spec with its size names given (ints, or a construction's size objects)."""
        missing = set(self.sizes) - set(sizes)
        if missing:
            raise SpecError(f"spec {self.name} needs sizes {sorted(missing)}")
        return BoundSpec(self, dict(sizes))


@dataclass(frozen=True)
class BoundSpec:
    """A spec whose sizes are named by the caller's objects (resolved to ints or symbols on use)."""

    spec: Spec
    sizes: dict[str, Any] = field(default_factory=dict)

    def symbolic(self, h: Any, i: Any, j: Any, to_sym: Callable[[Any], Any]) -> Any:
        """Entry (h, i, j) as a SymPy expression: operands as IndexedBase named like the operands."""
        sz = {k: to_sym(v) for k, v in self.sizes.items()}
        ops = {name: sp.IndexedBase(name) for name in self.spec.operands}
        return self.spec.entry(SymbolicAlg(), ops, h, i, j, sz)

    def evaluate(
        self, operands: Mapping[str, np.ndarray], resolve: Callable[[Any], int], backend: str = "numpy"
    ) -> np.ndarray:
        """Every entry on concrete operands: an array of shape (stack, rows, cols)."""
        sz = {k: int(resolve(v)) for k, v in self.sizes.items()}
        ops = {}
        for name in self.spec.operands:
            a = np.asarray(operands[name])
            ops[name] = a.reshape((1, *a.shape)) if a.ndim == 2 else a
        alg = ConcreteAlg(backend)
        shape = tuple(int(x) for x in self.spec.shape(sz))
        out = np.empty(shape, dtype=np.float64 if backend == "numpy" else object)
        for h, i, j in np.ndindex(*shape):
            out[h, i, j] = self.spec.entry(alg, ops, h, i, j, sz)
        return out


def _stack(sz: Mapping[str, Any]) -> Any:
    return sz.get("heads", 1)


TRANSPOSE = Spec(
    "transpose",
    ("A",),
    ("rows", "cols", "heads"),
    lambda sz: (_stack(sz), sz["cols"], sz["rows"]),
    lambda alg, ops, h, i, j, sz: ops["A"][h, j, i],
    "out[h, i, j] = A[h, j, i]",
)

MATMUL = Spec(
    "matmul",
    ("A", "B"),
    ("rows", "inner", "cols", "heads"),
    lambda sz: (_stack(sz), sz["rows"], sz["cols"]),
    lambda alg, ops, h, i, j, sz: alg.sum(lambda m: ops["A"][h, i, m] * ops["B"][h, m, j], sz["inner"]),
    "out[h, i, j] = sum_{l < inner} A[h, i, l] B[h, l, j]",
)

PERMUTE3 = Spec(
    "permute3",
    ("A",),
    ("d0", "d1", "d2"),
    lambda sz: (sz["d1"], sz["d2"], sz["d0"]),
    lambda alg, ops, a, b, c, sz: ops["A"][c, a, b],
    "out[a, b, c] = A[c, a, b] for A of shape (d0, d1, d2)",
)

BROADCAST_ROW = Spec(
    "broadcast-row",
    ("A",),
    ("depth", "rows", "cols"),
    lambda sz: (1, sz["rows"], sz["cols"]),
    lambda alg, ops, h, i, j, sz: ops["A"][0, 0, j],
    "out[i, j] = A[0, j] for A of shape (depth, cols), i < rows",
)

CONSUMER_MATMUL = Spec(
    "consumer-matmul",
    ("A", "B"),
    ("rows", "inner", "cols", "extra"),
    lambda sz: (sz["rows"], sz["cols"], sz["extra"]),
    lambda alg, ops, i, j, m, sz: alg.sum(lambda s: ops["A"][0, i, s] * ops["B"][0, s, j], sz["inner"]),
    "out[i, j, m] = sum_{l < inner} A[i, l] B[l, j] for every m < extra",
)

TWO_AXIS_SUM = Spec(
    "two-axis-sum",
    ("A",),
    ("depth", "rows", "width", "cols"),
    lambda sz: (1, sz["rows"], sz["cols"]),
    lambda alg, ops, h, i, j, sz: alg.sum(lambda e: alg.sum(lambda w: ops["A"][e, i, w], sz["width"]), sz["depth"]),
    "out[i, j] = sum_{e < depth} sum_{w < width} A[e, i, w] for every j < cols",
)

SOFTMAX = Spec(
    "softmax",
    ("A",),
    ("rows", "cols", "heads"),
    lambda sz: (_stack(sz), sz["rows"], sz["cols"]),
    lambda alg, ops, h, i, j, sz: (
        alg.exp(ops["A"][h, i, j]) / alg.sum(lambda m: alg.exp(ops["A"][h, i, m]), sz["cols"])
    ),
    "out[h, i, j] = exp(A[h, i, j]) / sum_{l < cols} exp(A[h, i, l])",
)

RELU = Spec(
    "relu",
    ("A",),
    ("rows", "n"),
    lambda sz: (1, sz["rows"], sz["n"]),
    lambda alg, ops, h, i, j, sz: alg.max(ops["A"][h, i, j], 0),
    "out[i, j] = max(A[i, j], 0)",
)

MAXMIN = Spec(
    "maxmin",
    ("A",),
    ("rows", "n"),
    lambda sz: (1, sz["rows"], sz["n"]),
    lambda alg, ops, h, i, j, sz: alg.if_even(
        j,
        lambda: alg.max(ops["A"][h, i, j], ops["A"][h, i, j + 1]),
        lambda: alg.min(ops["A"][h, i, j - 1], ops["A"][h, i, j]),
    ),
    "out[i, 2t] = max(A[i, 2t], A[i, 2t+1]), out[i, 2t+1] = min(A[i, 2t], A[i, 2t+1])",
)

MASKED_SOFTMAX = Spec(
    "softmax-masked",
    ("A", "n"),
    ("rows", "cols", "heads"),
    lambda sz: (_stack(sz), sz["rows"], sz["cols"]),
    lambda alg, ops, h, i, j, sz: alg.if_less(
        j,
        ops["n"][0, 0, 0],
        lambda: alg.exp(ops["A"][h, i, j]) / alg.sum(lambda m: alg.exp(ops["A"][h, i, m]), ops["n"][0, 0, 0]),
        lambda: 0,
    ),
    "out[h, i, j] = exp(A[h, i, j]) / sum_{l < n} exp(A[h, i, l]) for j < n, else 0 (n an operand, 1 <= n <= cols)",
)


def _trace(alg: Any, a: Any, n: Any) -> Any:
    return alg.sum(lambda m: a[0, m, m], n)


TRACE = Spec(
    "trace",
    ("A",),
    ("n",),
    lambda sz: (1, 1, 1),
    lambda alg, ops, h, i, j, sz: _trace(alg, ops["A"], sz["n"]),
    "out = tr A = sum_{l < n} A[l, l]",
)

FROBENIUS = Spec(
    "frobenius",
    ("A",),
    ("rows", "cols"),
    lambda sz: (1, 1, 1),
    lambda alg, ops, h, i, j, sz: alg.sum(
        lambda r: alg.sum(lambda c: ops["A"][0, r, c] * (2 * ops["A"][0, r, c] + 1), sz["cols"]), sz["rows"]
    ),
    "out = <A, 2A + 1> = sum_{r < rows} sum_{c < cols} A[r, c] (2 A[r, c] + 1)",
)

FIRST_STEP = Spec(
    "first-step",
    ("A",),
    ("n",),
    lambda sz: (1, sz["n"], sz["n"]),
    lambda alg, ops, h, i, j, sz: ops["A"][0, i, j] - _trace(alg, ops["A"], sz["n"]) * alg.delta(i, j),
    "M_2 = A - tr(A) I",
)

GENERAL_STEP = Spec(
    "general-step",
    ("A", "M", "c"),
    ("n",),
    lambda sz: (1, sz["n"], sz["n"]),
    lambda alg, ops, h, i, j, sz: (
        alg.sum(lambda m: ops["A"][0, i, m] * ops["M"][0, m, j], sz["n"]) + ops["c"][0, 0, 0] * alg.delta(i, j)
    ),
    "M' = A M + c I (c an operand)",
)

COEFFICIENT_STEP = Spec(
    "coefficient-step",
    ("A", "M"),
    ("n",),
    lambda sz: (1, 1, 1),
    lambda alg, ops, h, i, j, sz: alg.sum(
        lambda r: alg.sum(lambda c: ops["A"][0, r, c] * ops["M"][0, c, r], sz["n"]), sz["n"]
    ),
    "out = tr(A M) = sum_r sum_c A[r, c] M[c, r]",
)


def _next_m(alg: Any, ops: Mapping[str, Any], i: Any, j: Any, n: Any) -> Any:
    """(A M + c I)[i, j]."""
    return alg.sum(lambda m: ops["A"][0, i, m] * ops["M"][0, m, j], n) + ops["c"][0, 0, 0] * alg.delta(i, j)


ITERATION = Spec(
    "iteration",
    ("A", "M", "c"),
    ("n", "k"),
    lambda sz: (1, 1, 1),
    lambda alg, ops, h, i, j, sz: (
        -alg.sum(lambda r: alg.sum(lambda q: ops["A"][0, r, q] * _next_m(alg, ops, q, r, sz["n"]), sz["n"]), sz["n"])
        / (sz["k"] + 1)
    ),
    "c' = -tr(A (A M + c I)) / (k + 1): step k of Faddeev-LeVerrier, from (M_k, c_{n-k}) to c_{n-k-1}",
)


def _similarity(alg: Any, ops: Mapping[str, Any], i: Any, l: Any, d: Any) -> Any:  # noqa: E741
    """phi(q_i) . phi(k_l), phi = elu + 1."""
    return alg.sum(lambda m: alg.elu1(ops["Q"][0, i, m]) * alg.elu1(ops["K"][0, l, m]), d)


LINEAR_ATTENTION = Spec(
    "linear_attention",
    ("Q", "K", "V"),
    ("n", "d", "dv"),
    lambda sz: (1, sz["n"], sz["dv"]),
    lambda alg, ops, h, i, j, sz: (
        alg.sum(lambda l: _similarity(alg, ops, i, l, sz["d"]) * ops["V"][0, l, j], sz["n"])  # noqa: E741
        / alg.sum(lambda l: _similarity(alg, ops, i, l, sz["d"]), sz["n"])  # noqa: E741
    ),
    "out[i, j] = sum_l sim(i, l) V[l, j] / sum_l sim(i, l), sim(i, l) = phi(q_i) . phi(k_l) (the quadratic form)",
)


def _lf_score(alg: Any, ops: Mapping[str, Any], i: Any, l: Any, sz: Mapping[str, Any]) -> Any:  # noqa: E741
    """(Q (E K)^T)[i, l] / sqrt(d)."""
    ek = lambda m: alg.sum(lambda t: ops["E"][0, l, t] * ops["K"][0, t, m], sz["n"])
    return alg.sum(lambda m: ops["Q"][0, i, m] * ek(m), sz["d"]) / alg.sqrt(sz["d"])


LINFORMER = Spec(
    "linformer",
    ("Q", "K", "V", "E", "F"),
    ("n", "d", "dv", "kp"),
    lambda sz: (1, sz["n"], sz["dv"]),
    lambda alg, ops, h, i, j, sz: alg.sum(
        lambda c: (
            alg.exp(_lf_score(alg, ops, i, c, sz))
            / alg.sum(lambda r: alg.exp(_lf_score(alg, ops, i, r, sz)), sz["kp"])
            * alg.sum(lambda t: ops["F"][0, c, t] * ops["V"][0, t, j], sz["n"])
        ),
        sz["kp"],
    ),
    "out = softmax(Q (E K)^T / sqrt(d)) (F V)",
)

PARITY = Spec(
    "parity",
    ("x",),
    ("length",),
    lambda sz: (1, 1, sz["length"]),
    lambda alg, ops, h, i, j, sz: alg.mod(alg.sum(lambda m: ops["x"][0, 0, m], sz["length"]), 2),
    "out[j] = (sum_{l < length} x[l]) mod 2 at every position j (x binary)",
)


# -- one encoder layer T(X) -------------------------------------------------------------------

#: torch's ``TransformerEncoderLayer`` state-dict names -> ENCODER_LAYER's operand names ('.' -> '_',
#: the ``self_attn.`` prefix dropped).
ENCODER_LAYER_NAMES = {
    "self_attn.in_proj_weight": "in_proj_weight",
    "self_attn.in_proj_bias": "in_proj_bias",
    "self_attn.out_proj.weight": "out_proj_weight",
    "self_attn.out_proj.bias": "out_proj_bias",
    "linear1.weight": "linear1_weight",
    "linear1.bias": "linear1_bias",
    "linear2.weight": "linear2_weight",
    "linear2.bias": "linear2_bias",
    "norm1.weight": "norm1_weight",
    "norm1.bias": "norm1_bias",
    "norm2.weight": "norm2_weight",
    "norm2.bias": "norm2_bias",
}


def _encoder_layer(alg: Any, ops: Mapping[str, Any], _h: Any, i: Any, e: Any, sz: Mapping[str, Any]) -> Any:
    """out[i, e] of one encoder layer (the statement of ENCODER_LAYER)."""
    return encoder_layer_parts(alg, ops, sz)["out"](i, e)


def encoder_layer_parts(
    alg: Any,
    ops: Mapping[str, Any],
    sz: Mapping[str, Any],
    given: Mapping[str, Callable[..., Any]] | None = None,
) -> dict[str, Callable[..., Any]]:
    """The statement of ENCODER_LAYER as its named intermediate quantities (stage proofs state
    their claims in them): z1(r, t), proj(part, r, h, c), logit(h, r, l), weight(h, r, j),
    head(hd, r, t), attn(r, t), y1_in(r, t), y1(r, t), z2(r, t), act(r, g), y2_in(r, t), out(i, e).

    ``given`` (name -> function of the same coordinates) replaces those intermediates: every later
    one is then written over the given function instead of the definition (e.g. ``out`` over an
    opaque y1 and act, which a stage proof reads from earlier stages: :func:`given_parts`; attn
    over each head's opaque term head(hd, r, t), the attention stage's cut).  With the definitions
    given, it is the same statement (the definitions are substituted back).

    Every intermediate is a function of its coordinates, memoized per entry (the same value is
    read by many sums; memoizing changes no value, only the concrete evaluation's cost)."""
    given = dict(given or {})
    unknown = set(given) - set(PART_NAMES)
    if unknown:
        raise SpecError(f"given intermediates {sorted(unknown)} are not parts of ENCODER_LAYER: {PART_NAMES}")

    terms = _SpecTerms(alg, ops, sz, given)
    attention = _attention_parts(terms)
    parts = (*attention, *_block_parts(terms, attention[-1]))
    return dict(zip(PART_NAMES, parts, strict=True))


@dataclass
class _SpecTerms:
    """What every intermediate of :func:`encoder_layer_parts` reads: the algebra, the operands, the
    true sizes, the given intermediates and one memo per entry."""

    alg: Any
    ops: Mapping[str, Any]
    sz: Mapping[str, Any]
    given: Mapping[str, Callable[..., Any]]
    memo: dict[tuple[Any, ...], Any] = field(default_factory=dict)

    def pick(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """The given intermediate ``name``, else its definition ``fn``."""
        return self.given.get(name, fn)

    def cached(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` memoized per entry."""
        memo = self.memo

        def get(*args: Any) -> Any:
            key = (fn, *args)
            if key not in memo:
                memo[key] = fn(*args)
            return memo[key]

        return get

    def vec(self, name: str, r: Any) -> Any:
        """Entry r of a vector operand (one row, (1, len))."""
        return self.ops[name][0, 0, r]

    def opt(self, name: str) -> Any:
        """A scalar / 0/1 option operand ((1, 1))."""
        return self.ops[name][0, 0, 0]

    def x(self, r: Any, t: Any) -> Any:
        """The input X[r, t]."""
        return self.ops["X"][0, r, t]

    def layer_norm(self, val: Callable[[Any, Any], Any], w: str, b: str) -> Callable[[Any, Any], Any]:
        """torch.nn.LayerNorm over the d features of row r: biased variance, eps inside the root."""
        alg, d, cached, opt, vec = self.alg, self.sz["d"], self.cached, self.opt, self.vec
        mean = cached(lambda r: alg.sum(lambda u: val(r, u), d) / d)
        var = cached(lambda r: alg.sum(lambda u: (val(r, u) - mean(r)) ** 2, d) / d)
        return lambda r, t: (val(r, t) - mean(r)) * alg.rsqrt(var(r) + opt("eps")) * vec(w, t) + vec(b, t)


def _attention_parts(s: _SpecTerms) -> tuple[Callable[..., Any], ...]:
    """The attention block's intermediates: z1, proj, logit, weight, head, attn."""
    alg, ops, pick, cached, vec, opt, x, layer_norm = s.alg, s.ops, s.pick, s.cached, s.vec, s.opt, s.x, s.layer_norm
    n, d, hh, k = s.sz["n"], s.sz["d"], s.sz["hh"], s.sz["k"]
    hk = hh * k
    ln1_x = layer_norm(x, "norm1_weight", "norm1_bias")

    @cached
    def z1(r: Any, t: Any) -> Any:  # the attention's input: norm1(X) when pre, else X
        return alg.if_true(opt("pre"), lambda: ln1_x(r, t), lambda: x(r, t))

    z1 = pick("z1", z1)

    @cached
    def proj(part: int, r: Any, hd: Any, c: Any) -> Any:  # part 0, 1, 2: q, k, v of head hd, coordinate c
        row = part * hk + hd * k + c
        return alg.sum(lambda t: z1(r, t) * ops["in_proj_weight"][0, row, t], d) + vec("in_proj_bias", row)

    proj = pick("proj", proj)

    @cached
    def logit(hd: Any, r: Any, l: Any) -> Any:  # noqa: E741
        qk = alg.sum(lambda c: proj(0, r, hd, c) * proj(1, l, hd, c), k)
        return opt("scale") * qk + ops["additive"][0, r, l]

    logit = pick("logit", logit)

    @cached
    def weight(hd: Any, r: Any, j: Any) -> Any:  # softmax over the unblocked keys, as 1 / sum exp(s_l - s_j)
        def denominator() -> Any:
            return alg.sum(
                lambda l: alg.if_true(  # noqa: E741
                    ops["blocked"][0, r, l], lambda: 0, lambda: alg.exp(logit(hd, r, l) - logit(hd, r, j))
                ),
                n,
            )

        return alg.if_true(ops["blocked"][0, r, j], lambda: 0, lambda: 1 / denominator())

    weight = pick("weight", weight)

    @cached
    def head(hd: Any, r: Any, t: Any) -> Any:  # head hd's term of attn(r, t): its A_h V_h through W_O
        one = lambda c: alg.sum(lambda j: weight(hd, r, j) * proj(2, j, hd, c), n)
        return alg.sum(lambda c: ops["out_proj_weight"][0, t, hd * k + c] * one(c), k)

    head = pick("head", head)

    @cached
    def attn(r: Any, t: Any) -> Any:  # concat_h(A_h V_h) out_proj.weight^T + out_proj.bias
        return alg.sum(lambda hd: head(hd, r, t), hh) + vec("out_proj_bias", t)

    attn = pick("attn", attn)

    return z1, proj, logit, weight, head, attn


def _block_parts(s: _SpecTerms, attn: Callable[..., Any]) -> tuple[Callable[..., Any], ...]:
    """The residual, LayerNorms and FFN after attention: y1_in, y1, z2, act, y2_in, out."""
    alg, ops, pick, cached, vec, opt, x, layer_norm = s.alg, s.ops, s.pick, s.cached, s.vec, s.opt, s.x, s.layer_norm
    d, f = s.sz["d"], s.sz["f"]

    @cached
    def y1_in(r: Any, t: Any) -> Any:
        return attn(r, t) + alg.if_true(opt("residual"), lambda: x(r, t), lambda: 0)

    y1_in = pick("y1_in", y1_in)

    ln1_y = layer_norm(y1_in, "norm1_weight", "norm1_bias")

    @cached
    def y1(r: Any, t: Any) -> Any:  # after the attention block: norm1(...) when post
        return alg.if_true(opt("post"), lambda: ln1_y(r, t), lambda: y1_in(r, t))

    y1 = pick("y1", y1)

    ln2_y = layer_norm(y1, "norm2_weight", "norm2_bias")

    @cached
    def z2(r: Any, t: Any) -> Any:  # the FFN's input: norm2(y1) when pre
        return alg.if_true(opt("pre"), lambda: ln2_y(r, t), lambda: y1(r, t))

    z2 = pick("z2", z2)

    @cached
    def act(r: Any, g: Any) -> Any:
        u = alg.sum(lambda t: z2(r, t) * ops["linear1_weight"][0, g, t], d) + vec("linear1_bias", g)
        erf_gelu = lambda: u * (1 + alg.erf(u / alg.sqrt(2))) / 2
        # torch's GELU(approximate="tanh"): sqrt(2 / pi) and 0.044715 (a decimal, read exactly)
        tanh_gelu = lambda: u * (1 + alg.tanh(alg.sqrt(2 / alg.pi()) * (u + alg.rational(44715, 10**6) * u**3))) / 2
        return alg.if_true(opt("gelu"), erf_gelu, lambda: alg.if_true(opt("gelu_tanh"), tanh_gelu, lambda: alg.relu(u)))

    act = pick("act", act)

    @cached
    def y2_in(r: Any, t: Any) -> Any:
        ffn = alg.sum(lambda g: act(r, g) * ops["linear2_weight"][0, t, g], f) + vec("linear2_bias", t)
        return ffn + alg.if_true(opt("residual"), lambda: y1(r, t), lambda: 0)

    y2_in = pick("y2_in", y2_in)

    ln2_out = layer_norm(y2_in, "norm2_weight", "norm2_bias")

    def out(i: Any, e: Any) -> Any:  # never given: it is the statement
        return alg.if_true(
            opt("ffn"),
            lambda: alg.if_true(opt("post"), lambda: ln2_out(i, e), lambda: y2_in(i, e)),
            lambda: y1(i, e),
        )

    return y1_in, y1, z2, act, y2_in, out


#: the intermediate quantities of :func:`encoder_layer_parts`, in order
PART_NAMES = ("z1", "proj", "logit", "weight", "head", "attn", "y1_in", "y1", "z2", "act", "y2_in", "out")


def given_parts(
    ops: Mapping[str, Any], sz: Mapping[str, Any], given: Mapping[str, Callable[..., Any]]
) -> dict[str, Callable[..., Any]]:
    """ENCODER_LAYER's intermediates on SymPy operands with those of ``given`` replaced (e.g. by
    opaque functions a stage proof reads from earlier stages): ``given_parts(ops, sz, {"y1": Y1,
    "act": A})["out"]`` is the layer's output written over Y1 and A (small: the layer before y1 is
    never built)."""
    return encoder_layer_parts(SymbolicAlg(), ops, sz, given)


ENCODER_LAYER = Spec(
    "encoder-layer",
    (
        "X",
        "in_proj_weight",
        "in_proj_bias",
        "out_proj_weight",
        "out_proj_bias",
        "linear1_weight",
        "linear1_bias",
        "linear2_weight",
        "linear2_bias",
        "norm1_weight",
        "norm1_bias",
        "norm2_weight",
        "norm2_bias",
        "additive",
        "blocked",
        "residual",
        "pre",
        "post",
        "gelu",
        "gelu_tanh",
        "ffn",
        "scale",
        "eps",
    ),
    ("n", "d", "hh", "k", "f"),
    lambda sz: (1, sz["n"], sz["d"]),
    _encoder_layer,
    "out[i, e] of one encoder layer T(X) (torch's TransformerEncoderLayer, eval), n tokens, d = d_model, "
    "hh heads of size k, d_ff = f; operands in torch's layout (ENCODER_LAYER_NAMES: state-dict name with "
    "'.' -> '_'): in_proj_weight (3 hh k x d; rows part*hh*k + h*k + c, part 0/1/2 = q/k/v, head h, "
    "coordinate c < k), in_proj_bias (3 hh k), out_proj_weight (d x hh k: torch has hh k = d, not assumed "
    "here), out_proj_bias, linear1_weight (f x d), linear1_bias, linear2_weight (d x f), linear2_bias, "
    "norm1/2_weight/bias (d), X (n x d), additive (n x n, finite), blocked (n x n, 0/1); 0/1 options "
    "residual, pre (norm_first), post (at most one of pre and post), gelu, gelu_tanh (else ReLU), ffn; scalars "
    "scale, eps; vectors are 1 x len, scalars 1 x 1.  "
    "z1 = pre ? LN1(X) : X;  q/k/v_h[r, c] = sum_{t<d} z1[r, t] in_proj_weight[part*hh*k + h k + c, t] "
    "+ in_proj_bias[...];  s_h[i, l] = scale sum_{c<k} q_h[i, c] k_h[l, c] + additive[i, l];  "
    "A_h[i, j] = 0 if blocked[i, j] else 1 / sum_{l<n, not blocked[i, l]} exp(s_h[i, l] - s_h[i, j]) "
    "(= exp(s_h[i, j]) / sum_{l unblocked} exp(s_h[i, l]));  "
    "attn[i, e] = sum_{h<hh} sum_{c<k} out_proj_weight[e, h k + c] sum_{j<n} A_h[i, j] v_h[j, c] "
    "+ out_proj_bias[e];  y1 = post ? LN1(X' + attn) : X' + attn, X' = residual ? X : 0;  "
    "z2 = pre ? LN2(y1) : y1;  a[i, g] = act(sum_{t<d} z2[i, t] linear1_weight[g, t] + linear1_bias[g]), "
    "act = gelu ? u (1 + erf(u / sqrt 2)) / 2 : gelu_tanh ? u (1 + tanh(sqrt(2 / pi) (u + 0.044715 u^3))) / 2 "
    ": max(u, 0);  y2 = sum_{g<f} a[i, g] linear2_weight[e, g] "
    "+ linear2_bias[e] + (residual ? y1 : 0);  out = ffn ? (post ? LN2(y2) : y2) : y1;  "
    "LN(v)[r, e] = (v[r, e] - mu_r) / sqrt(var_r + eps) w[e] + b[e], mu_r = sum_{u<d} v[r, u] / d, "
    "var_r = sum_{u<d} (v[r, u] - mu_r)^2 / d (biased)",
)


SPECS: dict[str, Spec] = {
    s.name: s
    for s in (
        TRANSPOSE,
        MATMUL,
        SOFTMAX,
        MASKED_SOFTMAX,
        RELU,
        MAXMIN,
        TRACE,
        FROBENIUS,
        FIRST_STEP,
        GENERAL_STEP,
        COEFFICIENT_STEP,
        ITERATION,
        LINEAR_ATTENTION,
        LINFORMER,
        PARITY,
        ENCODER_LAYER,
    )
}

__all__ = [
    "COEFFICIENT_STEP",
    "ENCODER_LAYER",
    "ENCODER_LAYER_NAMES",
    "FIRST_STEP",
    "FROBENIUS",
    "GENERAL_STEP",
    "ITERATION",
    "LINEAR_ATTENTION",
    "LINFORMER",
    "MASKED_SOFTMAX",
    "MATMUL",
    "MAXMIN",
    "PARITY",
    "PART_NAMES",
    "RELU",
    "SOFTMAX",
    "SPECS",
    "TRACE",
    "TRANSPOSE",
    "BoundSpec",
    "ConcreteAlg",
    "Spec",
    "SpecError",
    "SymbolicAlg",
    "encoder_layer_parts",
    "given_parts",
]
