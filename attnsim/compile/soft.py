"""Soft attention: how large an inverse temperature beta makes softmax behave like hard attention.

For a head with score gap g (every non-maximal key scores at least g below the row maximum:
g = m/2 for an aggregate head with margin m, BOS at -m/2; g = m for a width head; g = 1 on the
BOS row), softmax(beta s) puts total weight eps <= (T - 1) e^{-beta g} outside the maximal
keys (T keys, BOS included).  The soft output differs from the hard mean by at most
``2 eps V`` (V = max |value|), so

    beta >= ln(2 V (T - 1) / eta) / g   guarantees an error <= eta for that head.

``head_check`` verifies this per head on the hard run's residual; ``error_vs_beta`` measures
the end-to-end error of the whole model run with soft attention (data for the report).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from attnsim.compile import classic
from attnsim.compile.compiler import compile_program
from attnsim.compile.model import CompiledTransformer, CompileError
from attnsim.compile.weights import Head


def head_gap(h: Head) -> float:
    """The smallest distance between a row's maximal score and any other score (all rows)."""
    return min(float(h.gap), 1.0)


def beta_for(h: Head, eta: float, vmax: float, n_keys: int) -> float:
    """The inverse temperature that guarantees |soft - hard| <= eta for this head."""
    if eta <= 0:
        raise CompileError(f"the error target eta must be positive, got {eta}")
    if n_keys <= 1 or vmax == 0:
        return 0.0
    return max(0.0, math.log(2 * vmax * (n_keys - 1) / eta) / head_gap(h))


def range_bound(gap: float, n_keys: int, value_range: float, beta: float) -> float:
    """|soft - hard| <= (T - 1) e^{-beta g} R for one query of a head whose maximal keys (set M) score
    at least g above every other key, T keys (BOS included), R = max - min of the values the keys
    carry (BOS's 0 included).  Derivation: the keys of M share one logit, so softmax gives each of
    them (1 - eps) / |M|, eps the weight outside M, and soft = (1 - eps) hard + sum_{k not in M} w_k
    v_k, i.e. soft - hard = sum_{k not in M} w_k (v_k - hard); hard is a mean of values, so
    |v_k - hard| <= R and |soft - hard| <= eps R; each k outside M has w_k <= e^{-beta g} (its logit
    is g below the max, and the denominator is >= 1 after the max shift), so eps <= (T - 1) e^{-beta g}.
    For a value-scored head g is min(the score's spacing, 1) (the compiler's ``gap``): the bound
    says how sharply a softmax head must separate the maximal score from the next one."""
    return max(n_keys - 1, 0) * math.exp(-beta * gap) * value_range


def range_check(ct: CompiledTransformer, tokens: Any, betas: Sequence[float]) -> list[dict[str, Any]]:
    """Per head and beta: the measured max |soft - hard| on ``tokens`` and :func:`range_bound`
    (R from the values the head's keys carry on the hard run's residual, BOS's 0 included)."""
    _, states = ct.run(np.asarray(tokens, dtype=np.float64), exact=False, keep=True)
    rows: list[dict[str, Any]] = []
    for li, h, x in _head_inputs(ct, states):
        v = ct._mm(x, h.W_V, False)
        value_range = float(np.max(v) - np.min(v)) if v.size else 0.0
        for b in betas:
            rows.append(
                {
                    "layer": li,
                    "head": h.name,
                    "beta": float(b),
                    "error": _soft_error(ct, h, x, float(b)),
                    "bound": range_bound(head_gap(h), x.shape[1], value_range, float(b)),
                }
            )
    return rows


def _head_inputs(ct: CompiledTransformer, states: Sequence[Any]) -> Iterator[tuple[int, Head, Any]]:
    """(layer, head, the residual it reads) for every attention head.

    ``states`` = [embedding, after MLP 0, after attn 1, after MLP 1, ...]: attention l reads 2l - 1.
    """
    for li, lyr in enumerate(ct.layers):
        if li == 0:
            continue
        for h in lyr.heads:
            yield li, h, states[2 * li - 1]


def _value_max(ct: CompiledTransformer, h: Head, x: Any) -> float:
    """max |value| the head can average, on the residual ``x``."""
    v = ct._mm(x, h.W_V, False)
    return float(np.max(np.abs(v))) if v.size else 0.0


def _soft_error(ct: CompiledTransformer, h: Head, x: Any, beta: float) -> float:
    """max |soft - hard| of the head's output at inverse temperature ``beta``."""
    hard = ct.attend(h, x, False)[0]
    soft = ct.attend(h, x, False, beta=beta)[0]
    return float(np.max(np.abs(soft - hard))) if hard.size else 0.0


def head_check(ct: CompiledTransformer, tokens: Any, eta: float = 1e-6) -> list[dict[str, Any]]:
    """Per head: the derived beta, the bound eta and the measured |soft - hard| on ``tokens``."""
    _, states = ct.run(np.asarray(tokens, dtype=np.float64), exact=False, keep=True)
    rows: list[dict[str, Any]] = []
    for li, h, x in _head_inputs(ct, states):
        vmax = _value_max(ct, h, x)
        beta = beta_for(h, eta, vmax, x.shape[1])
        err = _soft_error(ct, h, x, beta)
        rows.append(
            {"layer": li, "head": h.name, "gap": head_gap(h), "vmax": vmax, "beta": beta, "eta": eta, "error": err}
        )
    return rows


def error_vs_beta(
    ct: CompiledTransformer, inputs: Sequence[Any], betas: Sequence[float], reference: Sequence[Any] | None = None
) -> list[dict[str, float]]:
    """For each beta: the end-to-end max |soft forward - reference| over ``inputs`` (reference: the hard
    forward), the largest per-head error on the hard run's residual, and the largest per-head bound
    2 V (T - 1) e^{-beta gap} (a head's bound; errors compound through later layers end to end)."""
    refs = (
        [np.asarray(ct.forward(x, exact=False), dtype=np.float64) for x in inputs]
        if reference is None
        else [np.asarray(r, dtype=np.float64) for r in reference]
    )
    hard_states = [ct.run(np.asarray(x, dtype=np.float64), exact=False, keep=True)[1] for x in inputs]
    out = []
    for b in betas:
        worst = head_err = bound = 0.0
        for x, r, states in zip(inputs, refs, hard_states, strict=True):
            y = ct.forward(np.asarray(x, dtype=np.float64), exact=False, beta=float(b))
            worst = max(worst, float(np.max(np.abs(y - r))))
            for _, h, st in _head_inputs(ct, states):
                vmax = _value_max(ct, h, st)
                head_err = max(head_err, _soft_error(ct, h, st, float(b)))
                bound = max(bound, 2 * vmax * (st.shape[1] - 1) * math.exp(-float(b) * head_gap(h)))
        out.append({"beta": float(b), "max_error": worst, "head_error": head_err, "head_bound": bound})
    return out


def default_series(name: str = "reverse", max_len: int = 8, seed: int = 0) -> list[dict[str, float]]:
    """Error against beta for a classic program on random inputs (for `attnsim report` figures)."""

    if name not in classic.PROGRAMS:
        raise CompileError(f"unknown classic program {name!r}; known: {', '.join(classic.PROGRAMS)}")
    ct = compile_program(classic.PROGRAMS[name](), max_len=max_len, vocab=range(4))
    rng = np.random.default_rng(seed)
    inputs = [rng.integers(0, 4, size=max_len) for _ in range(8)]
    return error_vs_beta(ct, inputs, [1, 2, 4, 8, 16, 32, 64])


def observed_gaps(ct: CompiledTransformer, tokens: Any) -> list[dict[str, Any]]:
    """Per head: the smallest observed distance between a row's maximum score and any lower score.

    Run in exact arithmetic when the model allows it; every observed gap must be >= the head's
    stated gap (that is what the tie window, the BOS score and the beta bound rely on).
    """
    exact = ct.exact_capable
    toks = np.asarray(tokens, dtype=object if exact else np.float64)
    _, states = ct.run(toks, exact=exact, keep=True)
    rows: list[dict[str, Any]] = []
    for li, h, x in _head_inputs(ct, states):
        q, k = ct._mm(x, h.W_Q, exact), ct._mm(x, h.W_K, exact)
        s = (q @ np.swapaxes(k, 1, 2))[0]
        worst: Any = None
        for row in s:
            mx = max(row)
            lower = [mx - v for v in row if v != mx]
            if lower:
                g = min(lower)
                worst = g if worst is None or g < worst else worst
        rows.append({"layer": li, "head": h.name, "stated_gap": h.gap, "observed_gap": worst})
    return rows
