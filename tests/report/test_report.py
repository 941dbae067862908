"""`attnsim report`: figures and report.md (our Figure 2, costs beside the paper's, selectors, verify)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from attnsim.cli.main import main
from attnsim.report import data as D
from attnsim.report.build import ReportConfig, _as_series, build_report


def test_report_on_a_tiny_subset(tmp_path: Path) -> None:
    """Paper Figure 2 analogue: PNGs and a report.md that embeds each of them, on transpose only."""
    res = build_report(
        ReportConfig(out=tmp_path, quick=True, only="transpose/z3", sizes=(2, 4), simulator_sizes=(), jobs=1)
    )
    md = res.markdown.read_text(encoding="utf-8")
    for name in ("error.png", "cost.png", "selectors_transpose.png", "verify.png"):
        p = tmp_path / name
        assert p.is_file() and p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    for img in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md):
        assert (tmp_path / img).is_file(), img
    assert "| transpose | 4 | 16 | 0 | == (0) |" in md  # bit-exact float64, equal in Fractions
    assert "`transpose/z3-parametric/gather`" in md
    assert "arXiv:2506.18739" in md and "paper-notes" not in md  # cites what a reader can open
    assert res.verify_counts.get("failed", 0) == 0
    data = json.loads((tmp_path / "data.json").read_text(encoding="utf-8"))
    assert [p["size"] for p in data["sweeps"]["transpose"]] == [2, 4]


def test_report_cli_writes_files(tmp_path: Path) -> None:
    """The CLI wraps the same builder; --no-verify skips the obligations."""
    assert main(["report", "--out", str(tmp_path), "--quick", "--only", "relu", "--no-verify"]) == 0
    assert (tmp_path / "report.md").is_file() and (tmp_path / "error.png").is_file()
    assert "Not run" in (tmp_path / "report.md").read_text(encoding="utf-8")


def test_only_matching_nothing_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 30 item 9: `report --only nomatch` exits 2 in one line (it wrote an empty report, exit 0)."""
    assert main(["report", "--out", str(tmp_path), "--only", "nomatch"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "attnsim report: error: --only 'nomatch' matches no construction, no obligation and not U"
    assert not (tmp_path / "report.md").exists()


def test_verify_section_says_why_it_is_empty(tmp_path: Path) -> None:
    """Section (d) says "--no-verify" only when that flag was given (issue 30 item 9); the report
    cites no file outside the repository (paper-notes.md is not in it)."""
    res = build_report(ReportConfig(out=tmp_path, quick=True, only="relu/nosuch", sizes=(2,), simulator_sizes=()))
    md = res.markdown.read_text(encoding="utf-8")
    assert "No obligation matches `--only relu/nosuch`." in md and "--no-verify" not in md
    assert "paper-notes" not in md


def test_families_rebuild_their_examples() -> None:
    """Every scalable family's recovered factory rebuilds its registered example (same layout)."""
    fams, _ = D.families()
    assert {"transpose", "matmul"} <= {f.name for f in fams}
    for f in fams:
        if f.scaled:
            kw = {k: f.base[k] for k in f.scaled} | f.fixed
            assert f.factory is not None and f.factory(**kw).layout.total == f.example.layout.total


def test_exact_error_detects_a_wrong_reference() -> None:
    """The exact column can fail: a construction whose reference is off by one ulp of Q is caught."""
    fam = next(f for f in D.families()[0] if f.name == "matmul")
    con = fam.build(2)
    assert D.exact_error(con, np.random.default_rng(0)) == 0.0
    good = con.reference_fn
    con.reference_fn = lambda a, b, backend="numpy": good(a, b, backend=backend) + 1
    assert D.exact_error(con, np.random.default_rng(0)) == 1.0


def test_series_parsing() -> None:
    """Soft-attention series in either shape are accepted; anything else is ignored."""
    assert _as_series([(1.0, 0.5), (10.0, 0.01)]) == {"soft attention": ([1.0, 10.0], [0.5, 0.01])}
    assert _as_series({"h": ([1, 2], [0.1, 0.2])}) == {"h": ([1.0, 2.0], [0.1, 0.2])}
    assert _as_series("nope") is None


@pytest.mark.usefixtures("nothing_runs")
def test_report_requires_out(capsys: pytest.CaptureFixture[str]) -> None:
    """--out is mandatory (argparse error, exit 2)."""
    with pytest.raises(SystemExit) as exc:
        main(["report"])
    assert exc.value.code == 2
    assert "error: the following arguments are required: --out" in capsys.readouterr().err


def test_identical_curves_are_merged_and_named() -> None:
    """Figure 2 analogue readable (issue 15): curves on top of each other become one, naming them all."""
    from attnsim.report.figures import group_identical

    st: dict[str, object] = {}
    got = group_identical([("det", [2, 4], [1.0, 2.0], st), ("inverse", [2, 4], [1.0, 2.0], st), ("x", [2], [1.0], st)])
    assert [g[0] for g in got] == ["det = inverse", "x"]
    # curves that differ anywhere stay apart (issue 30 item 13: merging them must fail this test)
    apart = group_identical([("det", [2, 4], [1.0, 2.0], st), ("inverse", [2, 4], [1.0, 2.5], st)])
    assert [g[0] for g in apart] == ["det", "inverse"]


def test_error_figure_marks_off_scale_values(tmp_path: Path) -> None:
    """An error above the axis is drawn at the edge with its value, not clipped away silently."""
    import matplotlib.pyplot as plt

    from attnsim.report import figures as F

    pts = [D.Point("det", 2, 4, error=1e-16), D.Point("det", 4, 16, error=3.2e5, exact_error=0.0)]
    texts: list[str] = []
    real_savefig = plt.Figure.savefig

    def spy(fig: plt.Figure, *a: object, **k: object) -> None:
        texts.extend(t.get_text() for ax in fig.axes for t in ax.texts)
        texts.extend(t.get_text() for ax in fig.axes for t in ax.get_legend().get_texts())
        real_savefig(fig, *a, **k)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plt.Figure, "savefig", spy)
        F.error_figure({"det": pts}, tmp_path / "e.png")
    assert "3.2e+05" in texts and any(t.startswith("off the scale") for t in texts)
    assert (tmp_path / "e.png").read_bytes()[:4] == b"\x89PNG"


def test_refused_float_result_is_plotted_and_named() -> None:
    """det(n) whose float64 run misses its stated accuracy: the sweep keeps the measured error and says so."""
    fam = next(f for f in D.families()[0] if f.name == "det")
    (pt,) = D.sweep(fam, sizes=(64,), budget=60.0, seed=0)
    assert pt.error is not None and pt.error > 1e-6 and "refused" in pt.note


def test_without_coqc_the_report_skips_the_kernel_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 26 review: without coqc, `attnsim report` treats the kernel rows as `verify` does: not run,
    said so (a `skipped` row and a note), never a failure: exit 0 (it exited 1 on the kernel's unknown)."""
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    assert main(["report", "--out", str(tmp_path), "--quick", "--only", "relu/kernel"]) == 0
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "| `relu/kernel/Relu` | kernel |  | **skipped** |" in md
    assert "1 obligation(s) running Coq not run: coqc not installed" in md
    assert "coqc not installed" in capsys.readouterr().out  # the skipped note, on the terminal too


def test_report_counts_every_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 26 review: a conditional row is counted (and drawn) like every other status, not dropped."""
    from attnsim.proofs import registry
    from attnsim.proofs.obligation import STATUSES, Obligation, Outcome
    from attnsim.report import build
    from attnsim.report import figures as F

    obs = [
        Obligation("relu/exact/fine", "relu", "x", "exact", lambda t: Outcome.good("fine")),
        Obligation("relu/exact/rests", "relu", "x", "exact", lambda t: Outcome.good(), requires=("relu/exact/gone",)),
    ]
    monkeypatch.setattr(registry, "select", lambda prefix=None, include_deep=False: obs)
    drawn: list[dict[str, dict[str, int]]] = []
    monkeypatch.setattr(build.F, "verify_figure", lambda per, path: drawn.append(per) or path)
    res = build_report(ReportConfig(out=tmp_path, quick=True, only="relu", sizes=(2,), simulator_sizes=(), jobs=1))
    md = res.markdown.read_text(encoding="utf-8")
    assert res.verify_counts == {"passed": 1, "conditional": 1}
    assert "0 proved, 1 passed, 1 conditional, 0 failed, 0 unknown" in md
    assert drawn == [{"relu": {"passed": 1, "conditional": 1}}]
    assert set(STATUSES) <= set(F.VERIFY_STATUSES)  # the figure has a colour for each


def _sweeps_with_long_groups() -> dict[str, list[D.Point]]:
    """Sweeps that make long merged legend labels (eight constructions on one curve) and paper
    counts in both panels that have them, as the real report's do."""
    sweeps: dict[str, list[D.Point]] = {}
    for name in ("transpose", "gathered-transpose", "gathered-permute", "broadcast-gather", "softmax"):
        sweeps[name] = [D.Point(name, s, s * s, layers=1, heads=[1], paper_layers=2, paper_heads=[1]) for s in (2, 4)]
    for name in ("two-axis-sum", "maxmin", "match2", "parity"):
        sweeps[name] = [D.Point(name, s, s * s, layers=1, heads=[1]) for s in (2, 4)]
    sweeps["matmul"] = [
        D.Point("matmul", s, s**3, layers=2, heads=[2, 1], paper_layers=3, paper_heads=[1, 2 * s, s * s])
        for s in (2, 4)
    ]
    sweeps["det"] = [D.Point("det", s, s**3, layers=3 * s, heads=[s] * 3) for s in (2, 4)]
    return sweeps


def test_cost_figure_legends_cover_nothing() -> None:
    """Paper's cost table beside ours: in cost.png no legend overlaps another legend or any panel,
    and every curve of the paper's counts is in a legend."""
    import matplotlib.pyplot as plt

    from attnsim.report import figures as F

    fig = F.cost_fig(_sweeps_with_long_groups(), [{"size": 2, "layers": 7, "head_counts": [40, 6], "positions": 56}])
    try:
        fig.canvas.draw()
        r = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
        assert len(legends) == 3
        boxes = [lg.get_window_extent(r) for lg in legends]
        panels = [ax.get_window_extent(r) for ax in fig.axes]
        for i, b in enumerate(boxes):
            assert not any(b.overlaps(c) for j, c in enumerate(boxes) if j != i), i
            assert not any(b.overlaps(p) for p in panels), i
        labels = [t.get_text() for lg in legends for t in lg.get_texts()]
        assert sum(t.startswith("paper: ") for t in labels) == 4  # 2 curves x 2 panels (layers, heads)
        assert any("matmul" in t and t.startswith("paper: ") for t in labels)
    finally:
        plt.close(fig)


def test_selector_heat_maps_name_their_sizes_and_blocks() -> None:
    """Each heat map's title gives its queries x keys, the figure's title the construction's sizes,
    and the block lines are named on the top and right edges."""
    import matplotlib.pyplot as plt

    from attnsim.report import figures as F

    con = D.families(["matmul"])[0][0].example
    tr = con.trace(*D.random_operands(con, np.random.default_rng(0)))
    blocks = [(b.name, b.start, b.end) for b in con.layout if b.channel == "tokens"]
    fig = F.selector_fig(f"matmul ({D.size_label(con)})", tr.selectors, blocks)
    try:
        assert "matmul (rows = 2, inner = 3, cols = 2)" in fig.get_suptitle()  # type: ignore[attr-defined]
        panels = [ax for ax in fig.axes if ax.get_title()]
        assert panels and all(ax.get_title().endswith("12 queries x 12 keys") for ax in panels)
        fig.canvas.draw()
        edges = [c for ax in panels for c in ax.child_axes]  # the secondary axes on the top and right
        names = [t.get_text() for ax in edges for t in (*ax.get_xticklabels(), *ax.get_yticklabels())]
        assert names.count("A") == 2 * len(panels) and names.count("B") == 2 * len(panels)
    finally:
        plt.close(fig)


def test_fixed_size_constructions_show_their_shape(tmp_path: Path) -> None:
    """report.md's size column for the 3 x 3 constructions (fixed sizes) gives the shape, never None."""
    res = build_report(ReportConfig(out=tmp_path, quick=True, only="det3", verify=False, simulator_sizes=()))
    md = res.markdown.read_text(encoding="utf-8")
    assert "| det3 | A 3 x 3 (fixed) | 9 |" in md
    assert "None" not in md


def test_an_error_figure_with_nothing_to_draw_says_so(tmp_path: Path) -> None:
    """`report --only det3` (fixed sizes only): the error figure says there is no sweep, without
    matplotlib's warnings about an empty legend and a singular y range."""
    import warnings

    from attnsim.report.figures import error_figure

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        path = error_figure({}, tmp_path / "error.png")
    assert path.stat().st_size > 0
