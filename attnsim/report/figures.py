"""The report's figures (matplotlib, Agg backend): error, cost, selectors, verify, soft attention."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from attnsim.report.data import Point

EXACT_FLOOR = 1e-18  # where an exact zero is drawn on a log axis
FLOAT_FLOOR = 1e-17  # where a float64 zero (bit-exact) is drawn
MARKERS = "osD^v<>ph*PX8Hd"


def _style(i: int) -> dict[str, Any]:
    """A distinct color (tab20) and marker per construction."""
    return {"color": plt.get_cmap("tab20")(i % 20), "marker": MARKERS[i % len(MARKERS)]}


def _series(points: Sequence[Point], attr: str) -> tuple[list[int], list[float]]:
    xs, ys = [], []
    for p in points:
        v = getattr(p, attr)
        if p.size is not None and v is not None:
            xs.append(p.size)
            ys.append(float(v))
    return xs, ys


def error_figure(
    sweeps: dict[str, list[Point]], path: Path, simulator: Sequence[dict[str, Any]] = (), torch: Sequence[Any] = ()
) -> Path:
    """Our Figure 2: max error vs NumPy over sizes (float64), exact zeros annotated."""
    fig, ax = plt.subplots(figsize=(9.5, 5.0))
    drew_exact = False
    for i, (name, pts) in enumerate(sweeps.items()):
        xs, ys = _series(pts, "error")
        if not xs:
            continue
        ys_plot = [max(y, FLOAT_FLOOR) for y in ys]
        (line,) = ax.plot(xs, ys_plot, label=f"{name} (float64)", **_style(i))
        ex, ey = _series(pts, "exact_error")
        zeros = [x for x, y in zip(ex, ey, strict=True) if y == 0.0]
        nonzero = [(x, y) for x, y in zip(ex, ey, strict=True) if y != 0.0]
        if zeros:
            ax.scatter(zeros, [EXACT_FLOOR] * len(zeros), marker="_", s=200, color=line.get_color())
            drew_exact = True
        for x, y in nonzero:  # an exact mismatch is a bug: show it loudly
            ax.scatter([x], [y], marker="x", s=80, color="red")
    if simulator:
        xs = [d["size"] for d in simulator if d.get("error") is not None]
        ys = [max(float(d["error"]), FLOAT_FLOOR) for d in simulator if d.get("error") is not None]
        ax.plot(xs, ys, marker="*", color="black", linewidth=2, label="U vs T(X) (float64)")
    for label, xs, ys in torch:
        ax.scatter(xs, [max(y, FLOAT_FLOOR) for y in ys], marker="P", s=70, color="crimson", label=label, zorder=5)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.axhline(FLOAT_FLOOR, color="grey", linewidth=0.5, linestyle=":")
    ax.text(1.0, FLOAT_FLOOR, " float64: 0 (bit-exact)", transform=ax.get_yaxis_transform(), fontsize=7, va="center")
    if drew_exact:
        ax.axhline(EXACT_FLOOR, color="green", linewidth=0.5, linestyle="--")
        ax.text(
            1.0, EXACT_FLOOR, " exact: 0 (Fractions, ==)", transform=ax.get_yaxis_transform(), fontsize=7, va="center"
        )
    ax.set_ylim(EXACT_FLOOR / 10, 1e-6)
    ax.set_xlabel("size (every scaled dimension = size; U: max_len = d_model)")
    ax.set_ylabel("max |ours - NumPy| / max(1, |NumPy|)")
    ax.set_title("Error against NumPy linear algebra (cf. the paper's Figure 2)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.22, 1.0))
    ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def cost_figure(sweeps: dict[str, list[Point]], path: Path, simulator: Sequence[dict[str, Any]] = ()) -> Path:
    """Layers, heads and positions against size, ours (solid) beside the paper's (dashed)."""
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    for i, (name, pts) in enumerate(sweeps.items()):
        st = _style(i)
        color, mk = st["color"], st["marker"]
        xs, ys = _series(pts, "layers")
        if xs:
            axes[0].plot(xs, ys, marker=mk, color=color, label=name)
        px, py = _series(pts, "paper_layers")
        if px:
            axes[0].plot(px, py, linestyle="--", marker="x", color=color, alpha=0.7)
        hx = [p.size for p in pts if p.size is not None and p.heads]
        axes[1].plot(hx, [sum(p.heads) for p in pts if p.size is not None and p.heads], marker=mk, color=color)
        ph = [(p.size, sum(p.paper_heads)) for p in pts if p.size is not None and p.paper_heads]
        if ph:
            axes[1].plot(*zip(*ph, strict=True), linestyle="--", marker="x", color=color, alpha=0.7)
        qx, qy = _series(pts, "positions")
        if qx:
            axes[2].plot(qx, qy, marker=mk, color=color)
    if simulator:
        sx = [d["size"] for d in simulator if "layers" in d]
        if sx:
            axes[0].plot(sx, [d["layers"] for d in simulator if "layers" in d], marker="*", color="black", label="U")
            axes[1].plot(sx, [sum(d["head_counts"]) for d in simulator if "layers" in d], marker="*", color="black")
            pos = [(d["size"], d["positions"]) for d in simulator if d.get("positions")]
            if pos:
                axes[2].plot(*zip(*pos, strict=True), marker="*", color="black")
    axes[0].set_title("layers (solid: ours, dashed: paper)")
    axes[1].set_title("heads, summed over layers (dashed: paper)")
    axes[2].set_title("positions (sequence length)")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("size")
        ax.grid(True, alpha=0.3)
    axes[1].set_yscale("symlog", linthresh=1.0)  # 0 heads (no attention) stays visible
    axes[1].set_ylim(bottom=0)
    axes[2].set_yscale("log")
    fig.legend(*axes[0].get_legend_handles_labels(), fontsize=7, loc="center right")
    fig.subplots_adjust(right=0.88)
    fig.tight_layout(rect=(0, 0, 0.88, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def selector_figure(
    name: str, selectors: dict[str, np.ndarray], blocks: Sequence[tuple[str, int, int]], path: Path
) -> Path:
    """Each selector of one construction as a query x key heat map, block boundaries marked."""
    items = list(selectors.items())[:6]
    n = max(1, len(items))
    fig, axes = plt.subplots(1, n, figsize=(3.4 * n, 4.0), squeeze=False)
    for ax, (label, m) in zip(axes[0], items, strict=False):
        ax.imshow(np.asarray(m, dtype=float), cmap="Blues", vmin=0, vmax=1, interpolation="nearest")
        for _, start, end in blocks:
            for b in (start - 0.5, end - 0.5):
                ax.axhline(b, color="orange", linewidth=0.5)
                ax.axvline(b, color="orange", linewidth=0.5)
        ax.set_title(label, fontsize=8)
        ax.set_xlabel("key position")
        ax.set_ylabel("query position")
    fig.suptitle(f"{name}: selectors (blue = selected; orange = layout blocks)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def verify_figure(counts: dict[str, dict[str, int]], path: Path) -> Path:
    """Obligations per construction, stacked by status."""
    names = list(counts)
    statuses = ("proved", "passed", "failed", "unknown")
    colors = {"proved": "tab:green", "passed": "tab:cyan", "failed": "tab:red", "unknown": "gold"}
    fig, ax = plt.subplots(figsize=(max(5.0, 0.6 * len(names) + 2), 3.8))
    bottom = np.zeros(len(names))
    for s in statuses:
        vals = np.array([counts[n].get(s, 0) for n in names], dtype=float)
        ax.bar(names, vals, bottom=bottom, label=s, color=colors[s])
        bottom += vals
    ax.set_ylabel("obligations")
    ax.set_title("attnsim verify: obligations by construction and status")
    ax.legend(fontsize=7)
    plt.setp(ax.get_xticklabels(), rotation=45, ha="right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def soft_attention_figure(series: dict[str, tuple[Sequence[float], Sequence[float]]], path: Path) -> Path:
    """The compiler's soft-attention error against the inverse temperature beta."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, (betas, errs) in series.items():
        ax.plot(betas, [max(float(e), FLOAT_FLOOR) for e in errs], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("inverse temperature beta")
    ax.set_ylabel("max error vs hard attention")
    ax.text(0.01, 0.01, f"an error of 0 is drawn at {FLOAT_FLOOR:g}", transform=ax.transAxes, fontsize=7)
    ax.set_title("Soft attention approaching AHAT")
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
