"""`attnsim bench`: timing of simulation against direct NumPy (no timing assertions, by rule)."""

from __future__ import annotations

import json

import pytest

from attnsim.bench import BenchError, bench
from attnsim.cli import main


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
        for k in ("run_median_s", "ref_median_s", "ratio", "peak_mb", "build_s"):
            assert isinstance(t[k], float) and t[k] >= 0
    assert set(out["growth"]["transpose"]) == {"consecutive", "fit"}
    assert len(out["growth"]["transpose"]["consecutive"]) == 1


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


def test_bench_cli_bad_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    """--sizes with junk is a clear error: argparse's usage error, exit 2, naming the value."""
    with pytest.raises(SystemExit) as excinfo:
        main(["bench", "--sizes", "a,b"])
    assert excinfo.value.code == 2
    assert "error: argument --sizes: expected comma-separated integers, got 'a,b'" in capsys.readouterr().err
