"""Programs over symbolic integer tokens, in Z3: a proof for *every* input of a given length.

The engine runs a program on concrete tokens; here the same program object is unrolled for a
fixed length L with one Z3 integer variable per token, so that a claim "the program's output
equals the task's specification" is proven for all integer inputs (unbounded alphabet) of that
length, not only for the inputs enumerated.  Supported nodes: tokens, indices, length,
integer constants, index Maps (via :class:`attnsim.rasp.z3_translation.Z3Translator`), Select with any
comparison and its and/or/not, SelectorWidth, and Aggregate (mean over the selected keys as a
Z3 real; 0 when none; a value-scored head: the mean over the selected keys that no selected key
outscores).  Value primitives are not supported (they raise :class:`NotSupported`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import z3

from attnsim.proofs import smtlib, solver_work, z3sel
from attnsim.proofs.obligation import Outcome, Scope, unknown_cause
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.rasp.z3_translation import Z3Translator


class NotSupported(ValueError):
    """The program uses a node this Z3 unrolling does not model."""


def unroll(program: C.SOp, tokens: Sequence[Any], side: list[Any]) -> list[Any]:  # noqa: C901, PLR0912, PLR0915
    """The program's output at each position, as Z3 terms over ``tokens`` (side conditions appended)."""
    L = len(tokens)
    vals: dict[int, list[Any]] = {}
    sels: dict[int, list[list[Any]]] = {}
    for node in C.topological([program]):
        key = id(node)
        if isinstance(node, C.Tokens):
            vals[key] = list(tokens)
        elif isinstance(node, C.Indices):
            vals[key] = [z3.IntVal(i) for i in range(L)]
        elif isinstance(node, C.Length):
            vals[key] = [z3.IntVal(L)] * L
        elif isinstance(node, C.Full):
            v = node.value
            c = z3.IntVal(int(v)) if v.denominator == 1 else z3.RealVal(f"{v.numerator}/{v.denominator}")
            vals[key] = [c] * L
        elif isinstance(node, (C.Map, C.SequenceMap)):
            if not isinstance(node.fn, C.IndexFn):
                raise NotSupported(f"{node.label}: value primitive {node.fn.fingerprint} is not modelled in Z3")
            fn = node.fn
            out = []
            for i in range(L):
                env: dict[str, Any] = {k: z3.IntVal(v) for k, v in fn.bindings.items()}
                for nm, a in zip(fn.argnames, node.args, strict=True):
                    t = vals[id(a)][i]
                    if not z3.is_int(t):
                        raise NotSupported(f"{node.label}: index function applied to a non-integer term")
                    env[nm] = t
                out.append(Z3Translator(env, side).term(fn.expr))
            vals[key] = out
        elif isinstance(node, C.Select):
            if node.cmp in ("TRUE", "FALSE"):
                b = z3.BoolVal(node.cmp == "TRUE")
                sels[key] = [[b] * L for _ in range(L)]
                continue
            ks, qs = vals[id(node.keys)], vals[id(node.queries)]
            op = E.COMPARATORS[node.cmp]
            sels[key] = [[op(ks[k], qs[q]) for k in range(L)] for q in range(L)]
        elif isinstance(node, C.SelectAnd):
            sa, sb = sels[id(node.a)], sels[id(node.b)]
            sels[key] = [[z3.And(sa[q][k], sb[q][k]) for k in range(L)] for q in range(L)]
        elif isinstance(node, C.SelectOr):
            sa, sb = sels[id(node.a)], sels[id(node.b)]
            sels[key] = [[z3.Or(sa[q][k], sb[q][k]) for k in range(L)] for q in range(L)]
        elif isinstance(node, C.SelectNot):
            sa = sels[id(node.a)]
            sels[key] = [[z3.Not(sa[q][k]) for k in range(L)] for q in range(L)]
        elif isinstance(node, C.SelectorWidth):
            s = sels[id(node.selector)]
            vals[key] = [z3.Sum([z3.If(s[q][k], 1, 0) for k in range(L)]) for q in range(L)]
        elif isinstance(node, C.Aggregate):
            sm, vs = sels[id(node.selector)], vals[id(node.values)]
            out = []
            if node.score is not None:  # value-scored: the selected keys no selected key outscores
                sc = vals[id(node.score)]
                sm = [
                    [z3.And(sm[q][k], *(z3.Implies(sm[q][o], sc[o] <= sc[k]) for o in range(L))) for k in range(L)]
                    for q in range(L)
                ]
            if isinstance(node.values, C.Full):  # the mean of a constant c over a non-empty set is c
                vals[key] = [z3.If(z3.Or(sm[q]), vs[0], 0) for q in range(L)]
                continue
            for q in range(L):
                cnt = z3.Sum([z3.If(sm[q][k], 1, 0) for k in range(L)])
                tot = z3.Sum([z3.If(sm[q][k], z3.ToReal(vs[k]) if z3.is_int(vs[k]) else vs[k], 0) for k in range(L)])
                out.append(z3.If(cnt == 0, z3.RealVal(0), tot / z3.ToReal(cnt)))
            vals[key] = out
        else:
            raise NotSupported(f"node {node.label} ({type(node).__name__}) is not modelled in Z3")
    return vals[id(program)]


def prove_for_all_inputs(
    program: C.SOp,
    length: int,
    spec: Callable[[list[Any]], list[Any]],
    domain: Callable[[Any], Any] | None = None,
    timeout: float = 10.0,
    rlimit: int | None = None,
) -> Outcome:
    """Prove out_i == spec(x)_i for every position i and every integer input x of ``length``
    satisfying ``domain`` (a per-token constraint; none = all integers).

    The domain is first shown non-empty by a model; the query's budget is ``rlimit`` Z3 units
    (``timeout`` seconds is only a safety net)."""
    xs = [z3.Int(f"x{i}") for i in range(length)]
    side: list[Any] = []
    try:
        out = unroll(program, xs, side)
    except NotSupported as exc:
        return Outcome.bad(str(exc))
    want = spec(xs)
    premises = [*side, *([domain(x) for x in xs] if domain is not None else [])]
    env = {str(x): x for x in xs}
    pc = z3sel.premises_check(premises, (), env, timeout)  # the domain is not empty: shown by a model
    refused = pc.refusal()
    if refused is not None:
        return refused
    facts = [*premises, z3.Or([o != w for o, w in zip(out, want, strict=True)])]
    s = solver_work.isolated(facts, rlimit or solver_work.QUERY_RLIMIT, seconds=timeout)
    text = smtlib.text_of(s)  # exported like every deciding query (the second solver sees it)
    res = solver_work.check(s)
    smtlib.record(text, str(res))
    scope = "every integer input" if domain is None else "every input in the domain"
    fixed = Scope()  # one length, no size symbol: a fixed instance
    if res == z3.unsat:
        told = f"unsat: output == spec at all {length} positions for {scope} of length {length}"
        return Outcome(True, told, pc, scope=fixed)
    if res == z3.sat:
        model = solver_work.model_of(s, list(env), env)
        cex = [dict(model)[str(x)] for x in xs]
        return Outcome(False, f"counterexample x = {cex}", pc, scope=fixed, counterexample=model)
    why = s.reason_unknown()
    told = f"z3 unknown ({why}; rlimit budget {rlimit or solver_work.QUERY_RLIMIT})"
    return Outcome(None, told, pc, scope=fixed, cause=unknown_cause(why))
