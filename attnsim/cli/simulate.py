"""`attnsim simulate`: build a random layer T (or load a saved torch module), run the universal
simulator U on it, report the error (against the reference T, or against torch's slow and fast
paths) and the cost."""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import sys
import time
from collections.abc import Callable, Iterator, Mapping

import numpy as np
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from attnsim.cli.commands import clip, command, nonneg_int, positive_int
from attnsim.universal.errors import SimulatorError
from attnsim.universal.layer import NORMS, TransformerLayer
from attnsim.universal.memory import check_fits, gib
from attnsim.universal.torch_compare import compare_torch, layers_of
from attnsim.universal.torch_reading import import_torch
from attnsim.universal.universal import VARIANTS, UniversalSimulator

CAPACITY = ("max_len", "d_model", "heads", "d_head")


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-len", type=positive_int, help="capacity N (longest input); required without --torch")
    p.add_argument("--d-model", type=positive_int, help="capacity D (model width); required without --torch")
    p.add_argument("--heads", type=positive_int, help="capacity H (attention heads); required without --torch")
    p.add_argument("--d-head", type=positive_int, help="capacity K (head width); required without --torch")
    p.add_argument("--d-ff", type=positive_int, default=None, help="capacity F (FFN width); omit for attention only")
    p.add_argument("--n", type=positive_int, default=None, help="tokens in the random input (default: max-len)")
    p.add_argument("--seed", type=nonneg_int, default=0, help="random seed for T and X")
    p.add_argument(
        "--norm",
        choices=NORMS,
        default="none",
        help="LayerNorm placement: none, post (torch's default) or pre (norm_first=True) (default: none)",
    )
    p.add_argument("--residual", action="store_true", help="residual connections")
    p.add_argument(
        "--activation",
        choices=("relu", "gelu", "gelu_tanh"),
        default="relu",
        help="FFN activation: relu, gelu (erf) or gelu_tanh (torch's GELU(approximate='tanh')); default relu",
    )
    p.add_argument("--variant", choices=VARIANTS, default="compact", help="U's schedule (default: compact)")
    p.add_argument(
        "--torch",
        metavar="FILE",
        default=None,
        help="simulate a module saved with torch.save (a TransformerEncoderLayer, TransformerEncoder or "
        "MultiheadAttention; a pickle: only files you trust) on a random input of --n tokens (default 4), "
        "and print U against torch's slow and fast paths; exit 1 when U and torch's slow path (in float64) "
        "differ by more than 1e-10 x max(1, max |output|)",
    )
    p.add_argument(
        "--formula",
        action="store_true",
        help="also print positions_formula: U's positions in the capacity symbols N, D, H, K, F "
        "(SymPy's closed form: loads SymPy)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")


def _validate(args: argparse.Namespace) -> str | None:
    missing = [f"--{c.replace('_', '-')}" for c in CAPACITY if getattr(args, c) is None]
    if args.torch is None and missing:
        return f"the capacity needs {', '.join(missing)} (or --torch FILE)"
    if args.torch is not None and not missing:
        return "--torch FILE sets the capacity from the module; drop --max-len, --d-model, --heads, --d-head"
    return None


def _console() -> Console:
    """Where progress is drawn: stderr (nothing is drawn when it is not a terminal)."""
    return Console(stderr=True)


@contextlib.contextmanager
def _progress(what: str) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on stderr for a run of U, told (nodes done, nodes); None off a terminal
    (the log lines say what runs), and the bar is removed when the run ends."""
    console = _console()
    if not console.is_terminal:
        yield None
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("nodes"))
    with Progress(*columns, TimeElapsedColumn(), TimeRemainingColumn(), console=console, transient=True) as bar:
        task = bar.add_task(what, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


def _a(noun: str) -> str:
    """``noun`` with its indefinite article ("an OrderedDict", "a list")."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _simulate_torch(args: argparse.Namespace) -> int:
    """U against torch's slow and fast paths on a saved module (compare_torch); exit 1 unless U
    agrees with torch's slow path (in float64) within compare_torch's tolerance."""
    torch = import_torch()
    try:
        module = torch.load(args.torch, weights_only=False)
    except OSError as exc:  # a missing or unreadable file
        raise SimulatorError(f"--torch {args.torch}: cannot load ({' '.join(str(exc).split())})") from None
    except Exception as exc:  # the file's content (not a torch save, truncated, a class not importable)
        why = clip(f"{type(exc).__name__}: {exc}", 160)
        raise SimulatorError(
            f"--torch {args.torch}: cannot load it as a torch.save file ({why}); save the module with "
            "torch.save(module, FILE), from a class this Python can import"
        ) from None
    if isinstance(module, Mapping):  # torch.save(module.state_dict(), FILE): weights without the module
        raise SimulatorError(
            f"--torch {args.torch}: holds a state dict ({_a(type(module).__name__)} of {len(module)} entries), not "
            "a module: load it into the module it came from (module.load_state_dict(torch.load(FILE))) and save "
            "that with torch.save(module, FILE), or read it in Python with "
            "TransformerLayer.from_state_dict(state_dict, n_heads=...)"
        )
    if not isinstance(module, torch.nn.Module):
        raise SimulatorError(
            f"--torch {args.torch}: holds {_a(type(module).__name__)}, not a torch module; save the module "
            "with torch.save(module, FILE)"
        )
    module.eval()
    try:  # refuses, in one line naming it, what T does not simulate (before any input is drawn)
        d = layers_of(module)[0].d_model
    except SimulatorError as exc:
        raise SimulatorError(f"--torch {args.torch}: {exc}") from None
    n = 4 if args.n is None else args.n
    x = np.random.default_rng(args.seed + 1).normal(size=(1, n, int(d)))
    c = compare_torch(module, x)
    out = {
        "module": type(module).__name__,
        "n": n,
        "capacity": list(c.capacity),
        "u": c.u.refused or "ran",
        "torch_slow": c.slow.refused or "ran",
        "torch_fast": c.fast.refused or "ran",
        "u_vs_torch_slow": c.u_vs_slow,
        "u_vs_torch_fast": c.u_vs_fast,
        "torch_slow_vs_fast": c.slow_vs_fast,
    }
    if c.slow64 is not None:  # the module is not float64: the verdict compares with its float64 copy
        out |= {"torch_slow_float64": c.slow64.refused or "ran", "u_vs_torch_slow_float64": c.u_vs_slow64}
    out |= {"tolerance": c.tolerance, "agrees": c.agrees}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        w = max(map(len, out))
        for k, v in out.items():
            print(f"{k:>{w}}: {v:.3g}" if isinstance(v, float) else f"{k:>{w}}: {v}")
    if not c.agrees:  # the numbers are printed; the reason is the last line, on stderr
        print(f"attnsim simulate: {c.verdict()}", file=sys.stderr)
        return 1
    return 0


@command("simulate", _args, _validate, catalogue=False)
def simulate(args: argparse.Namespace) -> int:
    """Run U on a random T (or a saved torch module) and print its error, the cost, time and memory."""
    if args.torch is not None:
        return _simulate_torch(args)
    n = args.max_len if args.n is None else args.n
    if n < 1 or n > args.max_len:
        raise SimulatorError(f"--n = {n} must be within 1..max-len = {args.max_len}")
    log = lambda msg: print(msg, file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    f = f"F={args.d_ff}" if args.d_ff else "F=1 (no --d-ff: T has no FFN; U's FFN width is the least, 1)"
    log(f"building U for capacity N={args.max_len} D={args.d_model} H={args.heads} K={args.d_head} {f}")
    u = UniversalSimulator(args.max_len, args.d_model, args.heads, args.d_head, args.d_ff, variant=args.variant)
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
    est = check_fits(u, n)  # one line, with the estimate, for a run that cannot fit in memory (before X)
    x = np.random.default_rng(args.seed + 1).normal(size=(n, args.d_model))
    log(f"running U on {u.positions():,} positions, estimated to hold {gib(est.total)}")
    with _progress("U") as tell:
        m = u.measure(T, x, progress=tell)  # one timed run: seconds, peak traced bytes, max error against T
    c = u.cost(closed_forms=args.formula)
    out = {
        "capacity": c["capacity"],  # U's; d_ff 1 without --d-ff (the least FFN width U has)
        "layer": {"d_model": T.d_model, "n_heads": T.n_heads, "d_head": T.d_head, "d_ff": T.d_ff},  # T's
        "variant": args.variant,
        "n": n,
        "max_abs_error": m["max_abs_error"],  # against the reference T; --torch compares with torch
        "layers": c["layers"],
        "heads": c["heads"],
        "mlp_depth": c["mlp_depth"],
        "mlp_generalized": c["mlp_generalized"],
        "positions": c["positions"],
        **({"positions_formula": str(c["closed_form"]["positions"])} if args.formula else {}),
        "fingerprint": u.fingerprint,
        "build_seconds": build,
        "run_seconds": m["seconds"],
        "peak_traced_mb": m["peak_bytes"] / 2**20,
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for k, v in out.items():
            print(f"{k:>18}: {v:.3g}" if isinstance(v, float) else f"{k:>18}: {v}")
    return 0
