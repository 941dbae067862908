"""`attnsim bench`: timing of simulation against direct NumPy (no timing assertions, by rule)."""

from __future__ import annotations

import json

import pytest

from attnsim.cli.bench import bench
from attnsim.cli.main import main
from attnsim.cli.measure import BenchError


def test_bench_json_is_well_formed(capsys: pytest.CaptureFixture[str]) -> None:
    """Paper Figure 2 companion: a tiny bench gives strict JSON with medians, ratio and memory."""
    code = main(["bench", "--json", "--sizes", "2,4", "--repeats", "1", "--only", "transpose", "--no-simulator"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sizes"] == [2, 4] and out["repeats"] == 1
    rows = [t for t in out["timings"] if t["name"] == "transpose"]
    assert [t["size"] for t in rows] == [2, 4]
    for t in rows:
        assert t["kind"] == "lemma" and t["positions"] > 0 and t["error"] == 0.0
        for k in ("run_median_s", "ref_median_s", "run_cpu_s", "ref_cpu_s", "ratio", "peak_mb", "build_s"):
            assert isinstance(t[k], float) and t[k] >= 0
        assert t["ratio"] == pytest.approx(t["run_cpu_s"] / t["ref_cpu_s"])  # the ratio is of CPU seconds
    growth = out["growth"]["transpose"]
    assert set(growth) == {"consecutive", "fit", "sizes", "r2", "clock"} and growth["clock"] == "cpu"
    assert len(growth["consecutive"]) == 1 and growth["sizes"] == 2 and growth["r2"] is None  # 2 points: no quality
    assert set(out["load"]) == {"cpus", "start", "end"}


def test_bench_text_says_the_load_and_what_each_growth_rests_on(capsys: pytest.CaptureFixture[str]) -> None:
    """A growth exponent fitted to two noisy medians says so; the load of the machine is printed
    beside the figures, which are CPU seconds (a busy machine moves wall times)."""
    code = main(["bench", "--sizes", "2,4", "--repeats", "1", "--only", "transpose", "--no-simulator"])
    assert code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "load average" in out and "use CPU seconds" in out
    assert "transpose: CPU ratio ~ size^" in out and "through 2 sizes only: no fit quality" in out


def test_growth_reports_the_fit_quality() -> None:
    """Three sizes of an exact power law: exponent 2 with R^2 = 1; a noisy middle point lowers R^2."""
    from attnsim.cli.bench import Timing, _growth, growth_line, load_line

    def at(size: int, ratio: float) -> Timing:
        return Timing("lemma", "x", size, None, 1, 0.0, 0.0, 0.0, ratio, 0.0, 0.0)

    g = _growth([at(2, 4.0), at(4, 16.0), at(8, 64.0)])
    assert g["fit"] == 2.0 and g["sizes"] == 3 and g["r2"] == 1.0
    noisy = _growth([at(2, 4.0), at(4, 40.0), at(8, 64.0)])
    assert noisy["r2"] is not None and noisy["r2"] < 0.95
    assert "least squares over 3 sizes, R^2 = " in growth_line("x", noisy)
    assert "busy, so the wall times are noisy" in load_line({"cpus": 2, "start": 14.0, "end": 15.0})
    assert "busy" not in load_line({"cpus": 2, "start": 0.5, "end": 1.0})


def test_bench_skips_say_why() -> None:
    """A construction filtered out gives no timings; what is not swept, or over the budget, is
    listed with its reason, never a crash."""
    res = bench([2], repeats=1, budget=30, only="simulator", simulator=False)  # U is not swept as a lemma
    assert res.timings == []
    # simulator-frame and simulator-stages are parts of U's program: U is named once
    assert res.skipped == ["simulator: the universal simulator: measured as U (max_len = d_model), not as a lemma"]
    res = bench([2, 4], repeats=1, budget=1e-9, only="transpose", simulator=False)
    assert res.timings == [] and "transpose: budget exhausted" in res.skipped


@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        ({"sizes": []}, r"^sizes must be positive integers, got \[\]$"),
        ({"sizes": [0]}, r"^sizes must be positive integers, got \[0\]$"),
        ({"repeats": 0}, r"^repeats must be >= 1, got 0$"),
        ({"budget": -1.0}, r"^budget must be positive, got -1.0$"),
        # issue 30 item 9: --only matching nothing is refused (it ran and returned an empty result)
        ({"only": "nomatch"}, r"^--only 'nomatch' matches no construction \(names: cofactor3, det3, "),
    ],
)
def test_bench_rejects_bad_arguments(kw: dict[str, object], msg: str) -> None:
    """Bad configuration is a one-line BenchError (a ValueError)."""
    args: dict[str, object] = {"sizes": [2], "repeats": 1, "budget": 5.0} | kw
    with pytest.raises(BenchError, match=msg):
        bench(**args)  # type: ignore[arg-type]


@pytest.mark.usefixtures("nothing_runs")
def test_bench_cli_bad_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    """--sizes with junk is a clear error: argparse's usage error, exit 2, naming the value."""
    with pytest.raises(SystemExit) as excinfo:
        main(["bench", "--sizes", "a,b"])
    assert excinfo.value.code == 2
    assert "error: argument --sizes: expected comma-separated integers, got 'a,b'" in capsys.readouterr().err


def test_bench_targets_report_cpu_ratios_and_time_per_head_position(capsys: pytest.CaptureFixture[str]) -> None:
    """Theorem 6's U at a tiny capacity: CPU beside wall time, the ratios to NumPy (and torch
    when installed), head positions with the memo's share, and the same-run calibration."""
    code = main(["bench", "--json", "--targets", "compact:4", "--repeats", "1"])
    assert code == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["variant"], row["capacity"], row["layers"]) == ("compact", 4, 7)
    for k in ("run_s", "run_cpu_s", "numpy_cpu_s", "ratio_cpu_numpy", "calibration_ns", "ns_per_head_position"):
        assert isinstance(row[k], float) and row[k] > 0
    assert row["head_positions"] > 0 and row["memo_positions"] > 0  # the runs after the first read the memo
    assert row["per_position_vs_calibration"] == pytest.approx(row["ns_per_head_position"] / row["calibration_ns"])
    assert row["error_vs_reference"] < 1e-12


@pytest.mark.parametrize("bad", ["compact", "dense:8", "shallow:0", ","])
@pytest.mark.usefixtures("nothing_runs")
def test_bench_bad_target_is_one_line(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "--targets", bad])
    err = capsys.readouterr().err.strip().splitlines()
    assert "target" in err[-1] and "Traceback" not in "\n".join(err)
