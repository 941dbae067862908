"""The report's figures (matplotlib, Agg backend): error, cost, selectors, verify, soft attention."""

from __future__ import annotations

import textwrap
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


LINESTYLES = ("-", "--", "-.", ":")
OFF_SCALE = 1e2  # float64 errors above this are drawn at the top edge, marked, with their value


def _style(i: int) -> dict[str, Any]:
    """A distinct color (tab20), marker and line style per construction (overlaps stay readable)."""
    return {
        "color": plt.get_cmap("tab20")(i % 20),
        "marker": MARKERS[i % len(MARKERS)],
        "linestyle": LINESTYLES[i % len(LINESTYLES)],
    }


def _series(points: Sequence[Point], attr: str) -> tuple[list[int], list[float]]:
    xs, ys = [], []
    for p in points:
        v = getattr(p, attr)
        if p.size is not None and v is not None:
            xs.append(p.size)
            ys.append(float(v))
    return xs, ys


def group_identical(
    series: Sequence[tuple[str, list[int], list[float], dict[str, Any]]],
) -> list[tuple[str, list[int], list[float], dict[str, Any]]]:
    """Series with the same points merged into one, labelled with every name ("det = inverse").

    Curves lying exactly on top of each other cannot be told apart by color; one curve whose
    label names them all can.
    """
    out: list[tuple[list[str], list[int], list[float], dict[str, Any]]] = []
    for name, xs, ys, st in series:
        for g in out:
            if g[1] == xs and g[2] == ys:
                g[0].append(name)
                break
        else:
            out.append(([name], list(xs), list(ys), st))
    return [(" = ".join(names), xs, ys, st) for names, xs, ys, st in out]


def error_figure(
    sweeps: dict[str, list[Point]], path: Path, simulator: Sequence[dict[str, Any]] = (), torch: Sequence[Any] = ()
) -> Path:
    """Our Figure 2: max error vs NumPy over sizes (float64), exact zeros and off-scale values marked."""
    fig, ax = plt.subplots(figsize=(9.5, 6.0))
    floats: list[tuple[str, list[int], list[float], dict[str, Any]]] = []
    exact_zero: list[tuple[str, list[int]]] = []
    exact_bad: list[tuple[int, float]] = []
    for i, (name, pts) in enumerate(sweeps.items()):
        xs, ys = _series(pts, "error")
        if xs:
            floats.append((name, xs, [max(y, FLOAT_FLOOR) for y in ys], _style(i)))
        ex, ey = _series(pts, "exact_error")
        exact_zero.append((name, [x for x, y in zip(ex, ey, strict=True) if y == 0.0]))
        exact_bad += [(x, y) for x, y in zip(ex, ey, strict=True) if y != 0.0]
    if simulator:
        xs = [d["size"] for d in simulator if d.get("error") is not None]
        ys = [max(float(d["error"]), FLOAT_FLOOR) for d in simulator if d.get("error") is not None]
        floats.append(("U vs T(X)", xs, ys, {"color": "black", "marker": "*", "linestyle": "-", "linewidth": 2}))
    top = OFF_SCALE
    off: list[tuple[int, float, Any]] = []
    for label, xs, ys, st in group_identical(floats):
        shown = [min(y, top) for y in ys]
        (line,) = ax.plot(xs, shown, label=label, markersize=5, **st)
        off += [(x, y, line.get_color()) for x, y in zip(xs, ys, strict=True) if y > top]
    for j, (x, y, color) in enumerate(off):  # off the scale: a marker at the edge and the value, never a clip
        mark = f"off the scale (> {top:g}): value written above" if j == 0 else None
        ax.scatter([x], [top], marker="^", s=90, color=color, edgecolor="black", zorder=6, label=mark)
        ax.annotate(f"{y:.1e}", (x, top), textcoords="offset points", xytext=(0, 8), ha="center", fontsize=7)
    for label, xs, ys in torch:
        ax.scatter(xs, [max(y, FLOAT_FLOOR) for y in ys], marker="P", s=70, color="crimson", label=label, zorder=5)
    zero_xs = sorted({x for _, xs in exact_zero for x in xs})
    if zero_xs:
        names = [n for n, xs in exact_zero if xs]
        ax.scatter(
            zero_xs,
            [EXACT_FLOOR] * len(zero_xs),
            marker="s",
            s=25,
            color="green",
            zorder=4,
            label=f"exact backend: 0 error ({len(names)} constructions, Fractions, ==)",
        )
    for x, y in exact_bad:  # an exact mismatch is a bug: show it loudly
        ax.scatter([x], [max(y, EXACT_FLOOR)], marker="x", s=80, color="red", zorder=7)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylim(EXACT_FLOOR / 10, top * 30)  # before the floor lines: an empty plot has no y range of its own
    ax.axhline(FLOAT_FLOOR, color="grey", linewidth=0.6, linestyle=":")
    _right_note(ax, FLOAT_FLOOR / 1.6, "float64 error 0 (bit-exact) drawn here", "top", "dimgrey")
    ax.axhline(EXACT_FLOOR, color="green", linewidth=0.6, linestyle="--")
    ax.axhline(1e-6, color="firebrick", linewidth=0.6, linestyle="--")
    _right_note(
        ax, 1.6e-6, "det(n) / inverse(n) stated float64 accuracy 1e-6: run() refuses above", "bottom", "firebrick"
    )
    ax.set_xlabel("size (every scaled dimension = size; U: max_len = d_model)")
    ax.set_ylabel("max |ours - NumPy| / max(1, |NumPy|)")
    ax.set_title("Error against NumPy linear algebra (cf. the paper's Figure 2)")
    # below the axes, and the file cropped to what is drawn: inside, the legend hid curves or was cut
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3, framealpha=0.9)
    else:  # only fixed-size constructions selected: no sweep over sizes to draw
        ax.text(0.5, 0.5, "no size sweep in this selection", transform=ax.transAxes, ha="center", va="center")
    ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


Curves = list[tuple[str, list[int], list[float], dict[str, Any]]]  # one panel: (label, sizes, values, style) per curve


def _cost_curves(  # noqa: C901
    sweeps: dict[str, list[Point]], simulator: Sequence[dict[str, Any]]
) -> tuple[list[Curves], list[Curves], list[str]]:
    """The cost figure's curves: ours per panel (layers, heads, positions), the paper's (layers,
    heads), and the constructions without attention (0 layers, 0 heads: named, not drawn)."""
    panels: list[Curves] = [[], [], []]
    paper: list[Curves] = [[], []]
    no_attention: list[str] = []
    for i, (name, pts) in enumerate(sweeps.items()):
        st = _style(i)
        xs, ys = _series(pts, "layers")
        if xs:
            panels[0].append((name, xs, ys, st))
        hs = [(p.size, sum(p.heads)) for p in pts if p.size is not None and p.heads]
        if hs and any(h > 0 for _, h in hs):
            panels[1].append((name, [x for x, _ in hs], [float(h) for _, h in hs], st))
        elif xs:
            no_attention.append(name)
        if xs and not any(ys):
            panels[0].pop()  # 0 layers (an MLP only) has no place on a log axis: named in the panel instead
        qx, qy = _series(pts, "positions")
        if qx:
            panels[2].append((name, qx, qy, st))
        px, py = _series(pts, "paper_layers")
        if px:
            paper[0].append((name, px, py, st))
        ph = [(p.size, sum(p.paper_heads)) for p in pts if p.size is not None and p.paper_heads]
        if ph:
            paper[1].append((name, [x for x, _ in ph], [float(h) for _, h in ph], st))
    ust = {"color": "black", "marker": "*", "linestyle": "-", "linewidth": 2}
    sim = [d for d in simulator if "layers" in d]
    if sim:
        sx = [d["size"] for d in sim]
        panels[0].append(("U", sx, [float(d["layers"]) for d in sim], ust))
        panels[1].append(("U", sx, [float(sum(d["head_counts"])) for d in sim], ust))
        pos = [(d["size"], d["positions"]) for d in sim if d.get("positions")]
        if pos:
            panels[2].append(("U", [x for x, _ in pos], [float(y) for _, y in pos], ust))
    return panels, paper, no_attention


LEGEND_WRAP = 48  # characters per legend line: a long "a = b = c" label wraps instead of widening its legend


def _wrapped(label: str) -> str:
    return "\n".join(textwrap.wrap(label, LEGEND_WRAP, break_on_hyphens=False)) or label


def cost_figure(sweeps: dict[str, list[Point]], path: Path, simulator: Sequence[dict[str, Any]] = ()) -> Path:
    """Layers, heads and positions against size, ours (solid markers) beside the paper's (x, thin)."""
    fig = cost_fig(sweeps, simulator)
    fig.savefig(path, dpi=110, bbox_inches="tight")  # every label and legend inside the file
    plt.close(fig)
    return path


def cost_fig(sweeps: dict[str, list[Point]], simulator: Sequence[dict[str, Any]] = ()) -> Any:
    """The cost figure: one panel per row (layers, heads, positions), each with its legend to its
    right, long labels wrapped, so that no legend covers another legend or a panel."""
    panels, paper, no_attention = _cost_curves(sweeps, simulator)
    fig, axes = plt.subplots(3, 1, figsize=(12, 15))
    ylabels = ("attention layers", "attention heads, summed over layers", "positions (sequence length)")
    titles = ("layers (log scale)", "heads (log scale)", "positions (log scale)")
    for k, ax in enumerate(axes):
        ys_all: list[float] = []
        for label, xs, ys, st in group_identical(panels[k]):
            ax.plot(xs, ys, label=_wrapped(label), markersize=5, **st)
            ys_all += ys
        if k < 2:
            for label, xs, ys, st in group_identical(paper[k]):
                ax.plot(
                    xs,
                    ys,
                    label=_wrapped(f"paper: {label}"),
                    color=st["color"],
                    marker="x",
                    linestyle=(0, (1, 1)),
                    linewidth=1,
                    alpha=0.8,
                )
                ys_all += ys
        positive = [y for y in ys_all if y > 0]
        ax.set_xscale("log", base=2)
        if positive:
            lo, hi = min(positive), max(positive)
            ax.set_yscale("log")
            ax.set_ylim(lo / 2, hi * 2)
            ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), ncol=1, framealpha=0.9)
        ax.set_xlabel("size (every scaled dimension; U: max_len = d_model)")
        ax.set_ylabel(ylabels[k])
        ax.set_title(titles[k])
        ax.grid(True, alpha=0.3)
    if no_attention:
        for ax, what in zip(axes[:2], ("0 layers (MLP only)", "0 heads (no attention)"), strict=True):
            ax.text(
                0.99,
                0.01,
                f"{what}: {', '.join(no_attention)}",
                transform=ax.transAxes,
                fontsize=7,
                ha="right",
                va="bottom",
            )
    fig.suptitle("Cost against size: ours (markers, solid/dashed) beside the paper's counts (x, dotted)")
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    return fig


def selector_figure(
    title: str, selectors: dict[str, np.ndarray], blocks: Sequence[tuple[str, int, int]], path: Path
) -> Path:
    """Each selector of one construction as a query x key heat map, block boundaries marked."""
    fig = selector_fig(title, selectors, blocks)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def selector_fig(title: str, selectors: dict[str, np.ndarray], blocks: Sequence[tuple[str, int, int]]) -> Any:
    """The selector figure: each panel titled with its selector and its size (queries x keys); the
    token layout's blocks drawn as lines and named on the top (keys) and right (queries) edges."""
    items = list(selectors.items())[:6]
    n = max(1, len(items))
    fig, axes = plt.subplots(1, n, figsize=(3.6 * n, 4.4), squeeze=False)
    for ax, (label, m) in zip(axes[0], items, strict=False):
        m = np.asarray(m, dtype=float)
        ax.imshow(m, cmap="Blues", vmin=0, vmax=1, interpolation="nearest")
        for _, start, end in blocks:
            for b in (start - 0.5, end - 0.5):
                ax.axhline(b, color="orange", linewidth=0.5)
                ax.axvline(b, color="orange", linewidth=0.5)
        shown = [(nm, a, min(b, m.shape[1])) for nm, a, b in blocks if a < m.shape[1]]
        if shown:
            top = ax.secondary_xaxis("top")
            top.set_xticks([(a + b - 1) / 2 for _, a, b in shown], labels=[nm for nm, _, _ in shown], fontsize=7)
            top.tick_params(colors="darkorange", length=0)
        rows = [(nm, a, min(b, m.shape[0])) for nm, a, b in blocks if a < m.shape[0]]
        if rows:
            right = ax.secondary_yaxis("right")
            right.set_yticks([(a + b - 1) / 2 for _, a, b in rows], labels=[nm for nm, _, _ in rows], fontsize=7)
            right.tick_params(colors="darkorange", length=0)
        ax.set_title(f"{label}\n{m.shape[0]} queries x {m.shape[1]} keys", fontsize=8)
        ax.set_xlabel("key position")
        ax.set_ylabel("query position")
    fig.suptitle(
        f"{title}: selectors (blue = selected; orange lines: the positions of each input block, named at the "
        "top and right edges)",
        fontsize=9,
    )
    fig.tight_layout()
    return fig


# every status of attnsim.proofs.obligation.STATUSES, with its colour in the verify figure
VERIFY_STATUSES = {
    "proved": "tab:green",
    "passed": "tab:cyan",
    "conditional": "tab:purple",
    "failed": "tab:red",
    "unknown": "gold",
    "skipped": "tab:gray",
}


def verify_figure(counts: dict[str, dict[str, int]], path: Path) -> Path:
    """Obligations per construction, stacked by status."""
    names = list(counts)
    fig, ax = plt.subplots(figsize=(max(5.0, 0.6 * len(names) + 2), 3.8))
    bottom = np.zeros(len(names))
    for s, color in VERIFY_STATUSES.items():
        vals = np.array([counts[n].get(s, 0) for n in names], dtype=float)
        ax.bar(names, vals, bottom=bottom, label=s, color=color)
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


def _right_note(ax: Any, y: float, text: str, va: str, color: str) -> None:
    """A small note at the right edge of the axes, at data height ``y``."""
    ax.text(0.99, y, text, transform=ax.get_yaxis_transform(), fontsize=7, ha="right", va=va, color=color)
