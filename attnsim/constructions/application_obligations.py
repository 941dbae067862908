"""The applications' obligations that `attnsim verify` runs.

Their checks: :mod:`attnsim.constructions.application_checks`.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import z3

from attnsim.constructions.application_checks import (
    Stages,
    _approx_check,
    _exact_network_check,
    _parity_mod2_check,
    _z3_all,
    exhaustive_check,
    random_check,
    stages_check,
)
from attnsim.constructions.checks import exact_check, intent_obligations, layout_obligation, numeric_check, sympy_check
from attnsim.constructions.construction import Construction
from attnsim.constructions.efficient import program as efficient
from attnsim.constructions.lipschitz import program as lipschitz
from attnsim.constructions.match2 import program as match
from attnsim.constructions.match2.reference import match2_spec
from attnsim.constructions.parity import program as kparity
from attnsim.constructions.parity.reference import parity_spec
from attnsim.proofs.obligation import Obligation
from attnsim.proofs.registry import ConstructionEntry
from attnsim.rasp import core as C
from attnsim.symbolic.program_equals_spec import all_sizes_obligations


def _m2spec(x: tuple[int, ...], p: int, inc: bool) -> np.ndarray:
    return match2_spec(x, p, inc)


def _pspec(x: Any, n: int, sub: tuple[int, ...] | None) -> np.ndarray:
    return np.full(n, parity_spec(x, sub))


def _draw_ints(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(-(10**6), 10**6, n)


def binary(x: Any) -> Any:
    """A Z3 token constraint: x in {0, 1}."""
    return z3.Or(x == 0, x == 1)


def _z3_parity(xs: list[Any]) -> list[Any]:
    return [z3.Sum(xs) % 2] * len(xs)


def _prefixes(base: int, n: int, chunk: int = 1024) -> list[tuple[int, ...]]:
    """Fixed leading tokens splitting the base**n inputs into checks of at most ``chunk`` inputs."""
    m = 0
    while base ** (n - m) > chunk:
        m += 1
    return [tuple(t) for t in itertools.product(range(base), repeat=m)]


def _match2_z3_spec(p: int, include_self: bool) -> Callable[[list[Any]], list[Any]]:
    def spec(xs: list[Any]) -> list[Any]:
        n = len(xs)
        return [
            z3.If(z3.Or([(xs[i] + xs[j]) % p == 0 for j in range(n) if include_self or j != i] or [False]), 1, 0)
            for i in range(n)
        ]

    return spec


def match2_obligations() -> Iterable[Obligation]:
    """Exhaustive (exact backend, all inputs over residues 0..p-1, length <= 6), Z3 over all integers (p = 2),
    random long inputs."""
    ref = match.PAPER_REF
    for p, max_len in ((2, 6), (3, 6), (4, 6), (5, 5)):
        for inc in (True, False):
            tag = "self" if inc else "noself"
            for n in range(1, max_len + 1):
                for pre in _prefixes(p, n):
                    ptag = f"-x0={''.join(map(str, pre))}" if pre else ""
                    yield Obligation(
                        f"match2/exact/all-inputs-p{p}-{tag}-L{n}{ptag}",
                        "match2",
                        ref,
                        "exact",
                        exhaustive_check(
                            functools.partial(match.match2, n, p, inc),
                            range(p),
                            functools.partial(_m2spec, p=p, inc=inc),
                            prefix=pre,
                        ),
                        f"every input over 0..{p - 1} of length {n}"
                        + (f" starting with {pre}" if pre else "")
                        + (", j = i allowed" if inc else ", j != i"),
                    )
    for p, inc, max_len in ((2, True, 6), (2, False, 5), (3, True, 3), (3, False, 3)):
        tag = "self" if inc else "noself"
        for n in range(1, max_len + 1):
            yield Obligation(
                f"match2/z3-bounded/all-integers-p{p}-{tag}-L{n}",
                "match2",
                ref,
                "z3-bounded",
                _z3_all([(functools.partial(match.match2, n, p, inc), n, _match2_z3_spec(p, inc), None)]),
                f"p = {p}: output == spec for EVERY integer input (unbounded values) of length {n}",
                bound=n,
            )
    for inc in (True, False):
        tag = "self" if inc else "noself"
        for p, n in ((7, 1000), (97, 20000)):
            yield Obligation(
                f"match2/sampled/random-p{p}-{tag}-L{n}",
                "match2",
                ref,
                "sampled",
                random_check(
                    functools.partial(match.match2, n, p, inc),
                    functools.partial(_draw_ints, n=n),
                    functools.partial(_m2spec, p=p, inc=inc),
                    trials=3,
                ),
                f"float64 run == spec on random integers, p = {p}, length {n}",
            )


def _exhaustive_parity_obligations(ref: str) -> Iterable[Obligation]:
    """``exact``: every binary input up to length 12 (parity) and of each listed subset (sparse parity), in
    checks of at most 1024 inputs (split by leading tokens)."""
    for n in range(1, 13):
        for pre in _prefixes(2, n):
            tag = f"L{n}" + (f"-x0={''.join(map(str, pre))}" if pre else "")
            yield Obligation(
                f"parity/exact/all-inputs-{tag}",
                "parity",
                ref,
                "exact",
                exhaustive_check(
                    functools.partial(kparity.parity, n),
                    (0, 1),
                    functools.partial(_pspec, n=n, sub=None),
                    prefix=pre,
                ),
                f"every binary input of length {n}" + (f" starting with {pre}" if pre else ""),
            )
    subsets = {12: (0, 3, 4, 7, 11), 9: (8,), 10: (1, 2, 5, 6, 9), 7: (0, 3, 5)}  # 7: the registered example
    for n, sub in subsets.items():
        for pre in _prefixes(2, n):
            tag = f"L{n}-k{len(sub)}" + (f"-x0={''.join(map(str, pre))}" if pre else "")
            yield Obligation(
                f"sparse_parity/exact/all-inputs-{tag}",
                "sparse_parity",
                ref,
                "exact",
                exhaustive_check(
                    functools.partial(kparity.sparse_parity, n, sub),
                    (0, 1),
                    functools.partial(_pspec, n=n, sub=sub),
                    prefix=pre,
                ),
                f"every binary input of length {n}, subset {sub}",
            )


def parity_obligations() -> Iterable[Obligation]:
    """Exhaustive up to length 12 (exact), Z3 mask intents and mod-2 algebra for all lengths, Z3 unrolling."""
    ref = kparity.PAPER_REF
    yield from all_sizes_obligations(
        "parity",
        ref,
        [lambda: kparity.parity(C.Size("length"))],
        statement="program == spec (sum of the bits) mod 2 at every position, for every length (binary input)",
    )
    yield from intent_obligations("parity", ref, lambda: kparity.parity(5))
    yield from intent_obligations("sparse_parity", ref, lambda: kparity.sparse_parity(9, (0, 4, 5, 8)))
    yield Obligation(
        "parity/z3-instance/mod2",
        "parity",
        ref,
        "z3-instance",
        _parity_mod2_check(lambda: kparity.parity(5)),
        "for every integer count c >= 0 the output index function is 1 iff c is odd, else 0",
    )
    yield Obligation(
        "sparse_parity/z3-instance/mod2",
        "sparse_parity",
        ref,
        "z3-instance",
        _parity_mod2_check(lambda: kparity.sparse_parity(9, (0, 4, 5, 8))),
        "for every integer count c >= 0 the output index function is 1 iff c is odd, else 0",
    )
    yield from _exhaustive_parity_obligations(ref)
    yield Obligation(
        "parity/z3-bounded/unrolled",
        "parity",
        ref,
        "z3-bounded",
        _z3_all([(functools.partial(kparity.parity, n), n, _z3_parity, binary) for n in range(1, 7)]),
        "Z3 unrolling of the program (independent of the engine): output == sum mod 2, every binary input, length <= 6",
        bound=6,
    )
    yield Obligation(
        "parity/sampled/random-L4096",
        "parity",
        ref,
        "sampled",
        random_check(
            lambda: kparity.parity(4096),
            lambda rng: rng.integers(0, 2, 4096),
            lambda x: np.full(4096, parity_spec(x)),
            trials=3,
        ),
        "float64 run == spec on random binary inputs of length 4096",
    )


# -- linear attention and Linformer ---------------------------------------------------------------


def _tag(con: Construction) -> str:
    return "-".join(f"{k}{v}" for k, v in sorted(con.sizes.items()))


def _variant_obligations(
    cid: str,
    ref: str,
    small: Callable[[], Construction],
    sym: list[Callable[[], Construction]],
    big: Callable[[], Construction],
    tol: float,
) -> Iterable[Obligation]:
    yield from intent_obligations(cid, ref, small)
    yield layout_obligation(cid, ref, small)
    for make in sym:
        yield Obligation(
            f"{cid}/sympy/{_tag(make())}",
            cid,
            ref,
            "sympy",
            sympy_check(make, efficient.atomized),
            "program == the textbook formula on symbolic operands (exp/Piecewise atoms as free positive symbols)",
        )
    for make in (small, big):
        yield Obligation(
            f"{cid}/numeric/{_tag(make())}",
            cid,
            ref,
            "numeric",
            numeric_check(make, tol, trials=2),
            f"float64 within {tol:g} of the NumPy reference",
        )


def _la_stages(qm: np.ndarray, km: np.ndarray, vm: np.ndarray) -> dict[str, np.ndarray]:
    """What each intermediate block of linear attention holds (the composed lemmas' results)."""
    fq, fk = efficient._elu1(qm, "numpy"), efficient._elu1(km, "numpy")
    kv, ks = fk.T @ vm, fk.T @ np.ones((len(km), 1))
    return {"la.phiKt": fk.T, "la.kv": kv, "la.ksum": ks, "la.num": fq @ kv, "la.den": fq @ ks}


def _lf_stages(d: int) -> Stages:
    def stages(qm: np.ndarray, km: np.ndarray, vm: np.ndarray, em: np.ndarray, fm: np.ndarray) -> dict[str, np.ndarray]:
        ek, fv = em @ km, fm @ vm
        sc = qm @ ek.T
        w = np.exp(sc / np.sqrt(d))
        return {
            "lf.EK": ek,
            "lf.FV": fv,
            "lf.EKt": ek.T,
            "lf.scores": sc,
            "lf.softmax": w / w.sum(axis=1, keepdims=True),
        }

    return stages


def efficient_obligations() -> Iterable[Obligation]:
    """program == spec for all sizes, Z3 intents of every composed lemma head, layout, SymPy at small
    sizes, float64 against NumPy."""
    la, lf = efficient.linear_attention, efficient.linformer
    n, d, dv, kp = C.Size("n"), C.Size("d"), C.Size("dv"), C.Size("kp")
    yield from all_sizes_obligations(
        "linear_attention",
        efficient.LINEAR_REF,
        [lambda: la(n, d, dv)],
        statement="program == spec, the quadratic form sum_l sim(i, l) V[l, j] / sum_l sim(i, l), for every n, d, dv",
    )
    yield from all_sizes_obligations(
        "linformer",
        efficient.LINFORMER_REF,
        [lambda: lf(n, d, dv, kp)],
        statement="program == spec softmax(Q (E K)^T / sqrt(d)) (F V), for every n, d, dv and projected length k",
    )
    yield from _variant_obligations(
        "linear_attention",
        efficient.LINEAR_REF,
        lambda: la(3, 2, 2),
        [lambda: la(1, 1, 1), lambda: la(2, 2, 2), lambda: la(3, 1, 2)],
        lambda: la(32, 8, 8),
        1e-12,
    )
    yield from _variant_obligations(
        "linformer",
        efficient.LINFORMER_REF,
        lambda: lf(3, 2, 2, 2),
        [lambda: lf(2, 2, 2, 1), lambda: lf(2, 2, 1, 2), lambda: lf(3, 1, 1, 2)],
        lambda: lf(32, 8, 8, 4),
        1e-12,
    )
    for cid, ref, make, stages in (
        ("linear_attention", efficient.LINEAR_REF, lambda: la(3, 2, 2), _la_stages),
        ("linformer", efficient.LINFORMER_REF, lambda: lf(3, 2, 2, 2), _lf_stages(2)),
    ):
        yield Obligation(
            f"{cid}/numeric/stages-{_tag(make())}",
            cid,
            ref,
            "numeric",
            stages_check(make, stages, 1e-12),
            "every intermediate block (each composed lemma's result) holds its value, float64 within 1e-12",
        )


# -- Lipschitz approximation ---------------------------------------------------------------------
def _small_net() -> lipschitz.LipschitzNetwork:
    return lipschitz.lipschitz_approximator(abs, 1.0, 0.5, (-1.0, 1.0), method="mcshane")


def _small_interp() -> lipschitz.LipschitzNetwork:
    return lipschitz.lipschitz_approximator(math.sin, 1.0, 0.5, (-1.0, 1.0))


def lipschitz_obligations() -> Iterable[Obligation]:
    """Z3 intents + layout (small net), program == architecture (exact, numeric; random weights),
    program == network with the constructed weights (exact), sup error <= epsilon (float64, fine grid)."""
    ref = lipschitz.PAPER_REF
    yield from intent_obligations("lipschitz", ref, _small_net)
    yield layout_obligation("lipschitz", ref, _small_net)
    for it in intent_obligations("lipschitz", ref, _small_interp):
        yield dataclasses.replace(it, id=it.id.replace(f"{it.method}/", f"{it.method}/interp-"))
    yield Obligation(
        "lipschitz/exact/architecture-random-weights",
        "lipschitz",
        ref,
        "exact",
        exact_check(_small_net),
        "for random rational weights and points, the program == the GroupSort network (Fractions, ==)",
    )
    yield Obligation(
        "lipschitz/numeric/architecture-random-weights",
        "lipschitz",
        ref,
        "numeric",
        numeric_check(_small_net, 1e-12),
        "for random float weights and points, the program == the GroupSort network within 1e-12",
    )
    cases = [("abs", 0.5, "mcshane"), ("sin", 0.5, "mcshane"), ("sawtooth", 1.0, "mcshane"), ("cone", 1.0, "mcshane")]
    cases += [("abs", 0.1, "interpolation"), ("sin", 0.05, "interpolation"), ("sawtooth", 0.05, "interpolation")]
    for name, eps, method in cases:
        yield Obligation(
            f"lipschitz/exact/network-{method}-{name}-eps{eps}",
            "lipschitz",
            ref,
            "exact",
            _exact_network_check(name, eps, method),
            f"{name}: the program computes the constructed network exactly at rational points",
        )
    cases = [(n, 0.1, "mcshane") for n in ("abs", "sin", "sawtooth")] + [("cone", 0.2, "mcshane")]
    cases += [(n, e, "interpolation") for n in ("abs", "sin", "sawtooth") for e in (0.1, 0.01)]
    for name, eps, method in cases:
        yield Obligation(
            f"lipschitz/numeric/sup-error-{method}-{name}-eps{eps}",
            "lipschitz",
            ref,
            "numeric",
            _approx_check(name, eps, 5, method),
            f"{name}: sup |f - network| <= {eps} on a fine grid; the program == the network at sample points",
        )


#: The constructions this module declares (registered by :mod:`attnsim.catalog`).
CONSTRUCTIONS = (
    ConstructionEntry("match2", match.PAPER_REF, lambda: match.match2(6, 4)),
    ConstructionEntry("parity", kparity.PAPER_REF, lambda: kparity.parity(6)),
    ConstructionEntry("sparse_parity", kparity.PAPER_REF, lambda: kparity.sparse_parity(7, (0, 3, 5))),
    ConstructionEntry("linear_attention", efficient.LINEAR_REF, lambda: efficient.linear_attention(3, 2, 2)),
    ConstructionEntry("linformer", efficient.LINFORMER_REF, lambda: efficient.linformer(3, 2, 2, 2)),
    ConstructionEntry("lipschitz", lipschitz.PAPER_REF, _small_net),
)
