"""Node-level equivalence: every changed index map or selector equals the original one.

Z3, for all values of the size symbols within the construction's domain (the minimum sizes and the
size-only assumptions of its intents, e.g. an even row length for MaxMin): at every position
``0 <= p < length`` of each instance built (the layout's length; any length for a node outside
every construction's program, under the domain of the intents built on it).  SymPy: the primitive
is symmetric in the swapped operands."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

from attnsim.proofs import z3sel
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.verify.mutation.equivalence.selector import _original_selector, prove_same_selector, token_selector_expr
from attnsim.verify.mutation.equivalence.z3_proofs import _scope
from attnsim.verify.mutation.generate import Applied, Mutant, Mutator, _short


def prove_equivalent(  # noqa: C901, PLR0912
    m: Mutant, example: Callable[[], Any], hook: Mutator, timeout: float, built: Sequence[Any] = ()
) -> tuple[bool, str]:
    """A proof that every node the mutant changed (in every instance the obligations and the
    example built) computes what the original node computes, at every position, for all sizes.

    ``built`` are the Constructions built meanwhile: a node inside one of their programs is
    compared on that sequence's positions ``0 <= p < layout.length``; any other node on every
    position ``p >= 0`` of a sequence of any length."""
    try:
        example()
    except Exception as exc:
        return False, f"example does not build: {type(exc).__name__}: {exc}"
    if not hook.log:
        return False, "site not built by the example or any obligation"
    where: dict[int, list[tuple[E.Expr | None, dict[str, int], tuple[E.Expr, ...]]]] = {}
    for con in built:
        layout, program = getattr(con, "layout", None), getattr(con, "program", None)
        if layout is None or not isinstance(program, C.RASPExpr):
            continue
        minimum, assume = domain_of(con)
        for node in C.topological([program]):
            where.setdefault(id(node), []).append((layout.length, minimum, assume))
    for it in built:  # a node outside every program (e.g. an intent checked at any offset): its intents' domain
        if isinstance(getattr(it, "selector", None), C.RASPExpr) and not hasattr(it, "program"):
            for node in C.topological([it.selector]):
                if id(node) not in where:
                    where.setdefault(-id(node), []).append((None, *domain_of(SimpleNamespace(intents=[it]))))
    distinct: dict[str, tuple[Applied, E.Expr | None, dict[str, int], tuple[E.Expr, ...]]] = {}
    for a in hook.log:
        for length, minimum, assume in where.get(id(a.node)) or where.get(-id(a.node)) or [(None, {}, ())]:
            key = f"{_applied_key(a)}|{E.render(length) if length is not None else '*'}"
            key += "|" + ",".join(E.render(x) for x in assume) + f"|{sorted(minimum.items())}"
            distinct.setdefault(key, (a, length, minimum, assume))
    values: dict[str, list[dict[str, int]]] = {}  # the size values of every changed node (bounded proofs)
    for a in hook.log:
        values.setdefault(_applied_key(a), []).append(_node_sizes(a))
    proofs = []
    for a, length, minimum, assume in distinct.values():
        ok, why = _prove_node(a, timeout, length, minimum, assume, values.get(_applied_key(a), []))
        if not ok:
            return False, f"no equivalence proof ({why})"
        proofs.append(why)
    uniq = list(dict.fromkeys(proofs))
    return True, "; ".join(uniq) + f" [{len(hook.log)} changed nodes, {len(distinct)} distinct cases, all proven]"


def _node_sizes(a: Applied) -> dict[str, int]:
    """The values of the sizes a changed selector node reads (empty for other nodes)."""
    if not isinstance(a.node, C.Selector):
        return {}
    f = token_selector_expr(a.node)
    try:
        return C.size_bindings(f) if f is not None else {}
    except C.ProgramError:
        return {}


def _applied_key(a: Applied) -> str:
    n = a.node
    if isinstance(n, (C.Map, C.SequenceMap)):  # size values are left out: the proofs hold for all of them
        args = ",".join(_arg_key(x) for x in n.args)
        before = _fn_key(a.before) if isinstance(a.before, (C.IndexFn, C.Prim)) else ",".join(map(_arg_key, a.before))
        return f"{_fn_key(n.fn)}|{args}|{before}"
    if isinstance(n, C.Select):
        k, q, cmp = a.before
        return f"sel|{_arg_key(n.keys)}|{_arg_key(n.queries)}|{n.cmp}|{_arg_key(k)}|{_arg_key(q)}|{cmp}"
    if isinstance(n, C.RASPExpr):
        return n.fingerprint + repr(a.before)
    return repr(a.op) + str(id(n))


def _fn_key(fn: C.Fn) -> str:
    return E.render(fn.expr) if isinstance(fn, C.IndexFn) else fn.fingerprint


def _arg_key(x: Any) -> str:
    e = C.index_expr(x, _POS) if isinstance(x, C.SOp) else None
    return E.render(e) if e is not None else (x.fingerprint if isinstance(x, C.RASPExpr) else repr(x))


_POS = E.Var("pos!")
_LEN = E.Var("length")


def _structural_args(args: Sequence[C.SOp]) -> list[E.Expr] | None:
    out = []
    for a in args:
        e = C.index_expr(a, _POS)
        if e is None:
            return None
        out.append(e)
    return out


def domain_of(con: Any) -> tuple[dict[str, int], tuple[E.Expr, ...]]:
    """The construction's domain as its intents state it: minimum sizes, and the assumptions that
    mention only sizes (e.g. ``cols % 2 == 0`` for MaxMin, which the factory enforces)."""
    minimum: dict[str, int] = {}
    assume: list[E.Expr] = []
    for it in getattr(con, "intents", ()):
        minimum.update(dict(it.minimum))
        for x in it.assumptions:
            if x.variables() <= set(z3sel.size_names(x)) and all(x is not y for y in assume):
                assume.append(x)
    return minimum, tuple(assume)


def _prove_node(
    a: Applied,
    timeout: float,
    length: E.Expr | None = None,
    minimum: dict[str, int] | None = None,
    assume: Sequence[E.Expr] = (),
    instances: Sequence[dict[str, int]] = (),
) -> tuple[bool, str]:
    """Z3 / SymPy: the changed node equals the original one, at every position 0 <= p < length
    (``length`` the instance's layout length over its size symbols; None: any length), all sizes
    within the construction's domain (``minimum`` sizes and the size-only ``assume``)."""
    op = a.op
    seq = _LEN if length is None else length
    bound = "length" if length is None else _short(length, 40)
    within = f"every position 0 <= p < {bound}"
    assume = tuple(assume)
    given = f" given {', '.join(_short(x, 40) for x in assume)}" if assume else ""
    if op.startswith("expr:") or (op.startswith("swap:") and isinstance(a.node.fn, C.IndexFn)):
        node = a.node
        old_fn = a.before if op.startswith("expr:") else node.fn
        old_args = node.args if op.startswith("expr:") else a.before
        new_e, old_e = _structural_args(node.args), _structural_args(old_args)
        if new_e is not None and old_e is not None:
            new = node.fn.expr.substitute(dict(zip(node.fn.argnames, new_e, strict=True)))
            old = old_fn.expr.substitute(dict(zip(old_fn.argnames, old_e, strict=True)))
            goal = new.eq(old).substitute({"length": seq})
            res = z3sel.prove(goal, (_POS >= 0, _POS < seq, *assume), minimum=minimum, timeout=timeout)
            domain = within + given
        elif op.startswith("expr:"):
            res = z3sel.prove(node.fn.expr.eq(old_fn.expr), assume, minimum=minimum, timeout=timeout)
            domain = "all integer arguments"
        else:
            return False, "operands are not index expressions of the position"
        if res.ok is True:
            return True, f"z3: mutated index map = original at {domain}, {_scope(res)}"
        return False, f"z3 {'counterexample' if res.ok is False else 'unknown'}: {res.detail[:160]}"
    if op.startswith(("cmp:", "kq-swap", "drop:")):
        orig = _original_selector(a)
        return prove_same_selector(a.node, orig, timeout, seq, bound, minimum, assume, instances)
    if op.startswith("swap:"):
        return _prove_symmetric(a.node.fn, op)
    return False, f"no equivalence prover for {op}"


def _prove_symmetric(fn: C.Prim, op: str) -> tuple[bool, str]:
    import sympy as sp

    i, j = (int(x) for x in op[5:].split(","))
    xs = list(sp.symbols(f"x0:{fn.arity}", real=True))
    ys = list(xs)
    ys[i], ys[j] = ys[j], ys[i]
    f = fn.primitive.sympy
    diff = sp.simplify(f(*xs, *fn.params) - f(*ys, *fn.params))
    if diff == 0:
        return True, f"sympy: {fn.name} is symmetric in operands {i}, {j} (difference simplifies to 0)"
    return False, f"{fn.name}(x) - {fn.name}(swapped x) = {diff}"
