"""GAHAT-RASP: the language (program graph, index expressions, primitives, engine, cost)."""

from attnsim.rasp.arith import Arithmetic, BackendError
from attnsim.rasp.core import (
    CATEGORICAL,
    NUMERICAL,
    Aggregate,
    Full,
    IndexFn,
    Indices,
    Length,
    Map,
    Prim,
    ProgramError,
    RASPExpr,
    Select,
    SelectAnd,
    Selector,
    SelectorWidth,
    SelectNot,
    SelectOr,
    SequenceMap,
    Size,
    SOp,
    Tokens,
    aggregate,
    apply,
    full,
    imap,
    index_expr,
    indices,
    is_structural,
    length,
    select,
    selector_width,
    tokens,
    topological,
)
from attnsim.rasp.engine import Trace, evaluate, trace
from attnsim.rasp.expr import Expr, ExprError, Var, emax, emin, if_
from attnsim.rasp.primitives import PrimitiveError
from attnsim.rasp.schedule import Cost, cost

__all__ = [
    "CATEGORICAL", "NUMERICAL", "Aggregate", "Arithmetic", "BackendError", "Cost", "Expr", "ExprError",
    "Full", "IndexFn", "Indices", "Length", "Map", "Prim", "PrimitiveError", "ProgramError", "RASPExpr",
    "SOp", "Select", "SelectAnd", "SelectNot", "SelectOr", "Selector", "SelectorWidth", "SequenceMap",
    "Size", "Tokens", "Trace", "Var", "aggregate", "apply", "cost", "emax", "emin", "evaluate", "full",
    "if_", "imap", "index_expr", "indices", "is_structural", "length", "select", "selector_width",
    "tokens", "topological", "trace",
]
