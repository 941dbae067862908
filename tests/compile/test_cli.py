"""`attnsim compile` on the command line (lemmas, classic programs, U) and the Tracr size table."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnsim.cli import main
from attnsim.compile import CompiledTransformer, compare


def test_compile_lemma_writes_npz(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t.npz"
    assert main(["compile", "transpose", "2", "3", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "compiled transpose(2, 3)" in text and "wrote" in text
    ct = CompiledTransformer.load(out)
    assert list(ct.forward([1, 2, 3, 4, 5, 6])) == [1, 4, 2, 5, 3, 6]


def test_compile_classic_and_u(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "reverse", "--max-len", "5", "--vocab", "5"]) == 0
    assert "layers 2" in capsys.readouterr().out
    assert main(["compile", "u", "2", "2", "1", "2", "2"]) == 0
    assert "compiled U" in capsys.readouterr().out


def test_unknown_name_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert "unknown construction 'nosuch'" in err and "Traceback" not in err
    assert main(["compile", "transpose", "2", "3", "--max-len", "2"]) == 2
    assert "too short" in capsys.readouterr().err


def test_tracr_table_reverse() -> None:
    """Fewer layers and parameters than Tracr's reverse, zero wrong outputs (all inputs up to 5)."""
    (row,) = compare.tracr_table(programs=("reverse",), sizes=(5,))
    assert row["layers"] < row["tracr_layers"] and row["params"] < row["tracr_params"]
    assert row["wrong"] == 0 and row["checked"] == sum(5**n for n in range(1, 6))
    assert "| reverse | 5 |" in compare.markdown([row])
