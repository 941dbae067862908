"""`attnsim simulate` (Corollary 6.1 at a chosen capacity): JSON on stdout, progress on stderr."""

import json
import re
from pathlib import Path

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


def test_simulate_a_saved_torch_layer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 30 item 11: a layer saved with torch.save is simulated from the shell, and U is
    compared with torch's slow and fast paths (not with attnsim's own reference)."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, batch_first=True, dtype=torch.float64)
    torch.save(layer, tmp_path / "layer.pt")
    assert main(["simulate", "--torch", str(tmp_path / "layer.pt"), "--n", "3", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["module"] == "TransformerEncoderLayer" and data["capacity"] == [3, 4, 2, 2, 6]
    assert data["u_vs_torch_slow"] <= 1e-13  # measured 4.4e-16
    tanh = torch.nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation=torch.nn.GELU(approximate="tanh"))
    torch.save(tanh, tmp_path / "tanh.pt")
    assert main(["simulate", "--torch", str(tmp_path / "tanh.pt"), "--json"]) == 0  # U's gelu_tanh gate
    # float32 weights, batch_first=False (torch's defaults): torch's float32 rounding, measured 1.9e-7
    assert json.loads(capsys.readouterr().out)["u_vs_torch_slow"] <= 2e-5
    silu = torch.nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation=torch.nn.SiLU())
    torch.save(silu, tmp_path / "silu.pt")
    assert main(["simulate", "--torch", str(tmp_path / "silu.pt"), "--json"]) == 2  # not read: one line
    err = capsys.readouterr().err
    assert err == (
        f"attnsim simulate: error: --torch {tmp_path / 'silu.pt'}: from_torch: activation SiLU() is unsupported; "
        "T has relu, gelu and GELU(approximate='tanh')\n"
    ), err
    assert main(["simulate", "--torch", str(tmp_path / "missing.pt")]) == 2
    assert "cannot load" in capsys.readouterr().err


def test_simulate_options_and_their_errors(capsys: pytest.CaptureFixture[str]) -> None:
    """--variant runs the shallow schedule; the capacity is required without --torch, in one line."""
    args = ["simulate", "--max-len", "3", "--d-model", "2", "--heads", "1", "--d-head", "2", "--json"]
    assert main([*args, "--variant", "shallow"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["variant"] == "shallow" and data["layers"] == 6 and data["max_abs_error"] <= 1e-14
    assert main([*args, "--d-ff", "4", "--activation", "gelu_tanh"]) == 0  # torch's tanh-GELU, U's gelu_tanh gate
    assert json.loads(capsys.readouterr().out)["max_abs_error"] <= 1e-14
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--max-len", "3"])
    assert exc.value.code == 2
    assert "the capacity needs --d-model, --heads, --d-head (or --torch FILE)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    assert "LayerNorm placement: none, post (torch's default) or pre" in " ".join(capsys.readouterr().out.split())


def test_simulate_torch_exits_1_when_u_and_torch_disagree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Corollary 6.1 from the shell: the exit code is the verdict. U off by 1e-6 from torch's slow
    path (in float64) is beyond the tolerance: exit 1, the verdict the last line on stderr."""
    torch = pytest.importorskip("torch")
    from attnsim.universal import torch_compare

    torch.manual_seed(0)
    torch.save(torch.nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0), tmp_path / "layer.pt")  # float32
    assert main(["simulate", "--torch", str(tmp_path / "layer.pt"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["agrees"] is True and data["u_vs_torch_slow_float64"] <= 1e-13  # measured 3.3e-16
    real = torch_compare.UniversalSimulator.run
    monkeypatch.setattr(torch_compare.UniversalSimulator, "run", lambda *a, **kw: real(*a, **kw) + 1e-6)
    assert main(["simulate", "--torch", str(tmp_path / "layer.pt"), "--json"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["agrees"] is False
    assert err.count("\n") == 1 and err.startswith("attnsim simulate: U vs torch slow float64: 1e-06, beyond the")


def test_simulate_torch_refuses_a_subclass_overriding_a_sublayer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A saved subclass overriding _sa_block was read as the stock layer (u_vs_torch_slow 0.269,
    exit 0): now refused in one line naming the method, exit 2."""
    torch = pytest.importorskip("torch")

    class HalfAttention(torch.nn.TransformerEncoderLayer):
        def _sa_block(self, x: object, *args: object, **kw: object) -> object:
            return 0.5 * super()._sa_block(x, *args, **kw)

    torch.manual_seed(0)
    module = HalfAttention(4, 2, 6, dropout=0.0)
    (tmp_path / "half.pt").write_bytes(b"")
    monkeypatch.setattr(torch, "load", lambda *a, **kw: module)  # a local class does not pickle
    assert main(["simulate", "--torch", str(tmp_path / "half.pt")]) == 2
    assert capsys.readouterr().err == (
        f"attnsim simulate: error: --torch {tmp_path / 'half.pt'}: from_torch: HalfAttention overrides _sa_block "
        "of nn.TransformerEncoderLayer; "
        "T simulates the stock nn.TransformerEncoderLayer only (it reads the weights and options, not the code): "
        "use the stock class\n"
    )


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("meta", "from_torch: parameter self_attn.in_proj_weight is on the meta device (a shape without values): "
         "give the module its weights first (module.to_empty(device='cpu'), then load_state_dict)"),
        ("kdim", "from_torch: MultiheadAttention with kdim/vdim != embed_dim is unsupported"),
        ("linear", "from_torch takes nn.MultiheadAttention or nn.TransformerEncoderLayer, got Linear"),
    ],
)
def test_simulate_torch_refuses_what_t_does_not_read_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, said: str
) -> None:
    """A layer built on the meta device was "internal error: NotImplementedError" (exit 1); an
    attention with kdim != embed_dim was "has no attention in_proj_weight" (the CLI's own guess
    before from_torch could name the option): each is now from_torch's one line, exit 2."""
    torch = pytest.importorskip("torch")
    if kind == "meta":
        with torch.device("meta"):
            module = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, dropout=0.0)
    elif kind == "kdim":
        module = torch.nn.MultiheadAttention(8, 2, kdim=4, vdim=4, batch_first=True)
    else:
        module = torch.nn.Linear(4, 4)
    torch.save(module, tmp_path / "m.pt")
    assert main(["simulate", "--torch", str(tmp_path / "m.pt")]) == 2
    assert capsys.readouterr().err == f"attnsim simulate: error: --torch {tmp_path / 'm.pt'}: {said}\n"


@pytest.mark.parametrize("content", [b"not a torch file\n", b"PK\x03\x04 cut short"])
def test_simulate_torch_on_a_file_that_is_no_torch_save_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    """The user's file, not our bug: a text file or a cut-short zip is one line naming the file and
    how to save a module, exit 2 (it was "internal error ... report it", exit 1)."""
    pytest.importorskip("torch")
    (tmp_path / "bad.pt").write_bytes(content)
    assert main(["simulate", "--torch", str(tmp_path / "bad.pt")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        f"attnsim simulate: error: --torch {tmp_path / 'bad.pt'}: cannot load"
    )
    assert err.endswith("save the module with torch.save(module, FILE), from a class this Python can import\n")


def test_simulate_without_d_ff_says_what_the_ffn_capacity_is(capsys: pytest.CaptureFixture[str]) -> None:
    """Without --d-ff, U's capacity has FFN width 1 (the least) and T has no FFN: the JSON says both
    (capacity d_ff 1, layer d_ff null) and stderr says F=1, not F=None."""
    assert main(["simulate", "--max-len", "3", "--d-model", "2", "--heads", "1", "--d-head", "2", "--json"]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["capacity"]["d_ff"] == 1 and data["layer"] == {"d_model": 2, "n_heads": 1, "d_head": 2, "d_ff": None}
    assert "F=1 (no --d-ff: T has no FFN; U's FFN width is the least, 1)" in err and "None" not in err


def test_simulate_torch_on_a_state_dict_says_how_to_proceed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A saved state dict is not a module: one line saying so ("an OrderedDict", not "a OrderedDict")
    and how to go on; another object: one line naming it."""
    torch = pytest.importorskip("torch")
    torch.save(torch.nn.TransformerEncoderLayer(4, 2, 6).state_dict(), tmp_path / "sd.pt")
    assert main(["simulate", "--torch", str(tmp_path / "sd.pt")]) == 2
    assert capsys.readouterr().err == (
        f"attnsim simulate: error: --torch {tmp_path / 'sd.pt'}: holds a state dict (an OrderedDict of 12 entries), "
        "not a module: load it into the module it came from (module.load_state_dict(torch.load(FILE))) and save "
        "that with torch.save(module, FILE), or read it in Python with "
        "TransformerLayer.from_state_dict(state_dict, n_heads=...)\n"
    )
    torch.save([1, 2], tmp_path / "list.pt")
    assert main(["simulate", "--torch", str(tmp_path / "list.pt")]) == 2
    assert "holds a list, not a torch module; save the module with torch.save(module, FILE)" in capsys.readouterr().err


def test_simulate_draws_progress_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal, U's run shows a progress bar (nodes done of the program's), removed at the end;
    off a terminal (the tests above) nothing is drawn."""
    import io

    from rich.console import Console

    from attnsim.cli import simulate

    screen = io.StringIO()
    monkeypatch.setattr(
        simulate, "_console", lambda: Console(file=screen, force_terminal=True, color_system=None, width=100)
    )
    assert main(["simulate", "--max-len", "3", "--d-model", "2", "--heads", "1", "--d-head", "2", "--json"]) == 0
    drawn = screen.getvalue()
    assert re.search(r"U .* (\d+)/\1 nodes", drawn), drawn  # the bar reached the program's last node
