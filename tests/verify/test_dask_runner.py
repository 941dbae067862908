"""`verify --scheduler`: obligations and mutants on a Dask cluster of 2 worker processes, each
Dask task running its checks on the one process pool of its worker.

One LocalCluster serves the whole module (starting one takes seconds).  Test obligations are
closures made inside the tests, so that Dask ships them to the workers by value; registered ones
travel by id, looked up on a worker after the catalogue's ``load`` (the ``setup`` passed along).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from attnsim import catalog
from attnsim.cli.main import main
from attnsim.proofs import registry
from attnsim.proofs.obligation import Obligation, Outcome, Result
from attnsim.verify import dask_runner
from attnsim.verify.budgets import timeout_for
from attnsim.verify.campaign import Campaign
from attnsim.verify.mutation.plan import plan
from attnsim.verify.mutation.pool import run_jobs

cloudpickle = pytest.importorskip("cloudpickle")
# this module's checks travel to the workers by value: a worker need not import the tests package
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with dask_runner.connect("local:2") as c:
        yield c


def _rows(results: list[Result]) -> list[tuple[str, str, str]]:
    return [(r.id, r.method, r.status) for r in results]


_PREFIXES = ("transpose/", "rasp/z3-parametric/", "match2/")
_LOCAL_RUN = f"""
import json
from attnsim import catalog
from attnsim.proofs import registry
from attnsim.verify.budgets import run_budgeted
catalog.load()
obs = [o for p in {_PREFIXES!r} for o in registry.select(p)]
print(json.dumps([r.as_dict() for r in run_budgeted(obs, jobs=2)]))
"""


def test_cluster_gives_the_local_rows(client: Any) -> None:
    """Same (id, method, status) rows and Z3 units as the local pool, on a subset with every method.

    The local pool runs in a fresh process, as `attnsim verify` does: Z3's process-wide state moves
    a query's units, and this test process has asked Z3 before (a worker forked from it inherits
    that state; the Dask workers have asked Z3 nothing)."""
    obs = [o for p in _PREFIXES for o in registry.select(p)]
    out = subprocess.run([sys.executable, "-c", _LOCAL_RUN], capture_output=True, text=True, check=True)
    local = [Result.from_dict(d) for d in json.loads(out.stdout)]
    seen: list[int] = []
    remote = dask_runner.run_obligations(
        client, obs, [timeout_for(o, None) for o in obs], on_done=lambda i, r: seen.append(i), setup=catalog.load
    )
    assert _rows(remote) == _rows(local)
    assert [r.units for r in remote] == [r.units for r in local] and sum(r.units for r in local) > 0
    assert sorted(seen) == list(range(len(obs)))  # streamed: every result reported once, as it arrived


def test_cli_on_a_scheduler_address_prints_the_local_json(client: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """`verify --scheduler tcp://...` (an existing cluster): the JSON rows and exit code of `verify -j 2`."""
    assert main(["verify", "--only", "transpose/", "--json", "-j", "2"]) == 0
    local = json.loads(capsys.readouterr().out)
    assert main(["verify", "--only", "transpose/", "--json", "--scheduler", client.scheduler.address]) == 0
    remote = json.loads(capsys.readouterr().out)
    assert [set(d) for d in remote] == [set(d) for d in local]
    assert [(d["id"], d["method"], d["status"]) for d in remote] == [(d["id"], d["method"], d["status"]) for d in local]


def _spin(seconds: float) -> Outcome:
    """Busy for ``seconds`` of CPU time."""
    t0 = time.process_time()
    while time.process_time() - t0 < seconds:
        pass
    return Outcome.good()


def _waits(t: float) -> Outcome:
    """Off the CPU for 2.5 s (a check on a busy machine waits like this), then holds."""
    time.sleep(2.5)
    return Outcome.good("waited")


def test_a_timeout_on_a_worker_is_unknown_and_the_worker_goes_on(client: Any) -> None:
    """The hard timeout holds on a worker, in the CPU seconds of its pool's process as in the local
    pool: a check computing past it is killed, unknown (never proved), the next ones run; one that
    waits off the CPU longer than its timeout is not stopped."""
    obs = [
        Obligation("t/z3-parametric/slow", "t", "x", "z3-parametric", lambda t: _spin(60.0)),
        Obligation("t/exact/dies", "t", "x", "exact", lambda t: os._exit(3)),  # type: ignore[arg-type,return-value]
        Obligation("t/exact/waits", "t", "x", "exact", _waits),
        *[Obligation(f"t/exact/ok{i}", "t", "x", "exact", lambda t: Outcome.good("ok")) for i in range(4)],
    ]
    res = dask_runner.run_obligations(client, obs, [1.0] * len(obs))
    assert [r.status for r in res] == ["unknown", "failed", "passed", *["passed"] * 4], [r.detail for r in res]
    assert res[0].detail.startswith("budget exhausted (timeout): timeout after 1 s") and "--timeout" in res[0].detail
    assert "worker died" in res[1].detail and res[2].detail == "waited"


def test_a_killed_worker_has_its_obligations_rerun_elsewhere(client: Any, tmp_path: Path) -> None:
    """A Dask worker dies (SIGKILL) mid-check: Dask reruns that obligation on another worker."""
    attempts = tmp_path / "attempts"

    def blocker(t: float) -> Outcome:
        with open(attempts, "a") as f:
            f.write("x")
        if attempts.read_text() != "x":
            return Outcome.good("second attempt")
        parent = os.getppid()
        for _ in range(600):  # until the Dask worker is killed (this pool process dies with it)
            if os.getppid() != parent:
                break
            time.sleep(0.1)
        return Outcome.bad("the first attempt must not report")

    obs = [
        Obligation("t/exact/blocker", "t", "x", "exact", blocker),
        *[Obligation(f"t/exact/ok{i}", "t", "x", "exact", lambda t: Outcome.good("ok")) for i in range(4)],
    ]
    out: list[list[Result]] = []
    runner = threading.Thread(target=lambda: out.append(dask_runner.run_obligations(client, obs, [120.0] * len(obs))))
    runner.start()
    for _ in range(600):
        if attempts.exists():
            break
        time.sleep(0.1)
    busy = [w for w, keys in client.processing().items() if any("t/exact/blocker" in str(k) for k in keys)]
    assert len(busy) == 1
    pid = client.run(os.getpid, workers=busy)[busy[0]]
    os.kill(pid, signal.SIGKILL)
    runner.join(timeout=120)
    assert out and [r.status for r in out[0]] == ["passed"] * 5
    assert out[0][0].detail == "second attempt" and attempts.read_text() == "xx"
    client.wait_for_workers(2, timeout=60)  # the nanny restarts the killed worker for the next tests


def test_resume_on_the_cluster_after_an_interruption(client: Any, tmp_path: Path) -> None:
    """An interrupted campaign on the cluster resumes without rerunning what finished, same rows."""
    from attnsim.verify.cache import ResultCache

    obs = registry.select("transpose/exact/")
    fresh = Campaign(client, cache=ResultCache(tmp_path / "a"), resume=True, setup=catalog.load).obligations(obs)
    finished: list[str] = []

    def stop(r: Result) -> None:
        finished.append(r.id)
        if len(finished) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Campaign(client, cache=ResultCache(tmp_path / "b"), resume=True, setup=catalog.load).obligations(
            obs, on_done=stop
        )
    camp = Campaign(client, cache=ResultCache(tmp_path / "b"), resume=True, setup=catalog.load)
    again = camp.obligations(obs)
    assert camp.cache is not None and camp.cache.reused >= 2 and camp.ran == len(obs) - camp.cache.reused
    assert _rows(again) == _rows(fresh)


def test_mutants_shard_over_the_cluster_as_locally(client: Any) -> None:
    """Mutation testing by (construction, mutant) tasks: the same verdicts as the local forked pool."""
    (job,) = plan("transpose/", max_mutants=3)
    local = run_jobs([job], workers=2, timeout=5)
    remote = Campaign(client, setup=catalog.load).mutants([job], 5)
    verdict = lambda r: (r.mutant.description, r.killed, r.by, r.equivalent, r.claim_only)
    assert [verdict(r) for r in remote] == [verdict(r) for r in local]
    assert all(r.killed for r in remote)


def test_without_dask_scheduler_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` now raises ImportError
    assert main(["verify", "--only", "transpose/", "--scheduler", "local:2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and 'pip install "attnsim[dask]"' in err[0]


@pytest.mark.usefixtures("nothing_runs")
def test_bad_local_scheduler_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """Refused by the argument check, before the registry or a cluster is reached."""
    with pytest.raises(SystemExit) as exc:
        main(["verify", "--only", "transpose/", "--scheduler", "local:0"])
    assert exc.value.code == 2 and "local:N with N >= 1" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["verify", "--only", "transpose/", "--scheduler", "local:2", "-j", "2"])
    assert exc.value.code == 2
