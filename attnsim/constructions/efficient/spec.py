"""Linear attention and Linformer: its independent specification.

Linear attention (phi = elu + 1 features, the quadratic form) and Linformer's softmax(Q (E K)^T /
sqrt(d)) (F V), entry by entry, the way a textbook does, in :mod:`attnsim.symbolic.spec_language`.
It reads nothing of the construction's program, layout or reference (``tests/test_layering.py``
checks that this module imports the spec language only); the program's all-sizes proof compares the
program with it, and :mod:`attnsim.verify.spec_check` compares it with the textbook NumPy formula of
``reference.py``.
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


__all__ = ["LINEAR_ATTENTION", "LINFORMER"]
