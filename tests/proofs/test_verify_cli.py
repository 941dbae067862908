"""`attnsim verify`: JSON shape, filtering, exit codes (unknown is never success)."""

import json

import pytest

from attnsim import cli
from attnsim.proofs.obligation import Obligation, Outcome
from attnsim.proofs.runner import run_all


def test_verify_json_only(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["verify", "--only", "rasp/z3-parametric/divmod", "--json", "-j", "1"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and len(data) == 2
    assert set(data[0]) == {"id", "construction", "paper_ref", "method", "bound", "status", "seconds", "detail"}
    assert all(d["status"] == "proved" for d in data)


def test_unknown_and_failed_statuses() -> None:
    obs = [
        Obligation("t/z3-parametric/u", "t", "x", "z3-parametric", lambda t: Outcome.unknown("z3 unknown")),
        Obligation("t/exact/f", "t", "x", "exact", lambda t: Outcome.bad("differs")),
        Obligation("t/exact/crash", "t", "x", "exact", lambda t: 1 / 0),  # type: ignore[arg-type,return-value]
    ]
    res = run_all(obs, jobs=2, timeout=5)
    assert [r.status for r in res] == ["unknown", "failed", "failed"]


def test_timeout_is_unknown() -> None:
    import time

    ob = Obligation("t/z3-parametric/slow", "t", "x", "z3-parametric", lambda t: (time.sleep(5), Outcome.good())[1])
    (r,) = run_all([ob], jobs=2, timeout=0.5)
    assert r.status == "unknown"


def test_pool_survives_timeouts_and_dead_workers() -> None:
    """Reused workers: a killed (timed-out) or dead worker is replaced and later checks still run."""
    import os
    import time

    obs = [
        Obligation("t/z3-parametric/slow", "t", "x", "z3-parametric", lambda t: (time.sleep(5), Outcome.good())[1]),
        Obligation("t/exact/dies", "t", "x", "exact", lambda t: os._exit(3)),  # type: ignore[arg-type,return-value]
        *[Obligation(f"t/exact/ok{i}", "t", "x", "exact", lambda t: Outcome.good()) for i in range(6)],
    ]
    res = run_all(obs, jobs=2, timeout=0.5)
    assert [r.status for r in res] == ["unknown", "failed", *["passed"] * 6]
    assert "worker died" in res[1].detail
