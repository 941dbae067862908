"""Theorem 6 / 9 in the kernel are not vacuous: U's own encodings meet every premise.

The kernel theorems ``U_<v>_theorem6`` and ``U_<v>_theorem6_out`` (``coq/UniversalTheorem6.v``)
hold under premises on the sequence x, the layer's record P, the mask M, the input X and n.  A
contradictory premise set would make them true of nothing, and Coq would still accept them.  Here
each premise of the exact text Coq checks (:func:`~attnsim.universal.kernel_stages.theorem6_theorems`)
is evaluated on ``U.encode(T, X)`` for layers of every option (norm none / pre / post, FFN or not,
residual or not, ReLU / GELU / tanh-GELU, biases or not, float, bool, causal and key-padding
masks, true sizes below the capacity), both variants, with P, M and X the layer, mask and input
zero-padded to the capacity.  A premise outside the forms below fails the test, never passes
unread.  The query premises (p on the out grid at row i, column e) must be met by some position of
x for every i < N and e < D.

P is tied to T: the line-for-line transcription of EncoderLayer.v's ``encoder_layer`` over P, M
and X agrees with T's reference to 1e-12 (a float comparison, not an exact one), so the theorem's
right-hand side is the layer the user gave.  Wrong premises, encodings and records are caught:
the last tests break each on purpose.  Stacks (``coq/UniversalStack.v``): each record's premises
hold on ``U.encode([T_0 .. T_(m-1)], X)`` seen t records on; seen one position off, they fail.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from attnsim import TransformerLayer, UniversalSimulator
from attnsim.proofs import coq_encoder_layer as CL
from attnsim.universal import kernel_stages as UK
from attnsim.universal.masks import attention_mask

VARIANTS = ("compact", "shallow")
_NORM = {"none": "NoNorm", "post": "PostNorm", "pre": "PreNorm"}
_ACT = {"relu": CL.relu, "gelu": CL.gelu, "gelu_tanh": CL.gelu_tanh}
_SIZE_FIELDS = re.compile(r"\b(d_model|nhead|d_head|dim_ff) P\b")
_OFFSET = re.compile(r"\bU_(?:compact|shallow)_(\w+?)_offset N D H K F\b")
_SAMPLES = (-3.0, -0.5, 0.0, 0.7, 2.5)  # where the activation premise's two functions are compared


@dataclass(frozen=True)
class Case:
    """One layer's encoding and what the premises quantify over, at U's capacity."""

    cap: tuple[int, int, int, int, int]
    variant: str
    x: np.ndarray
    P: CL.Params
    M: CL.Mask
    X: np.ndarray  # (N, D)
    n: int
    offsets: dict[str, int]

    def names(self, **query: int) -> dict[str, Any]:
        return dict(zip("NDHKF", self.cap, strict=True), n=self.n, P=self.P, **query)


Check = Callable[[Case, dict[str, int]], bool]


# -- premises: the forms the statement uses, each read into a Python predicate --------------------
def _split(text: str, sep: str) -> list[str]:
    """``text`` cut at ``sep`` outside parentheses."""
    parts, depth, start, k = [], 0, 0, 0
    while k < len(text):
        ch = text[k]
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and text.startswith(sep, k):
            parts.append(text[start:k].strip())
            start = k = k + len(sep)
            continue
        k += 1
    return [*parts, text[start:].strip()]


def _nat(term: str) -> Callable[[Case, dict[str, int]], int]:
    """A nat term of the statement (sizes, offsets, P's sizes, +, *, %/, %%) as a function."""
    py = term.replace("%nat", "").replace("%/", "//").replace("%%", "%")
    py = _SIZE_FIELDS.sub(r"P.\1", py)
    try:
        if re.search(r"[^\w\s().+*/%<=]", _OFFSET.sub("0", py)):
            raise SyntaxError(term)
        code = compile(_OFFSET.sub(lambda m: f"_off[{m.group(1)!r}]", py), term, "eval")
    except SyntaxError:
        raise ValueError(f"not a nat term: {term!r}") from None

    def value(case: Case, env: dict[str, int]) -> int:
        return int(eval(code, {"__builtins__": {}, "_off": case.offsets}, case.names(**env)))

    return value


def _nth(x: np.ndarray, k: int) -> float:
    return float(x[k]) if k < len(x) else 0.0  # Coq's nth 0: 0 past the end


_BLOCKS: dict[str, Callable[..., Any]] = {
    r"\(fun _ => X\)": lambda c: c.X,
    r"\(fun _ => (\w+) P\)": lambda c, f: getattr(c.P, f),
    r"\(fun _ => (\w+) M\)": lambda c, f: getattr(c.M, f),
    r"\(fun _ => \\matrix_\(t, c\) (\w+) P t 0 c\)": lambda c, f: getattr(c.P, f)[:, 0, :],
    r"\(fun _ => \\matrix_\(i, j\) if blocked M i j then 1 else 0\)": lambda c: c.M.blocked,
    r"\((\w+) P\)": lambda c, f: getattr(c.P, f),
}  # what an ``encodes`` premise says a block holds: (fun _ => A), or a stacked field (Wq P)

_VALUES: dict[str, Callable[..., Any]] = {
    r"n%:R": lambda c: c.n,
    r"\((\w+) P\)%:R": lambda c, f: getattr(c.P, f),
    r"(\w+) P": lambda c, f: getattr(c.P, f),
    r"\(if norm P is (\w+) then 1 else 0\)": lambda c, place: c.P.norm == place,
    r"\(if (\w+) P then 1 else 0\)": lambda c, f: getattr(c.P, f),
}  # the right-hand side of an ``nth 0 x k = ...`` premise


def _reader(forms: dict[str, Callable[..., Any]], term: str) -> Callable[[Case], Any]:
    """``term`` read by the first of ``forms`` that matches it whole."""
    for pattern, read in forms.items():
        m = re.fullmatch(pattern, term)
        if m:
            groups = m.groups()
            return lambda case: read(case, *groups)
    raise ValueError(f"a term of no known form: {term!r}")


def _encodes(args: str) -> Check:
    _x, *terms, contents = _split(args, " ")
    off, h, r, c = (_nat(t) for t in terms)
    stack = _reader(_BLOCKS, contents)

    def holds(case: Case, env: dict[str, int]) -> bool:
        hh, rr, cc = h(case, env), r(case, env), c(case, env)
        A = np.asarray(stack(case), dtype=float)
        A = np.broadcast_to(A, (hh, rr, cc)) if A.shape == (rr, cc) else A
        pos = off(case, env) + np.arange(hh * rr * cc)
        return A.shape == (hh, rr, cc) and bool(pos[-1] < len(case.x)) and bool(np.all(case.x[pos] == A.ravel()))

    return holds


def _zero(binders: str, cond: str, entry: str) -> Check:
    """(forall binders, cond -> F P idx.. = 0) over every index the binders range over."""
    bound = re.findall(r"(\w+) : 'I_(\w)", binders)
    held = _nat(cond)
    words = entry.split()
    if words[0] == "X":
        read: Callable[[Case], np.ndarray] = lambda c: c.X
        idx = words[1:]
    elif words[1:2] == ["P"]:
        read, idx = (lambda c: getattr(c.P, words[0])), words[2:]
    else:
        raise ValueError(f"unknown entry {entry!r}")

    def holds(case: Case, env: dict[str, int]) -> bool:
        sizes = dict(zip("NDHKF", case.cap, strict=True))
        A = read(case)
        for values in np.ndindex(*(sizes[s] for s in (size for _, size in bound))):
            local = {**env, **dict(zip((v for v, _ in bound), values, strict=True))}
            at = tuple(int(i) if i.isdigit() else local[i] for i in idx)
            if held(case, local) and A[at] != 0:
                return False
        return True

    return holds


def _activation(gelu_at: str, tanh_at: str) -> Check:
    g1, g2 = _nat(gelu_at), _nat(tanh_at)

    def holds(case: Case, env: dict[str, int]) -> bool:
        gelu, tanh = _nth(case.x, g1(case, env)) != 0, _nth(case.x, g2(case, env)) != 0
        chosen = CL.gelu if gelu else CL.gelu_tanh if tanh else CL.relu
        return all(case.P.activation(v) == chosen(v) for v in _SAMPLES)

    return holds


def _nth_is(at: str, rhs: str) -> Check:
    k, value = _nat(at), _reader(_VALUES, rhs)
    return lambda case, env: _nth(case.x, k(case, env)) == float(value(case))


def _fits(size: str) -> Check:
    need = _nat(size)
    return lambda case, env: need(case, env) <= len(case.x)


def _query_is(term: str, var: str) -> Check:
    value = _nat(term)
    return lambda case, env: value(case, env) == env[var]


def _true(term: str) -> Check:
    value = _nat(term)
    return lambda case, env: bool(value(case, env))


_ARG = r"(\S+|\(.*\)(?:%nat)?)"
_FORMS: tuple[tuple[str, Callable[..., Check]], ...] = (
    (
        r"\(forall v : R, activation P v = if nth 0 x (\(.*?\)%nat) != 0 then geluf v "
        r"else if nth 0 x (\(.*?\)%nat) != 0 then gelu_tanhf v else Num\.max v 0\)",
        _activation,
    ),
    (r"\(forall (.*?), \((.*)\)%nat -> (.*) = 0\)", _zero),
    (r"encodes x (.*)", lambda args: _encodes(f"x {args}")),
    (rf"nth 0 x {_ARG} = (.*)", _nth_is),
    (r"\((.*) <= size x\)%nat", _fits),
    (r"\((.*)\)%nat = (\w)", _query_is),
    (r"\((.*)\)%nat", _true),
)


def premise(text: str) -> Check:
    """The premise ``text`` (one of the statement's, whitespace folded) as a predicate."""
    text = " ".join(text.split())
    for pattern, build in _FORMS:
        m = re.fullmatch(pattern, text)
        if m:
            return build(*m.groups())
    raise ValueError(f"a premise of no known form: {text!r}")


@dataclass(frozen=True)
class Statement:
    premises: list[str]
    query: list[str]  # the premises naming the query position p


def statement(text: str) -> Statement:
    """A theorem's premises (after its binders, before its conclusion), the query's apart."""
    body = _split(text, ",")
    assert body[0].lstrip().startswith("forall"), text[:80]
    premises = _split(",".join(body[1:]), "->")[:-1]
    query = [p for p in premises if re.search(r"\bp\b", p)]
    return Statement([p for p in premises if p not in query], query)


def violations(text: str, case: Case) -> list[str]:
    """The premises of the theorem ``text`` that ``case`` does not meet (the query premises: no
    position of x meets them at some row i < N and column e < D)."""
    st_ = statement(text)
    bad = [p for p in st_.premises if not premise(p)(case, {})]
    query = [premise(p) for p in st_.query]
    N, D = case.cap[:2]
    for i, e in np.ndindex(N, D):
        env = {"i": int(i), "e": int(e)}
        if query and not any(all(q(case, {**env, "p": p}) for q in query) for p in range(len(case.x))):
            bad.append(f"no position p meets the query premises at i={i}, e={e}")
    return bad


# -- the cases: U's encodings of layers of every option ----------------------------------------
@functools.cache
def _u(cap: tuple[int, int, int, int, int], variant: str) -> UniversalSimulator:
    return UniversalSimulator(*cap, variant=variant)


@functools.cache
def _theorems(variant: str) -> tuple[tuple[str, str], ...]:
    return tuple(UK.theorem6_theorems(variant))


def _pad(a: Any, shape: tuple[int, ...]) -> np.ndarray:
    out = np.zeros(shape)
    a = np.asarray(a, dtype=float)
    out[tuple(slice(0, s) for s in a.shape)] = a
    return out


def record(T: TransformerLayer, cap: tuple[int, int, int, int, int]) -> CL.Params:
    """T as EncoderLayer.v's record ``params`` at ``cap``, zero beyond T's true sizes."""
    _, D, H, K, F = cap
    h, d, k, f = T.n_heads, T.d_model, T.d_head, T.d_ff or 0
    w = {nm: _pad(getattr(T, nm), (H, D, K)) for nm in ("w_q", "w_k", "w_v")}
    b = {nm: _pad(getattr(T, nm)[:, None, :], (H, 1, K)) for nm in ("b_q", "b_k", "b_v")}
    row = lambda v, width: _pad(np.asarray(v, dtype=float)[None], (1, width))
    ffn = T.w1 is not None
    return CL.Params(
        d, h, k, f, w["w_q"], w["w_k"], w["w_v"], b["b_q"], b["b_k"], b["b_v"],
        _pad(np.asarray(T.w_o, dtype=float).reshape(h, k, d), (H, K, D)), row(T.b_o, D),
        _pad(T.w1, (D, F)) if ffn else np.zeros((D, F)), row(T.b1, F) if ffn else np.zeros((1, F)),
        _pad(T.w2, (F, D)) if ffn else np.zeros((F, D)), row(T.b2, D) if ffn else np.zeros((1, D)),
        row(T.ln1_weight, D), row(T.ln1_bias, D), row(T.ln2_weight, D), row(T.ln2_bias, D),
        float(T.eps), float(T.scale), _ACT[T.activation], T.residual, _NORM[T.norm], ffn,
    )  # fmt: skip


@dataclass(frozen=True)
class Layer:
    """A layer T, its input and torch's mask arguments for it, at a capacity."""

    cap: tuple[int, int, int, int, int]
    T: TransformerLayer
    X: np.ndarray
    masks: dict[str, Any]


def encoded(layer: Layer, variant: str) -> Case:
    """``U.encode(T, X)`` and the P, M, X, n the premises quantify over."""
    N, D = layer.cap[:2]
    n = layer.X.shape[0]
    m = attention_mask(n, **layer.masks) if layer.masks else None
    additive = None if m is None else m.additive
    blocked = None if m is None else m.blocked
    U = _u(layer.cap, variant)
    x = U.encode(layer.T, layer.X, additive=additive, blocked=blocked)
    M = CL.Mask(
        _pad(np.zeros((n, n)) if blocked is None else blocked, (N, N)).astype(bool),
        _pad(np.zeros((n, n)) if additive is None else additive, (N, N)),
    )
    offsets = {b.name: int(b.offset) for b in U.layout.blocks}
    return Case(layer.cap, variant, x, record(layer.T, layer.cap), M, _pad(layer.X, (N, D)), n, offsets)


@st.composite
def layers(draw: st.DrawFn) -> Layer:
    """Layers of every option at a capacity above or at their true sizes."""
    N, D, H, K, F = (draw(st.integers(1, hi)) for hi in (3, 4, 2, 2, 3))
    n, d, h, k = (draw(st.integers(1, c)) for c in (N, D, H, K))
    f = draw(st.one_of(st.none(), st.integers(1, F)))
    T = TransformerLayer.random(
        d, h, k, f, seed=draw(st.integers(0, 2**16)),
        residual=draw(st.booleans()), norm=draw(st.sampled_from(sorted(_NORM))),
        activation=draw(st.sampled_from(sorted(_ACT))), biases=draw(st.booleans()),
        eps=draw(st.sampled_from([1e-5, 1e-3, 0.5])),
    )  # fmt: skip
    if draw(st.booleans()):
        T = replace(T, scale=draw(st.sampled_from([0.25, 1.0, 3.0])))
    X = np.random.default_rng(draw(st.integers(0, 2**16))).normal(size=(n, d))
    masks: dict[str, Any] = {}
    kind = draw(st.sampled_from(["none", "float", "bool", "causal", "padding"]))
    event(f"norm {T.norm}, ffn {f is not None}, {T.activation}, residual {T.residual}")
    event(f"mask {kind}, n < N {n < N}, d < D {d < D}, h < H {h < H}, k < K {k < K}")
    rng = np.random.default_rng(n)
    if kind == "float":
        src = rng.normal(size=(n, n))
        src[:, 1:][rng.random((n, n - 1)) < 0.3] = -np.inf  # hidden keys, never key 0
        masks["src_mask"] = src
    elif kind == "bool":
        hidden = rng.random((n, n)) < 0.4
        hidden[:, 0] = False
        masks["src_mask"] = hidden
    elif kind == "causal":
        masks["is_causal"] = True
    elif kind == "padding":
        masks["src_key_padding_mask"] = np.arange(n) >= max(1, n - 1)
    return Layer((N, D, H, K, F), T, X, masks)


def _agrees_with_t(layer: Layer, case: Case) -> bool:
    """EncoderLayer.v's encoder_layer over (P, M, X), transcribed, == T's reference (float64)."""
    n, d = layer.X.shape
    coq = CL.torch_encoder_layer(*layer.cap, case.P, case.M, n, case.X)
    want = layer.T(layer.X, **layer.masks)
    return bool(np.allclose(coq[:n, :d], want, rtol=1e-12, atol=1e-12))


_FEW = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("variant", VARIANTS)
@_FEW
@given(layer=layers())
def test_theorem6s_premises_hold_on_us_encodings(variant: str, layer: Layer) -> None:
    """Theorem 6 / 9 (kernel): every premise of U_<v>_theorem6 and U_<v>_theorem6_out holds on
    U.encode(T, X), with P, M, X the layer, mask and input given; that P is T."""
    case = encoded(layer, variant)
    for name, text in _theorems(variant):
        assert violations(text, case) == [], name
    assert _agrees_with_t(layer, case)


def test_every_premise_of_theorem6_is_read() -> None:
    """Every premise of both theorems, both variants, has a known form (none is skipped)."""
    counts = []
    for variant in VARIANTS:
        for _, text in _theorems(variant):
            st_ = statement(text)
            for p in st_.premises + st_.query:
                premise(p)
            counts.append(len(st_.premises) + len(st_.query))
    assert min(counts) > 50, counts


_ONE = Layer((2, 3, 2, 2, 2), TransformerLayer.random(2, 1, 2, 2, seed=3, residual=True, norm="post"),
             np.arange(4.0).reshape(2, 2) / 3, {"is_causal": True})  # fmt: skip


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_wrong_premise_is_violated(variant: str) -> None:
    """eps read at the scale gate (+ 6, not + 7), Wo zero beyond 0 heads (not nhead), and the
    query confined to the out grid's first row: each is refused."""
    case = encoded(_ONE, variant)
    text = _theorems(variant)[0][1]
    assert violations(text, case) == []
    wrong_eps = text.replace("F + 7)%nat = eps P", "F + 6)%nat = eps P")
    assert any("eps P" in v for v in violations(wrong_eps, case))
    wrong_wo = text.replace("(nhead P <= t)%nat -> Wo P t c e", "(0 <= t)%nat -> Wo P t c e")
    assert any("(0 <= t)" in v for v in violations(wrong_wo, case))
    wrong_query = text.replace("(p < (1 * N * D)%nat)%nat", "(p < (1 * D)%nat)%nat")
    assert any("no position p" in v for v in violations(wrong_query, case))


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_wrong_encoding_or_record_is_caught(variant: str) -> None:
    """An encoding with one weight changed, a record with Wo's heads in the wrong order, a record with
    the wrong norm or activation: each breaks a premise or the tie to T."""
    case = encoded(_ONE, variant)
    text = _theorems(variant)[0][1]
    x = case.x.copy()
    x[case.offsets["wo"]] += 1.0
    assert any("wo_offset" in v for v in violations(text, replace(case, x=x)))
    P = case.P
    assert violations(text, replace(case, P=replace(P, norm="PreNorm")))
    assert violations(text, replace(case, P=replace(P, activation=CL.gelu)))
    assert any("wo_offset" in v for v in violations(text, replace(case, P=replace(P, Wo=np.roll(P.Wo, 1, axis=0)))))
    assert not _agrees_with_t(_ONE, replace(case, P=replace(P, residual=False)))


@pytest.mark.parametrize("text", ["(0 < foo P)%nat", "frobnicate x", "nth 0 x 3 = bar"])
def test_a_premise_of_no_known_form_fails(text: str) -> None:
    """A premise the reader does not know is an error, never a pass."""
    with pytest.raises((ValueError, NameError)):
        premise(text)(encoded(_ONE, "compact"), {})


def test_the_query_premises_have_a_position_at_every_output_entry() -> None:
    """The out-grid query: p = i D + e meets (p < N D), (p / D mod N = i), (p mod D = e)."""
    case = encoded(_ONE, "compact")
    qs = [premise(p) for p in statement(_theorems("compact")[0][1]).query]
    assert len(qs) == 3
    N, D = case.cap[:2]
    assert all(q(case, {"i": i, "e": e, "p": i * D + e}) for i in range(N) for e in range(D) for q in qs)
    assert not all(q(case, {"i": 0, "e": 1, "p": D}) for q in qs)
    assert math.prod(case.cap[:2]) == N * D


@pytest.mark.parametrize(
    "options",
    [{}, {"norm_first": True}, {"activation": "gelu"}, {"activation": "gelu_tanh"}, {"bias": False},
     {"layer_norm_eps": 0.25, "norm_first": True}],
    ids=["post-relu", "pre", "gelu", "tanh-gelu", "no-bias", "eps"],
)  # fmt: skip
def test_theorem6s_premises_hold_on_torch_layers(options: dict[str, Any]) -> None:
    """Theorem 6 (kernel) for torch's nn.TransformerEncoderLayer: its encoding by U meets every
    premise, both variants (skipped without torch; the test extra installs it)."""
    torch = pytest.importorskip("torch")
    if "activation" in options:
        approx = "tanh" if options["activation"] == "gelu_tanh" else "none"
        options = {**options, "activation": torch.nn.GELU(approximate=approx)}
    torch.manual_seed(0)
    module = torch.nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, batch_first=True, dtype=torch.float64, **options)
    T = TransformerLayer.from_torch(module.eval())
    layer = Layer((4, 5, 3, 2, 7), T, np.random.default_rng(5).normal(size=(3, 4)), {"is_causal": True})
    for variant in VARIANTS:
        case = encoded(layer, variant)
        for name, text in _theorems(variant):
            assert violations(text, case) == [], name
        assert _agrees_with_t(layer, case)


# -- stacks (coq/UniversalStack.v): each record's premises on the sequence seen t records on --------
def view(U: UniversalSimulator, x: np.ndarray, t: int, shift: int = 0) -> np.ndarray:
    """UniversalStack's ``U_<v>_view x t``: positions before the record base as they are, position p
    from it on read at p + t S (+ ``shift``, to break it), 0 past the end; the length kept."""
    base, S = int(U.base), int(U.record_size)
    at = np.arange(len(x))
    src = np.where(at < base, at, at + t * S + shift)
    return np.where(src < len(x), x[np.minimum(src, len(x) - 1)], 0.0)


@st.composite
def stacks(draw: st.DrawFn) -> tuple[Layer, list[TransformerLayer]]:
    """A first layer (:func:`layers`) and 0-2 more of its d_model, each of its own heads, widths and
    options, at the first one's capacity."""
    first = draw(layers())
    _, _, H, K, F = first.cap
    more = []
    for _ in range(draw(st.integers(0, 2))):
        h, k = draw(st.integers(1, H)), draw(st.integers(1, K))
        f = draw(st.one_of(st.none(), st.integers(1, F)))
        options = {
            "seed": draw(st.integers(0, 2**16)),
            "residual": draw(st.booleans()),
            "norm": draw(st.sampled_from(sorted(_NORM))),
            "activation": draw(st.sampled_from(sorted(_ACT))),
            "biases": draw(st.booleans()),
        }
        more.append(TransformerLayer.random(first.T.d_model, h, k, f, **options))
    return first, [first.T, *more]


def stack_cases(first: Layer, Ts: list[TransformerLayer], variant: str, shift: int = 0) -> list[Case]:
    """``U.encode(Ts, X)`` seen t records on, with layer t's record, for every t < len(Ts)."""
    one = encoded(first, variant)
    U = _u(first.cap, variant)
    m = attention_mask(first.X.shape[0], **first.masks) if first.masks else None
    x = U.encode(Ts, first.X, additive=None if m is None else m.additive, blocked=None if m is None else m.blocked)
    return [replace(one, x=view(U, x, t, shift), P=record(T, first.cap)) for t, T in enumerate(Ts)]


@pytest.mark.parametrize("variant", VARIANTS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stack=stacks())
def test_the_stacks_premises_hold_on_us_encodings_of_stacks(
    variant: str, stack: tuple[Layer, list[TransformerLayer]]
) -> None:
    """Stacks (kernel, UniversalStack.v): for every t < m, Theorem 6's premises at X's entries hold on
    U.encode([T_0 .. T_(m-1)], X) seen t records on with layer t's record (the stack theorem's
    premises are these, X's two on X and layer 0 only)."""
    first, Ts = stack
    event(f"{len(Ts)} layer(s)")
    out = _theorems(variant)[1][1]
    for t, case in enumerate(stack_cases(first, Ts, variant)):
        assert violations(out, case) == [], t


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_stack_seen_one_position_off_is_caught(variant: str) -> None:
    """The records read one position past where the queue puts them: record 1's premises fail."""
    second = TransformerLayer.random(2, 2, 1, None, seed=5, residual=False, norm="pre")
    out = _theorems(variant)[1][1]
    assert violations(out, stack_cases(_ONE, [_ONE.T, second], variant)[1]) == []
    assert violations(out, stack_cases(_ONE, [_ONE.T, second], variant, shift=1)[1])
