"""Selector equality: a changed selector selects the same (q, k) as the original.

By Z3, for all 0 <= q, k < length and all sizes of the domain.  A selector comparing index maps of
the tokens is compared for all integer token values (BOUNDED per size when symbolic sizes defeat Z3)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from attnsim.proofs import z3sel
from attnsim.proofs.obligation import Outcome
from attnsim.rasp import core as C
from attnsim.rasp import expr as E
from attnsim.verify.mutation.equivalence.z3_proofs import _cached_prove, _prove_per_size, _scope
from attnsim.verify.mutation.generate import Applied, _short, _without_hook

_TOK_Q, _TOK_K = E.Var("token_q"), E.Var("token_k")


def _token_expr(sop: C.SOp, pos: E.Expr, tok: E.Expr) -> E.Expr | None:
    """Like :func:`attnsim.rasp.core.index_expr`, with the token at ``pos`` as the integer ``tok``
    (index maps of tokens: tokens are integers wherever an index map reads them)."""
    if isinstance(sop, C.Tokens):
        return tok
    if isinstance(sop, (C.Map, C.SequenceMap)) and isinstance(sop.fn, C.IndexFn):
        subs: dict[str, E.Expr | int] = {}
        for name, x in zip(sop.fn.argnames, sop.args, strict=True):
            ex = _token_expr(x, pos, tok)
            if ex is None:
                return None
            subs[name] = ex
        return sop.fn.expr.substitute(subs)
    return C.index_expr(sop, pos)


def token_selector_expr(sel: C.Selector) -> E.Expr | None:
    """The selector as a boolean expression of q, k and the integer tokens at q and k; None when a
    side depends on anything else (an aggregate, a value primitive)."""
    if isinstance(sel, C.Select):
        if sel.cmp in ("TRUE", "FALSE"):
            return z3sel.selector_expr(sel)
        ek, eq = _token_expr(sel.keys, z3sel.K, _TOK_K), _token_expr(sel.queries, z3sel.Q, _TOK_Q)
        if ek is None or eq is None:
            return None
        if sel.cmp in ("==", "!="):
            return ek.eq(eq) if sel.cmp == "==" else ek.ne(eq)
        return E.BinOp(sel.cmp, ek, eq)
    if isinstance(sel, (C.SelectAnd, C.SelectOr)):
        fa, fb = token_selector_expr(sel.a), token_selector_expr(sel.b)
        if fa is None or fb is None:
            return None
        return fa & fb if isinstance(sel, C.SelectAnd) else fa | fb
    if isinstance(sel, C.SelectNot):
        f = token_selector_expr(sel.a)
        return None if f is None else E.Not(f)
    return None


def _original_selector(a: Applied) -> C.Selector:
    """The selector a changed Select / SelectAnd / SelectOr was before the mutant (built unhooked)."""
    if a.op.startswith("drop:"):
        ka, kb = a.before
        return cast(
            C.Selector,
            _without_hook(lambda: C.SelectAnd(ka, kb) if isinstance(a.node, C.SelectAnd) else C.SelectOr(ka, kb)),
        )
    k, q, cmp = a.before
    return cast(C.Selector, _without_hook(lambda: C.Select(k, q, cmp)))


def prove_same_selector(
    new_sel: C.Selector,
    orig: C.Selector,
    timeout: float,
    seq: E.Expr,
    bound: str,
    minimum: dict[str, int] | None = None,
    assume: Sequence[E.Expr] = (),
    instances: Sequence[dict[str, int]] = (),
) -> tuple[bool, str]:
    """Z3: two selectors select the same (q, k) for all 0 <= q, k < ``seq`` and all sizes in the domain
    (token-dependent selectors: for all integer tokens at q and k; if Z3 cannot decide that with
    symbolic sizes, a BOUNDED proof per size assignment, said so)."""
    assume = tuple(assume)
    given = f" given {', '.join(_short(x, 40) for x in assume)}" if assume else ""
    tokens = ""
    try:
        f_new, f_old = z3sel.selector_expr(new_sel), z3sel.selector_expr(orig)
    except z3sel.NotStructural as exc:
        f_tok_new, f_tok_old = token_selector_expr(new_sel), token_selector_expr(orig)
        if f_tok_new is None or f_tok_old is None:
            return False, f"selector is not structural: {exc}"
        f_new, f_old = f_tok_new, f_tok_old
        tokens = " and all integer token values at q and k"
    iff = ((f_new & f_old) | (E.Not(f_new) & E.Not(f_old))).substitute({"length": seq})
    qv, kv = z3sel.Q, z3sel.K
    hyps = (qv >= 0, qv < seq, kv >= 0, kv < seq, *assume)
    res = _cached_prove(iff, hyps, minimum or {}, timeout)
    if res.ok is True:
        return True, f"z3: mutated selector = original for all 0 <= q, k < {bound}{tokens}{given}, {_scope(res)}"
    if res.ok is None and tokens:  # e.g. x mod p with p symbolic: nonlinear; each fixed p is linear
        ok, scope = _prove_per_size(iff, hyps, minimum or {}, instances, timeout)
        if ok:
            return True, f"z3: mutated selector = original for all 0 <= q, k < {bound}{tokens}{given}, {scope}"
        res = Outcome.unknown(f"{res.detail}; {scope}")
    return False, f"z3 {'counterexample' if res.ok is False else 'unknown'}: {res.detail[:160]}"
