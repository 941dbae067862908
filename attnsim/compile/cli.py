"""`attnsim compile NAME [sizes...] --max-len N --out FILE`: compile a lemma, U or a classic program.

NAME is a registered construction (``transpose``, ``matmul``, ``softmax``...; sizes are the
lemma factory's positional arguments, default: the registered example), ``u`` (sizes:
max_len d_model n_heads d_head [d_ff]) or a classic RASP program (``reverse``, ``histogram``,
``sort_unique``, ``length``, ``frac_prevs``; ``--max-len`` and ``--vocab``).
"""

from __future__ import annotations

import argparse
from typing import Any

from attnsim.cli import command
from attnsim.compile import classic
from attnsim.compile.compiler import compile_program
from attnsim.compile.model import CompiledTransformer, CompileError


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="a lemma (see `attnsim verify`), 'u' (the universal simulator) or a classic program")
    p.add_argument("sizes", nargs="*", type=int, help="sizes for the lemma factory, or U's capacity")
    p.add_argument("--max-len", type=int, default=None, help="longest sequence (default: the construction's length)")
    p.add_argument("--vocab", type=int, default=None, help="classic programs: tokens are 0..VOCAB-1 (default 4)")
    p.add_argument("--out", metavar="FILE", default=None, help="write the weights to FILE (.npz)")
    p.add_argument("--stack", type=int, default=1, help="u: number of layers T_1..T_M in the input (pointer range)")


def build(name: str, sizes: list[int], max_len: int | None, vocab: int | None, stack: int = 1) -> CompiledTransformer:
    """Compile NAME at the given sizes (see the module docstring)."""
    from attnsim.proofs.registry import constructions

    key = name.lower()
    if key == "u":
        from attnsim.simulator.universal import UniversalSimulator

        if len(sizes) not in (4, 5):
            raise CompileError("u takes its capacity: max_len d_model n_heads d_head [d_ff]")
        if stack < 1:
            raise CompileError(f"--stack must be >= 1, got {stack}")
        u = UniversalSimulator(*sizes)
        n = u.positions(stack)
        if max_len is not None and max_len < n:
            raise CompileError(f"U at this capacity runs on {n} positions; --max-len {max_len} is too short")
        ct = compile_program(u.program, max_len=max_len or n, domains={"ptr": range(stack)})
        ct.name = f"U{tuple(sizes)}"
        return ct
    if key in classic.PROGRAMS:
        if sizes:
            raise CompileError(f"classic program {key} takes no sizes; use --max-len and --vocab")
        return compile_program(classic.PROGRAMS[key](), max_len=max_len or 10, vocab=range(vocab or 4))
    cons = constructions()
    if key not in cons:
        known = ", ".join(sorted([*cons, "u", *classic.PROGRAMS]))
        raise CompileError(f"unknown construction {name!r}; known: {known}")
    con: Any
    if sizes:
        from attnsim import lemmas

        factory = getattr(lemmas, key.replace("-", "_"), None)
        if factory is None:
            raise CompileError(f"{key} has no size-taking factory in attnsim.lemmas; omit the sizes")
        try:
            con = factory(*sizes)
        except TypeError as exc:
            raise CompileError(f"{key}{tuple(sizes)}: {exc}") from None
    else:
        con = cons[key][1]()
    n = con.layout.total
    if max_len is not None and max_len < n:
        raise CompileError(f"{key} runs on {n} positions; --max-len {max_len} is too short")
    ct = compile_program(con.program, max_len=max_len or n)
    ct.name = f"{key}{tuple(sizes) if sizes else ''}"
    return ct


@command("compile", _args)
def compile_command(args: argparse.Namespace) -> int:
    """Compile a lemma, U or a classic program to transformer weights; print the summary, write the .npz."""
    ct = build(args.name, list(args.sizes), args.max_len, args.vocab, args.stack)
    print(ct.summary())
    if args.out:
        path = ct.save(args.out)
        print(f"wrote {path}")
    return 0
