"""Measurements behind the report and the bench, read generically off the registries.

Every registered construction whose example is a :class:`~attnsim.constructions.construction.Construction`
is a *family*: its factory is recovered from the example (a ``functools.partial`` or a lambda
calling one function) and called with its size parameters scaled together (``heads`` kept), so
that new constructions appear in the figures without edits here. Constructions whose sizes
cannot be scaled contribute their one example size.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from attnsim.constructions.construction import Construction
from attnsim.proofs import registry

FIXED = ("heads",)  # size parameters never scaled


@dataclass
class Family:
    """A registered construction and how to build it at other sizes."""

    name: str
    paper_ref: str
    example: Any
    factory: Callable[..., Any] | None
    scaled: tuple[str, ...]  # parameter names scaled together
    fixed: dict[str, int] = field(default_factory=dict)
    base: dict[str, int] = field(default_factory=dict)  # the example's value of each parameter

    def build(self, s: int | None) -> Any:
        """The construction at size ``s`` (None: the registered example)."""
        if s is None or self.factory is None or not self.scaled:
            return self.example
        kw = {k: s for k in self.scaled}
        kw.update(self.fixed)
        return self.factory(**kw)

    @property
    def example_size(self) -> int | None:
        if not self.scaled:
            return None
        return int(max(self.base[k] for k in self.scaled))


def is_construction(obj: Any) -> bool:
    """Duck-typed: runnable, with a reference, a layout and named inputs."""
    return all(hasattr(obj, a) for a in ("run", "reference", "layout", "inputs", "cost", "trace"))


def _factory_of(example: Callable[[], Any]) -> Callable[..., Any] | None:
    if isinstance(example, functools.partial):
        return example.func
    code = getattr(example, "__code__", None)
    glb = getattr(example, "__globals__", {})
    if code is None:
        return None
    for i, nm in enumerate(code.co_names):
        obj = glb.get(nm)
        # follow attribute chains such as lemmas.matmul
        j = i + 1
        while obj is not None and inspect.ismodule(obj) and j < len(code.co_names):
            obj = getattr(obj, code.co_names[j], None)
            j += 1
        if callable(obj) and not inspect.isclass(obj) and not inspect.ismodule(obj):
            return obj
    return None


def _param_sizes(sizes: dict[str, int], params: Any) -> dict[str, int] | None:
    """The example's sizes keyed by factory parameter: by name, or one unmatched size to the one
    unmatched required parameter (e.g. Size("n") built by ``relu(length)``)."""
    if not sizes:
        return None
    named = {k: v for k, v in sizes.items() if k in params}
    rest = [k for k in sizes if k not in params]
    if not rest:
        return named
    free = [
        nm
        for nm, p in params.items()
        if nm not in named
        and p.default is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    if len(rest) == 1 and len(free) == 1:
        named[free[0]] = sizes[rest[0]]
        return named
    return None


def families(names: Iterable[str] | None = None) -> tuple[list[Family], list[tuple[str, str]]]:  # noqa: C901
    """(families, skipped with reason) for the registered constructions (optionally only ``names``)."""

    fams: list[Family] = []
    skipped: list[tuple[str, str]] = []
    wanted = set(names) if names is not None else None
    for name, (ref, make) in registry.constructions().items():
        if wanted is not None and name not in wanted:
            continue
        try:
            ex: Any = make()
        except Exception as exc:
            skipped.append((name, f"example fails: {type(exc).__name__}: {exc}"))
            continue
        if not is_construction(ex):
            api = simulator_api()
            if api is not None and isinstance(ex, api[1]):
                if name == "simulator":  # its parts (frame, stages) are the same program: said once
                    skipped.append((name, "the universal simulator: measured as U (max_len = d_model), not as a lemma"))
            else:
                skipped.append((name, f"example is of type {type(ex).__name__}, not a Construction: not swept"))
            continue
        fac = _factory_of(make)
        scaled: tuple[str, ...] = ()
        fixed: dict[str, int] = {}
        sizes: dict[str, int] | None = None
        if fac is not None:
            try:
                params = inspect.signature(fac).parameters
            except (TypeError, ValueError):
                params = {}  # type: ignore[assignment]
            sizes = _param_sizes(dict(ex.sizes), params)
            if sizes:
                scaled = tuple(k for k in sizes if k not in FIXED)
                fixed = {k: v for k, v in sizes.items() if k in FIXED}
                try:  # the recovered factory must rebuild the example
                    again = fac(**sizes)
                    if again.layout.total != ex.layout.total:
                        scaled = ()
                except Exception:
                    scaled = ()
        fams.append(Family(name, ref, ex, fac, scaled, fixed, dict(sizes or {}) if scaled else {}))
    return fams, skipped


# -- inputs and errors -------------------------------------------------------------------------
def random_operands(con: Construction, rng: np.random.Generator) -> list[np.ndarray]:
    """Random operands the construction accepts: normal floats, else bits, else small integers."""
    shapes = [con.layout[nm].shape for nm in con.inputs]

    def normal(s: tuple[int, ...]) -> np.ndarray:
        return rng.normal(size=s)

    def ints(lo: int, hi: int) -> Callable[[tuple[int, ...]], np.ndarray]:
        def draw(s: tuple[int, ...]) -> np.ndarray:
            return rng.integers(lo, hi, size=s).astype(np.float64)

        return draw

    # normal floats; else bits; else small positive ints (sizes passed as tokens); else small ints
    tries = [normal] + [ints(0, 2)] * 3 + [ints(1, 4)] * 3 + [ints(0, 7)] * 3
    last: Exception | None = None
    for make in tries:
        ops = [make(s) for s in shapes]
        try:
            con.reference(*ops)
            return ops
        except ValueError as exc:
            last = exc
    raise ValueError(f"{con.name}: no random operands accepted ({last})")


def rel_error(got: np.ndarray, want: np.ndarray) -> float:
    """max |got - want| / max(1, max |want|): the numeric obligations' measure."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if want.size == 0:
        return 0.0
    s = max(1.0, float(np.max(np.abs(want))))
    return float(np.max(np.abs(got - want))) / s


@dataclass
class Point:
    """One measurement of a construction at one size."""

    construction: str
    size: int | None
    positions: int
    error: float | None = None
    exact_error: float | None = None  # max |exact - reference| over Fractions (0 means equal)
    layers: int | None = None
    heads: list[int] = field(default_factory=list)
    paper_layers: int | None = None
    paper_heads: list[int] | None = None
    seconds: float = 0.0
    note: str = ""
    shape: str = ""  # the sizes as text, for a construction of fixed sizes (size None)

    @property
    def size_text(self) -> str:
        """The size for a table: the swept size, or the fixed sizes (``A 3 x 3 (fixed)``)."""
        if self.size is not None:
            return str(self.size)
        return f"{self.shape} (fixed)" if self.shape else "fixed"


def size_label(con: Construction) -> str:
    """A construction's sizes as text: its size parameters (``rows = 2, inner = 3, cols = 2``), or,
    when it has none, the shapes of its input blocks (``A 3 x 3``)."""
    sizes = getattr(con, "sizes", None) or {}
    if sizes:
        return ", ".join(f"{k} = {v}" for k, v in sizes.items())
    return ", ".join(f"{b.name} {' x '.join(map(str, b.shape))}" for b in con.layout if b.channel == "tokens")


SIZES = (2, 4, 8, 16, 32, 64)


def sweep(  # noqa: C901, PLR0912
    fam: Family,
    sizes: Iterable[int] = SIZES,
    budget: float = 3.0,
    exact_positions: int = 400,
    seed: int = 0,
    on_point: Callable[[Point], None] | None = None,
) -> list[Point]:
    """Error and cost of ``fam`` over ``sizes``; stops growing once one size takes ``budget`` s."""
    pts: list[Point] = []
    grid: list[int | None] = list(sizes) if fam.scaled else [None]
    rng = np.random.default_rng(seed)
    for s in grid:
        t0 = time.perf_counter()
        try:
            con = fam.build(s)
        except ValueError as exc:
            pts.append(Point(fam.name, s, 0, note=f"not built: {exc}"))
            continue
        pt = Point(fam.name, s if s is not None else fam.example_size, int(con.layout.total))
        if pt.size is None:
            pt.shape = size_label(con)
        try:
            c = con.cost()
            pt.layers, pt.heads = int(c.layers), [int(h) for h in c.heads]
        except Exception as exc:
            pt.note = f"cost failed: {exc}"
        pc = getattr(con, "paper_cost", None) or {}
        if isinstance(pc.get("layers"), int):
            pt.paper_layers = pc["layers"]
        if isinstance(pc.get("heads"), list) and all(isinstance(h, int) for h in pc["heads"]):
            pt.paper_heads = list(pc["heads"])
        try:
            ops = random_operands(con, rng)
            pt.error = rel_error(con.run(*ops), con.reference(*ops))
        except ValueError as exc:
            result = getattr(exc, "result", None)  # a float64 result refused for its accuracy: plot it anyway
            if result is not None:
                pt.error = rel_error(result, con.reference(*ops))
                pt.note = "float64 run refused (misses its stated accuracy)"
            else:
                pt.note = f"numeric: {exc}"
        if getattr(con, "exact", False) and pt.positions <= exact_positions:
            try:
                pt.exact_error = exact_error(con, rng)
            except ValueError as exc:
                pt.note = (pt.note + f"; exact: {exc}").strip("; ")
        pt.seconds = time.perf_counter() - t0
        pts.append(pt)
        if on_point:
            on_point(pt)
        if pt.seconds > budget:
            break
    return pts


def exact_error(con: Construction, rng: np.random.Generator) -> float:
    """max |run - reference| on random rationals in the exact backend (0.0 exactly when equal)."""
    ops = []
    for nm in con.inputs:
        shape = con.layout[nm].shape
        flat = np.empty(int(np.prod(shape)), dtype=object)
        flat[:] = [Fraction(int(rng.integers(-9, 10)), int(rng.integers(1, 6))) for _ in range(flat.size)]
        ops.append(flat.reshape(shape))
    try:
        want = con.reference(*ops, backend="exact")
    except ValueError:  # e.g. a singular draw or binary-only inputs: fall back to bits
        ops = [np.asarray(rng.integers(0, 2, size=con.layout[nm].shape), dtype=object) for nm in con.inputs]
        want = con.reference(*ops, backend="exact")
    got = con.run(*ops, backend="exact")
    diff = [abs(Fraction(g) - Fraction(w)) for g, w in zip(np.ravel(got), np.ravel(want), strict=True)]
    return float(max(diff, default=Fraction(0)))


# -- the universal simulator, when it has landed ------------------------------------------------
def simulator_api() -> tuple[Any, Any] | None:
    """(TransformerLayer, UniversalSimulator) if the simulator is importable, else None."""
    places: tuple[tuple[str, str], ...] = (
        ("attnsim", "attnsim"),
        ("attnsim.universal", "attnsim.universal"),
        ("attnsim.universal.layer", "attnsim.universal.universal"),
    )
    for tl_mod, us_mod in places:
        try:
            tl = getattr(importlib.import_module(tl_mod), "TransformerLayer")  # noqa: B009
            us = getattr(importlib.import_module(us_mod), "UniversalSimulator")  # noqa: B009
            return tl, us
        except Exception:
            continue
    return None


def simulator_point(size: int, seed: int = 0, heads: int = 2, with_ffn: bool = True) -> dict[str, Any]:
    """U at max_len = d_model = ``size``: error vs T(X), cost, build and run seconds."""
    api = simulator_api()
    if api is None:
        raise ValueError("the universal simulator (attnsim.universal) is not available")
    TL, US = api
    h = max(1, min(heads, size))
    dh = max(1, size // h)
    dff = 2 * size if with_ffn else None
    t0 = time.perf_counter()
    U = US(max_len=size, d_model=size, n_heads=h, d_head=dh, d_ff=dff)
    t_build = time.perf_counter() - t0
    T = TL.random(d_model=size, n_heads=h, d_head=dh, d_ff=dff, seed=seed)
    X = np.random.default_rng(seed).normal(size=(size, size))
    t0 = time.perf_counter()
    Y = U.run(T, X)
    t_run = time.perf_counter() - t0
    t0 = time.perf_counter()
    R = T(X)
    t_ref = time.perf_counter() - t0
    out: dict[str, Any] = {
        "size": size,
        "heads": h,
        "d_head": dh,
        "d_ff": dff,
        "error": rel_error(Y, R),
        "build_s": t_build,
        "run_s": t_run,
        "ref_s": t_ref,
    }
    try:
        c = U.cost()
        out["layers"] = int(cost_get(c, "layers"))
        out["head_counts"] = [int(x) for x in cost_get(c, "heads")]
        pos = cost_get(c, "positions")
        out["positions"] = int(pos) if pos is not None else None
    except Exception as exc:
        out["cost_note"] = str(exc)
    return out


def cost_get(c: Any, key: str) -> Any:
    """A field of a cost, whether a Cost object or a dict (U.cost() returns a dict)."""
    if isinstance(c, dict):
        return c[key]
    return getattr(c, key)


def closed_forms(obj: Any) -> dict[str, str]:
    """Closed-form cost expressions an object (or its cost) provides, as strings."""
    found: dict[str, str] = {}
    cands: list[Any] = [obj]
    try:
        cands.append(obj.cost())
    except Exception:
        pass
    for c in cands:
        for attr in ("closed_form", "closed_forms", "cost_formula", "cost_formulas", "formulas", "symbolic"):
            val = c.get(attr) if isinstance(c, dict) else getattr(c, attr, None)
            if callable(val):
                try:
                    val = val()
                except Exception:
                    continue
            if isinstance(val, dict):
                found.update({str(k): str(v) for k, v in val.items()})
    return found
