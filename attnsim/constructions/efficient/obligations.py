"""Linear attention and Linformer: the obligations `attnsim verify` runs (registered by
:mod:`attnsim.catalog`; their checks: :mod:`attnsim.constructions.application_checks`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from attnsim.constructions.application_checks import (
    Stages,
    stages_check,
)
from attnsim.constructions.checks import intent_obligations, layout_obligation, numeric_check, sympy_check
from attnsim.constructions.construction import Construction
from attnsim.constructions.efficient import program as efficient
from attnsim.proofs.obligation import Obligation
from attnsim.rasp import core as C
from attnsim.symbolic.program_equals_spec import all_sizes_obligations


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


__all__ = ["efficient_obligations"]
