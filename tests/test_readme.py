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


def test_the_tours_applications_line_prints_one_short_line() -> None:
    """Issue 30 item 12: the README's ``app.linear_attention(...), app.linformer(...)`` line shows
    two short reprs (the dataclass repr printed the whole program and layout: 11 kB), and the tour
    shows ``stable=True``, the advice of softmax's overflow error."""
    from attnsim import applications as app

    shown = repr((app.linear_attention(4, 2, 2), app.linformer(8, 4, 4, 2)))
    assert shown == (
        "(<Construction 'linear_attention' (Application (linear attention; Katharopoulos et al. 2020)): "
        "Q, K, V -> out>, <Construction 'linformer' (Application (Linformer; Wang et al. 2020)): Q, K, V, E, F -> out>)"
    )
    assert "app.linear_attention(4, 2, 2), app.linformer(8, 4, 4, 2)" in README.read_text(encoding="utf-8")
    assert "stable=True).run(" in _block("**2. Run a lemma three ways**")


def test_the_sample_prints_what_the_readme_shows(capsys: pytest.CaptureFixture[str]) -> None:
    """Lemma: matmul, the tour's sample: run as written, it prints exactly the ```text block that
    follows it (the README's one example with its expected output)."""
    text = README.read_text(encoding="utf-8")
    start = text.index("**2. Run a lemma three ways**")
    m = re.search(r"```python\n(.*?)```\n\n```text\n(.*?)```", text[start:], re.S)
    assert m, "no python block followed by its output"
    exec(compile(m.group(1), "README.md", "exec"), {})
    assert capsys.readouterr().out == m.group(2)
    assert "[[13. 16.]\n [40. 52.]]" in m.group(2)  # A @ B, which the block computes
