"""Counts and types read as English in what the tools print: "1 layer" (never "1 layers"), and a
type named without a wrong article ("an object of type OrderedDict", never "a OrderedDict")."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnsim import lemmas
from attnsim.cli.main import main


def test_a_cost_of_one_layer_says_layer() -> None:
    """Lemma: transpose (1 attention layer) and matmul (2): the cost's text counts them in English."""
    assert str(lemmas.transpose(2, 3).cost()).startswith("1 layer, heads 1,")
    assert str(lemmas.matmul(2, 3, 2).cost()).startswith("2 layers, heads 2/1,")


def test_compile_quiet_line_says_layer(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "transpose", "2", "3", "-q"]) == 0
    assert capsys.readouterr().out.startswith("compiled transpose(2, 3): 1 layer, heads per layer [1],")
    assert main(["compile", "matmul", "2", "3", "2", "-q"]) == 0
    assert capsys.readouterr().out.startswith("compiled matmul(2, 3, 2): 2 layers, heads per layer [2, 1],")


def test_a_saved_state_dict_is_named_without_a_wrong_article(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`simulate --torch` on a file holding a state_dict (an OrderedDict): one line that names the
    type and says what to save instead."""
    torch = pytest.importorskip("torch")
    layer = torch.nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, batch_first=True)
    torch.save(layer.state_dict(), tmp_path / "sd.pt")
    assert main(["simulate", "--torch", str(tmp_path / "sd.pt")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and " a OrderedDict" not in err
    assert "holds a state dict (an OrderedDict of" in err and "torch.save(module, FILE)" in err
