"""The checks the applications' obligations run (each application folder's ``obligations.py``).

Every input of a small length against the specification (exact backend), random long inputs
(float64), a Z3 proof over every integer input of the program's unrolling, k-PARITY's mod-2
output map, the intermediate blocks of linear attention and Linformer, and the Lipschitz
approximator's sup error and exactness.  The folders' ``obligations.py`` list the obligations;
this module holds the checks they run.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from attnsim.constructions.construction import Construction
from attnsim.constructions.lipschitz import program as lipschitz
from attnsim.constructions.parity import program as kparity
from attnsim.constructions.z3prog import prove_for_all_inputs
from attnsim.proofs import z3sel
from attnsim.proofs.obligation import Outcome
from attnsim.rasp import expr as E


def prefixes(base: int, n: int, chunk: int = 1024) -> list[tuple[int, ...]]:
    """Fixed leading tokens splitting the base**n inputs into checks of at most ``chunk`` inputs."""
    m = 0
    while base ** (n - m) > chunk:
        m += 1
    return [tuple(t) for t in itertools.product(range(base), repeat=m)]


def exhaustive_check(
    make: Callable[[], Construction],
    alphabet: Sequence[int],
    spec: Callable[[tuple[int, ...]], np.ndarray],
    prefix: tuple[int, ...] = (),
) -> Callable[[float], Outcome]:
    """Check: the exact-backend run equals ``spec`` on EVERY input over ``alphabet`` (starting with ``prefix``)."""

    def check(timeout: float) -> Outcome:
        con = make()
        n = con.layout["x"].shape[1]
        count = 0
        for tail in itertools.product(alphabet, repeat=n - len(prefix)):
            x = prefix + tail
            got = con.run(list(x), backend="exact")
            want = spec(x)
            if not all(g == w for g, w in zip(got.reshape(-1), np.asarray(want).reshape(-1), strict=True)):
                return Outcome.bad(f"x = {list(x)}: program {list(got)} != spec {list(want)}")
            count += 1
        return Outcome.good(f"all {count} inputs equal with == (exact backend)")

    return check


def random_check(
    make: Callable[[], Construction],
    draw: Callable[[np.random.Generator], Any],
    spec: Callable[[Any], Any],
    trials: int,
) -> Callable[[float], Outcome]:
    """Check: float64 runs equal ``spec`` exactly (outputs are 0/1) on random inputs."""

    def check(timeout: float) -> Outcome:
        con = make()
        rng = np.random.default_rng(0)
        for t in range(trials):
            x = draw(rng)
            got, want = con.run(x), np.asarray(spec(x), dtype=np.float64)
            if not np.array_equal(got.reshape(-1), want.reshape(-1)):
                bad = int(np.flatnonzero(got.reshape(-1) != want.reshape(-1))[0])
                return Outcome.bad(f"trial {t}: position {bad} differs")
        return Outcome.good(f"{trials} random inputs equal the spec")

    return check


def _z3_all(cases: list[tuple[Callable[[], Construction], int, Any, Any]]) -> Callable[[float], Outcome]:
    def check(timeout: float) -> Outcome:
        done = []
        proven = Outcome(True)  # the typed facts of every length's proof, joined
        for make, n, spec, domain in cases:
            res = prove_for_all_inputs(make().program, n, spec, domain, timeout=timeout)
            if res.ok is not True:
                return res.retold(f"length {n}: {res.detail}")
            proven = proven.joined(res)
            done.append(n)
        return proven.retold(f"unsat for every length in {done}")

    return check


def _parity_mod2_check(make: Callable[[], Construction]) -> Callable[[float], Outcome]:
    """Z3, all c >= 0: the program's output index function maps c to 1 iff c is odd."""

    def check(timeout: float) -> Outcome:
        fn = kparity.index_fn_of(make())
        c = E.Var("c")
        out = fn.expr.substitute({fn.argnames[0]: c})
        odd = (c >= 0) & out.eq(c - 2 * (c // 2))
        bits = (out.eq(0) | out.eq(1)) & odd
        return z3sel.prove(bits, (c >= 0,), timeout=timeout)

    return check


Stages = Callable[..., dict[str, np.ndarray]]


def stages_check(make: Callable[[], Construction], stages: Stages, tol: float) -> Callable[[float], Outcome]:
    """Check: every intermediate block, decoded from the trace at its layout offset, holds its stage's
    value (float64 within ``tol`` relative): each composed lemma keeps its contract (result in its block)."""

    def check(timeout: float) -> Outcome:
        con = make()
        rng = np.random.default_rng(0)
        ops = [rng.normal(size=con.layout[nm].shape) for nm in con.inputs]
        tr = con.trace(*ops)
        for name, want in stages(*ops).items():
            got = con.layout.decode(tr[name], name)
            err = float(np.max(np.abs(got - want))) / max(1.0, float(np.max(np.abs(want))))
            if not err <= tol:
                return Outcome.bad(f"block {name}: relative error {err:.3g} > {tol:g}")
        return Outcome.good(f"{len(stages(*ops))} intermediate blocks hold their stage's value within {tol:g}")

    return check


def _approx_check(name: str, eps: float, samples: int, method: str = "auto") -> Callable[[float], Outcome]:
    """Check: sup |f - network| <= epsilon on a fine grid, and the program == the network (float64)."""

    def check(timeout: float) -> Outcome:
        f, lip, dom = lipschitz.EXAMPLES[name]
        net = lipschitz.lipschitz_approximator(f, lip, eps, dom, method=method)
        err = lipschitz.sup_error(net, f, dom, 4001 if net.dim == 1 else 81)
        if not err <= eps * (1 + 1e-9):  # the bound is tight (a kink mid-interval): allow float rounding
            return Outcome.bad(f"sup error {err:.3g} > epsilon {eps}")
        rng = np.random.default_rng(1)
        lo = np.array([d[0] for d in np.reshape(dom, (-1, 2))])
        hi = np.array([d[1] for d in np.reshape(dom, (-1, 2))])
        worst = 0.0
        for _ in range(samples):
            x = lo + (hi - lo) * rng.random(net.dim)
            got = float(net.run(x)[0, 0])
            worst = max(worst, abs(got - float(net.network(x[None, :])[0])))
        if worst > 1e-9:
            return Outcome.bad(f"program differs from the network by {worst:.3g}")
        return Outcome.good(f"sup error {err:.3g} <= {eps}; program == network within {worst:.2g} at {samples} points")

    return check


def _exact_network_check(name: str, eps: float, method: str = "auto") -> Callable[[float], Outcome]:
    """Check: exact backend, the program equals the network (same weights) at rational points, with ==."""

    def check(timeout: float) -> Outcome:
        f, lip, dom = lipschitz.EXAMPLES[name]
        net = lipschitz.lipschitz_approximator(f, lip, eps, dom, method=method).without_domain()
        for x in lipschitz.exact_points(net, 3):
            got, want = net.run(x, backend="exact"), net.reference(x, backend="exact")
            if not (got == want).all():
                return Outcome.bad(f"x = {x.tolist()}: program {got.tolist()} != network {want.tolist()}")
        return Outcome.good("3 rational points: program == network with ==")

    return check
