"""Two rules of the Sum normal form (:mod:`attnsim.symbolic.sums`) about powers.

* **copies of a power of a sum**: inside a sum's body, ``(Sum_w g(w))^k`` (k a positive integer)
  is the product of k copies ``Sum_{w_1} g(w_1) ... Sum_{w_k} g(w_k)``, each with its own bound
  variable, which then join the outer sum (distributivity): ``Sum_v (Sum_h O(h, v))^2 =
  Sum_{v, h, h'} O(h, v) O(h', v)``, the form of U's E[R^2];
* **flag idempotence**: a 0/1 flag's positive power is the flag, ``[c]^k = [c]``.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from attnsim.symbolic.ite import Ite


def is_flag(e: Any) -> bool:
    return isinstance(e, Ite) and e.args[1] == 1 and e.args[2] == 0


def sum_copies(f: Any) -> list[Any] | None:
    """``(Sum g)^k`` as k factors ``Sum g`` (the caller makes their bound names apart), else None."""
    if isinstance(f, sp.Pow) and isinstance(f.base, sp.Sum) and f.exp.is_Integer and f.exp > 0:
        return [f.base] * int(f.exp)
    return None


def flag_powers(e: Any) -> Any:
    """Every ``[c]^k`` (k a positive integer) in ``e`` as ``[c]``."""
    return sp.sympify(e).replace(
        lambda x: isinstance(x, sp.Pow) and is_flag(x.base) and x.exp.is_Integer and x.exp > 0, lambda x: x.base
    )


__all__ = ["flag_powers", "is_flag", "sum_copies"]
