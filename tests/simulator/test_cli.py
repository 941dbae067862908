"""`attnsim simulate` (Corollary 6.1 at a chosen capacity): JSON on stdout, progress on stderr."""

import json

import pytest

from attnsim.cli.main import main


def test_simulate_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(
        [
            "simulate",
            "--max-len",
            "4",
            "--d-model",
            "4",
            "--heads",
            "2",
            "--d-head",
            "2",
            "--d-ff",
            "6",
            "--n",
            "3",
            "--seed",
            "1",
            "--norm",
            "post",
            "--residual",
            "--json",
        ]
    )
    out, err = capsys.readouterr()
    assert rc == 0
    data = json.loads(out)
    # max_abs_error measured 4.4e-16 for this seed and capacity
    assert data["max_abs_error"] <= 1e-14 and data["layers"] == 7 and data["n"] == 3
    assert len(data["mlp_depth"]) == len(data["mlp_generalized"]) == 8
    assert sum(m.get("exp", 0) for m in data["mlp_generalized"]) == 1
    assert "building U" in err


def test_simulate_over_capacity(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["simulate", "--max-len", "2", "--d-model", "2", "--heads", "1", "--d-head", "1", "--n", "3"])
    assert rc == 2
    assert "--n = 3" in capsys.readouterr().err
