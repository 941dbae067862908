"""`attnsim compare tracr` (issue 15 item 5), without Tracr: CI does not install the extra.

The "not installed" path runs through the CLI entry point (Tracr's import is made to fail even
where it is installed); the measurement and the table run on a small fake Tracr adapter.
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from attnsim.cli import compile as compile_cli
from attnsim.cli.main import main
from attnsim.compile import compare


class FakeTracr:
    """A stand-in for Tracr's adapter: right on everything except length at full length."""

    name = "Fake"

    def __init__(self) -> None:
        self.built: list[tuple[str, int]] = []

    def build(self, program: str, n: int) -> compare.Built:
        self.built.append((program, n))

        def forward(batch: np.ndarray) -> list[list[Any]]:
            outs = []
            for x in batch:
                want = compare.intended(program, x)
                if program == "length" and len(x) == n:
                    want = [n - 1] * n  # Tracr's length at its default mlp_exactness
                if program == "frac_prevs":
                    want = [float(v) + 3e-7 for v in want]  # float32-like rounding
                outs.append(want)
            return outs

        return compare.Built(layers=4, params=1000 + n, params_nonzero=10 + n, forwards={"jit": forward})


def test_without_the_extra_one_line_exit_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """No Tracr: exactly one line, naming the extra to install, exit 2, and nothing on stdout."""
    for mod in ("tracr", "tracr.compiler", "tracr.rasp"):
        monkeypatch.setitem(sys.modules, mod, None)  # `import tracr...` raises ImportError
    assert main(["compare", "tracr"]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    (line,) = cap.err.strip().splitlines()
    assert line.startswith("attnsim compare: error: Tracr is not installed (")
    assert line.endswith('); install it with: pip install "attnsim[tracr]"')


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["compare", "torch"], "argument against: invalid choice: 'torch'"),
        (["compare", "tracr", "--n", "0"], "argument --n: must be an integer >= 1, got 0"),
        (["compare", "tracr", "--programs", "nosuch"], "argument --programs: invalid choice: 'nosuch'"),
        (["compare", "tracr", "--json", "--markdown"], "--json and --markdown contradict"),
    ],
)
@pytest.mark.usefixtures("nothing_runs")
def test_bad_options_exit_2(argv: list[str], match: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and match in err


def test_intended_functions() -> None:
    assert compare.intended("length", [3, 1, 3]) == [3, 3, 3]
    assert compare.intended("reverse", [3, 1, 2]) == [2, 1, 3]
    assert compare.intended("histogram", [3, 1, 3]) == [2, 1, 2]
    assert compare.intended("sort_unique", [3, 1, 3]) == [1, 3, 3]
    assert compare.intended("frac_prevs", [0, 1, 0]) == [1, Fraction(1, 2), Fraction(2, 3)]
    with pytest.raises(KeyError, match="no intended function"):
        compare.intended("nosuch", [1])


def test_agrees_exact_and_float() -> None:
    assert compare.agrees([1, Fraction(1, 2)], [1, Fraction(1, 2)]) == (True, None)
    assert compare.agrees([np.int64(2)], [2]) == (True, None)
    assert compare.agrees([Fraction(1, 2)], [1])[0] is False  # exact values: ==, no tolerance
    ok, err = compare.agrees([np.float32(0.5000003)], [Fraction(1, 2)])
    assert ok and err is not None and err < 1e-6
    assert compare.agrees([0.51], [Fraction(1, 2)])[0] is False
    assert compare.agrees([None, 1], [0, 1]) == (False, None)  # an undecodable output is wrong
    assert compare.agrees([1], [1, 1]) == (False, None)  # a wrong length too


def test_measure_counts_wrong_against_the_intended_function() -> None:
    """Same inputs for every system; a wrong output is counted against the plain Python reference."""
    fake = FakeTracr()
    rows = compare.measure([fake], programs=("length", "sort_unique", "frac_prevs"), sizes=(3, 4), samples=7)
    assert fake.built == [(p, n) for n in (3, 4) for p in ("length", "sort_unique", "frac_prevs")]
    by = {(r["program"], r["n"]): r for r in rows}
    assert by["length", 3]["inputs"] == "all 39" and by["length", 3]["checked"] == 39
    assert by["length", 3]["wrong"] == 27  # every input of length 3 (3**3)
    assert by["length", 3]["first_wrong"] == {"input": [0, 0, 0], "got": [2, 2, 2], "want": [3, 3, 3]}
    assert by["length", 4]["inputs"] == "all 340" and by["length", 4]["wrong"] == 256
    assert by["length", 4]["wrong_by_length"] == {"4": [256, 256]}
    assert compare.cells(by["length", 4])[6] == "256 of 340 (256 of 256 at length 4)"
    assert by["sort_unique", 3]["wrong"] == 0 and by["sort_unique", 3]["checked_distinct"] == 3 + 6 + 6
    fp = by["frac_prevs", 4]
    assert fp["wrong"] == 0 and fp["max_err"] is not None and 2e-7 < fp["max_err"] < 4e-7
    r = by["length", 3]
    assert r["system"] == "Fake jit" and (r["layers"], r["params"], r["params_nonzero"]) == (4, 1003, 13)
    assert r["compile_s"] >= 0 and r["forward_us"] >= 0


def test_measure_samples_when_there_are_too_many_inputs() -> None:
    """Above 20,000 inputs: `samples` seeded random inputs per length, the same for every system."""
    batches, how = compare.inputs_for(10, 10, samples=5, seed=3)
    again, _ = compare.inputs_for(10, 10, samples=5, seed=3)
    assert how == "5 random per length, seed 3" and [b.shape for b in batches] == [(5, n) for n in range(1, 11)]
    assert all((a == b).all() for a, b in zip(batches, again, strict=True))
    batches, how = compare.inputs_for(5, 5)
    assert how == "all 3,905" and sum(len(b) for b in batches) == 3905


def test_command_prints_the_table_with_a_fake_tracr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command's table, Markdown and JSON: ours and the other system side by side, and the machine."""
    monkeypatch.setattr(compile_cli, "tracr_system", FakeTracr)
    assert main(["compare", "tracr", "--n", "3", "--programs", "length", "reverse", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    for text in ("attnsim exact", "attnsim float64", "Fake jit", "27 of 39 (27 of 27 at length 3)", "measured "):
        assert text in out
    assert main(["compare", "tracr", "--n", "3", "--programs", "length", "--markdown"]) == 0
    md = capsys.readouterr().out.splitlines()
    assert md[0] == "| " + " | ".join(compare.COLUMNS) + " |"
    assert md[2].startswith("| length | 3 | attnsim exact | 1 | 108 | 21 | 0 of 39 |")
    assert md[4].startswith("| length | 3 | Fake jit | 4 | 1,003 | 13 | 27 of 39 (27 of 27 at length 3) |")
    assert md[-1].startswith("measured ")
    assert main(["compare", "tracr", "--n", "3", "--programs", "sort_unique", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {r["system"] for r in data["rows"]} == {"attnsim exact", "attnsim float64", "Fake jit"}
    assert set(data["machine"]) == {"date", "cpu", "cores", "python", "versions"}
    ours = next(r for r in data["rows"] if r["system"] == "attnsim exact")
    assert ours["wrong_distinct"] == 0 and ours["wrong"] > 0  # repeated tokens: not a sort
    assert "with distinct tokens" in compare.cells(ours)[6]
