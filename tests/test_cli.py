"""The `attnsim` command line (issue 15): every option validated, one line per error, exact exit codes.

Through :func:`attnsim.cli.main.main`: argparse-level usage errors raise ``SystemExit(2)`` after one
line on stderr; every other error returns its code (2 usage, 1 failed or internal) with one line.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from attnsim.cli import commands
from attnsim.cli.main import load, main
from attnsim.proofs.obligation import Obligation, Outcome

load()  # the subcommands register themselves as main() loads them; some tests replace one first


def usage_exit(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``argv``, expect argparse's exit 2, return stderr (which must be one line)."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["verify", "-j", "-3"], "argument --jobs/-j: must be an integer >= 1, got -3"),
        (["verify", "-j", "0"], "argument --jobs/-j: must be an integer >= 1, got 0"),
        (["verify", "--timeout", "0"], "argument --timeout: must be a number > 0, got 0"),
        (["verify", "--timeout", "-5"], "argument --timeout: must be a number > 0, got -5"),
        (["verify", "--timeout", "inf"], "expected a finite number"),
        (["verify", "--max-mutants", "3"], "argument --max-mutants: only with --mutants"),
        (["verify", "--mutants", "--max-mutants", "-1"], "must be an integer >= 0"),
        (["verify", "--mutants", "--failures-only"], "not to --mutants"),
        (["report", "--out", "x", "--timeout", "0"], "argument --timeout: must be a number > 0"),
        (["report", "--out", "x", "-j", "0"], "argument --jobs/-j: must be an integer >= 1"),
        (["report", "--out", "x", "--deep", "--quick"], "--deep and --quick contradict"),
        (["compile", "matmul", "2", "-3", "2"], "argument sizes: must be an integer >= 1, got -3"),
        (["compile", "reverse", "--vocab", "0"], "argument --vocab: must be an integer >= 1"),
        (["simulate", "--max-len", "0", "--d-model", "2", "--heads", "1", "--d-head", "1"], "--max-len"),
        (["bench", "--sizes", "0,4"], "sizes must be integers >= 1"),
        (["bench", "--repeats", "0"], "argument --repeats: must be an integer >= 1"),
    ],
)
@pytest.mark.usefixtures("nothing_runs")
def test_bad_option_is_one_line_exit_2(argv: list[str], match: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Every option is validated before anything runs (no hang, no silent default): the command and
    the registry are out of reach (``nothing_runs``), so a broken check fails at once."""
    err = usage_exit(argv, capsys)
    assert match in err and err.startswith(f"attnsim {argv[0]}: error: ")


def test_verify_only_no_match_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--only", "no-such-construction"]) == 2
    assert "no obligation matches 'no-such-construction'" in capsys.readouterr().err


def _fake_obligations(monkeypatch: pytest.MonkeyPatch, obs: list[Obligation]) -> None:
    import attnsim.proofs.registry as reg

    monkeypatch.setattr(reg, "select", lambda prefix=None, include_deep=False: obs)


OK = Obligation(
    "fake/exact/a-rather-long-obligation-identifier-kept-whole-0123456789",
    "fake",
    "x",
    "exact",
    lambda t: Outcome.good("fine"),
)
BAD = Obligation(
    "fake/exact/another-long-identifier-that-fails-and-must-stay-on-one-line",
    "fake",
    "x",
    "exact",
    lambda t: Outcome.bad("differs " + "word " * 60 + "END"),
)


def test_verify_pipe_keeps_ids_and_details_whole(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """In a pipe (capsys is not a terminal) no id is folded and no detail is cut mid-word."""
    _fake_obligations(monkeypatch, [OK, BAD])
    assert main(["verify", "-j", "1"]) == 1
    cap = capsys.readouterr()
    lines = cap.out.splitlines()
    assert any(OK.id in ln and "fine" in ln for ln in lines)
    assert any(BAD.id in ln and "END" in ln for ln in lines)
    last = cap.err.strip().splitlines()[-1]
    assert last.startswith(
        "attnsim verify: not verified: 0 proved, 1 passed, 0 conditional, 1 failed, 0 unknown; 2 obligations"
    )


def test_verify_in_a_file_is_not_padded(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """In a pipe or a file the tables are plain lines, cells separated by a tab: no row is padded to
    the longest detail, and every table is there."""
    short = Obligation("fake/exact/short", "fake", "x", "exact", lambda t: Outcome.good("ok"))
    _fake_obligations(monkeypatch, [OK, BAD, short])
    assert main(["verify", "-j", "1"]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert not [ln for ln in lines if "  " in ln or ln != ln.rstrip()], out
    assert "fake/exact/short\texact\t\tpassed\t" in out and "\tok" in out  # the short row: short
    assert len(out) < 2 * sum(len(ln.strip()) for ln in lines)
    titles = ("proof obligations", "scope per construction", "scope per paper result")
    assert all(any(t in ln for ln in lines) for t in titles)
    assert main(["verify", "-j", "1", "--summary"]) == 1
    assert not [ln for ln in capsys.readouterr().out.splitlines() if "  " in ln]


def test_verify_only_does_not_claim_the_scope_of_a_result_it_ran_in_part(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`verify --only a --summary` runs one of the two constructions behind a result: the result's
    scope is "not evaluated in this run", never "all sizes"; without --only it is computed."""
    import attnsim.proofs.registry as reg

    def ob(cid: str, method: str) -> Obligation:
        return Obligation(f"{cid}/{method}/layout", cid, "Proposition 1", method, lambda t: Outcome.good("ok"), bound=3)

    obs = [ob("a", "all-sizes"), ob("b", "z3-bounded")]
    select = lambda prefix=None, include_deep=False: [o for o in obs if not prefix or o.id.startswith(prefix)]
    monkeypatch.setattr(reg, "select", select)
    monkeypatch.setattr(reg, "all_obligations", lambda include_deep=True: obs)
    assert main(["verify", "--only", "a", "--summary", "-j", "1"]) == 0
    rows = [ln.split("\t") for ln in capsys.readouterr().out.splitlines()]
    assert ["Proposition 1", "not evaluated in this run"] in [r[:2] for r in rows], rows
    assert main(["verify", "--summary", "-j", "1"]) == 0
    rows = [ln.split("\t") for ln in capsys.readouterr().out.splitlines()]
    assert ["Proposition 1", "not all sizes"] in [r[:2] for r in rows], rows


def test_verify_failures_only_and_summary(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _fake_obligations(monkeypatch, [OK, BAD])
    assert main(["verify", "-j", "1", "--failures-only"]) == 1
    out = capsys.readouterr().out
    assert BAD.id in out and OK.id not in out
    assert main(["verify", "-j", "1", "--summary"]) == 1
    cap = capsys.readouterr()
    assert "per construction" in cap.out and BAD.id in cap.out and OK.id not in cap.out
    assert "1 failed" in cap.err.strip().splitlines()[-1]
    assert main(["verify", "-j", "1", "--summary", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["constructions"][0]["failed"] == 1 and [d["id"] for d in data["not_ok"]] == [BAD.id]
    assert main(["verify", "-j", "1", "--failures-only", "--json"]) == 1
    assert [d["id"] for d in json.loads(capsys.readouterr().out)] == [BAD.id]


def test_verify_timeout_names_the_rerun_timeout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unknown by timeout says which --timeout to rerun it with; the last line says why exit 1."""
    import time

    def spin(seconds: float) -> Outcome:  # CPU time: the budget counts the worker's CPU, not the wall clock
        t0 = time.process_time()
        while time.process_time() - t0 < seconds:
            pass
        return Outcome.good()

    slow = Obligation("fake/sympy/slow", "fake", "x", "sympy", lambda t: spin(3.0))
    _fake_obligations(monkeypatch, [slow])
    assert main(["verify", "-j", "1", "--timeout", "0.2", "--json"]) == 1
    cap = capsys.readouterr()
    (r,) = json.loads(cap.out)
    assert r["status"] == "unknown"
    assert "attnsim verify --only fake/sympy/slow --timeout 30" in r["detail"]  # its default budget
    assert r["detail"].startswith("budget exhausted (timeout): ")
    assert "unknown: 1 budget exhausted" in cap.err.strip().splitlines()[-1]


def test_deep_obligations_get_their_budget() -> None:
    """Issue 15: the deep whole-U SymPy obligations (measured 9-24 s) are not cut at 10 s by default."""
    from attnsim.proofs.registry import all_obligations
    from attnsim.verify.budgets import DEFAULT_TIMEOUT, METHOD_TIMEOUTS, budget, timeout_for

    obs = {o.id: o for o in all_obligations(include_deep=True)}
    gelu = obs["simulator/sympy/pre-ffn-gelu-n2-d2"]
    assert gelu.deep and budget(gelu) >= 60 and timeout_for(gelu, 5.0) == 5.0
    assert budget(obs["linformer/all-sizes/lemma"]) == METHOD_TIMEOUTS["all-sizes"] == 60.0  # measured 5.2 s idle
    assert all(budget(o) == DEFAULT_TIMEOUT for o in obs.values() if not o.deep and o.method not in METHOD_TIMEOUTS)


def test_internal_error_is_one_line_exit_1(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A bug (any exception) still reaches the user as one line naming the exception."""

    def boom(args: argparse.Namespace) -> int:
        raise ZeroDivisionError("division by zero")

    cfg, _, val = commands.COMMANDS["verify"]
    monkeypatch.setitem(commands.COMMANDS, "verify", (cfg, boom, val))
    assert main(["verify"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == err.strip().splitlines()[0]
    assert "attnsim verify: internal error: ZeroDivisionError: division by zero" in err
    with pytest.raises(ZeroDivisionError, match=r"^division by zero$"):  # --traceback: the exception itself
        main(["--traceback", "verify"])


def test_interrupt_exits_130(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def stop(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    cfg, _, val = commands.COMMANDS["verify"]
    monkeypatch.setitem(commands.COMMANDS, "verify", (cfg, stop, val))
    assert main(["verify"]) == 130
    assert "interrupted" in capsys.readouterr().err


def test_compile_out_in_missing_dir(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "transpose", "2", "3", "--out", "/nonexistent/dir/x.npz"]) == 2
    err = capsys.readouterr().err
    assert err == "attnsim compile: error: --out /nonexistent/dir/x.npz: no directory /nonexistent/dir\n"


def test_compile_counts_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    """`compile matmul 2 3 2 9` must not silently build 9 heads: matmul takes exactly 3 sizes."""
    assert main(["compile", "matmul", "2", "3", "2", "9"]) == 2
    assert "matmul takes 3 size(s) (ROWS INNER COLS), got 4: 2 3 2 9" in capsys.readouterr().err


def test_compile_help_names_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["compile", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "matmul ROWS INNER COLS" in out and "u | simulator MAX_LEN D_MODEL N_HEADS D_HEAD [D_FF]" in out


def test_compile_simulator_alias_and_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    """Theorem 6's U compiles by either name; --quiet prints one line."""
    assert main(["compile", "simulator", "2", "2", "1", "2", "2", "--quiet"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("compiled U(2, 2, 1, 2, 2): 7 layers")


def test_one_layer_is_one_layer_not_one_layers(capsys: pytest.CaptureFixture[str]) -> None:
    """The compile summary and a cost's text say "1 layer" (they said "1 layers")."""
    from attnsim.rasp.schedule import Cost

    assert main(["compile", "histogram", "--quiet"]) == 0
    assert capsys.readouterr().out.startswith("compiled histogram: 1 layer, heads per layer [1],")
    one = Cost(layers=1, heads=[2], aggregates=[2], mlp_primitives=[0, 0], mlp_depth=[0, 0], positions=4, channels=3)
    assert str(one) == "1 layer, heads 2, positions 4, channels 3"
    assert str(Cost(2, [2, 1], [2, 1], [0, 0, 0], [0, 0, 0], 4, 3)).startswith("2 layers, heads 2/1,")


def test_compile_refuses_options_it_would_ignore(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "transpose", "2", "3", "--vocab", "5"]) == 2
    assert "--vocab is for classic programs" in capsys.readouterr().err
    assert main(["compile", "reverse", "--stack", "2"]) == 2
    assert "--stack is for u / simulator" in capsys.readouterr().err


@pytest.mark.parametrize("out", ["/proc/x", "/proc/version/x"])
def test_report_unwritable_out(out: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--out", out, "--quick", "--no-verify"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"attnsim report: error: --out {out}: ") and len(err.splitlines()) == 1


def test_report_out_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "f"
    f.write_text("")
    assert main(["report", "--out", str(f), "--quick", "--no-verify"]) == 2
    assert "exists and is not a directory" in capsys.readouterr().err


def test_audit_outside_the_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """From another directory the checkout's map is found; an installed package's error names --map."""
    import attnsim.cli.audit as A

    monkeypatch.chdir(tmp_path)
    checkout = tmp_path / "checkout"  # a source checkout (editable install): the map beside the package
    (checkout / "attnsim").mkdir(parents=True)
    (checkout / "paper_map.md").write_text("# map\n")
    monkeypatch.setattr(A, "__file__", str(checkout / "attnsim" / "cli" / "audit.py"))
    assert A.default_map() == checkout / "paper_map.md"
    monkeypatch.setattr(A, "__file__", str(tmp_path / "site-packages" / "attnsim" / "cli" / "audit.py"))
    assert main(["audit", "--no-tests"]) == 2
    err = capsys.readouterr().err
    assert "pass --map PATH/paper_map.md" in err and len(err.splitlines()) == 1


def test_compile_sort_unique_states_its_limit(capsys: pytest.CaptureFixture[str]) -> None:
    """The known limit is said where a user meets it: repeated tokens are averaged, not sorted."""
    assert main(["compile", "sort_unique", "--max-len", "3", "--vocab", "3", "--quiet"]) == 0
    assert "note: sort_unique sorts distinct tokens only" in capsys.readouterr().err


def test_python_dash_m_attnsim_is_the_same_command_line(tmp_path: Path) -> None:
    """``python -m attnsim`` runs the console script's main (it was "No module named
    attnsim.__main__"), from any directory."""
    import subprocess
    import sys

    from attnsim.version import __version__

    done = subprocess.run([sys.executable, "-m", "attnsim", "--version"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and __version__ in done.stdout, done.stderr
