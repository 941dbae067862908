"""The applications' specifications: linear attention (phi = elu + 1 features, the quadratic form),
Linformer, and k-PARITY.

Each states the output of a construction of :mod:`attnsim.applications` entry by entry, in
:mod:`attnsim.symbolic.spec_language`, without reading the construction's program, layout or
reference.  :mod:`attnsim.symbolic.specs` names every specification.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attnsim.symbolic.spec_language import Spec


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


__all__ = ["LINEAR_ATTENTION", "LINFORMER", "PARITY"]
