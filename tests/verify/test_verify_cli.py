"""`attnsim verify`: JSON shape, filtering, exit codes (unknown is never success)."""

import json
import time
from pathlib import Path

import pytest

from attnsim.cli.main import main
from attnsim.proofs.obligation import STRUCTURED, Obligation, Outcome
from attnsim.verify.runner import run_all


def test_verify_json_only(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["verify", "--only", "rasp/z3-parametric/divmod", "--json", "-j", "1"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and len(data) == 2
    assert set(data[0]) == {
        *("id", "construction", "paper_ref", "method", "bound", "status", "seconds", "detail", "requires"),
        *("units", "queries", "exhausted", "largest"),
        *STRUCTURED,  # the outcome's typed facts (issue 26, item 6)
    }
    assert all(d["status"] == "proved" for d in data)
    assert all(d["scope"]["sizes"] and d["scope"]["bound"] is None and d["cause"] == "" for d in data)
    # the solver work is carried (issue 27) and each proof's premises were shown satisfiable (issue 26;
    # by a witness found by evaluation here, so the queries are the claim's)
    assert all(d["units"] > 0 and d["queries"] >= 1 and d["exhausted"] == 0 for d in data)
    assert all(d["premises"] == "sat" and d["premise_model"] for d in data)


def test_every_json_row_carries_the_structured_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every row, whatever its method, has every structured key; program == spec's row carries the
    normal forms of both sides, its scope, lemmas and premise model, and with --smt2 the count of
    exported queries, its premise (vacuity) checks among them (issue 26, items 6 and 9)."""
    code = main(["verify", "--only", "softmax/all-sizes/lemma", "--json", "-j", "1", "--smt2", str(tmp_path)])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and all(set(STRUCTURED) <= set(d) for d in data)
    (lemma,) = data
    assert lemma["scope"]["sizes"] == ["cols", "heads", "rows"] and "block-decode" in lemma["lemmas"]
    assert len(lemma["normal_forms"]) == 2  # one build per size set: (rows, cols) and (heads, rows, cols)
    assert all(f["spec_normal"] == f["program_normal"] for f in lemma["normal_forms"])
    two = lemma["second_solver"]
    assert two["exported"] > two["premise_checks"] > 0  # the vacuity checks reach the second solver too
    files = list(tmp_path.glob("softmax_all-sizes_lemma-*.smt2"))
    assert len(files) == two["exported"]
    assert sum("(premises)" in f.read_text().splitlines()[1] for f in files) == two["premise_checks"]


def test_verify_only_without_a_match_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """A prefix that selects nothing is a usage error (exit 2), never an empty success."""
    assert main(["verify", "--only", "no-such-construction/", "-j", "1"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "no obligation matches 'no-such-construction/'" in err


def test_a_prefix_of_deep_obligations_only_says_to_add_deep(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Our prover's route to Theorem 6 is --deep where coqc is installed: asking for it alone is a
    usage error (exit 2) that says to add --deep, not that nothing matches."""
    import shutil

    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: "/usr/bin/coqc" if name == "coqc" else real(name))
    assert main(["verify", "--only", "simulator-stages/all-sizes/", "-j", "1"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "'simulator-stages/all-sizes/' matches only --deep obligations (16): add --deep" in err


def test_unknown_and_failed_statuses() -> None:
    obs = [
        Obligation("t/z3-parametric/u", "t", "x", "z3-parametric", lambda t: Outcome.unknown("z3 unknown")),
        Obligation("t/exact/f", "t", "x", "exact", lambda t: Outcome.bad("differs")),
        Obligation("t/exact/crash", "t", "x", "exact", lambda t: 1 / 0),  # type: ignore[arg-type,return-value]
    ]
    res = run_all(obs, jobs=2, timeout=5)
    assert [r.status for r in res] == ["unknown", "failed", "failed"]
    assert [r.detail for r in res[:2]] == ["z3 unknown", "differs"]
    assert res[2].detail.startswith("ZeroDivisionError: division by zero")


def _spin(seconds: float) -> Outcome:
    """Busy for ``seconds`` of CPU time (the runner's safety net counts CPU seconds, not sleep)."""
    t0 = time.process_time()
    while time.process_time() - t0 < seconds:
        pass
    return Outcome.good()


def test_pool_survives_timeouts_and_dead_workers() -> None:
    """A timeout is unknown, never proved; reused workers: a killed (timed-out) or dead worker is
    replaced and later checks still run."""
    import os

    obs = [
        Obligation("t/z3-parametric/slow", "t", "x", "z3-parametric", lambda t: _spin(5.0)),
        Obligation("t/exact/dies", "t", "x", "exact", lambda t: os._exit(3)),  # type: ignore[arg-type,return-value]
        *[Obligation(f"t/exact/ok{i}", "t", "x", "exact", lambda t: Outcome.good()) for i in range(6)],
    ]
    res = run_all(obs, jobs=2, timeout=0.5)
    assert [r.status for r in res] == ["unknown", "failed", *["passed"] * 6]
    assert res[0].detail == "timeout after 0.5 s (safety net)"
    assert "worker died" in res[1].detail


def test_each_obligation_has_its_own_limit_and_the_largest_start_first() -> None:
    """Issue 27: one pool, a limit per obligation (its own ``budget`` or its method's): a long proof
    with a large budget finishes while a short-budget one that runs as long is stopped; the
    largest budgets are handed out first, so the long proof does not end the run alone."""
    from attnsim.verify.budgets import run_budgeted

    finished: list[str] = []
    obs = [
        Obligation("t/exact/short", "t", "x", "exact", lambda t: _spin(2.0), budget=0.5),
        Obligation("t/exact/long", "t", "x", "exact", lambda t: _spin(2.0), budget=30.0),
    ]
    res = run_budgeted(obs, jobs=1, on_done=lambda r: finished.append(r.id))
    assert [r.status for r in res] == ["unknown", "passed"]
    assert res[0].detail.startswith("budget exhausted (timeout): timeout after 0.5 s (safety net)"), res[0].detail
    assert finished == ["t/exact/long", "t/exact/short"]  # one worker: the long one went first
    with pytest.raises(ValueError, match="2 time limits for 1 obligations"):
        run_all(obs[:1], jobs=1, timeout=[1.0, 2.0])


def test_only_on_a_conclusion_runs_its_premises() -> None:
    """`verify --only` on a conclusion adds the registered obligations it rests on (transitively),
    so it settles proved instead of conditional."""
    from attnsim.proofs import registry

    (layer,) = registry.select("simulator/shallow/all-sizes/layer", include_deep=True)
    obs = registry.with_premises([layer])
    ids = {o.id for o in obs}
    assert set(layer.requires) <= ids and len(obs) == 1 + len(layer.requires)
    assert all(q in ids for o in obs for q in o.requires)  # closed under requires


def test_without_coqc_the_kernel_obligations_are_not_run_and_never_proved(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 28: without coqc a default run says the kernel rows were not run (exit 0 on the rest);
    asking for the kernel obligations alone is a one-line usage error naming the install."""
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    assert main(["verify", "--only", "relu/", "-j", "1"]) == 0
    out = capsys.readouterr()
    assert "obligation(s) running Coq not run: coqc not installed" in out.err
    assert "obligations running Coq not run: relu/kernel" in out.out and "relu/kernel" not in out.out.split("scope")[0]
    from attnsim.proofs import registry
    from attnsim.verify.scope import runnable

    _, left_out = runnable(registry.select("relu/"))  # the Coq-evaluator checks are not run either
    assert {o.id for o in left_out} >= {"relu/kernel/Relu", "relu/exact/coq-evaluator-Relu"}
    assert main(["verify", "--only", "kernel", "-j", "1"]) == 2
    assert "run Coq, which is not installed: apt-get install coq" in capsys.readouterr().err


def _fake_run(monkeypatch: pytest.MonkeyPatch, obs: list[Obligation]) -> None:
    import attnsim.proofs.registry as reg

    monkeypatch.setattr(reg, "select", lambda prefix=None, include_deep=False: obs)


FINE = Obligation("fake/exact/fine", "fake", "x", "exact", lambda t: Outcome.good("fine"))
RESTS = Obligation("fake/exact/rests", "fake", "x", "exact", lambda t: Outcome.good(), requires=("fake/exact/gone",))
KERNEL = Obligation("fake/kernel/Fake", "fake", "x", "kernel", lambda t: Outcome.good("checked by coqc"))
WRONG = Obligation("fake/exact/wrong", "fake", "x", "exact", lambda t: Outcome.bad("differs"))


def test_failures_only_shows_the_conditional_rows(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 26 review: a conditional row is not a failure (exit 0) but not proved either: --failures-only
    shows it, as it shows failed and unknown rows, and its --help says so."""
    _fake_run(monkeypatch, [FINE, RESTS])
    assert main(["verify", "-j", "1", "--failures-only", "--json"]) == 0
    assert [(d["id"], d["status"]) for d in json.loads(capsys.readouterr().out)] == [(RESTS.id, "conditional")]
    assert main(["verify", "-j", "1", "--failures-only"]) == 0
    out = capsys.readouterr().out
    assert RESTS.id in out and FINE.id not in out
    with pytest.raises(SystemExit):
        main(["verify", "--help"])
    assert "only the failed, unknown and conditional obligations" in " ".join(capsys.readouterr().out.split())


def test_without_coqc_the_json_has_a_skipped_row_per_kernel_obligation(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 26 review: a JSON consumer sees every obligation id; a kernel row not run for want of coqc
    is `skipped` (never proved, no failure): the exit codes are those of the obligations that ran."""
    import shutil

    from attnsim.proofs.obligation import HOLDS, STATUSES

    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    _fake_run(monkeypatch, [FINE, KERNEL])
    assert main(["verify", "-j", "1", "--json"]) == 0
    rows = {d["id"]: d for d in json.loads(capsys.readouterr().out)}
    assert set(rows) == {FINE.id, KERNEL.id}
    assert rows[KERNEL.id]["status"] == "skipped" and "coqc not installed" in rows[KERNEL.id]["detail"]
    assert set(STRUCTURED) <= set(rows[KERNEL.id]) and "skipped" in STATUSES and "skipped" not in HOLDS
    assert main(["verify", "-j", "1", "--json", "--summary"]) == 0
    assert json.loads(capsys.readouterr().out)["counts"] == {"passed": 1, "skipped": 1}
    _fake_run(monkeypatch, [FINE, KERNEL, WRONG])
    assert main(["verify", "-j", "1", "--json"]) == 1
    assert {d["id"]: d["status"] for d in json.loads(capsys.readouterr().out)}[KERNEL.id] == "skipped"
