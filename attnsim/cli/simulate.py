"""`attnsim simulate`: build a random layer T, run the universal simulator U on it, report error and cost."""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import tracemalloc

import numpy as np

from attnsim.cli.commands import command, nonneg_int, positive_int
from attnsim.simulator.errors import SimulatorError
from attnsim.simulator.reference import NORMS, TransformerLayer
from attnsim.simulator.universal import UniversalSimulator


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-len", type=positive_int, required=True, help="capacity N (longest input)")
    p.add_argument("--d-model", type=positive_int, required=True, help="capacity D (model width)")
    p.add_argument("--heads", type=positive_int, required=True, help="capacity H (attention heads)")
    p.add_argument("--d-head", type=positive_int, required=True, help="capacity K (head width)")
    p.add_argument("--d-ff", type=positive_int, default=None, help="capacity F (FFN width); omit for attention only")
    p.add_argument("--n", type=positive_int, default=None, help="tokens in the random input (default: max-len)")
    p.add_argument("--seed", type=nonneg_int, default=0, help="random seed for T and X")
    p.add_argument("--norm", choices=NORMS, default="none")
    p.add_argument("--residual", action="store_true", help="residual connections")
    p.add_argument("--activation", choices=("relu", "gelu"), default="relu")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")


@command("simulate", _args)
def simulate(args: argparse.Namespace) -> int:
    """Run U on a random T and print the max abs error against the reference, the cost, time and memory."""
    n = args.max_len if args.n is None else args.n
    if n < 1 or n > args.max_len:
        raise SimulatorError(f"--n = {n} must be within 1..max-len = {args.max_len}")
    log = lambda msg: print(msg, file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    log(f"building U for capacity N={args.max_len} D={args.d_model} H={args.heads} K={args.d_head} F={args.d_ff}")
    u = UniversalSimulator(args.max_len, args.d_model, args.heads, args.d_head, args.d_ff)
    build = time.perf_counter() - t0
    T = TransformerLayer.random(
        args.d_model,
        args.heads,
        args.d_head,
        args.d_ff,
        seed=args.seed,
        residual=args.residual,
        norm=args.norm,
        activation=args.activation,
    )
    x = np.random.default_rng(args.seed + 1).normal(size=(n, args.d_model))
    log(f"running U on {u.positions()} positions")
    tracemalloc.start()
    t1 = time.perf_counter()
    y = u.run(T, x)
    run_s = time.perf_counter() - t1
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    err = float(np.max(np.abs(y - T(x))))
    c = u.cost()
    out = {
        "capacity": c["capacity"],
        "n": n,
        "max_abs_error": err,
        "layers": c["layers"],
        "heads": c["heads"],
        "mlp_depth": c["mlp_depth"],
        "mlp_generalized": c["mlp_generalized"],
        "positions": c["positions"],
        "positions_formula": str(c["closed_form"]["positions"]),
        "fingerprint": u.fingerprint,
        "build_seconds": build,
        "run_seconds": run_s,
        "peak_traced_mb": peak / 2**20,
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for k, v in out.items():
            print(f"{k:>18}: {v:.3g}" if isinstance(v, float) else f"{k:>18}: {v}")
    return 0
