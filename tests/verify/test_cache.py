"""Resumable, content-addressed results (issue 16): `verify --resume` / `--cache DIR`.

A stored result is reused only under the same key (obligation, program, code version, solvers,
timeout) and only when decisive; an interrupted campaign resumes without rerunning what finished
and ends with the rows of an uninterrupted one.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from attnsim.cli.main import main
from attnsim.proofs.obligation import Obligation, Outcome, Result
from attnsim.verify import cache as C
from attnsim.verify.campaign import open_campaign


def _logged(log: Path, i: int) -> Obligation:
    """An obligation whose check appends its id to ``log`` (in whatever process runs it)."""
    oid = f"t/exact/ok{i}"

    def check(t: float) -> Outcome:
        with open(log, "a") as f:
            f.write(oid + "\n")
        return Outcome.good(f"checked {i}")

    return Obligation(oid, "t", "x", "exact", check, statement=f"claim {i}")


def _rows(results: list[Result]) -> list[tuple[str, str, str]]:
    return [(r.id, r.method, r.status) for r in results]


def test_key_changes_with_timeout_statement_and_program() -> None:
    ob = Obligation("t/exact/a", "t", "x", "exact", lambda t: Outcome.good(), statement="s")
    base = C.obligation_key(ob, 10.0, "fp")
    assert C.digest(base) == C.digest(C.obligation_key(ob, 10.0, "fp"))
    assert base["code"] == C.code_version() and base["solvers"]["z3"]
    other = Obligation("t/exact/a", "t", "x", "exact", lambda t: Outcome.good(), statement="s2")
    for changed in (
        C.obligation_key(ob, 20.0, "fp"),
        C.obligation_key(ob, 10.0, "fp2"),
        C.obligation_key(other, 10.0, "fp"),
    ):
        assert C.digest(changed) != C.digest(base)


def test_only_decisive_results_are_reused(tmp_path: Path) -> None:
    """unknown (a timeout) and a lost worker say nothing about the claim: they are rerun.  A lost
    worker is the row's typed ``cause``, never read out of its detail text."""
    cache = C.ResultCache(tmp_path)
    ok = {"status": "proved", "detail": "unsat"}
    for status, detail, cause, reused in [
        ("proved", "unsat", "", True),
        ("failed", "differs at 0", "", True),
        ("unknown", "timeout after 1 s", "timeout", False),
        ("failed", "worker died (exit code -9)", "worker lost", False),
        ("failed", "the text says worker died, the cause does not", "", True),
    ]:
        key = {"id": f"{status}/{detail}"}
        cache.put(key, {"status": status, "detail": detail, "cause": cause})
        assert (cache.get(key, C.reusable_obligation) is not None) is reused
    assert cache.get({"id": "never stored"}, C.reusable_obligation) is None
    # plain JSON on disk; a damaged file is ignored, never trusted
    files = sorted(tmp_path.glob("*.json"))
    assert len(files) == 5 and all(json.loads(f.read_text())["key"]["id"] for f in files)
    key = {"id": "damaged"}
    cache.put(key, ok)
    cache.path(key).write_text("{not json")
    assert cache.get(key, C.reusable_obligation) is None


def test_resume_after_interruption_reruns_only_unfinished(tmp_path: Path) -> None:
    """Feature: an interrupted campaign continues where it stopped (local pool)."""
    log = tmp_path / "log"
    obs = [_logged(log, i) for i in range(8)]
    with open_campaign(jobs=1, cache_dir=tmp_path / "cache", resume=True) as camp:
        full = camp.obligations(obs)  # the uninterrupted reference run fills the cache...
    for f in (tmp_path / "cache").glob("*.json"):
        f.unlink()  # ...which is then emptied, so that the interrupted run starts from nothing
    log.unlink()

    finished: list[str] = []

    def stop_after_three(r: Result) -> None:
        finished.append(r.id)
        if len(finished) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt), open_campaign(jobs=1, cache_dir=tmp_path / "cache", resume=True) as camp:
        camp.obligations(obs, on_done=stop_after_three)
    first = log.read_text().split()
    with open_campaign(jobs=1, cache_dir=tmp_path / "cache", resume=True) as camp:
        resumed = camp.obligations(obs)
        assert camp.cache is not None and camp.cache.reused == 3 and camp.ran == 5
    second = log.read_text().split()[len(first) :]
    assert not set(finished) & set(second)  # nothing finished before the interruption ran again
    assert _rows(resumed) == _rows(full)
    assert [r.detail for r in resumed] == [r.detail for r in full]


def test_cli_resume_reuses_every_unchanged_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`verify --resume --cache DIR` twice: the second run reruns nothing and prints the same rows."""
    argv = ["verify", "--only", "transpose/", "--json", "--resume", "--cache", str(tmp_path), "-j", "1"]
    assert main(argv) == 0
    first, err1 = capsys.readouterr()
    assert main(argv) == 0
    second, err2 = capsys.readouterr()
    n = len(json.loads(first))
    assert "0 of" in err1 and f"{n} of {n} results reused, 0 run" in err2
    key = lambda d: (d["id"], d["method"], d["status"], d["detail"])
    assert [key(d) for d in json.loads(second)] == [key(d) for d in json.loads(first)]
    assert len(os.listdir(tmp_path)) == n


def test_cli_cache_alone_writes_but_does_not_reuse(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["verify", "--only", "rasp/z3-parametric/divmod", "--cache", str(tmp_path), "-j", "1"]
    assert main(argv) == 0 and main(argv) == 0
    err = capsys.readouterr().err
    assert err.count("0 of 2 results reused, 2 run, 2 written") == 2


@pytest.mark.usefixtures("nothing_runs")
def test_cli_resume_with_smt2_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["verify", "--only", "transpose/", "--resume", "--smt2", str(tmp_path)])
    assert exc.value.code == 2 and "--resume with --smt2" in capsys.readouterr().err


# -- the cache proven honest (issue 26, part 8): a changed source or solver reuses nothing, an
# -- unknown is never reused as decisive


@pytest.fixture
def package_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temporary copy of the package (sources and package data), hashed by ``code_version``
    instead of the real one."""
    copy = tmp_path / "attnsim"
    shutil.copytree(C._PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(C, "_PACKAGE", copy)
    C.code_version.cache_clear()
    yield copy
    C.code_version.cache_clear()  # the real package's hash again for the tests that follow


def _run_logged(log: Path, cache_dir: Path, obs: list[Obligation]) -> tuple[list[Result], int, int]:
    """Resume a campaign over ``obs``: its results, how many were reused and how many ran."""
    with open_campaign(jobs=1, cache_dir=cache_dir, resume=True) as camp:
        res = camp.obligations(obs)
        assert camp.cache is not None
        return res, camp.cache.reused, camp.ran


def test_every_source_file_is_in_the_code_version(package_copy: Path) -> None:
    """Changing the bytes of any one source file (same name, same length) changes the hash: a key
    of file names (or sizes) alone would reuse a proof of other code."""
    base = C.code_version()
    files = sorted(package_copy.rglob("*.py"))
    assert len(files) > 50
    for path in files:
        text = path.read_bytes()
        if not text:
            continue
        flipped = bytes([text[0] ^ 0x01]) + text[1:]  # one byte, the length kept
        path.write_bytes(flipped)
        C.code_version.cache_clear()
        try:
            assert C.code_version() != base, f"editing {path.relative_to(package_copy)} left the code version"
        finally:
            path.write_bytes(text)
    C.code_version.cache_clear()
    assert C.code_version() == base  # restored: the same hash again (the hash is of the contents)


def test_every_fixture_is_in_the_code_version(tmp_path: Path, package_copy: Path) -> None:
    """The committed torch fixtures (data/*.npz, read by the torch-* obligations) are inputs: one byte
    of any of them changed (its length kept) changes the hash, and a resumed campaign then reuses
    nothing: a changed fixture never gets a verdict reached on the old one."""
    base = C.code_version()
    fixtures = sorted((package_copy / "data").glob("*.npz"))
    assert len(fixtures) >= 14
    for path in fixtures:
        data = path.read_bytes()
        path.write_bytes(data[:-1] + bytes([data[-1] ^ 0x01]))
        C.code_version.cache_clear()
        try:
            assert C.code_version() != base, f"editing {path.name} left the code version"
        finally:
            path.write_bytes(data)
    C.code_version.cache_clear()
    assert C.code_version() == base
    log = tmp_path / "log"
    obs = [_logged(log, i) for i in range(2)]
    assert _run_logged(log, tmp_path / "cache", obs)[1:] == (0, 2)
    assert _run_logged(log, tmp_path / "cache", obs)[1:] == (2, 0)
    fixtures[0].write_bytes(fixtures[0].read_bytes() + b"\0")
    C.code_version.cache_clear()
    assert _run_logged(log, tmp_path / "cache", obs)[1:] == (0, 2)


def _coq_dir(root: Path) -> Path:
    """A directory of Coq sources that coq_sources() accepts (it holds Semantics.v)."""
    root.mkdir()
    (root / "Semantics.v").write_text("(* semantics *)\n")
    (root / "Matmul.v").write_text("(* matmul *)\n")
    return root


def test_every_coq_source_is_in_every_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The .v files of the directory coq_sources() resolves (here through $ATTNSIM_COQ_DIR) are in the
    key of an obligation and of a mutant: a byte changed or a file added changes both."""
    from attnsim.constructions.kernel import coq_sources

    coq = _coq_dir(tmp_path / "coq")
    monkeypatch.setenv("ATTNSIM_COQ_DIR", str(coq))
    assert coq_sources() == coq
    ob = Obligation("t/kernel/a", "t", "x", "kernel", lambda t: Outcome.good(), statement="s")
    mutant = SimpleNamespace(construction="t", site=(0,), op="x", path=None, description="d", restate_intent=False)

    def keys() -> tuple[str, str]:
        return C.digest(C.obligation_key(ob, 10.0, "fp")), C.digest(C.mutant_key(mutant, [ob.id], 10.0))

    base = keys()
    for path in sorted(coq.glob("*.v")):
        text = path.read_bytes()
        path.write_bytes(bytes([text[0] ^ 0x01]) + text[1:])
        assert keys()[0] != base[0] and keys()[1] != base[1], f"editing {path.name} left the keys"
        path.write_bytes(text)
    assert keys() == base
    (coq / "Extra.v").write_text("(* new *)\n")
    assert keys()[0] != base[0] and keys()[1] != base[1]


def test_the_coq_directory_variable_is_in_every_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """$ATTNSIM_COQ_DIR's value is an input: two directories with the same files, or the variable set
    against unset, give other keys; a campaign resumed with the variable changed reruns."""
    one, two = _coq_dir(tmp_path / "one"), _coq_dir(tmp_path / "two")
    ob = Obligation("t/kernel/a", "t", "x", "kernel", lambda t: Outcome.good(), statement="s")
    monkeypatch.delenv("ATTNSIM_COQ_DIR", raising=False)
    unset = C.digest(C.obligation_key(ob, 10.0, "fp"))
    monkeypatch.setenv("ATTNSIM_COQ_DIR", str(one))
    at_one = C.digest(C.obligation_key(ob, 10.0, "fp"))
    monkeypatch.setenv("ATTNSIM_COQ_DIR", str(two))
    at_two = C.digest(C.obligation_key(ob, 10.0, "fp"))
    assert len({unset, at_one, at_two}) == 3
    log = tmp_path / "log"
    obs = [_logged(log, 0)]
    assert _run_logged(log, tmp_path / "cache", obs)[1:] == (0, 1)
    assert _run_logged(log, tmp_path / "cache", obs)[1:] == (1, 0)
    monkeypatch.setenv("ATTNSIM_COQ_DIR", str(one))
    assert _run_logged(log, tmp_path / "cache", obs)[1:] == (0, 1)


def test_an_edited_source_reuses_nothing(tmp_path: Path, package_copy: Path) -> None:
    """A campaign cached, one source file edited (a comment appended to symbolic/sums.py, the Sum
    normal form's rules): every obligation runs again, nothing is reused."""
    log = tmp_path / "log"
    obs = [_logged(log, i) for i in range(4)]
    _, reused, ran = _run_logged(log, tmp_path / "cache", obs)
    assert (reused, ran) == (0, 4)
    _, reused, ran = _run_logged(log, tmp_path / "cache", obs)
    assert (reused, ran) == (4, 0)  # unchanged code: everything reused (the test can fail both ways)
    target = package_copy / "symbolic" / "sums.py"
    target.write_text(target.read_text() + "\n# edited\n")
    C.code_version.cache_clear()
    _, reused, ran = _run_logged(log, tmp_path / "cache", obs)
    assert (reused, ran) == (0, 4)
    assert log.read_text().split().count("t/exact/ok0") == 2


def test_a_changed_solver_version_reuses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same code with another z3 (or cvc5, sympy, numpy, Python): every obligation runs again."""
    log = tmp_path / "log"
    obs = [_logged(log, i) for i in range(3)]
    assert _run_logged(log, tmp_path / "cache", obs)[1:] == (0, 3)
    real = C.solver_versions()
    assert {"python", "z3", "sympy", "mpmath", "numpy", "cvc5", "coqc", "mathcomp"} <= set(real)
    for name in real:
        changed = {**real, name: real[name] + ".changed"}
        monkeypatch.setattr(C, "solver_versions", lambda changed=changed: changed)
        assert _run_logged(log, tmp_path / "cache", obs)[1:] == (0, 3), f"a new {name} reused a result"
    monkeypatch.setattr(C, "solver_versions", lambda: real)
    assert _run_logged(log, tmp_path / "cache", obs)[1:] == (3, 0)


def test_an_unknown_is_never_reused_as_decisive(tmp_path: Path) -> None:
    """An obligation that answers unknown is written to the cache but rerun on every resume; the
    same for a mutant whose survival rests on an unknown obligation."""
    log = tmp_path / "log"

    def undecided(t: float) -> Outcome:
        with open(log, "a") as f:
            f.write("undecided\n")
        return Outcome.unknown("z3 says unknown")

    obs = [Obligation("t/z3-instance/undecided", "t", "x", "z3-instance", undecided, statement="u"), _logged(log, 0)]
    for _ in range(3):
        res, reused, ran = _run_logged(log, tmp_path / "cache", obs)
        assert res[0].status == "unknown" and ran >= 1 and reused <= 1
    assert log.read_text().split().count("undecided") == 3  # run every time
    assert log.read_text().split().count("t/exact/ok0") == 1  # the decisive one reused
    stored = [json.loads(f.read_text())["result"] for f in (tmp_path / "cache").glob("*.json")]
    assert any(r["status"] == "unknown" for r in stored)  # kept on disk, for the record only
    survived = {"killed": False, "equivalent": False, "claim_only": False, "cause": "unknown", "detail": "-"}
    assert not C.reusable_mutant(survived)
    assert C.reusable_mutant({**survived, "cause": ""})


def test_a_mutant_result_is_reused_by_its_typed_cause_never_its_detail() -> None:
    """Issue 26 review: whether a survivor is decisive is its typed ``cause`` (an unknown obligation, a
    lost worker, one over budget or in error), never a phrase of its detail text."""
    from attnsim.verify.mutation.run import MUTANT_CAUSES

    survived = {"killed": False, "equivalent": False, "claim_only": False, "cause": "", "detail": "unknown: died"}
    assert C.reusable_mutant(survived)  # the prose is not read
    assert MUTANT_CAUSES[0] == "" and len(MUTANT_CAUSES) > 1
    for cause in MUTANT_CAUSES[1:]:
        assert not C.reusable_mutant({**survived, "cause": cause, "detail": "reworded"}), cause
