"""The README's "compile, run, decode, export to torch" example runs as written (issue 15 item 6)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _block(after: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(after)
    m = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert m, f"no python block after {after!r}"
    return m.group(1)


def test_compile_run_decode_export_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Compiled matmul decodes to A @ B exactly; compiled U (Theorem 6) decodes to T(X)."""
    from attnsim.compile import CompiledTransformer

    if importlib.util.find_spec("torch") is None:  # the export line needs the optional extra
        monkeypatch.setattr(CompiledTransformer, "to_torch", lambda self: None)
    monkeypatch.chdir(tmp_path)
    env: dict[str, object] = {}
    exec(compile(_block("**6. Compile to weights.**"), "README.md", "exec"), env)
    A, B, C = env["A"], env["B"], env["C"]
    assert (np.asarray(C) == np.asarray(A) @ np.asarray(B)).all()
    T, X, Y = env["T"], env["X"], env["Y"]
    assert np.max(np.abs(np.asarray(Y) - T(X))) <= 1e-12  # type: ignore[operator]
    assert (tmp_path / "matmul.npz").is_file()


def test_readme_is_short_and_keeps_the_set_up_commands() -> None:
    """A README read in five minutes (issue 25: at most 10 kB), with the two set-up commands that
    CI (.ci/run) runs, verbatim."""
    text = README.read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) <= 10_000
    assert "pip install . && attnsim verify" in text
    assert 'pip install ".[test]" && pytest' in text


def test_readme_links_resolve() -> None:
    """Every relative link of the README names a file of the repository."""
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text)
    assert links
    missing = {p for p in links if not (README.parent / p).exists()}
    assert missing <= {"docs/torch.md"}, missing  # docs/torch.md: written on another branch, merged later
